import { entryPrefix } from './archive-data.js';
import { type ArchiveEntry, type ArchiveEntryType, type ArchiveListing, decodeName, u16le, u32le, u64le } from './archive-entry.js';

const EOCD_SIG = 0x06054b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const CENTRAL_SIG = 0x02014b50;
const LOCAL_SIG = 0x04034b50;
const MAX_LINK_TARGET = 4096;

interface Directory {
  total: number;
  offset: number;
  size: number;
}

function findEocd(b: Uint8Array): number | undefined {
  const lowest = Math.max(0, b.length - 22 - 0xffff);
  for (let p = b.length - 22; p >= lowest; p--) {
    if (u32le(b, p) === EOCD_SIG) {
      const commentLen = u16le(b, p + 20) ?? 0;
      if (p + 22 + commentLen <= b.length) return p;
    }
  }
  return undefined;
}

function readDirectory(b: Uint8Array, eocd: number): Directory | string {
  const total = u16le(b, eocd + 10) ?? 0;
  const size = u32le(b, eocd + 12) ?? 0;
  const offset = u32le(b, eocd + 16) ?? 0;
  if (total !== 0xffff && size !== 0xffffffff && offset !== 0xffffffff) return { total, size, offset };
  if (u32le(b, eocd - 20) !== ZIP64_LOCATOR_SIG) return 'zip64 markers without a zip64 locator';
  const z = u64le(b, eocd - 12);
  if (z === undefined || u32le(b, z) !== ZIP64_EOCD_SIG) return 'zip64 locator points at no zip64 record';
  const t = u64le(b, z + 32);
  const s = u64le(b, z + 40);
  const o = u64le(b, z + 48);
  if (t === undefined || s === undefined || o === undefined) return 'unreadable zip64 record';
  return { total: t, size: s, offset: o };
}

function typeFromAttributes(external: number, name: string): { type: ArchiveEntryType; mode: number } {
  const mode = (external >>> 16) & 0o170000;
  switch (mode) {
    case 0o120000:
      return { type: 'symlink', mode };
    case 0o040000:
      return { type: 'directory', mode };
    case 0o020000:
      return { type: 'char-device', mode };
    case 0o060000:
      return { type: 'block-device', mode };
    case 0o010000:
      return { type: 'fifo', mode };
    case 0o140000:
      return { type: 'socket', mode };
    default:
      // No Unix mode: MS-DOS directory bit or a trailing slash marks a directory.
      return { type: name.endsWith('/') || (external & 0x10) !== 0 ? 'directory' : 'file', mode };
  }
}

interface Extras {
  unicodePath?: string;
  size?: number;
  compressed?: number;
  localOffset?: number;
}

function parseExtras(x: Uint8Array, need: { size: boolean; compressed: boolean; offset: boolean }): Extras {
  const out: Extras = {};
  let p = 0;
  while (p + 4 <= x.length) {
    const id = u16le(x, p) ?? 0;
    const len = u16le(x, p + 2) ?? 0;
    const body = x.subarray(p + 4, p + 4 + len);
    if (id === 0x0001) {
      let q = 0;
      if (need.size) {
        out.size = u64le(body, q);
        q += 8;
      }
      if (need.compressed) {
        out.compressed = u64le(body, q);
        q += 8;
      }
      if (need.offset) out.localOffset = u64le(body, q);
    } else if (id === 0x7075 && body.length > 5 && body[0] === 1) {
      out.unicodePath = decodeName(body.subarray(5), true);
    }
    p += 4 + len;
  }
  return out;
}

/**
 * Lists a zip archive from its central directory, as data. Each entry's local header is read too, because
 * extractors that stream local headers see *that* name; a differing one is reported as conflictingName.
 * Bounded by maxEntries and by the archive's length; garbage ends the walk with `malformed`.
 */
export function listZipEntries(b: Uint8Array, opts: { maxEntries: number }): ArchiveListing {
  const entries: ArchiveEntry[] = [];
  const listing: ArchiveListing = { format: 'zip', entries, truncated: false };
  const eocd = findEocd(b);
  if (eocd === undefined) {
    listing.malformed = 'no end-of-central-directory record';
    return listing;
  }
  const dir = readDirectory(b, eocd);
  if (typeof dir === 'string') {
    listing.malformed = dir;
    return listing;
  }
  if (dir.offset + dir.size > b.length) {
    listing.malformed = 'central directory lies outside the archive';
    return listing;
  }
  let p = dir.offset;
  for (let i = 0; i < dir.total; i++) {
    if (entries.length >= opts.maxEntries) {
      listing.truncated = true;
      break;
    }
    if (u32le(b, p) !== CENTRAL_SIG) {
      listing.malformed = `central directory entry ${i} missing at offset ${p}`;
      break;
    }
    const flags = u16le(b, p + 8) ?? 0;
    const methodCode = u16le(b, p + 10) ?? 0;
    const compressed32 = u32le(b, p + 20) ?? 0;
    const size32 = u32le(b, p + 24) ?? 0;
    const nameLen = u16le(b, p + 28) ?? 0;
    const extraLen = u16le(b, p + 30) ?? 0;
    const commentLen = u16le(b, p + 32) ?? 0;
    const external = u32le(b, p + 38) ?? 0;
    const local32 = u32le(b, p + 42) ?? 0;
    const end = p + 46 + nameLen + extraLen + commentLen;
    if (end > b.length) {
      listing.malformed = `central directory entry ${i} runs past the end`;
      break;
    }
    const utf8 = (flags & 0x0800) !== 0;
    const nameBytes = b.subarray(p + 46, p + 46 + nameLen);
    const name = decodeName(nameBytes, utf8);
    const extras = parseExtras(b.subarray(p + 46 + nameLen, p + 46 + nameLen + extraLen), {
      size: size32 === 0xffffffff,
      compressed: compressed32 === 0xffffffff,
      offset: local32 === 0xffffffff,
    });
    p = end;
    const size = size32 === 0xffffffff ? extras.size : size32;
    const compressed = compressed32 === 0xffffffff ? extras.compressed : compressed32;
    const local = local32 === 0xffffffff ? extras.localOffset : local32;
    if (size === undefined || compressed === undefined || local === undefined) {
      listing.malformed = `entry ${i} has unreadable zip64 sizes`;
      break;
    }
    if (u32le(b, local) !== LOCAL_SIG) {
      listing.malformed = `entry ${i} (${JSON.stringify(name)}) has no local header at offset ${local}`;
      break;
    }
    const localNameLen = u16le(b, local + 26) ?? 0;
    const localExtraLen = u16le(b, local + 28) ?? 0;
    const dataOffset = local + 30 + localNameLen + localExtraLen;
    if (dataOffset + compressed > b.length) {
      listing.malformed = `entry ${i} (${JSON.stringify(name)}) data runs past the end`;
      break;
    }
    const localName = decodeName(b.subarray(local + 30, local + 30 + localNameLen), utf8);
    const altNames = [localName, extras.unicodePath].filter((n): n is string => n !== undefined && n !== name);
    const { type, mode } = typeFromAttributes(external, name);
    const data = { offset: dataOffset, length: compressed, method: methodCode === 0 ? 'stored' : methodCode === 8 ? 'deflate' : 'other' } as const;
    const entry: ArchiveEntry = {
      name,
      altNames: [...new Set(altNames)],
      type,
      size,
      data,
      note: `mode ${mode.toString(8).padStart(6, '0')}, method ${methodCode}`,
    };
    if ((flags & 0x0001) !== 0) entry.encrypted = true;
    if (localName !== name) entry.conflictingName = localName;
    if (type === 'symlink') {
      const target = entryPrefix(b, data, MAX_LINK_TARGET);
      entry.linkTarget = target === undefined ? '(unreadable)' : decodeName(target.bytes, true);
    }
    entries.push(entry);
  }
  return listing;
}
