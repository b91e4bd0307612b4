import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { load } from './machine.js';
import { spawnTimed } from './spawn-timed.js';
import { summarize, type Summary } from './stats.js';

export interface CliRow {
  command: string;
  wallMs: Summary;
  problems: string[];
}

export interface CliTimes {
  load: { before: number[]; after: number[] };
  rows: CliRow[];
}

/** Wall time of the built CLI's fast commands, with bare `node -e 0` as the floor; rounds interleaved after a warm-up. */
export async function cliTimes(root: string, rounds: number): Promise<CliTimes | { unavailable: string }> {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) return { unavailable: `${main} is missing: build first (npx tsc -p tsconfig.build.json)` };
  const commands: { label: string; argv: string[] }[] = [
    { label: 'node -e 0 (floor)', argv: [process.execPath, '-e', '0'] },
    { label: 'sandcheck --version', argv: [process.execPath, main, '--version'] },
    { label: 'sandcheck list', argv: [process.execPath, main, 'list'] },
  ];
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', NO_COLOR: '1' };
  const times = commands.map(() => [] as number[]);
  const problems = commands.map(() => new Set<string>());
  const before = load();
  for (let round = -1; round < rounds; round++) {
    for (let k = 0; k < commands.length; k++) {
      const i = (k + Math.max(round, 0)) % commands.length;
      const c = commands[i];
      if (!c) continue;
      const r = await spawnTimed(c.argv, { env, cwd: root });
      if (r.exitCode !== 0) problems[i]?.add(`exit ${r.exitCode ?? r.signal}: ${r.stderrHead.trim().split('\n')[0] ?? ''}`);
      if (round >= 0) times[i]?.push(r.ms);
    }
  }
  return {
    load: { before, after: load() },
    rows: commands.map((c, i) => ({ command: c.label, wallMs: summarize(times[i] ?? []), problems: [...(problems[i] ?? [])] })),
  };
}
