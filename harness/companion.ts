import type { Environment } from '../model/backend-contract.js';
import { BoundedCapture } from '../lab/bounded-capture.js';
import { SandcheckError } from '../core/errors.js';
import { payloadFiles } from './exec-payload.js';
import type { Policy } from '../model/policy.js';
import type { ProbeContext, SecurityProbe } from '../model/probe.js';

export interface Companion {
  /** Passed to the probe's payload: whether the other box is up and what it announced. */
  args: Record<string, unknown>;
  ready: boolean;
  /** The rest of its ready line, after the answer to its own challenge ("made sysv segment", "port 8 addresses …"). */
  announced: string;
  stop(): Promise<void>;
}

/**
 * A second environment of the same run, started first and kept running while the probe runs (lateral movement,
 * covert channels: can one box reach another?). Resolves once it printed its ready line, or after 15 s.
 */
export async function startCompanion(
  probe: SecurityProbe,
  ctx: ProbeContext,
  policy: Policy,
  createEnvironment: () => Promise<Environment>,
): Promise<Companion> {
  const spec = probe.companion;
  if (!spec) throw new SandcheckError('HARNESS', 'no companion');
  const env = await createEnvironment();
  const abort = new AbortController();
  const prepared = await payloadFiles({ ...probe, payload: spec.payload, payloadFile: 'listener.py' }, ctx, []).catch(async (err: unknown) => {
    await env.destroy();
    throw err;
  });
  // Up only with the answer to its own challenge: a box that never ran the listener cannot print it.
  const ready = `SANDCHECK-READY ${ctx.nonce} ${prepared.proof.token('ready')}`;
  const out = new BoundedCapture({ needles: [ready] });
  const sink = { write: () => undefined };
  let running: Promise<unknown> = Promise.resolve();
  try {
    await env.putFiles(prepared.files);
    running = env
      .exec({
        argv: ['python3', 'payload.py', JSON.stringify({ nonce: ctx.nonce, ...spec.args(ctx) })],
        timeoutMs: policy.resources.wallSeconds * 1000 + 10_000,
        maxOutputBytes: 64 * 1024,
        stdout: out,
        stderr: sink,
        signal: abort.signal,
      })
      .catch(() => undefined);
    let ended = false;
    void running.then(() => (ended = true));
    // A start on a busy machine (a gVisor sandbox) can take seconds: a slow start must not read as "nothing there".
    const until = Date.now() + 15_000;
    while (!out.has(ready) && !ended && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  } catch (err) {
    abort.abort();
    await env.destroy();
    throw err;
  }
  const head = out.headBuffer.toString('utf8');
  const announced = out.has(ready) ? (head.slice(head.indexOf(ready) + ready.length).split('\n')[0] ?? '').trim() : '';
  return {
    args: { companion: { ready: out.has(ready), announced } },
    ready: out.has(ready),
    announced,
    stop: async () => {
      abort.abort();
      await Promise.race([running, new Promise((r) => setTimeout(r, 5000))]);
      await env.destroy();
    },
  };
}
