import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { release } from 'node:os';
import { basename, dirname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { visibleLine } from '../reports/clean-text.js';
import { CONFIG_FILE_MAX_BYTES, readBoundedFile } from './bounded-file.js';
import { BACKEND_CONFIG_CONTENT_MAX, LABEL_MAX, type RunEnvironment } from './environment-model.js';
import { SandcheckError } from './errors.js';
import type { Policy } from './model/policy.js';
import { packageVersion } from './paths.js';
import { KNOWN_TOOLS, backendOwnVersion, commandBackendTools, dockerApiVersion, toolVersion } from './tool-versions.js';

export const sha256Hex = (data: string | Uint8Array): string => createHash('sha256').update(data).digest('hex');

/** JSON with object keys sorted at every level and no whitespace: the same policy always hashes the same. */
export function canonicalJson(value: unknown): string {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v !== null && typeof v === 'object') {
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
      );
    }
    return v;
  };
  return JSON.stringify(sort(value));
}

export const policySha256 = (policy: Policy): string => sha256Hex(canonicalJson(policy));

/** `--label`: one visible line, bounded; an empty label is a usage error (it would tell no two runs apart). */
export function cleanLabel(raw: string): string {
  const label = visibleLine(raw.trim()).slice(0, LABEL_MAX);
  if (label === '') throw new SandcheckError('USAGE', '--label is empty', { hint: 'give a short text that tells this run apart, e.g. --label "pids-limit-off"' });
  return label;
}

/** From /proc/self/mountinfo: where /sys/fs/cgroup is cgroup2 it is v2; v1 controllers with a v2 tree beside them are hybrid. */
export function cgroupModeFrom(mountinfo: string): RunEnvironment['cgroupMode'] {
  const mounts = mountinfo.split('\n').flatMap((line) => {
    const [left, right] = line.split(' - ');
    const point = left?.split(' ')[4];
    const fstype = right?.split(' ')[0];
    return point && fstype ? [{ point, fstype }] : [];
  });
  const at = (p: string) => mounts.filter((m) => m.point === p).at(-1)?.fstype;
  if (at('/sys/fs/cgroup') === 'cgroup2') return 'v2';
  const v1 = mounts.some((m) => m.fstype === 'cgroup' && m.point.startsWith('/sys/fs/cgroup/'));
  const v2 = mounts.some((m) => m.fstype === 'cgroup2' && m.point.startsWith('/sys/fs/cgroup/'));
  if (v1) return v2 ? 'hybrid' : 'v1';
  return 'unknown';
}

async function cgroupMode(): Promise<RunEnvironment['cgroupMode']> {
  try {
    return cgroupModeFrom(await readFile('/proc/self/mountinfo', 'utf8'));
  } catch {
    return 'unknown';
  }
}

/** The --backend-config file as the card keeps it: base name, size, hash of every byte, and the text up to a bound. */
export async function backendConfigRecord(path: string): Promise<NonNullable<RunEnvironment['backendConfig']>> {
  const read = await readBoundedFile(path, CONFIG_FILE_MAX_BYTES);
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `cannot read ${path}: ${read.message}`);
  const text = read.bytes.toString('utf8');
  const truncated = text.length > BACKEND_CONFIG_CONTENT_MAX;
  return { file: visibleLine(basename(path)).slice(0, 256), bytes: read.bytes.length, sha256: sha256Hex(read.bytes), content: truncated ? text.slice(0, BACKEND_CONFIG_CONTENT_MAX) : text, truncated };
}

export interface EnvironmentOptions {
  policy: Policy;
  backendName: string;
  backendConfig?: string;
  dockerSocket?: string;
  /** --label, raw: cleaned here. */
  label?: string;
  /** The loaded backend: asked for its own tool's version when it can tell (toolVersion()). */
  backend?: object;
}

/** Everything the cards record about where they ran. Tool versions are asked in parallel; a missing tool is recorded, never an error. */
export async function collectEnvironment(opts: EnvironmentOptions): Promise<RunEnvironment> {
  const config = opts.backendConfig ? await backendConfigRecord(opts.backendConfig) : undefined;
  let commandTools: Promise<RunEnvironment['tools']> = Promise.resolve([]);
  if (opts.backendName === 'command' && opts.backendConfig && config) {
    let parsed: unknown;
    try {
      parsed = parseYaml(config.content);
    } catch {
      parsed = undefined;
    }
    commandTools = commandBackendTools(parsed, dirname(opts.backendConfig));
  }
  const [tools, extra, api, mode, own] = await Promise.all([
    Promise.all(KNOWN_TOOLS.map((t) => toolVersion(t))),
    commandTools,
    opts.dockerSocket ? dockerApiVersion(opts.dockerSocket).then((v) => [v]) : Promise.resolve([]),
    cgroupMode(),
    opts.backend ? backendOwnVersion(opts.backend, opts.backendName) : Promise.resolve(undefined),
  ]);
  return {
    ...(opts.label !== undefined ? { label: cleanLabel(opts.label) } : {}),
    sandcheckVersion: packageVersion(),
    node: process.version,
    kernel: visibleLine(release()).slice(0, 256),
    cgroupMode: mode,
    policySha256: policySha256(opts.policy),
    tools: [...tools, ...api, ...(own ? [own] : []), ...extra].slice(0, 32),
    ...(config ? { backendConfig: config } : {}),
  };
}
