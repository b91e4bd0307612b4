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

function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line += 1;
  return line;
}

const TAG = /<([^>]*)>/g;
const ATTR = /([^\s=/>"']+)\s*(?:=\s*("[^"]*"|'[^']*'|[^\s>]+))?/g;

/** Active content in an SVG: <script> (any namespace prefix), on*= handlers, javascript:/vbscript: URLs. */
export function findSvgHazards(text: string, max: number): { hazards: SvgHazard[]; total: number } {
  const hazards: SvgHazard[] = [];
  let total = 0;
  const add = (what: SvgHazard['what'], index: number, excerpt: string): void => {
    total += 1;
    if (hazards.length < max) hazards.push({ what, line: lineAt(text, index), excerpt: excerpt.slice(0, 80) });
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
