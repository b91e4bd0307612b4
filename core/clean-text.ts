/**
 * The one cleaning rule for every text that reaches a terminal or a report (JUnit, JSON, Markdown, the
 * summary table, `sandcheck list`): ANSI CSI/OSC sequences are removed, and every character that can
 * spoof what a reader sees is shown escaped instead of dropped: C0 controls (except tab and newline),
 * DEL, C1 controls, bidirectional overrides, embeddings, isolates and marks, lone surrogates and the
 * XML non-characters U+FFFE/U+FFFF.
 */
const UNSAFE =
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** The same set, for a single character (used by the JSON writer). */
export const SPOOFING_CHARACTER = new RegExp(UNSAFE.source, 'g');

export function visibleEscape(ch: string): string {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

// 7-bit CSI and OSC escape sequences only; a lone ESC or BEL, and the 8-bit C1 forms, stay and are shown escaped below.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** ANSI sequences removed, then every remaining control, bidi or XML-invalid character shown as `\xNN` / `\uNNNN`. */
export function visibleText(text: string): string {
  return stripAnsi(text).replace(UNSAFE, visibleEscape);
}

/** One line for a terminal cell or an attribute: cleaned, and newlines and tabs shown escaped too. */
export function visibleLine(text: string): string {
  return visibleText(text).replace(/[\n\t]/g, visibleEscape);
}

/** Caps text at `max` characters, keeping head and tail around a visible marker. */
export function capText(text: string, max = 64 * 1024): string {
  if (text.length <= max) return text;
  const keep = Math.floor((max - 64) / 2);
  return `${text.slice(0, keep)}\n…[truncated ${text.length - 2 * keep} characters]…\n${text.slice(-keep)}`;
}

/** For any text that goes into XML or Markdown: cleaned, capped, `]]>` never left intact. */
export function cleanForReport(text: string, max = 64 * 1024): string {
  return capText(visibleText(text), max).replaceAll(']]>', ']]\\x3e');
}

/**
 * JSON text that cannot spoof a terminal or an editor showing the file: characters of the unsafe set that
 * JSON.stringify leaves raw (DEL, C1, bidi, U+FFFE/U+FFFF) are written as JSON `\u` escapes. The data
 * parses back to exactly the same strings.
 */
export function safeJsonStringify(value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(SPOOFING_CHARACTER, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
