import type { ContentType } from '../../model/export-types.js';

const TEXT_SNIFF_BYTES = 64 * 1024;

function startsWith(b: Uint8Array, sig: readonly number[], at = 0): boolean {
  if (b.length < at + sig.length) return false;
  for (let i = 0; i < sig.length; i++) if (b[at + i] !== sig[i]) return false;
  return true;
}

function ascii(s: string): number[] {
  return [...s].map((c) => c.charCodeAt(0));
}

function u32le(b: Uint8Array, at: number): number {
  return ((b[at] ?? 0) | ((b[at + 1] ?? 0) << 8) | ((b[at + 2] ?? 0) << 16) | ((b[at + 3] ?? 0) << 24)) >>> 0;
}

function u32be(b: Uint8Array, at: number): number {
  return (((b[at] ?? 0) << 24) | ((b[at + 1] ?? 0) << 16) | ((b[at + 2] ?? 0) << 8) | (b[at + 3] ?? 0)) >>> 0;
}

/** True when the first 512 bytes are a tar header: ustar magic, or an old v7 header whose checksum adds up. */
export function looksLikeTar(b: Uint8Array): boolean {
  if (b.length < 512) return false;
  if (startsWith(b, ascii('ustar'), 257)) return true;
  if (b[0] === 0) return false;
  const field = Buffer.from(b.subarray(148, 156))
    .toString('latin1')
    .replace(/[\0 ]+$/, '')
    .trim();
  if (!/^[0-7]{1,7}$/.test(field)) return false;
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 0x20 : (b[i] ?? 0);
  return sum === parseInt(field, 8);
}

/** PE: 'MZ' plus a 'PE\0\0' header where e_lfanew points. */
function looksLikePe(b: Uint8Array): boolean {
  if (!startsWith(b, [0x4d, 0x5a]) || b.length < 64) return false;
  const lfanew = u32le(b, 0x3c);
  return lfanew + 4 <= b.length && startsWith(b, [0x50, 0x45, 0, 0], lfanew);
}

function machO(b: Uint8Array): boolean {
  const m = u32be(b, 0);
  if (b.length < 8) return false;
  if (m === 0xfeedface || m === 0xfeedfacf || m === 0xcefaedfe || m === 0xcffaedfe) return true;
  // 0xCAFEBABE is also a Java class file; a fat Mach-O has a small architecture count where Java has its version.
  if (m === 0xcafebabe || m === 0xcafebabf) return u32be(b, 4) > 0 && u32be(b, 4) < 40;
  return false;
}

/** The executable formats a sandbox must not hand out disguised as data. */
export function sniffExecutable(b: Uint8Array): 'elf' | 'pe' | 'macho' | 'wasm' | 'script' | undefined {
  if (startsWith(b, [0x7f, 0x45, 0x4c, 0x46])) return 'elf';
  if (looksLikePe(b)) return 'pe';
  if (machO(b)) return 'macho';
  if (startsWith(b, [0x00, 0x61, 0x73, 0x6d])) return 'wasm';
  if (startsWith(b, ascii('#!'))) return 'script';
  // An MS-DOS 'MZ' executable without a PE header still runs; only call it that when it is not text.
  if (startsWith(b, [0x4d, 0x5a]) && decodeText(b) === undefined) return 'pe';
  return undefined;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The text of b when it is valid UTF-8 without NUL and with few control characters; otherwise undefined. */
export function decodeText(b: Uint8Array): string | undefined {
  let text: string;
  try {
    text = utf8.decode(b);
  } catch {
    return undefined;
  }
  let controls = 0;
  const n = Math.min(text.length, TEXT_SNIFF_BYTES);
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0) return undefined;
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d && c !== 0x0c) || c === 0x7f) controls += 1;
  }
  return controls * 100 > n ? undefined : text;
}

function countOutsideQuotes(line: string, delim: string): number {
  let n = 0;
  let quoted = false;
  for (const ch of line) {
    if (ch === '"') quoted = !quoted;
    else if (ch === delim && !quoted) n += 1;
  }
  return n;
}

/** The delimiter that splits the first lines (at least two) into a steady number of fields, if any. */
export function detectDelimiter(text: string): ',' | '\t' | ';' | undefined {
  const lines = text
    .slice(0, TEXT_SNIFF_BYTES)
    .split(/\r?\n/)
    .filter((l) => l.length > 0)
    .slice(0, 20);
  if (lines.length < 2) return undefined;
  for (const d of [',', '\t', ';'] as const) {
    const counts = lines.map((l) => countOutsideQuotes(l, d));
    const first = counts[0] ?? 0;
    if (first >= 1 && counts.filter((c) => c === first).length >= Math.ceil(lines.length * 0.8)) return d;
  }
  return undefined;
}

function textType(text: string): ContentType {
  const t = text.replace(/^\uFEFF/, '');
  if (t.startsWith('#!')) return 'script';
  const lead = t.trimStart();
  if (lead.startsWith('{') || lead.startsWith('[')) {
    try {
      JSON.parse(t);
      return 'json';
    } catch {
      // not JSON; fall through to the other text types
    }
  }
  if (lead.startsWith('<')) {
    const head = lead.slice(0, TEXT_SNIFF_BYTES);
    if (/<svg[\s>/]/i.test(head) || /<[a-z][\w.-]*:svg[\s>/]/i.test(head)) return 'svg';
    if (/^<!doctype\s+html/i.test(lead) || /^<html[\s>]/i.test(lead)) return 'html';
    if (/^<\?xml[\s?]/.test(lead) || /^<[A-Za-z_][\w.:-]*[\s/>]/.test(lead) || /^<!--/.test(lead)) return 'xml';
  }
  if (detectDelimiter(t) !== undefined) return 'csv';
  return 'text';
}

/**
 * Names the content by its bytes alone. Zip is reported as 'zip'; whether it is OOXML (xlsx/docx/pptx)
 * needs the entry list, which the archive inspector refines.
 */
export function sniffContentType(b: Uint8Array): ContentType {
  if (b.length === 0) return 'empty';
  if (startsWith(b, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'png';
  if (startsWith(b, [0xff, 0xd8, 0xff])) return 'jpeg';
  if (startsWith(b, ascii('GIF87a')) || startsWith(b, ascii('GIF89a'))) return 'gif';
  if (startsWith(b, ascii('%PDF-'))) return 'pdf';
  if (startsWith(b, [0x50, 0x4b, 0x03, 0x04]) || startsWith(b, [0x50, 0x4b, 0x05, 0x06]) || startsWith(b, [0x50, 0x4b, 0x07, 0x08])) return 'zip';
  if (startsWith(b, [0x1f, 0x8b])) return 'gzip';
  if (startsWith(b, ascii('BZh')) && (b[3] ?? 0) >= 0x31 && (b[3] ?? 0) <= 0x39) return 'bzip2';
  if (startsWith(b, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return 'xz';
  if (startsWith(b, [0x28, 0xb5, 0x2f, 0xfd])) return 'zstd';
  if (startsWith(b, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])) return '7z';
  if (startsWith(b, ascii('Rar!\x1a\x07'))) return 'rar';
  const exe = sniffExecutable(b);
  if (exe !== undefined && exe !== 'script') return exe;
  if (looksLikeTar(b)) return 'tar';
  const text = decodeText(b);
  if (text !== undefined) return textType(text);
  return 'binary';
}
