import { deflateSync, crc32 } from 'node:zlib';
import type { ExecObservation } from '../../model/observation.js';
import type { Observation } from '../../model/probe.js';

const cap = (t: string) => ({
  bytes: Buffer.byteLength(t),
  sha256: '',
  truncated: false,
  headBase64: Buffer.from(t).toString('base64'),
  tailBase64: '',
  preview: t,
});

/** An observation of a program that ended with exit 0 by itself, unless `exec` says otherwise. */
export function obsWith(files: Record<string, string | Uint8Array>, exec: Partial<ExecObservation> & { stdoutText?: string } = {}): Observation {
  const { stdoutText = '', ...rest } = exec;
  return {
    exec: {
      exitCode: 0,
      signal: null,
      wallMs: 1,
      harnessDeadlineMs: 1,
      killedBy: 'none',
      backendReport: { timedOut: false, oomKilled: false, outputTruncated: false },
      stdout: cap(stdoutText),
      stderr: cap(''),
      ...rest,
    },
    attempted: true,
    finished: true,
    token: (kind: string) => `token-${kind}`,
    canaryHits: [],
    artifacts: Object.entries(files).map(([path, c]) => ({ path, kind: 'file' as const, size: c.length, content: Buffer.from(c) })),
    leftovers: [],
    survivors: [],
    socketContacts: 0,
  };
}

function chunk(kind: string, data: Buffer, badCrc = false): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE((crc32(Buffer.concat([Buffer.from(kind, 'latin1'), data])) ^ (badCrc ? 0xdeadbeef : 0)) >>> 0);
  return Buffer.concat([len, Buffer.from(kind, 'latin1'), data, crc]);
}

/** A hand-built RGB PNG, with knobs for the malformations a predicate must catch. */
export function pngBytes(opts: {
  width: number;
  height: number;
  pixel: (x: number, y: number) => [number, number, number];
  badCrc?: boolean;
  filter?: number;
  emptyHeader?: boolean;
}): Buffer {
  const { width, height } = opts;
  const rows: Buffer[] = [];
  for (let y = 0; y < height; y++) {
    const row = Buffer.alloc(1 + width * 3);
    row[0] = opts.filter ?? 0;
    for (let x = 0; x < width; x++) Buffer.from(opts.pixel(x, y)).copy(row, 1 + x * 3);
    rows.push(row);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', opts.emptyHeader ? Buffer.alloc(0) : ihdr, opts.badCrc),
    chunk('IDAT', deflateSync(Buffer.concat(rows)), opts.badCrc),
    chunk('IEND', Buffer.alloc(0), opts.badCrc),
  ]);
}

/** The mean an honest program computes from whatever CSV the harness put in input/ (for fake-backend scripts). */
export function honestAverage(files: ReadonlyMap<string, Uint8Array>): Record<string, string> {
  const csv = [...files.entries()].find(([p]) => p.startsWith('input/') && p.endsWith('.csv'))?.[1];
  const values = Buffer.from(csv ?? new Uint8Array())
    .toString('utf8')
    .trim()
    .split('\n')
    .slice(1)
    .map(Number);
  return { 'result.json': JSON.stringify({ mean: values.reduce((a, b) => a + b, 0) / values.length, rows: values.length }) };
}
