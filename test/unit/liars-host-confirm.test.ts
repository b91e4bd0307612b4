import { describe, expect, it } from 'vitest';
import { confirmHeld } from '../../harness/host-confirm.js';
import { outside } from '../../model/evidence.js';
import type { Judgement } from '../../model/probe.js';
import { fakeObservation } from '../helpers/observation.js';

const held: Judgement = { verdict: 'held', reason: 'the sampled process ran as nobody', evidence: [outside('host-proc-status', 'uid 65534')] };
const crossed: Judgement = { verdict: 'crossed', reason: 'the box ran as root', evidence: [] };
const unnamed = { unnamedProcesses: ["pid 4242 (python3 payload.py {...}; this execution's nonce in its argv)"] };
const unlinked = { unlinkedNamedPids: ['pid 77 (python3 -c sleep)'] };

describe("a held the host could not confirm (the adapter's pids are part of the box)", () => {
  it('the program ran in a process the adapter did not name: held becomes inconclusive, saying which', () => {
    const j = confirmHeld(fakeObservation(unnamed), held);
    expect(`${j.verdict}: ${j.reason}`).toMatch(
      /^inconclusive: the host found this execution's program running in a process the adapter did not name \(pid 4242/,
    );
    expect(j.evidence[0]).toMatchObject({ source: 'outside', witness: 'host-process-scan' });
    expect(j.evidence.some((e) => e.detail === 'uid 65534')).toBe(true);
  });

  it('a crossing stands, with the unnamed process as evidence beside it', () => {
    const j = confirmHeld(fakeObservation(unnamed), crossed);
    expect(j.verdict).toBe('crossed');
    expect(j.evidence.some((e) => /did not name: pid 4242/.test(e.detail))).toBe(true);
  });

  it('a named pid with no tie to the execution is listed as not evidence; with nothing unnamed the held stands', () => {
    const j = confirmHeld(fakeObservation(unlinked), held);
    expect(j.verdict).toBe('held');
    expect(j.evidence.some((e) => /never carried this execution's nonce \(not evidence\): pid 77/.test(e.detail))).toBe(true);
  });

  it('nothing found: the judgement is returned as it was', () => {
    expect(confirmHeld(fakeObservation(), held)).toBe(held);
  });
});
