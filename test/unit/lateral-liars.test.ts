import { describe, expect, it } from 'vitest';
import type { Judgement } from '../../model/probe.js';
import { judgeLateral } from '../../probes/lateral-movement/probe.js';
import { capture, fakeObservation } from '../helpers/observation.js';

const held: Judgement = { verdict: 'held', reason: 'no canary', evidence: [] };
const announced = 'port 24000 addresses 10.200.0.2,fd00::2';
const run = (stdout: string, rest: { companionReady?: boolean; companionAnnounced?: string } = {}) =>
  judgeLateral(
    fakeObservation({ stdout: capture(stdout) }, { attempted: true, finished: true, companionReady: true, companionAnnounced: announced, ...rest }),
    held,
  );

const loopback = '127.0.0.1:24000: error: Connection refused (ECONNREFUSED)\n::1:24000: error: Connection refused (ECONNREFUSED)\n';

describe('lateral-movement: held only where the payload looked where the other box said it was', () => {
  it('every announced address tried: held', () => {
    const j = run(
      `the other environment announced: ${announced}\n${loopback}10.200.0.2:24000: timed out\nfd00::2:24000: error: Network is unreachable (ENETUNREACH)\n`,
    );
    expect(`${j.verdict}: ${j.reason}`).toMatch(/^held: .*tried loopback and 10\.200\.0\.2, fd00::2/);
  });

  it('the announcement never reached the payload (a backend dropped the argument): inconclusive', () => {
    const j = run(`the other environment announced: \n${loopback}`);
    expect(`${j.verdict}: ${j.reason}`).toMatch(/^inconclusive: the payload never received the other environment's announcement/);
  });

  it('an announced address with no outcome line: inconclusive', () => {
    const j = run(`the other environment announced: ${announced}\n${loopback}10.200.0.2:24000: timed out\n`);
    expect(`${j.verdict}: ${j.reason}`).toMatch(/^inconclusive: .*announced address\(es\) fd00::2/);
  });

  it('no listener up: inconclusive; a crossing passes through unchanged', () => {
    expect(run(`the other environment announced: ${announced}\n`, { companionReady: false }).verdict).toBe('inconclusive');
    const crossed: Judgement = { verdict: 'crossed', reason: 'canary', evidence: [] };
    expect(judgeLateral(fakeObservation({}, { companionReady: false }), crossed)).toBe(crossed);
  });

  it('nothing announced but loopback (hardened boxes announce no address): the echo is enough', () => {
    expect(run(`the other environment announced: port 24000 addresses\n${loopback}`, { companionAnnounced: 'port 24000 addresses' }).verdict).toBe('held');
  });
});
