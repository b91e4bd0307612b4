import { join } from 'node:path';
import { DEFAULT_LAB_DAEMON_ROOT, startLabDaemon, type LabDaemon } from '../../backends/docker/index.js';
import { packageRoot } from '../../core/paths.js';
import { openRunContext, type RunContext } from '../../harness/run-context.js';
import { openLab, type LabSession } from '../../lab/lab-session.js';

/** A run with a lab of its own and a Docker daemon started inside that lab (the docker integration tests). */
export interface DaemonRun {
  lab: LabSession;
  run: RunContext;
  daemon: LabDaemon;
}

export async function openDaemonRun(runId: string): Promise<DaemonRun> {
  const lab = await openLab(runId, packageRoot());
  const run = await openRunContext(runId, { lab });
  const daemon = await startLabDaemon({ runId, netnsPath: lab.handle.netnsPath, dir: join(DEFAULT_LAB_DAEMON_ROOT, runId), env: run.controllerEnv });
  return { lab, run, daemon };
}

/** Disposes the run, stops the daemon and closes the lab; returns what the daemon's stop found left behind. */
export async function closeDaemonRun(d: { [K in keyof DaemonRun]?: DaemonRun[K] | undefined }): Promise<string[]> {
  await d.run?.dispose().catch(() => undefined);
  const stopped = await d.daemon?.stop();
  await d.lab?.close().catch(() => undefined);
  return stopped?.leftovers ?? [];
}
