import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadBackend } from '../backends/registry.js';
import { BwrapBackend } from '../backends/bwrap/index.js';
import { loadPolicy } from '../harness/policy-loader.js';
import { newRunId } from '../harness/run-context.js';
import { load } from './machine.js';
import { passPayload } from './payloads.js';
import { rawToolFor } from './raw-tools.js';
import { spawnTimed } from './spawn-timed.js';
import { pairedRatios, summarize, type Summary } from './stats.js';

export interface OneProbeRun {
  /** The CLI's command line (the --out directory is a fresh one each round). */
  command: string;
  rawTool: string;
  cli: Summary;
  raw: Summary;
  /** CPU of the CLI run and of the raw tool, with what each waited for (spawn-timed.ts cpuMs). */
  cliCpu: Summary;
  rawCpu: Summary;
  /** Medians of paired rounds: CLI over raw. */
  ratio: Summary;
  /** The verdict of every CLI round (they must all agree). */
  verdicts: string[];
  problems: string[];
  load: { before: number[]; after: number[] };
}

/**
 * The whole CLI for one probe, start to exit (`sandcheck run --backend bwrap --policy ci --only identity-uid --out
 * FRESH`), against the bare tool doing the same box: `setpriv … bwrap …` with the backend's flags and its seccomp
 * filter, `python3 -c pass` in a fresh directory. Root and bwrap needed. One warm-up round, then `rounds` paired ones
 * in alternating order.
 */
export async function oneProbeRunTimes(root: string, rounds: number, probe = 'identity-uid'): Promise<OneProbeRun | { unavailable: string }> {
  const main = join(root, 'dist', 'cli', 'main.js');
  if (!existsSync(main)) return { unavailable: `${main} is missing: build first (npm run build)` };
  const backend = await loadBackend('bwrap');
  try {
    await backend.preflight();
  } catch (err) {
    return { unavailable: `bwrap cannot run here: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!(backend instanceof BwrapBackend)) return { unavailable: 'the bwrap backend did not load as BwrapBackend' };
  const policy = await loadPolicy('ci');
  const dir = await mkdtemp(join(tmpdir(), 'sandcheck-bench-cli-'));
  // Traversable for the raw box's uid (its work directory is below).
  await chmod(dir, 0o711);
  const raw = rawToolFor(backend, { runId: newRunId(), scratchDir: dir, policy, seccomp: true });
  const argvFor = (out: string): string[] => [
    process.execPath,
    '--max-semi-space-size=1',
    main,
    'run',
    '--backend',
    'bwrap',
    '--policy',
    'ci',
    '--only',
    probe,
    '--out',
    out,
  ];
  const env = { PATH: process.env['PATH'] ?? '/usr/bin:/bin', NO_COLOR: '1' };
  const cli: number[] = [];
  const rawMs: number[] = [];
  const cliCpu: number[] = [];
  const rawCpu: number[] = [];
  const verdicts: string[] = [];
  const problems = new Set<string>();
  const before = load();
  try {
    for (let round = -1; round < rounds; round++) {
      const sides = [
        async (): Promise<void> => {
          const out = join(dir, `out-${round + 1}`);
          const r = await spawnTimed(argvFor(out), { env, cwd: root, timeoutMs: 120_000 });
          if (r.exitCode !== 0) problems.add(`cli exit ${r.exitCode ?? r.signal}: ${r.stderrHead.trim().split('\n').at(-1) ?? ''}`);
          const card = JSON.parse(await readFile(join(out, 'security.json'), 'utf8').catch(() => '{}')) as { results?: { verdict?: string }[] };
          if (round >= 0) {
            cli.push(r.ms);
            cliCpu.push(r.cpuMs);
            verdicts.push(card.results?.[0]?.verdict ?? 'no card');
          }
          await rm(out, { recursive: true, force: true });
        },
        async (): Promise<void> => {
          const r = await raw.run(await passPayload.prepare(), round + 1);
          if (r.exitCode !== 0) problems.add(`raw exit ${r.exitCode ?? r.signal}: ${r.stderrHead.trim().split('\n')[0] ?? ''}`);
          if (round >= 0) {
            rawMs.push(r.ms);
            rawCpu.push(r.cpuMs);
          }
        },
      ];
      const order = round % 2 === 0 ? sides : [...sides].reverse();
      for (const side of order) await side();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
    await (backend as { dispose?: () => Promise<void> }).dispose?.();
  }
  return {
    command: `sandcheck run --backend bwrap --policy ci --only ${probe} --out FRESH`,
    rawTool: raw.describe,
    cli: summarize(cli),
    raw: summarize(rawMs),
    cliCpu: summarize(cliCpu),
    rawCpu: summarize(rawCpu),
    ratio: summarize(pairedRatios(cli, rawMs)),
    verdicts: [...new Set(verdicts)],
    problems: [...problems],
    load: { before, after: load() },
  };
}
