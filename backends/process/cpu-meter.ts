import { mkdir, readdir, readFile, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CGROUP_NAMES } from '../shared/cgroup-names.js';

const CPUACCT_ROOT = '/sys/fs/cgroup/cpuacct';
const PREFIX = CGROUP_NAMES.controlMeter;

/**
 * Measurement only, no limit: a cgroup v1 cpuacct group per environment of the control, so CPU time
 * is read from outside (the cpu-quota probe needs it to show the control crossing). Where it cannot
 * be made (no root, no v1 cpuacct) the control simply reports no CPU time.
 */
export class CpuMeter {
  private dir: string | undefined;
  private tried = false;

  constructor(private readonly name: string) {}

  /** The group's directory, made on first use; undefined where it cannot be. */
  async ensure(): Promise<string | undefined> {
    if (this.tried) return this.dir;
    this.tried = true;
    const dir = join(CPUACCT_ROOT, `${PREFIX}${this.name}`);
    try {
      await mkdir(dir);
      this.dir = dir;
    } catch {
      this.dir = undefined;
    }
    return this.dir;
  }

  /** A wrapper that joins the group and then execs argv; joining is best effort and never blocks the program. */
  wrap(argv: readonly string[]): string[] {
    return this.dir === undefined ? [...argv] : ['sh', '-c', 'echo $$ > "$0/cgroup.procs" 2>/dev/null; exec "$@"', this.dir, ...argv];
  }

  async usageNs(): Promise<number | undefined> {
    if (this.dir === undefined) return undefined;
    const text = await readFile(join(this.dir, 'cpuacct.usage'), 'utf8').catch(() => undefined);
    const n = text === undefined ? NaN : Number(text.trim());
    return Number.isFinite(n) ? n : undefined;
  }

  get source(): string | undefined {
    return this.dir === undefined ? undefined : `cgroup v1 cpuacct (measurement only, no limit): ${this.dir.split('/').pop() ?? ''}`;
  }

  /** Idempotent; the group must be empty (destroy killed its processes first). */
  async remove(): Promise<void> {
    if (this.dir === undefined) return;
    const dir = this.dir;
    this.dir = undefined;
    // Whatever is still inside is this environment's own (it joined through wrap()); killed processes leave when reaped.
    for (const pid of await groupPids(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (let i = 0; i < 40; i++) {
      if (
        await rmdir(dir).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

async function groupPids(dir: string): Promise<number[]> {
  const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
}

/**
 * Crash recovery for the control's measurement groups: an empty `sandcheck-ctl-*` group older than
 * `maxAgeMs` (each lives for one environment, seconds) is removed. An empty group holds nothing to
 * kill, so only emptiness and age are needed, never a name pattern alone.
 */
export async function sweepEmptyCpuMeters(maxAgeMs = 10 * 60_000, dryRun = false): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(CPUACCT_ROOT).catch(() => [] as string[])) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(CPUACCT_ROOT, name);
    const st = await stat(dir).catch(() => undefined);
    if (!st || Date.now() - st.mtimeMs < maxAgeMs || (await groupPids(dir)).length > 0) continue;
    if (
      dryRun ||
      (await rmdir(dir).then(
        () => true,
        () => false,
      ))
    )
      removed.push(`cgroup v1 cpuacct ${name}`);
  }
  return removed;
}
