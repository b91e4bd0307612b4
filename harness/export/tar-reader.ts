import { type ArchiveEntry, type ArchiveEntryType, type ArchiveListing, decodeName } from './archive-entry.js';

const BLOCK = 512;

function cString(b: Uint8Array, at: number, len: number): string {
  const field = b.subarray(at, at + len);
  const nul = field.indexOf(0);
  return decodeName(nul === -1 ? field : field.subarray(0, nul), true);
}

/** A numeric header field: octal text, or GNU base-256 when the high bit is set. undefined on garbage. */
function numeric(b: Uint8Array, at: number, len: number): number | undefined {
  const first = b[at] ?? 0;
  if (first & 0x80) {
    let v = first & 0x7f;
    for (let i = 1; i < len; i++) {
      v = v * 256 + (b[at + i] ?? 0);
      if (v > Number.MAX_SAFE_INTEGER) return undefined;
    }
    return v;
  }
  const text = Buffer.from(b.subarray(at, at + len))
    .toString('latin1')
    .replace(/\0.*$/s, '')
    .trim();
  if (text === '') return 0;
  return /^[0-7]+$/.test(text) ? parseInt(text, 8) : undefined;
}

function checksumOk(h: Uint8Array): boolean {
  const stored = numeric(h, 148, 8);
  if (stored === undefined) return false;
  let unsigned = 0;
  let signed = 0;
  for (let i = 0; i < BLOCK; i++) {
    const v = i >= 148 && i < 156 ? 0x20 : (h[i] ?? 0);
    unsigned += v;
    signed += v > 127 ? v - 256 : v;
  }
  return stored === unsigned || stored === signed;
}

/** pax extended header records: "<len> <key>=<value>\n". Stops quietly at the first malformed record. */
function parsePax(data: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  const text = Buffer.from(data).toString('utf8');
  let pos = 0;
  while (pos < text.length) {
    const m = /^(\d{1,9}) /.exec(text.slice(pos, pos + 11));
    if (!m?.[1]) break;
    const len = Number(m[1]);
    if (len <= m[0].length) break;
    const record = text.slice(pos + m[0].length, pos + len).replace(/\n$/, '');
    const eq = record.indexOf('=');
    if (eq > 0) out.set(record.slice(0, eq), record.slice(eq + 1));
    pos += len;
  }
  return out;
}

const TYPEFLAGS: Record<string, ArchiveEntryType> = {
  '0': 'file',
  '\0': 'file',
  '7': 'file',
  '1': 'hardlink',
  '2': 'symlink',
  '3': 'char-device',
  '4': 'block-device',
  '5': 'directory',
  '6': 'fifo',
};

/**
 * Lists a tar archive (v7, ustar, GNU long names 'L'/'K', pax 'x') as data. Every step advances by at least
 * one block, so it terminates on any input; garbage ends the walk with `malformed`, never an exception.
 */
export function listTarEntries(b: Uint8Array, opts: { maxEntries: number }): ArchiveListing {
  const entries: ArchiveEntry[] = [];
  const listing: ArchiveListing = { format: 'tar', entries, truncated: false };
  let off = 0;
  let longName: string | undefined;
  let longLink: string | undefined;
  let pax = new Map<string, string>();
  while (off < b.length) {
    if (off + BLOCK > b.length) {
      listing.malformed = `partial header block at offset ${off}`;
      break;
    }
    const h = b.subarray(off, off + BLOCK);
    if (h.every((x) => x === 0)) break;
    if (!checksumOk(h)) {
      listing.malformed = `bad header checksum at offset ${off}`;
      break;
    }
    const flag = String.fromCharCode(h[156] ?? 0);
    const paxSize = pax.get('size');
    const size = paxSize !== undefined && /^\d{1,15}$/.test(paxSize) ? Number(paxSize) : numeric(h, 124, 12);
    if (size === undefined) {
      listing.malformed = `bad size field at offset ${off}`;
      break;
    }
    const dataOff = off + BLOCK;
    if (dataOff + size > b.length) {
      listing.malformed = `entry data at offset ${dataOff} runs past the end of the archive`;
      break;
    }
    off = dataOff + Math.ceil(size / BLOCK) * BLOCK;
    const data = b.subarray(dataOff, dataOff + size);
    if (flag === 'L') {
      longName = cString(data, 0, data.length);
      continue;
    }
    if (flag === 'K') {
      longLink = cString(data, 0, data.length);
      continue;
    }
    if (flag === 'x') {
      pax = parsePax(data);
      continue;
    }
    if (flag === 'g') continue; // global pax defaults; a global 'path' is meaningless and ignored
    const ustar = cString(h, 257, 6) === 'ustar' && h[262] === 0;
    const prefix = ustar ? cString(h, 345, 155) : '';
    const headerName = cString(h, 0, 100);
    const rawName = prefix ? `${prefix}/${headerName}` : headerName;
    const name = pax.get('path') ?? longName ?? rawName;
    const link = pax.get('linkpath') ?? longLink ?? cString(h, 157, 100);
    const type = TYPEFLAGS[flag] ?? 'other';
    const entry: ArchiveEntry = {
      name,
      altNames: rawName !== name ? [rawName] : [],
      type,
      size,
      note: `typeflag ${JSON.stringify(flag)}`,
    };
    if (type === 'symlink' || type === 'hardlink') entry.linkTarget = link;
    if (type === 'file') entry.data = { offset: dataOff, length: size, method: 'stored' };
    entries.push(entry);
    longName = undefined;
    longLink = undefined;
    pax = new Map();
    if (entries.length >= opts.maxEntries && off < b.length && !b.subarray(off, off + BLOCK).every((x) => x === 0)) {
      listing.truncated = true;
      break;
    }
  }
  return listing;
}
