import { inflateSync } from 'node:zlib';
import { outside } from '../../harness/model/evidence.js';
import type { Observation, PredicateResult, TaskCase } from '../../harness/model/probe.js';

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** A real, decodable 200×100 RGB PNG: signature, IHDR, and IDAT that inflates to the right size. */
function pngPredicate(obs: Observation): PredicateResult {
  const art = obs.artifacts.find((a) => a.path === 'chart.png');
  if (!art?.content) return { accepted: false, reason: 'chart.png is missing' };
  const buf = Buffer.from(art.content);
  if (!buf.subarray(0, 8).equals(SIGNATURE)) return { accepted: false, reason: 'chart.png does not start with the PNG signature' };
  let off = 8;
  let width = 0;
  let height = 0;
  const idat: Buffer[] = [];
  while (off + 8 <= buf.length) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    const data = buf.subarray(off + 8, off + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
    }
    if (type === 'IDAT') idat.push(data);
    off += 12 + len;
  }
  if (width !== 200 || height !== 100) return { accepted: false, reason: `chart.png is ${width}×${height}, expected 200×100` };
  let raw: Buffer;
  try {
    raw = inflateSync(Buffer.concat(idat));
  } catch {
    return { accepted: false, reason: 'chart.png image data does not decompress' };
  }
  if (raw.length !== height * (1 + width * 3)) return { accepted: false, reason: `chart.png decodes to ${raw.length} bytes, expected ${height * (1 + width * 3)}` };
  return { accepted: true, reason: 'chart.png is a decodable 200×100 RGB PNG', evidence: [outside('completion-predicate', `PNG ${width}×${height}, ${buf.length} bytes`, 'artifact:chart.png')] };
}

export const pngChart: TaskCase = {
  kind: 'task',
  id: 'png-chart',
  title: 'a bar chart written as a PNG with the standard library',
  policyItem: 'task.correctness',
  payload: 'png-chart',
  expected: 'accept',
  artifacts: ['chart.png'],
  predicate: pngPredicate,
};
