import { findBinary } from '../../core/find-binary.js';
import { probeLabSupport } from '../../lab/lab-session.js';

/** Why the tests that start a private dockerd inside a lab cannot run here, or undefined when they can. */
export async function dockerLabSkipReason(): Promise<string | undefined> {
  if (process.platform !== 'linux') return `Docker backends need Linux (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'needs root (a lab namespace and a private dockerd inside it)';
  if (!(await findBinary('dockerd'))) return 'dockerd is not installed (apt-get install -y docker.io)';
  const lab = await probeLabSupport();
  return lab.available ? undefined : `no lab: ${lab.reason}`;
}
