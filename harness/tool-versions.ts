import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { basename, isAbsolute, join } from 'node:path';
import { visibleLine } from '../core/clean-text.js';
import { readBoundedFile } from '../core/bounded-file.js';
import type { ToolVersion } from '../model/environment.js';

/** The system's binary directories, system ones first (never the caller's PATH: a run records what the backends use). */
const BIN_DIRS: readonly string[] = ['/usr/bin', '/bin', '/usr/sbin', '/sbin', '/usr/local/bin', '/usr/local/sbin'];

/** The sandbox tools every card records, whichever backend ran. */
export const KNOWN_TOOLS: readonly string[] = ['bwrap', 'docker', 'dockerd', 'runc', 'runsc', 'podman', 'crun', 'python3'];
/** Tools a command backend's argv may name that are safe to ask for `--version`; anything else is hashed, never run. */
const ASKABLE = new Set([...KNOWN_TOOLS, 'firejail', 'systemd-nspawn', 'nsjail', 'minijail0', 'unshare', 'nsenter', 'setpriv']);

export const VERSION_TIMEOUT_MS = 5_000;
const OUTPUT_MAX = 64 * 1024;

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export async function findTool(name: string): Promise<string | undefined> {
  for (const d of BIN_DIRS) if (await executable(join(d, name))) return join(d, name);
  return undefined;
}

/** Runs `file args` with a short timeout and a clean environment; resolves to the output or why there is none. Never throws. */
export function askTool(
  file: string,
  args: readonly string[],
  timeoutMs = VERSION_TIMEOUT_MS,
): Promise<{ ok: true; text: string } | { ok: false; why: string }> {
  return new Promise((resolve) => {
    execFile(
      file,
      [...args],
      { timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: OUTPUT_MAX, env: { PATH: BIN_DIRS.join(':'), LC_ALL: 'C' }, windowsHide: true },
      (err, stdout, stderr) => {
        const text = `${String(stdout)}\n${String(stderr)}`.trim();
        if (err) {
          const killed = (err as { killed?: boolean }).killed === true;
          resolve({ ok: false, why: killed ? `no answer within ${timeoutMs} ms` : `${visibleLine(err.message).slice(0, 200)}` });
        } else resolve({ ok: true, text });
      },
    );
  });
}

const firstLine = (text: string): string => visibleLine(text.split('\n').find((l) => l.trim() !== '') ?? '').slice(0, 256);

/** `<tool> --version` for one tool found in the system binary directories. */
export async function toolVersion(tool: string): Promise<ToolVersion> {
  const path = await findTool(tool);
  if (!path) return { tool, status: 'missing', detail: `not found in ${BIN_DIRS.join(', ')}` };
  const got = await askTool(path, ['--version']);
  if (!got.ok) return { tool, status: 'failed', detail: got.why };
  const version = firstLine(got.text);
  return version ? { tool, status: 'ok', version } : { tool, status: 'failed', detail: '--version printed nothing' };
}

/** The API version of a Docker daemon on a local socket the user named (--docker-socket); never a remote DOCKER_HOST. */
export async function dockerApiVersion(socketPath: string): Promise<ToolVersion> {
  const docker = await findTool('docker');
  if (!docker) return { tool: 'docker-api', status: 'missing', detail: 'no docker CLI to ask the daemon with' };
  const got = await askTool(docker, ['-H', `unix://${socketPath}`, 'version', '--format', '{{.Server.Version}} (API {{.Server.APIVersion}})']);
  if (!got.ok) return { tool: 'docker-api', status: 'failed', detail: got.why };
  return { tool: 'docker-api', status: 'ok', version: firstLine(got.text), detail: 'the daemon at --docker-socket' };
}

function argvTemplates(config: unknown): string[][] {
  const out: string[][] = [];
  const visit = (v: unknown, depth: number): void => {
    if (depth > 4 || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      if (v.length > 0 && v.every((x) => typeof x === 'string')) out.push(v as string[]);
      return;
    }
    for (const x of Object.values(v)) visit(x, depth + 1);
  };
  visit(config, 0);
  return out;
}

/**
 * The tools a command backend's configuration launches: known sandbox tools named anywhere in its argv
 * templates are asked for their version; a launcher of the user's own (a script) is hashed, never run
 * with an argument it does not expect.
 */
export async function commandBackendTools(config: unknown, configDir: string): Promise<ToolVersion[]> {
  const templates = argvTemplates(config);
  const named = new Set<string>();
  const launchers = new Set<string>();
  for (const argv of templates) {
    const head = argv[0];
    if (head !== undefined && !head.includes('{') && !ASKABLE.has(basename(head))) launchers.add(head);
    for (const a of argv) if (!a.includes('{') && ASKABLE.has(basename(a)) && !KNOWN_TOOLS.includes(basename(a))) named.add(basename(a));
  }
  const asked = await Promise.all(
    [...named]
      .sort()
      .slice(0, 8)
      .map((t) => toolVersion(t)),
  );
  const hashed = await Promise.all(
    [...launchers]
      .sort()
      .slice(0, 8)
      .map(async (l): Promise<ToolVersion> => {
        const path = isAbsolute(l) ? l : join(configDir, l);
        const read = await readBoundedFile(path, 64 * 1024 * 1024);
        const tool = visibleLine(basename(l)).slice(0, 64);
        if (!read.ok) return { tool, status: 'failed', detail: `the launcher of the command backend: ${read.message}`.slice(0, 512) };
        return {
          tool,
          status: 'ok',
          version: `sha256:${createHash('sha256').update(read.bytes).digest('hex')}`,
          detail: 'the launcher of the command backend: hashed, not run',
        };
      }),
  );
  return [...asked, ...hashed];
}

type ToolVersionAnswer = { ok: true; version: string } | { ok: false; why: string };

/** Structural: a backend that can tell its own tool's version (`toolVersion()`, the command backend and its presets). Never throws. */
export async function backendOwnVersion(backend: object, name: string): Promise<ToolVersion | undefined> {
  const ask = (backend as Partial<{ toolVersion(): Promise<ToolVersionAnswer> | undefined }>).toolVersion;
  if (typeof ask !== 'function') return undefined;
  const tool = `backend:${visibleLine(name)}`.slice(0, 64);
  try {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<ToolVersionAnswer>((resolve) => {
      timer = setTimeout(() => resolve({ ok: false, why: `no answer within ${VERSION_TIMEOUT_MS} ms` }), VERSION_TIMEOUT_MS);
    });
    const answer = await Promise.race([ask.call(backend) ?? Promise.resolve(undefined), timeout]).finally(() => clearTimeout(timer));
    if (answer === undefined) return undefined;
    return answer.ok
      ? { tool, status: 'ok', version: firstLine(answer.version), detail: "the backend's own answer" }
      : { tool, status: 'failed', detail: visibleLine(answer.why).slice(0, 512) };
  } catch (err) {
    return { tool, status: 'failed', detail: visibleLine(err instanceof Error ? err.message : String(err)).slice(0, 512) };
  }
}
