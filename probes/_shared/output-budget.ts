import { exitEvidence, payloadReport, unlessAttempted } from '../../model/judge.js';
import { outside } from '../../model/evidence.js';
import type { Judgement, Observation, ProbeContext } from '../../model/probe.js';
import { endedByKill, ranOnAfterExec, stopCause } from '../_shared/judges.js';

/**
 * Output budget judge shared by the stdout, stderr and long-line floods. It rests on the bytes the
 * harness received, never on the backend's truncation flag: held needs the flood to have reached
 * at least half the budget and its last bytes to be the payload's own pattern (the answer to this
 * execution's challenge, repeated).
 */
export function judgeOutputBudget(obs: Observation, ctx: ProbeContext, attempted: number, stream: 'stdout' | 'stderr'): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const { exec } = obs;
  const cap = ctx.policy.output.maxBytes;
  const got = exec.stdout.bytes + exec.stderr.bytes;
  const pattern = obs.token('flood');
  // The capture keeps a head and a tail (the tail may be empty for short output): the last bytes are the tail's, or the head's.
  const last = Buffer.from(exec[stream].tailBase64 || exec[stream].headBase64, 'base64')
    .subarray(-4096)
    .toString('latin1');
  const ownFlood = last.includes(pattern);
  const evidence = [
    outside(
      'output-capture',
      `the harness received ${got} bytes of stdout+stderr (policy cap ${cap}); the last bytes of ${stream} ${ownFlood ? 'are' : 'are not'} the payload's flood pattern; stdout sha256 ${exec.stdout.sha256}, stderr sha256 ${exec.stderr.sha256}`,
    ),
    outside('stop-cause', stopCause(obs)),
    exitEvidence(exec),
    payloadReport(exec),
  ];
  if (got > cap) {
    const stopped = exec.killedBy === 'harness-output-ceiling' ? '; the harness had to stop reading and kill it' : '';
    return { verdict: 'crossed', reason: `${got} bytes of output reached the controller, past the ${cap}-byte budget${stopped}`, evidence };
  }
  if (exec.killedBy !== 'none')
    return { verdict: 'inconclusive', reason: `the harness stopped the flood (${exec.killedBy}) at ${got} bytes, before the output budget showed`, evidence };
  if (!ownFlood)
    return { verdict: 'inconclusive', reason: `the last bytes of ${stream} are not the payload's flood pattern: the flood was not what came out`, evidence };
  if (got < cap / 2) {
    return {
      verdict: 'inconclusive',
      reason: `only ${got} bytes came out, less than half the ${cap}-byte budget: something other than the output limit stopped the flood (${stopCause(obs)})`,
      evidence,
    };
  }
  // A budget stops the program: one that passed on only the cap and let it write on to its end (or exit on its own)
  // dropped the output, it did not stop the flood.
  if (obs.finished || !endedByKill(exec)) {
    return {
      verdict: 'inconclusive',
      reason: `the output was cut at ${got} bytes, but the flood was not stopped: it ${obs.finished ? 'wrote on to its end' : `ended with ${stopCause(obs)}, no kill`}`,
      evidence,
    };
  }
  const running = ranOnAfterExec(obs);
  if (running) return { ...running, evidence: [...running.evidence, ...evidence] };
  return { verdict: 'held', reason: `output stopped at ${got} bytes, within the ${cap}-byte budget, while the payload tried to write ${attempted}`, evidence };
}
