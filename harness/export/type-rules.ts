import { extensionOf } from './export-path.js';
import type { ContentType } from '../../model/export-types.js';

const PARENT: Partial<Record<ContentType, ContentType>> = {
  csv: 'text',
  json: 'text',
  script: 'text',
  xml: 'text',
  html: 'text',
  svg: 'xml',
  xlsx: 'zip',
  docx: 'zip',
  pptx: 'zip',
};

/** The type and every type it is a kind of, most specific first ('svg' → svg, xml, text). */
export function lineage(type: ContentType): ContentType[] {
  const out: ContentType[] = [type];
  for (let p = PARENT[type]; p !== undefined; p = PARENT[p]) out.push(p);
  return out;
}

export function admits(allowed: readonly string[], type: ContentType): boolean {
  return lineage(type).some((t) => allowed.includes(t));
}

export const EXECUTABLE_TYPES: readonly ContentType[] = ['elf', 'pe', 'macho', 'wasm'];
/** Compressed or archive formats whose entries the exporter cannot list: refused, since they cannot be verified. */
export const OPAQUE_ARCHIVE_TYPES: readonly ContentType[] = ['bzip2', 'xz', 'zstd', '7z', 'rar'];

type Expectation = readonly ContentType[] | 'text-family';

/** What content a file name promises. Names not listed promise nothing (content rules still apply). */
const BY_EXTENSION: Record<string, Expectation> = {
  png: ['png'],
  jpg: ['jpeg'],
  jpeg: ['jpeg'],
  gif: ['gif'],
  pdf: ['pdf'],
  zip: ['zip', 'xlsx', 'docx', 'pptx'],
  xlsx: ['xlsx'],
  xlsm: ['xlsx'],
  docx: ['docx'],
  docm: ['docx'],
  pptx: ['pptx'],
  gz: ['gzip'],
  tgz: ['gzip'],
  tar: ['tar'],
  svg: ['svg'],
  xml: ['xml', 'svg'],
  html: ['html', 'xml', 'text'],
  htm: ['html', 'xml', 'text'],
  json: ['json'],
  csv: 'text-family',
  tsv: 'text-family',
  txt: 'text-family',
  md: 'text-family',
  log: 'text-family',
  py: 'text-family',
  sh: 'text-family',
  exe: ['pe'],
  dll: ['pe'],
};

/** undefined when the name promises nothing or the content keeps the promise; else what was promised. */
export function nameContentMismatch(path: string, type: ContentType): string | undefined {
  const ext = extensionOf(path);
  const expected = Object.hasOwn(BY_EXTENSION, ext) ? BY_EXTENSION[ext] : undefined;
  if (expected === undefined) return undefined;
  if (expected === 'text-family') return type === 'empty' || lineage(type).includes('text') ? undefined : `.${ext} promises text`;
  return expected.includes(type) ? undefined : `.${ext} promises ${expected.join('/')}`;
}
