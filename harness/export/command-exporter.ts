import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { z } from 'zod';
import { readConfigFile } from '../../core/config-file.js';
import { formatIssues } from '../../core/config-issues.js';
import { SandcheckError } from '../../core/errors.js';
import { FILES_DIR, MANIFEST_NAME, writeStaging } from './staging.js';
import type { ExportCandidate, ExportDecision, ExportedFile, Exporter, ExportLimits, Refusal } from '../../model/export-types.js';

/**
 * A user's own exporter as a command line (`--exporter command:<file>`). It receives the box's files as
 * the download API returned them (a staging directory: see staging.ts) and writes what it would export
 * into `{dest}`. Its exit status is its decision: 0 = exported what it wrote, anything else = refused.
 * The harness then lists `{dest}` itself (never following a link there) for the decision's record.
 */
const PLACEHOLDERS = ['staging', 'manifest', 'files', 'dest', 'configDir'] as const;
type Placeholder = (typeof PLACEHOLDERS)[number];
const PLACEHOLDER_RE = /\{([A-Za-z.]+)\}/g;

export const CommandExporterConfigSchema = z
  .strictObject({
    /** How reports name it; default: the config file's name. */
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/)
      .optional(),
    /** argv array, never a shell string; placeholders ({staging} {manifest} {files} {dest} {configDir}) expand to whole elements. */
    argv: z.array(z.string()).min(1),
    /** The exporter is stopped (its whole process group) after this long and counted as refusing. */
    timeoutMs: z.number().int().positive().max(600_000).default(30_000),
    /** Variables for the exporter on top of PATH; the harness's own environment (with the run's decoys) never reaches it. */
    env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), z.string()).default({}),
  })
  .meta({ id: 'sandcheck-command-exporter', title: 'sandcheck command exporter (--exporter command:<file>)' });
export type CommandExporterConfig = z.output<typeof CommandExporterConfigSchema>;

const MAX_STDERR = 4096;
const MAX_LISTED = 1000;
const EXPORTER_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Checks every placeholder before anything runs: an unknown one is a config error naming file and key. */
function checkTemplate(argv: readonly string[], file: string): void {
  argv.forEach((arg, i) => {
    for (const m of arg.matchAll(PLACEHOLDER_RE)) {
      const name = m[1] ?? '';
      if (!(PLACEHOLDERS as readonly string[]).includes(name)) {
        throw new SandcheckError(
          'CONFIG_INVALID',
          `${file}: argv[${i}]: unknown placeholder {${name}} (known: ${PLACEHOLDERS.map((p) => `{${p}}`).join(' ')})`,
        );
      }
      if (m[0] !== arg) throw new SandcheckError('CONFIG_INVALID', `${file}: argv[${i}]: a placeholder must be the whole argument ("${arg}")`);
    }
  });
}

export async function loadCommandExporter(file: string): Promise<Exporter> {
  const raw = await readConfigFile(file);
  const parsed = CommandExporterConfigSchema.safeParse(raw);
  if (!parsed.success) throw new SandcheckError('CONFIG_INVALID', `invalid command exporter\n${formatIssues(parsed.error, raw, file)}`);
  checkTemplate(parsed.data.argv, file);
  const name = parsed.data.name ?? `command:${relative(process.cwd(), file) || file}`;
  return createCommandExporter(parsed.data, { name, configDir: dirname(resolve(file)) });
}

interface Ran {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  stderr: string;
  spawnError?: string;
}

function runExporter(argv: readonly string[], cfg: CommandExporterConfig, cwd: string): Promise<Ran> {
  return new Promise((done) => {
    const [cmd, ...args] = argv;
    const child = spawn(cmd ?? '', args, { cwd, detached: true, stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: EXPORTER_PATH, ...cfg.env } });
    let stderr = '';
    let timedOut = false;
    child.stderr.on('data', (c: Buffer) => {
      if (stderr.length < MAX_STDERR) stderr += c.toString('utf8').slice(0, MAX_STDERR - stderr.length);
    });
    const killGroup = (): void => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, cfg.timeoutMs);
    child.once('error', (err) => {
      clearTimeout(timer);
      done({ exitCode: null, signal: null, timedOut, stderr, spawnError: err.message });
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      // Nothing the exporter started may outlive it.
      killGroup();
      done({ exitCode: code, signal, timedOut, stderr });
    });
  });
}

/** What the exporter left in destDir, listed with lstat (a link there is reported, never followed). */
async function listDest(destDir: string): Promise<ExportedFile[]> {
  const out: ExportedFile[] = [];
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      if (out.length >= MAX_LISTED) return;
      const abs = join(dir, e.name);
      const st = await lstat(abs).catch(() => undefined);
      if (!st) continue;
      const rel = relative(destDir, abs);
      if (st.isDirectory()) await walk(abs);
      else if (st.isFile())
        out.push({
          path: rel,
          bytes: st.size,
          sha256: createHash('sha256')
            .update(await readFile(abs))
            .digest('hex'),
        });
      else if (st.isSymbolicLink()) {
        const target = await readlink(abs).catch(() => '?');
        out.push({ path: `${rel} (symlink to ${target.slice(0, 200)})`, bytes: 0, sha256: createHash('sha256').update(`symlink:${target}`).digest('hex') });
      } else out.push({ path: `${rel} (special file)`, bytes: 0, sha256: createHash('sha256').update('special').digest('hex') });
    }
  };
  await walk(destDir);
  return out;
}

export function createCommandExporter(cfg: CommandExporterConfig, meta: { name: string; configDir: string }): Exporter {
  return {
    name: meta.name,
    async export(candidates, limits, destDir): Promise<ExportDecision> {
      await mkdir(destDir, { recursive: true });
      // Outside the export root, so the staging files are never mistaken for host files the exporter changed.
      const stagingParent = await mkdtemp(join(tmpdir(), 'sandcheck-export-staging-'));
      try {
        return await exportThrough(cfg, meta, join(stagingParent, 'in'), candidates, limits, destDir);
      } finally {
        await rm(stagingParent, { recursive: true, force: true });
      }
    },
  };
}

async function exportThrough(
  cfg: CommandExporterConfig,
  meta: { name: string; configDir: string },
  staging: string,
  candidates: readonly ExportCandidate[],
  limits: ExportLimits,
  destDir: string,
): Promise<ExportDecision> {
  await writeStaging(staging, candidates, limits);
  const values: Record<Placeholder, string> = {
    staging,
    manifest: join(staging, MANIFEST_NAME),
    files: join(staging, FILES_DIR),
    dest: destDir,
    configDir: meta.configDir,
  };
  const argv = cfg.argv.map((a) => a.replace(PLACEHOLDER_RE, (_m, name: string) => values[name as Placeholder]));
  const ran = await runExporter(argv, cfg, meta.configDir);
  const exported = await listDest(destDir);
  if (ran.exitCode === 0 && !ran.timedOut) return { accepted: true, exported, refusals: [], findings: [] };
  const why = ran.spawnError
    ? `could not start: ${ran.spawnError}`
    : ran.timedOut
      ? `stopped by the harness after ${cfg.timeoutMs} ms`
      : `exit ${ran.exitCode ?? ran.signal ?? '?'}${ran.stderr ? `: ${ran.stderr.trim().split('\n').slice(-3).join(' | ').slice(0, 400)}` : ''}`;
  const rule: Refusal['rule'] = ran.spawnError !== undefined || ran.timedOut ? 'exporter-failed' : 'exporter-refused';
  // Files it left in destDir despite refusing stay in the record (and the stage scans them for canaries).
  return { accepted: false, exported, refusals: [{ path: '*', rule, detail: `${meta.name}: ${why}` }], findings: [] };
}
