import { existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { load } from './machine.js';
import { spawnTimed } from './spawn-timed.js';
import { summarize, type Summary } from './stats.js';

export interface CliRow {
  command: string;
  wallMs: Summary;
  /** CPU of the command and what it waited for (spawn-timed.ts cpuMs). */
  cpuMs: Summary;
  problems: string[];
}

export interface CliTimes {
  load: { before: number[]; after: number[] };
  rows: CliRow[];
}

interface Timed {
  label: string;
  argv: string[];
  /** Exit codes that are a normal answer (doctor: 1 = not ready here). */
  ok?: readonly number[];
}

/** Runs each command once per round, in a rotating order, after one warm-up round; wall time to exit. */
export async function timeCommands(
  commands: readonly Timed[],
  rounds: number,
  options: { env: Record<string, string>; cwd: string; before?: (round: number) => Promise<void> },
): Promise<CliTimes> {
  const times = commands.map(() => [] as number[]);
  const cpu = commands.map(() => [] as number[]);
  const problems = commands.map(() => new Set<string>());
  const before = load();
  for (let round = -1; round < rounds; round++) {
    for (let k = 0; k < commands.length; k++) {
      const i = (k + Math.max(round, 0)) % commands.length;
      const c = commands[i];
      if (!c) continue;
      const r = await spawnTimed(c.argv, { env: options.env, cwd: options.cwd });
      if (!(c.ok ?? [0]).includes(r.exitCode ?? -1)) problems[i]?.add(`exit ${r.exitCode ?? r.signal}: ${r.stderrHead.trim().split('\n')[0] ?? ''}`);
      if (round >= 0) {
        times[i]?.push(r.ms);
        cpu[i]?.push(r.cpuMs);
      }
    }
  }
  return {
    load: { before, after: load() },
    rows: commands.map((c, i) => ({
      command: c.label,
      wallMs: summarize(times[i] ?? []),
      cpuMs: summarize(cpu[i] ?? []),
      problems: [...(problems[i] ?? [])],
    })),
  };
}

/**
 * Wall time of the built CLI's start-up per command, with bare `node -e 0` as the floor: through `node dist/cli/main.js`,
 * through the package's bin (its shebang, as an installed `sandcheck` runs) and through `npx sandcheck` (npm's own
 * start-up on top). `doctor` checks the machine (every backend, the lab): its row is start-up plus those checks.
 */
export async function cliTimes(root: string, rounds: number): Promise<CliTimes | { unavailable: string }> {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) return { unavailable: `${main} is missing: build first (npm run build)` };
  const bin = join(root, 'node_modules', '.bin', 'sandcheck');
  const node = process.execPath;
  const npx = join(node, '..', 'npx');
  const commands: Timed[] = [
    { label: 'node -e 0 (floor)', argv: [node, '-e', '0'] },
    { label: 'node dist/cli/main.js --version', argv: [node, main, '--version'] },
    { label: 'node dist/cli/main.js --help', argv: [node, main, '--help'] },
    { label: 'node dist/cli/main.js list', argv: [node, main, 'list'] },
    { label: 'node dist/cli/main.js doctor', argv: [node, main, 'doctor'], ok: [0, 1] },
  ];
  // The checkout's own bin (its `sandcheck: file:.` link), when it is this checkout's and not another one's.
  const own = existsSync(bin) && realpathSync(bin) === realpathSync(main);
  if (own) commands.push({ label: 'sandcheck --version (the bin)', argv: [bin, '--version'] });
  if (own && existsSync(npx))
    commands.push(
      { label: 'npx sandcheck --version', argv: [npx, '--no-install', 'sandcheck', '--version'] },
      { label: 'npx sandcheck list', argv: [npx, '--no-install', 'sandcheck', 'list'] },
      { label: 'npx sandcheck doctor', argv: [npx, '--no-install', 'sandcheck', 'doctor'], ok: [0, 1] },
    );
  // npx reads the user's npm configuration under HOME; nothing else of the caller's environment is passed.
  const env = { PATH: `${join(node, '..')}:${process.env['PATH'] ?? '/usr/bin:/bin'}`, NO_COLOR: '1', HOME: process.env['HOME'] ?? '/root' };
  return timeCommands(commands, rounds, { env, cwd: root });
}
