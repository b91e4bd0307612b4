import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { release } from 'node:os';
import { basename, dirname } from 'node:path';
import { visibleLine } from '../core/clean-text.js';
import { CONFIG_FILE_MAX_BYTES, readBoundedFile } from '../core/bounded-file.js';
import { BACKEND_CONFIG_CONTENT_MAX, LABEL_MAX, type RunEnvironment } from '../model/environment.js';
import { SandcheckError } from '../core/errors.js';
import type { Policy } from '../model/policy.js';
import { packageVersion } from '../core/paths.js';
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
  if (label === '')
    throw new SandcheckError('USAGE', '--label is empty', { hint: 'give a short text that tells this run apart, e.g. --label "pids-limit-off"' });
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

const APPLIED_OPTIONS_MAX = BACKEND_CONFIG_CONTENT_MAX;

/**
 * The --backend-config file as the card keeps it: base name, size and hash of the file, and the options the backend
 * applied (its own parse of them) with their hash. The file's text is not kept: only what ran counts.
 */
export async function backendConfigRecord(
  path: string,
  applied: { options: unknown; checkedBy: 'sandcheck' | 'adapter' } | undefined,
): Promise<NonNullable<RunEnvironment['backendConfig']>> {
  const read = await readBoundedFile(path, CONFIG_FILE_MAX_BYTES);
  if (!read.ok) throw new SandcheckError('CONFIG_INVALID', `cannot read ${visibleLine(path)}: ${read.message}`);
  const record: NonNullable<RunEnvironment['backendConfig']> = {
    file: visibleLine(basename(path)).slice(0, 256),
    bytes: read.bytes.length,
    sha256: sha256Hex(read.bytes),
  };
  if (applied === undefined) return record;
  const text = canonicalJson(applied.options ?? null);
  // Options too large to keep whole keep their hash only.
  return {
    ...record,
    ...(text.length <= APPLIED_OPTIONS_MAX ? { options: JSON.parse(text) as unknown } : {}),
    optionsSha256: sha256Hex(text),
    checkedBy: applied.checkedBy,
  };
}

/** What a loaded backend says it applied; for a module or rpc adapter, the options it was handed. */
export function appliedOptionsOf(backend: object | undefined, handed: unknown): { options: unknown; checkedBy: 'sandcheck' | 'adapter' } {
  const own =
    backend !== undefined && 'appliedOptions' in backend && typeof backend.appliedOptions === 'function'
      ? (backend.appliedOptions as () => unknown)
      : undefined;
  return own ? { options: own.call(backend), checkedBy: 'sandcheck' } : { options: handed ?? null, checkedBy: 'adapter' };
}

export interface EnvironmentOptions {
  policy: Policy;
  backendName: string;
  backendConfig?: string;
  /** The options handed to the backend's factory (for an adapter that cannot say what it applied). */
  backendOptions?: unknown;
  dockerSocket?: string;
  /** --label, raw: cleaned here. */
  label?: string;
  /** The loaded backend: asked for its own tool's version when it can tell (toolVersion()). */
  backend?: object;
}

/** Everything the cards record about where they ran. Tool versions are asked in parallel; a missing tool is recorded, never an error. */
export async function collectEnvironment(opts: EnvironmentOptions): Promise<RunEnvironment> {
  const config = opts.backendConfig ? await backendConfigRecord(opts.backendConfig, appliedOptionsOf(opts.backend, opts.backendOptions)) : undefined;
  let commandTools: Promise<RunEnvironment['tools']> = Promise.resolve([]);
  if (opts.backendName === 'command' && opts.backendConfig && config) commandTools = commandBackendTools(config.options, dirname(opts.backendConfig));
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
