// Characters XML 1.0 cannot hold (and C1 controls) are made visible instead of silently dropped.
const INVALID_XML = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\uFFFE\uFFFF]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

function visibleEscape(ch: string): string {
  const code = ch.charCodeAt(0);
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
}

// CSI and OSC escape sequences only; a lone ESC or BEL stays and is made visible below.
const ANSI = /\u001b\[[0-?]*[ -/]*[@-~]|\u001b\][^\u0007\u001b]*(?:\u0007|\u001b\\)/g;

function stripAnsi(text: string): string {
  return text.replace(ANSI, '');
}

/** ANSI sequences removed, then every remaining character XML cannot carry shown as \xNN. */
export function visibleText(text: string): string {
  return stripAnsi(text).replace(INVALID_XML, visibleEscape);
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
