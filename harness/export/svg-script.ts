export interface SvgHazard {
  what: 'script element' | 'event handler' | 'javascript URL';
  /** 1-based line of the tag. */
  line: number;
  excerpt: string;
}

const NAMED: Record<string, string> = { colon: ':', tab: '\t', newline: '\n', lpar: '(', rpar: ')', amp: '&', quot: '"', apos: "'", lt: '<', gt: '>' };

/** Attribute values as a browser sees them: entities decoded, then whitespace and controls dropped. */
function normaliseUrl(value: string): string {
  const decoded = value.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);?/gi, (whole, body: string) => {
    if (body.startsWith('#x') || body.startsWith('#X')) return String.fromCodePoint(Math.min(parseInt(body.slice(2), 16), 0x10ffff));
    if (body.startsWith('#')) return String.fromCodePoint(Math.min(parseInt(body.slice(1), 10), 0x10ffff));
    return NAMED[body.toLowerCase()] ?? whole;
  });
  return decoded.replace(/[\s\x00-\x1f]+/g, '').toLowerCase();
}

/** Comments replaced by blanks of the same shape (newlines kept, so line numbers hold); linear, no regex backtracking. */
function blankComments(text: string): string {
  let out = '';
  let pos = 0;
  for (let start = text.indexOf('<!--'); start !== -1; start = text.indexOf('<!--', pos)) {
    const end = text.indexOf('-->', start + 4);
    const stop = end === -1 ? text.length : end + 3;
    out += text.slice(pos, start) + text.slice(start, stop).replace(/[^\n]/g, ' ');
    pos = stop;
  }
  return out + text.slice(pos);
}

// [^<>] rather than [^>]: a run of '<' without '>' must not make every match attempt scan to the end.
const TAG = /<([^<>]*)>/g;
const ATTR = /([^\s=/>"']+)\s*(?:=\s*("[^"]*"|'[^']*'|[^\s>]+))?/g;

/** Active content in an SVG: <script> (any namespace prefix), on*= handlers, javascript:/vbscript: URLs. */
export function findSvgHazards(svg: string, max: number): { hazards: SvgHazard[]; total: number } {
  const text = blankComments(svg);
  const hazards: SvgHazard[] = [];
  let total = 0;
  let line = 1;
  let counted = 0;
  const add = (what: SvgHazard['what'], index: number, excerpt: string): void => {
    total += 1;
    if (hazards.length >= max) return;
    for (let i = text.indexOf('\n', counted); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line += 1;
    counted = Math.max(counted, index);
    hazards.push({ what, line, excerpt: excerpt.slice(0, 80) });
  };
  for (const tag of text.matchAll(TAG)) {
    const inner = tag[1] ?? '';
    if (inner.startsWith('!') || inner.startsWith('?') || inner.startsWith('/')) continue;
    const nameMatch = /^\s*([^\s/>]+)/.exec(inner);
    const tagName = (nameMatch?.[1] ?? '').toLowerCase();
    if (tagName === 'script' || tagName.endsWith(':script')) add('script element', tag.index, tag[0]);
    const attrs = inner.slice(nameMatch?.[0].length ?? 0);
    for (const attr of attrs.matchAll(ATTR)) {
      const attrName = (attr[1] ?? '').toLowerCase();
      const raw = attr[2] ?? '';
      const value = raw.startsWith('"') || raw.startsWith("'") ? raw.slice(1, -1) : raw;
      if (/^on[a-z]+$/.test(attrName.replace(/^[\w-]+:/, ''))) add('event handler', tag.index, attr[0]);
      else if (/^(?:javascript|vbscript):/.test(normaliseUrl(value))) add('javascript URL', tag.index, attr[0]);
    }
  }
  return { hazards, total };
}
