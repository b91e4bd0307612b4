import type { Evidence } from '../model/evidence.js';
import { capText, visibleLine, visibleText } from '../core/clean-text.js';

const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' };

/** Text for HTML (`<pre>`, `<summary>`): cleaned first, then `& < > "` as entities, so nothing a payload printed becomes markup. */
export const htmlText = (text: string): string => visibleText(text).replace(/[&<>"]/g, (ch) => HTML[ch] ?? ch);

/**
 * One Markdown table cell or inline phrase: cleaned, one line, capped, HTML characters as entities and every
 * character Markdown gives meaning to backslash-escaped (a `|` cannot end the cell, a backtick cannot open code).
 */
export function mdCell(text: string, max = 200): string {
  const line = visibleLine(text).replace(/\s+/g, ' ');
  const short = line.length > max ? `${line.slice(0, max - 1)}…` : line;
  return short.replace(/[&<>"]/g, (ch) => HTML[ch] ?? ch).replace(/[\\`*_[\]|~!]/g, '\\$&');
}

/** Evidence as a collapsed block: `<pre>` holds text literally (until `</pre>`, which escaped text can never contain). */
export function evidenceDetails(title: string, evidence: readonly Evidence[], maxChars = 16 * 1024): string {
  if (evidence.length === 0) return '';
  const text = evidence.map((e) => `[${e.source}] ${e.witness}${e.where ? ` @ ${e.where}` : ''}: ${e.detail}`).join('\n');
  return `<details><summary>${htmlText(visibleLine(title))}</summary>\n\n<pre>\n${htmlText(capText(text, maxChars))}\n</pre>\n\n</details>\n`;
}

/** Appends parts while they fit in `maxBytes`; the rest is dropped with one visible note. */
export function fitMarkdown(parts: readonly string[], maxBytes: number, note: (dropped: number) => string): string {
  const noteRoom = 512;
  let out = '';
  let used = 0;
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i] ?? '';
    const bytes = Buffer.byteLength(part);
    if (used + bytes > maxBytes - noteRoom) return `${out}\n${note(parts.length - i)}\n`;
    out += part;
    used += bytes;
  }
  return out;
}

export const mdTableHead = (header: readonly string[]): string => `| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|\n`;

/** One table row, every cell through mdCell. */
export const mdRow = (cells: readonly string[]): string => `| ${cells.map((c) => mdCell(c)).join(' | ')} |\n`;
