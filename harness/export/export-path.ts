import type { RefusalRule } from '../../model/export-types.js';

export type PathCheck = { ok: true; path: string } | { ok: false; rule: RefusalRule; detail: string };

const MAX_PATH_BYTES = 1024;
const MAX_SEGMENT_BYTES = 255;

/** Printable form of a hostile name for a refusal detail (control characters made visible). */
export function showName(name: string): string {
  return JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name);
}

/**
 * Normalises a box-supplied artifact path into a relative POSIX path that stays inside the export root.
 * '.' and empty segments are dropped and inner '..' folds back ('a/../b' → 'b'); anything that would leave
 * the root, is absolute, or could mean something else on another platform (backslash, drive letter) is refused.
 */
export function normaliseExportPath(raw: string): PathCheck {
  if (raw.length === 0) return { ok: false, rule: 'path-empty', detail: 'empty path' };
  if (raw.includes('\0')) return { ok: false, rule: 'path-nul', detail: `NUL byte in ${showName(raw)}` };
  if (/[\x01-\x1f\x7f]/.test(raw)) return { ok: false, rule: 'path-control-char', detail: `control character in ${showName(raw)}` };
  if (raw.includes('\\')) return { ok: false, rule: 'path-backslash', detail: `backslash in ${showName(raw)} (a separator on Windows)` };
  if (raw.startsWith('/')) return { ok: false, rule: 'path-absolute', detail: `absolute path ${showName(raw)}` };
  if (/^[A-Za-z]:/.test(raw)) return { ok: false, rule: 'path-absolute', detail: `drive-letter path ${showName(raw)}` };
  if (Buffer.byteLength(raw) > MAX_PATH_BYTES) return { ok: false, rule: 'path-too-long', detail: `path longer than ${MAX_PATH_BYTES} bytes` };
  const out: string[] = [];
  for (const seg of raw.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0) return { ok: false, rule: 'path-escape', detail: `${showName(raw)} climbs out of the export root` };
      out.pop();
      continue;
    }
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES)
      return { ok: false, rule: 'path-too-long', detail: `segment longer than ${MAX_SEGMENT_BYTES} bytes in ${showName(raw)}` };
    out.push(seg);
  }
  if (out.length === 0) return { ok: false, rule: 'path-empty', detail: `${showName(raw)} names the export root itself` };
  return { ok: true, path: out.join('/') };
}

export type ArchiveNameCheck = { ok: true } | { ok: false; rule: 'archive-absolute' | 'archive-escape' | 'archive-bad-name'; detail: string };

/**
 * Judges an archive entry name as an extractor on any platform might read it: '/' and '\' both separate,
 * a leading separator or drive letter is absolute, and '..' must never climb above the extraction root.
 */
export function checkArchiveEntryName(name: string): ArchiveNameCheck {
  if (name.length === 0) return { ok: false, rule: 'archive-bad-name', detail: 'entry with an empty name' };
  if (name.includes('\0')) return { ok: false, rule: 'archive-bad-name', detail: `entry ${showName(name)} contains NUL` };
  if (/^[/\\]/.test(name)) return { ok: false, rule: 'archive-absolute', detail: `entry ${showName(name)} is absolute` };
  if (/^[A-Za-z]:/.test(name)) return { ok: false, rule: 'archive-absolute', detail: `entry ${showName(name)} has a drive letter` };
  let depth = 0;
  for (const seg of name.split(/[/\\]/)) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      depth -= 1;
      if (depth < 0) return { ok: false, rule: 'archive-escape', detail: `entry ${showName(name)} climbs out with '..'` };
    } else {
      depth += 1;
    }
  }
  return { ok: true };
}

/** Lower-case extension of the last segment, without the dot ('' when none). */
export function extensionOf(path: string): string {
  const base = path.slice(path.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot <= 0 ? '' : base.slice(dot + 1).toLowerCase();
}
