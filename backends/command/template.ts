import { SandcheckError } from '../../core/errors.js';
import type { Policy } from '../../model/policy.js';
import type { CommandBackendConfig } from './config.js';

/**
 * Placeholders of the command backend. Each one is a whole argv element: `{memoryMb}` becomes one
 * element, `{argv...}` splices the program's argv as separate elements. Nothing is ever joined into a
 * shell string, so no value (the box's argv, a workspace path) can change how the command is parsed.
 */
export const POLICY_PLACEHOLDERS = [
  'timeoutMs',
  'timeoutSeconds',
  'wallSeconds',
  'memoryMb',
  'memoryBytes',
  'pidsMax',
  'cpus',
  'cpuQuotaUs',
  'diskMb',
  'diskBytes',
  'maxOutputBytes',
] as const;
const ENV_PLACEHOLDERS = ['configDir', 'workspace', 'tmp', 'boxWorkspace', 'envId', 'runId', 'image', 'sessionRef', 'statusFd', 'statusFile'] as const;
const EXEC_PLACEHOLDERS = ['boxCwd'] as const;
const ENV_ITEM = ['name', 'value'] as const;
const READONLY_ITEM = ['hostPath', 'boxPath'] as const;

export type Scalar =
  | (typeof POLICY_PLACEHOLDERS)[number]
  | (typeof ENV_PLACEHOLDERS)[number]
  | (typeof EXEC_PLACEHOLDERS)[number]
  | (typeof ENV_ITEM)[number]
  | (typeof READONLY_ITEM)[number];
export type Splice = 'argv...' | 'env...' | 'readOnly...';
export type Values = Partial<Record<Scalar, string>> & Partial<Record<Splice, readonly string[]>>;

const WHOLE = /^\{([A-Za-z]+(?:\.\.\.)?)\}$/;
const ANY = /\{[^{}]*\}/;
const EACH = /\{([A-Za-z]+)\}/g;
/**
 * Per-item templates may join their item's values into one argument, for tools whose options take `--opt=value` only
 * (`--setenv={name}={value}`, `--read-only={hostPath}`): still exactly one argv element, never a shell string.
 */
const JOINABLE = new Map<string, readonly string[]>([
  ['exec.envArg', ENV_ITEM],
  ['exec.readOnlyArg', READONLY_ITEM],
]);

/** Which placeholders a template at `key` may use, given the file: anything else is a config error. */
function allowedAt(key: string, cfg: CommandBackendConfig): Map<string, string | undefined> {
  // name → undefined when allowed, or why it is not available in this file
  const m = new Map<string, string | undefined>();
  for (const p of POLICY_PLACEHOLDERS) m.set(p, undefined);
  for (const p of ENV_PLACEHOLDERS) m.set(p, undefined);
  if (cfg.image === undefined) m.set('image', 'the file sets no image');
  if (cfg.workspace === 'host-dir') m.set('tmp', 'workspace "host-dir" has no {tmp} (use disk-image or tmpfs)');
  if (cfg.shape !== 'session' || key === 'session.create')
    m.set('sessionRef', key === 'session.create' ? 'session.create produces {sessionRef}' : 'only a session has {sessionRef}');
  const status = cfg.exec.status;
  const inExec = key.startsWith('exec.');
  if (!inExec || status?.format !== 'bwrap-json') m.set('statusFd', inExec ? 'exec.status is not a bwrap-json fd' : 'only exec templates have {statusFd}');
  if (!inExec || status?.format !== 'json-file') m.set('statusFile', inExec ? 'exec.status is not a json-file' : 'only exec templates have {statusFile}');
  if (inExec) for (const p of EXEC_PLACEHOLDERS) m.set(p, undefined);
  if (key === 'exec.argv') {
    m.set('argv...', undefined);
    m.set('env...', cfg.exec.envArg ? undefined : '{env...} needs exec.envArg');
    m.set('readOnly...', cfg.exec.readOnlyArg ? undefined : '{readOnly...} needs exec.readOnlyArg');
  }
  if (key === 'exec.envArg') for (const p of ENV_ITEM) m.set(p, undefined);
  if (key === 'exec.readOnlyArg') for (const p of READONLY_ITEM) m.set(p, undefined);
  return m;
}

function templates(cfg: CommandBackendConfig): [string, readonly string[]][] {
  const out: [string, readonly string[]][] = [['exec.argv', cfg.exec.argv]];
  if (cfg.exec.envArg) out.push(['exec.envArg', cfg.exec.envArg]);
  if (cfg.exec.readOnlyArg) out.push(['exec.readOnlyArg', cfg.exec.readOnlyArg]);
  if (cfg.session) {
    out.push(['session.create', cfg.session.create], ['session.destroy', cfg.session.destroy]);
    if (cfg.session.put) out.push(['session.put', cfg.session.put]);
    if (cfg.session.get) out.push(['session.get', cfg.session.get]);
  }
  return out;
}

/** Every template of the file checked before anything runs: errors name the file and the key. */
export function checkTemplates(cfg: CommandBackendConfig, file: string): void {
  for (const [key, argv] of templates(cfg)) {
    const allowed = allowedAt(key, cfg);
    argv.forEach((arg, i) => {
      if (!ANY.test(arg)) return;
      const joinable = JOINABLE.get(key);
      if (joinable && !WHOLE.test(arg)) {
        const rest = arg.replace(EACH, (_m, name: string) => (joinable.includes(name) ? '' : `{${name}}`));
        if (!ANY.test(rest) && !/[{}]/.test(rest)) return;
        throw new SandcheckError(
          'CONFIG_INVALID',
          `${file}: ${key}[${i}]: only ${joinable.map((p) => `{${p}}`).join(' ')} may be joined with text in one argument, got "${arg}"`,
        );
      }
      const whole = WHOLE.exec(arg);
      if (!whole) throw new SandcheckError('CONFIG_INVALID', `${file}: ${key}[${i}]: a placeholder must be a whole argument, got "${arg}"`);
      const name = whole[1] ?? '';
      if (!allowed.has(name)) {
        throw new SandcheckError('CONFIG_INVALID', `${file}: ${key}[${i}]: unknown placeholder {${name}}`, {
          hint: `known here: ${[...allowed]
            .filter(([, why]) => why === undefined)
            .map(([p]) => `{${p}}`)
            .join(' ')}`,
        });
      }
      const why = allowed.get(name);
      if (why !== undefined) throw new SandcheckError('CONFIG_INVALID', `${file}: ${key}[${i}]: {${name}} is not set: ${why}`);
    });
  }
  cfg.version?.argv.forEach((arg, i) => {
    if (ANY.test(arg)) throw new SandcheckError('CONFIG_INVALID', `${file}: version.argv[${i}]: the version command takes no placeholders, got "${arg}"`);
  });
  if (!cfg.exec.argv.includes('{argv...}'))
    throw new SandcheckError('CONFIG_INVALID', `${file}: exec.argv: the template never runs the program (no {argv...})`);
}

/** The policy's values, each formatted as one argv element. */
export function policyValues(policy: Policy, timeoutMs: number, maxOutputBytes: number): Values {
  const r = policy.resources;
  return {
    timeoutMs: String(timeoutMs),
    timeoutSeconds: String(Math.max(1, Math.ceil(timeoutMs / 1000))),
    wallSeconds: String(r.wallSeconds),
    memoryMb: String(r.memoryMb),
    memoryBytes: String(r.memoryMb * 1024 * 1024),
    pidsMax: String(r.processes),
    cpus: String(r.cpus),
    cpuQuotaUs: String(Math.round(r.cpus * 100_000)),
    diskMb: String(r.diskMb),
    diskBytes: String(r.diskMb * 1024 * 1024),
    maxOutputBytes: String(maxOutputBytes),
  };
}

/** Expands a checked template; a value missing here is a harness bug (checkTemplates vouched for it). */
export function expand(template: readonly string[], values: Values): string[] {
  const out: string[] = [];
  for (const arg of template) {
    const name = WHOLE.exec(arg)?.[1];
    if (name === undefined) {
      // A joined per-item argument (checked by checkTemplates): its item values in place, one element.
      out.push(
        arg.replace(EACH, (m, p: string) => {
          const v = (ENV_ITEM as readonly string[]).includes(p) || (READONLY_ITEM as readonly string[]).includes(p) ? values[p as Scalar] : undefined;
          return v ?? m;
        }),
      );
      continue;
    }
    if (name.endsWith('...')) {
      const list = values[name as Splice];
      if (list === undefined) throw new SandcheckError('HARNESS', `command backend: no value for {${name}}`);
      out.push(...list);
      continue;
    }
    const v = values[name as Scalar];
    if (v === undefined) throw new SandcheckError('HARNESS', `command backend: no value for {${name}}`);
    out.push(v);
  }
  return out;
}
