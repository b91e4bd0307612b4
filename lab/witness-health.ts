/** Whether the network witnesses could see a probe's window: a witness that cannot see proves nothing. */
export interface WitnessHealth {
  /** A bounded store (decoy log, packet list) lost records of this window. */
  saturated: boolean;
  /** Packets or datagrams lost before a witness saw them in this window (capture kernel drops, decoy socket drops). */
  dropped: number;
  /** The harness's own nonce-labelled query, sent inside the window before it closed, was seen by every witness. */
  proofOfLife: boolean;
  /** `lab`: decoy logs (resolver included) and the lab's packet capture. `remote`: the same, of a `sandcheck witness serve`. `live`: only a capture on this machine's interfaces. */
  scope: 'lab' | 'live' | 'remote';
  /** Why each flag is what it is, for the report. */
  notes: string[];
}

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
