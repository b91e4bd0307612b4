import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { Judgement, Observation, ProbeContext, SecurityProbe } from '../../harness/model/probe.js';

/** Output budget judge shared by the stdout, stderr and long-line floods. */
export function judgeOutputBudget(obs: Observation, ctx: ProbeContext, attempted: number): Judgement {
  const notRun = unlessAttempted(obs, false);
  if (notRun) return notRun;
  const { exec } = obs;
  const cap = ctx.policy.output.maxBytes;
  const got = exec.stdout.bytes + exec.stderr.bytes;
  const evidence = [
    outside('output-capture', `the harness received ${got} bytes of stdout+stderr (policy cap ${cap}); stdout sha256 ${exec.stdout.sha256}, stderr sha256 ${exec.stderr.sha256}`),
    exitEvidence(exec),
    payloadReport(exec),
  ];
  if (got > cap) {
    const stopped = exec.killedBy === 'harness-output-ceiling' ? '; the harness had to stop reading and kill it' : '';
    return { verdict: 'crossed', reason: `${got} bytes of output reached the controller, past the ${cap}-byte budget${stopped}`, evidence };
  }
  if (got < cap / 2 && exec.backendReport.outputTruncated !== true) {
    return { verdict: 'inconclusive', reason: `only ${got} bytes came out and the backend did not report truncation: the flood may never have happened`, evidence };
  }
  return { verdict: 'held', reason: `output stopped at ${got} bytes, within the ${cap}-byte budget, while the payload tried to write ${attempted}`, evidence };
}

const FLOOD = 64 * 1024 * 1024;
const LINE = 16 * 1024 * 1024;

export const stderrFlood: SecurityProbe = {
  kind: 'security',
  id: 'stderr-flood',
  title: 'write 64 MiB to stderr against a 2 MB output budget',
  category: 'resources',
  policyItem: 'output.maxBytes',
  severity: 'medium',
  payload: 'output-flood',
  remediation: 'Count stderr in the same output budget as stdout and stop the program when it is spent.',
  args: () => ({ stream: 'stderr', mode: 'flood', bytes: FLOOD }),
  judge: (obs, ctx) => judgeOutputBudget(obs, ctx, FLOOD),
};

export const longLine: SecurityProbe = {
  kind: 'security',
  id: 'long-line',
  title: 'one 16 MiB line without a newline',
  category: 'resources',
  policyItem: 'output.maxBytes',
  severity: 'medium',
  payload: 'output-flood',
  remediation: 'Cap output by bytes, not by lines: a line-buffered reader waits for a newline that never comes.',
  args: () => ({ stream: 'stdout', mode: 'long-line', bytes: LINE }),
  judge: (obs, ctx) => judgeOutputBudget(obs, ctx, LINE),
};
