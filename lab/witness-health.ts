export type { WitnessHealth } from '../model/lab-traffic.js';
import type { WitnessHealth } from '../model/lab-traffic.js';

/** The reason a window's witnesses cannot support `held`, or undefined when they could see. */
export function witnessBlindness(w: WitnessHealth): string | undefined {
  const why: string[] = [];
  if (w.saturated) why.push('a witness was saturated and lost records of this window');
  if (w.dropped > 0) why.push(`${w.dropped} packets or datagrams were dropped before a witness saw them`);
  if (!w.proofOfLife) why.push("the witness showed no proof of life (the harness's own marked query was not seen by every witness)");
  if (why.length === 0) return undefined;
  const notes = w.notes.length > 0 ? ` (${w.notes.join('; ')})` : '';
  return `${why.join('; ')}${notes}`;
}
