/**
 * npm run bench [-- --rounds N --backends a,b]: what sandcheck costs on top of the raw sandbox tool.
 *
 * For each backend and payload (`python3 -c pass`, and the secret-decoy-env probe's payload), three sides
 * run back to back in every round, in a rotating order after one warm-up round:
 *   raw      the bare tool with the backend's own flags (python3 / setpriv … bwrap … / docker run [--runtime runsc])
 *   adapter  the backend adapter alone: create, putFiles, exec, destroy
 *   harness  a Runner with that one probe (upload, bounded capture, canary scans, judge, teardown checks)
 * Figures are medians with min–max and n, ratios are of paired rounds, and every row carries the load
 * average: the machine is shared, so only ratios measured in one run mean anything.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Backend } from '../model/backend-contract.js';
import { DockerBackend } from '../backends/docker/index.js';
import { loadBackend } from '../backends/registry.js';
import { errorMessage } from '../core/errors.js';
import { CI_POLICY } from '../model/policy.js';
import { newRunId, openRunContext } from '../harness/run-context.js';
import { cliTimes } from './cli-times.js';
import { describeMachine, load, machine, peakRssMb, resetPeakRss } from './machine.js';
import { measurePayload } from './measure-backend.js';
import { parseOptions, USAGE } from './options.js';
import { PAYLOADS } from './payloads.js';
import { rawToolFor } from './raw-tools.js';
import { suiteTimes } from './suite-times.js';
import { consoleLines, markdown, suiteMarkdown, writeResults, type BackendResult, type BenchResults, type MeasuredBackend } from './report.js';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(benchDir);
const DOCKER_FAMILY = new Set(['docker-hardened', 'gvisor']);

const parsed = parseOptions(process.argv.slice(2));
if (parsed === 'help') {
  console.log(USAGE);
  process.exit(0);
}
if ('error' in parsed) {
  console.error(`${parsed.error}\n${USAGE}`);
  process.exit(2);
}
const opts = parsed;
const policy = CI_POLICY;
const runId = newRunId();
const log = (line: string): void => console.log(line);

/** Everything this run started, stopped in reverse order at the end or on SIGINT/SIGTERM. */
const cleanups: (() => Promise<unknown>)[] = [];
/** Registers a cleanup that can also be run early (then only once). */
function own(fn: () => Promise<unknown>): () => Promise<unknown> {
  let done: Promise<unknown> | undefined;
  const once = (): Promise<unknown> => (done ??= fn());
  cleanups.push(once);
  return once;
}
async function cleanUp(): Promise<void> {
  while (cleanups.length > 0)
    await cleanups
      .pop()?.()
      .catch((err: unknown) => console.error(`cleanup: ${errorMessage(err)}`));
}
let cleaning: Promise<void> | undefined;
const cleanUpOnce = (): Promise<void> => (cleaning ??= cleanUp());
let interrupted = false;
/** Stops a whole-suite CLI run in progress (it tears its own lab down on SIGTERM). */
const stopSuites = new AbortController();
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    interrupted = true;
    stopSuites.abort();
    console.error(`${sig}: stopping what this bench run started…`);
    void cleanUpOnce().finally(() => process.exit(130));
  });
}

/** One private dockerd (inside an empty network namespace of its own) serves every docker profile of the run. */
let daemon: { socketPath: string; startMs: number; storageDriver: string; startedFor: string } | undefined;

async function openBackend(name: string): Promise<{ backend: Backend; dockerSocket?: string }> {
  if (!DOCKER_FAMILY.has(name)) {
    const backend = await loadBackend(name);
    await backend.preflight();
    return { backend };
  }
  if (daemon) {
    const backend = await loadBackend(name, { socketPath: daemon.socketPath });
    if (!(backend instanceof DockerBackend)) throw new Error(`${name} is not a docker backend`);
    const handle = await backend.openRun({ runId });
    own(() => handle.close());
    return { backend, dockerSocket: daemon.socketPath };
  }
  const backend = await loadBackend(name);
  if (!(backend instanceof DockerBackend)) throw new Error(`${name} is not a docker backend`);
  await backend.preflight();
  const handle = await backend.openRun({ runId });
  own(() => handle.close());
  if (!handle.daemon) throw new Error('the docker backend did not start its private daemon');
  daemon = { socketPath: handle.daemon.socketPath, startMs: handle.readyMs, storageDriver: handle.daemon.storageDriver, startedFor: name };
  return { backend, dockerSocket: daemon.socketPath };
}

async function measure(name: string): Promise<BackendResult> {
  resetPeakRss();
  let opened;
  try {
    opened = await openBackend(name);
  } catch (err) {
    return { name, available: false, reason: errorMessage(err) };
  }
  const { backend, dockerSocket } = opened;
  const run = await openRunContext(runId);
  const disposeRun = own(() => run.dispose());
  // The raw tools' own directory: traversable (0711) for the box uid, unlike the run's 0700 scratch directory.
  const rawDir = await mkdtemp(join(tmpdir(), `sandcheck-bench-${runId}-`));
  await chmod(rawDir, 0o711);
  own(() => rm(rawDir, { recursive: true, force: true }));
  const raw = rawToolFor(backend, { runId, scratchDir: rawDir, policy, ...(dockerSocket ? { dockerSocket } : {}) });
  const result: MeasuredBackend = { name, available: true, description: backend.description, rawTool: raw.describe, peakRssMb: undefined, rows: [] };
  if (dockerSocket && daemon) result.daemon = { startMs: daemon.startMs, storageDriver: daemon.storageDriver, startedFor: daemon.startedFor };
  try {
    for (const payload of PAYLOADS) {
      log(`${name}: ${payload.name} (${opts.rounds} rounds after a warm-up)…`);
      result.rows.push(await measurePayload({ backend, policy, run, raw, rounds: opts.rounds, verbose: opts.verbose, log }, payload));
    }
  } finally {
    result.peakRssMb = peakRssMb();
    await disposeRun();
  }
  return result;
}

const m = machine();
const startLoad = load();
log(`sandcheck bench: ${describeMachine(m)}; load ${startLoad.join(' / ')}; policy ${policy.name}; run ${runId}`);
const backends: BackendResult[] = [];
try {
  for (const name of opts.backends) {
    if (interrupted) break;
    const r = await measure(name);
    backends.push(r);
    if (r.available) for (const line of consoleLines(r)) log(line);
    else log(`${name}: not measured: ${r.reason}`);
  }
} catch (err) {
  // After an interrupt the daemon is going away under the measurement: only the cleanup matters then.
  if (!interrupted) {
    await cleanUpOnce();
    throw err;
  }
} finally {
  await cleanUpOnce();
}
if (interrupted) process.exit(130);
log('CLI wall time…');
const cli = await cliTimes(root, Math.max(opts.rounds, 5));
log('Whole suites through the CLI…');
// The floods are the harness's heaviest output (its own peak RSS); each suite starts its own lab (and dockerd).
const SUITES = [
  { label: 'full suite', backend: 'bwrap' },
  { label: 'floods (stdout-flood, stderr-flood, long-line)', backend: 'bwrap', only: ['stdout-flood', 'stderr-flood', 'long-line'] },
  { label: 'full suite', backend: 'docker-hardened' },
  { label: 'full suite', backend: 'gvisor' },
].filter((s) => opts.backends.includes(s.backend));
const suites = interrupted ? { unavailable: 'interrupted' } : await suiteTimes(root, policy, SUITES, stopSuites.signal);
for (const line of suiteMarkdown(suites)) log(line);
const results: BenchResults = {
  schema: 'sandcheck-bench/1',
  at: new Date().toISOString(),
  machine: m,
  machineText: describeMachine(m),
  policy: policy.name,
  rounds: opts.rounds,
  load: { start: startLoad, end: load() },
  backends,
  cli,
  suites,
  // VmHWM was reset before each backend: the run's peak is the largest of the per-backend peaks.
  peakRssMb: Math.max(peakRssMb() ?? 0, ...backends.map((b) => (b.available ? (b.peakRssMb ?? 0) : 0))),
};
log('');
log(markdown(results));
await writeResults(join(benchDir, 'results.json'), join(benchDir, 'results.md'), results);
log(`wrote bench/results.json and bench/results.md`);
