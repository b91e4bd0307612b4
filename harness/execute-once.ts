import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Environment } from '../model/backend-contract.js';
import { scanDecoyEvents, scanEach } from '../lab/canary-scan.js';
import { findProcessesWithCmdline, killPids } from '../lab/process-scan.js';
import { execWithDeadline, payloadFiles, type ExecHow, type ExecSetting } from './exec-payload.js';
import { runExportStage, type ExporterChoice } from './export-stage.js';
import { watchHeartbeat } from './host-observers.js';
import { readHostFiles } from '../lab/host-read.js';
import { payloadStillRunning } from './still-running.js';
import { acquireHostWatch } from './host-watch-lock.js';
import { carriersAfterDestroy, survivorName } from '../lab/kernel-carriers.js';
import { hitWhere, readWhole, workspaceFiles } from '../lab/left-in-box.js';
import type { Policy } from '../model/policy.js';
import type { Observation, ProbeContext, ProbeSpec } from '../model/probe.js';
import { watchForProcess } from './process-watch.js';
import { listWorkspace } from '../probes/_shared/task/workspace-listing.js';
import { readDaemonEvents, type RunContext } from './run-context.js';
import { describeTracked, ExecTracker } from './exec-tracker.js';

/** What one execution needs from its runner. */
export interface OnceSetting {
  run: RunContext;
  policy: Policy;
  exporter: ExporterChoice;
  setting: ExecSetting;
  createEnvironment(): Promise<Environment>;
  /** Run in the fresh environment before anything is put there: throws to refuse it; returns a line of outside evidence. */
  beforePayload?(env: Environment): Promise<string | undefined>;
}

/** One fresh environment: create, put, exec under the harness deadline, get, destroy, then look for what survived. */
export async function executeOnce(once: OnceSetting, probe: ProbeSpec, ctx: ProbeContext, how: ExecHow): Promise<Observation> {
  const { policy, run } = once;
  let env: Environment | undefined;
  let obs: Observation | undefined;
  const contactsBefore = run.hostDecoys.contacts().length;
  const survivor = probe.watchSurvivor ? survivorName(ctx.nonce, probe.kernelCarriers === 'marked-program') : undefined;
  // Held until the box is gone: another run's disk-fill would count as this box's drop in free disk.
  const releaseHost =
    probe.kind === 'security' && probe.watchHost ? await acquireHostWatch(run.runId, once.setting.signal ? { signal: once.setting.signal } : {}) : undefined;
  // The host's own record of this execution's processes, for the probes whose verdict rests on them.
  let tracked =
    probe.confirmStopped === true || probe.watchSurvivor === true || probe.sampleProcesses === true || probe.readsCgroup === true
      ? new ExecTracker(ctx.nonce, survivor ? [survivor] : [])
      : undefined;
  let createdAt = performance.now();
  const createdWallMs = Date.now();
  try {
    env = await once.createEnvironment();
    if (env.programInUserSpaceKernel === true && once.setting.adapterCounters !== true) tracked = undefined;
    const checkFrom = performance.now();
    const placement = await once.beforePayload?.(env);
    // Cold start is create → the payload's first byte: the placement check's own program is not part of it.
    createdAt += performance.now() - checkFrom;
    const prepared = await payloadFiles(probe, ctx, how.files);
    await env.putFiles(prepared.files);
    const hostReadPaths = env.hostWorkspace ? probe.hostRead : undefined;
    const hostBefore = hostReadPaths && env.hostWorkspace ? await readHostFiles(env.hostWorkspace, hostReadPaths) : undefined;
    const execFrom = Date.now();
    // A probe that samples nothing else asks the adapter's pids itself: a named program must be gone too.
    const names = probe.confirmStopped === true && probe.sampleProcesses !== true && env.hostPids ? env.hostPids.bind(env) : undefined;
    // Asking a runtime for its pids costs a /proc walk or an API call: for a program that sleeps or spins for seconds,
    // twice a second is enough, and the backend's own wall-clock kill must not wait behind it on a busy machine.
    tracked?.start(names ? 500 : undefined, names);
    const watch = survivor ? watchForProcess(survivor, { release: probe.releaseWhenSeen === 'marked' }) : undefined;
    const exec = await execWithDeadline(once.setting, env, probe, ctx, tracked ? { ...how, tracker: tracked } : how, createdAt, prepared).finally(() =>
      watch?.stop(),
    );
    const seenAlive = watch ? await watch.stop() : undefined;
    // While the box still exists: which of its program's namespaces and cgroups hold nothing else.
    tracked?.checkScopes();
    const runningAfter = probe.confirmStopped ? await payloadStillRunning(ctx.nonce, 1000, tracked) : undefined;
    tracked?.stopAsking();
    const wanted = typeof probe.artifacts === 'function' ? probe.artifacts(ctx) : probe.artifacts;
    const artifacts = wanted ? await env.getFiles(wanted, { maxBytesPerFile: policy.exports.maxFileMb * 1024 * 1024 }) : [];
    const hostAfter = hostReadPaths && env.hostWorkspace ? await readHostFiles(env.hostWorkspace, hostReadPaths) : undefined;
    // A task's declared outputs are checked against what the host sees in the workspace, not against what was fetched.
    const workspace =
      probe.kind === 'task' && env.hostWorkspace ? await listWorkspace(env.hostWorkspace, new Set(prepared.files.map((f) => f.path))) : undefined;
    const canaries = once.setting.canaries;
    const scanned = (files: { where: string; bytes: Uint8Array }[]) => scanEach(files, canaries).map((h) => ({ label: h.label, where: hitWhere(h.where, h) }));
    const artifactHits = scanned(artifacts.flatMap((f) => (f.content ? [{ where: `artifact:${f.path}`, bytes: f.content }] : [])));
    if (env.hostWorkspace) {
      // An artifact read whole is scanned above: the workspace scan does not read it a second time.
      const skip = new Set([...prepared.files.map((f) => f.path), ...artifacts.filter(readWhole).map((f) => f.path)]);
      for await (const file of workspaceFiles(env.hostWorkspace, skip)) artifactHits.push(...scanned([file]));
    }
    const decoyHits = run.labTraffic ? scanDecoyEvents((await run.labTraffic(execFrom - 50)).events, run.canaries.all) : [];
    obs = {
      exec: exec.observation,
      attempted: exec.attempted,
      finished: exec.finished,
      token: prepared.proof.token,
      ...(seenAlive !== undefined ? { survivorSeenAlive: seenAlive } : {}),
      ...(runningAfter && runningAfter.length > 0 ? { runningAfterExec: runningAfter } : {}),
      ...(exec.positiveControl ? { positiveControl: exec.positiveControl } : {}),
      ...(hostBefore && hostAfter ? { hostRead: { before: hostBefore, after: hostAfter } } : {}),
      canaryHits: [...exec.canaryHits, ...artifactHits, ...decoyHits.map((h) => ({ label: h.label, where: hitWhere(h.where, h) }))],
      artifacts,
      leftovers: [],
      survivors: [],
      socketContacts: 0,
      ...(placement !== undefined ? { placement } : {}),
      ...(workspace ? { workspace } : {}),
    };
    if (wanted && wanted.length > 0) {
      obs.export = await runExportStage({
        files: artifacts,
        policy,
        exportRoot: join(run.scratchDir, `export-${ctx.nonce}`),
        choice: once.exporter,
        canaries: run.canaries.all.map((c) => c.value),
        confineTo: run.scratchDir,
        // The naive exporter may read only inside the run's scratch directory (its safety net).
        ...(env.hostWorkspace?.startsWith(`${run.scratchDir}/`) ? { hostWorkspace: env.hostWorkspace } : {}),
      });
    }
  } finally {
    try {
      if (env) {
        const left = await env.destroy();
        if (obs) obs.leftovers = left.items;
      }
    } finally {
      tracked?.stop();
      await releaseHost?.();
    }
  }
  const contacts = run.hostDecoys
    .contacts()
    .slice(contactsBefore)
    .filter((c) => c.firstBytes.includes(ctx.nonce));
  obs.socketContacts = contacts.filter((c) => c.decoy === 'daemon-socket').length;
  obs.decoyContacts = {};
  for (const c of contacts) obs.decoyContacts[c.decoy] = (obs.decoyContacts[c.decoy] ?? 0) + 1;
  if (run.watchDaemons.length > 0) {
    // Each watched daemon's own log of this execution (a box's call names the nonce); read only.
    const until = Date.now();
    obs.daemonEvents = await Promise.all(
      run.watchDaemons.map(async (daemon) => ({ daemon, ...(await readDaemonEvents(daemon, createdWallMs - 1000, until, ctx.nonce)) })),
    );
  }
  obs.heartbeat = await watchHeartbeat(join(ctx.hostProbeDir, 'heartbeat'));
  // Only a payload told to leave a survivor names one (survivorName): the others skip the /proc scan.
  const survivors = survivor ? await findProcessesWithCmdline(survivor) : [];
  const byName = new Set(survivors.map((p) => p.pid));
  // And by identity and place: every process the host tied to this execution while it ran, whatever its argv says
  // now, and any process in a namespace or cgroup of this execution's program alone.
  const hidden = survivor && tracked ? (await stillAlive(tracked)).filter((t) => !byName.has(t.pid)) : [];
  obs.survivors = [
    ...survivors.map((p) => `process ${p.pid} (${p.command}) still ran after destroy; killed by the harness`),
    ...hidden.map((t) => `process ${describeTracked(t)}, tied to this execution while it ran, still alive after destroy; killed by the harness`),
  ];
  killPids([...survivors.map((p) => p.pid), ...hidden.map((t) => t.pid)]);
  const usk = survivor ? obs.exec.userSpaceKernel : undefined;
  const after = usk ? await carriersAfterDestroy(usk) : undefined;
  if (after) {
    obs.carriersAfterDestroy = after;
    killPids(after.filter((c) => c.running).map((c) => c.pid));
  }
  return obs;
}

/** Tracked processes and processes in the program's own scopes still alive after destroy, given a second to finish dying. */
async function stillAlive(tracker: ExecTracker): Promise<ReturnType<ExecTracker['alive']>> {
  const look = () => {
    const alive = tracker.alive();
    const pids = new Set(alive.map((t) => t.pid));
    return [...alive, ...tracker.inScopes().filter((t) => !pids.has(t.pid))];
  };
  const until = Date.now() + 1000;
  let alive = look();
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 100));
    alive = look();
  }
  return alive;
}
