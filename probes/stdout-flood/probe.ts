import { exitEvidence, payloadReport, unlessAttempted } from '../../harness/judge.js';
import { outside } from '../../harness/model/evidence.js';
import type { SecurityProbe } from '../../harness/model/probe.js';

export const FLOOD_BYTES = 64 * 1024 * 1024;

export const stdoutFlood: SecurityProbe = {
  kind: 'security',
  id: 'stdout-flood',
  title: 'write 64 MiB to stdout against a 2 MB output budget',
  category: 'resources',
  policyItem: 'output.maxBytes',
  severity: 'medium',
  payload: 'stdout-flood',
  remediation: 'Cap stdout+stderr in the sandbox (truncate, keep the hash and the tail) and stop the program when the cap is reached.',
  args: () => ({ bytes: FLOOD_BYTES }),
  judge: (obs, ctx) => {
    const notRun = unlessAttempted(obs, false);
    if (notRun) return notRun;
    const { exec } = obs;
    const cap = ctx.policy.output.maxBytes;
    const got = exec.stdout.bytes + exec.stderr.bytes;
    const capture = outside('output-capture', `the harness received ${got} bytes of stdout+stderr (policy cap ${cap}); stdout sha256 ${exec.stdout.sha256}`);
    const evidence = [capture, exitEvidence(exec), payloadReport(exec)];
    if (got > cap) {
      const stopped = exec.killedBy === 'harness-output-ceiling' ? '; the harness had to stop reading and kill it' : '';
      return { verdict: 'crossed', reason: `${got} bytes of output reached the controller, past the ${cap}-byte budget${stopped}`, evidence };
    }
    if (got < cap / 2 && exec.backendReport.outputTruncated !== true) {
      return { verdict: 'inconclusive', reason: `only ${got} bytes came out and the backend did not report truncation: the flood may never have happened`, evidence };
    }
    return { verdict: 'held', reason: `output stopped at ${got} bytes, within the ${cap}-byte budget, while the payload tried to write ${FLOOD_BYTES}`, evidence };
  },
};
