import { readFile, rm, stat } from 'node:fs/promises';
import { CANARY_PREFIX } from '../../lab/canaries.js';
import { canaryCrossing, exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';

/** The System V key both boxes derive from the nonce (as listener.py and payload.py do). */
export const shmKey = (nonce: string): number => 0x50000000 | Number.parseInt(nonce.slice(0, 7), 16);

/**
 * What a box left in the host's own IPC namespace and /dev/shm (a box sharing them), removed: only the
 * segment with this execution's key and the file named with its nonce.
 */
export async function removeHostShm(ctx: ProbeContext): Promise<string[]> {
  const found: string[] = [];
  const key = shmKey(ctx.nonce);
  const table = await readFile('/proc/sysvipc/shm', 'utf8').catch(() => '');
  if (
    table
      .split('\n')
      .slice(1)
      .some((l) => Number.parseInt(l.trim().split(/\s+/)[0] ?? '', 10) === key)
  ) {
    const { execa } = await import('execa');
    await execa('ipcrm', ['-M', String(key)], { reject: false });
    found.push(`a System V segment with this execution's key 0x${key.toString(16)} was in the host's IPC namespace (removed)`);
  }
  const file = `/dev/shm/sandcheck-${ctx.nonce}`;
  if (
    await stat(file).then(
      () => true,
      () => false,
    )
  ) {
    await rm(file, { force: true });
    found.push(`/dev/shm/sandcheck-<nonce> was in the host's /dev/shm (removed)`);
  }
  return found;
}

/** Crossed when the other box's secret came out of this one; held only when the other box was up and this box's own segment read back. */
export function judgeIpcCovert(obs: Observation): Judgement {
  const residue = (obs.hostResidue ?? []).map((r) => outside('host-ipc', r, 'host'));
  const leaked = canaryCrossing(obs);
  if (leaked)
    return {
      verdict: 'crossed',
      reason: `two boxes of the run shared memory: ${leaked.reason}`,
      evidence: [...leaked.evidence, ...residue, exitEvidence(obs.exec)],
    };
  const notRun = unlessAttempted(obs, true);
  if (notRun) return notRun;
  const evidence = [outside('canary-scan', "the other box's secret did not come out of this one"), ...residue, exitEvidence(obs.exec), payloadReport(obs.exec)];
  if (obs.companionReady !== true)
    return { verdict: 'inconclusive', reason: 'the other box never announced that it was up: there was nothing to read', evidence };
  // The other box's own word on what it made only withholds a verdict: with nothing made there was nothing to read.
  const made = ['sysv segment', '/dev/shm file'].filter((m) => (obs.companionAnnounced ?? '').includes(m));
  if (made.length === 0)
    return {
      verdict: 'inconclusive',
      reason: `the other box was up but made neither a System V segment nor a /dev/shm file (${JSON.stringify((obs.companionAnnounced ?? '').slice(0, 80))}): there was nothing to read`,
      evidence,
    };
  if (obs.positiveControl?.seen !== true)
    return { verdict: 'inconclusive', reason: "this box's own segment (the positive control) never read back through the same routine", evidence };
  const what =
    made.length === 2
      ? 'System V segment and /dev/shm file were'
      : made[0] === 'sysv segment'
        ? 'System V segment was (it made no /dev/shm file)'
        : '/dev/shm file was (it made no System V segment)';
  return { verdict: 'held', reason: `the other box's ${what} out of this box's reach`, evidence };
}

export const ipcCovert: SecurityProbe = {
  kind: 'security',
  id: 'ipc-covert',
  title: 'covert channel between two boxes of the run through System V shared memory and /dev/shm',
  category: 'lifecycle',
  policyItem: 'lifecycle.freshEnvironment',
  severity: 'medium',
  payload: 'ipc-covert',
  remediation: 'Give every box its own IPC namespace and its own /dev/shm (never --ipc=host or a shared /dev/shm mount).',
  attack: ['T1559', 'T1021'],
  cwe: ['CWE-668', 'CWE-514'],
  positiveControl: 'file',
  companion: {
    payload: 'ipc-covert',
    args: (ctx) => ({
      secret: ctx.canaries.all.find((c) => c.label === 'companion:shared memory')?.value ?? '',
      ceilingSeconds: ctx.policy.resources.wallSeconds * 2 + 10,
    }),
  },
  args: () => ({ canaryPrefix: CANARY_PREFIX }),
  hostCleanup: removeHostShm,
  judge: judgeIpcCovert,
};
