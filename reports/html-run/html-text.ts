import type { CaptureSummary } from '../../model/observation.js';
import { capText, visibleLine } from '../../core/clean-text.js';
import { htmlText } from '../markdown-text.js';

/** One line of text for an element or a double-quoted attribute: cleaned, newlines shown escaped, `& < > "` as entities. */
export const h = (text: string): string => htmlText(visibleLine(text));

/** A block for `<pre>`: cleaned, capped, `& < > "` as entities (so `</pre>` or `</textarea>` from a box is text). */
export const hBlock = (text: string, max = 16 * 1024): string => htmlText(capText(text, max));

/**
 * Bytes a box wrote, as text that shows every byte: valid UTF-8 as its characters, each byte of an invalid
 * sequence as `\xNN` (then the usual cleaning makes controls visible), so nothing is silently replaced.
 */
export function visibleBytes(bytes: Uint8Array): string {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const lead = bytes[i] ?? 0;
    const len = lead < 0x80 ? 1 : lead >= 0xc2 && lead < 0xe0 ? 2 : lead >= 0xe0 && lead < 0xf0 ? 3 : lead >= 0xf0 && lead < 0xf5 ? 4 : 0;
    if (len > 0 && i + len <= bytes.length) {
      try {
        out += decoder.decode(bytes.subarray(i, i + len));
        i += len;
        continue;
      } catch {
        // not a valid sequence: the lead byte is shown as a byte
      }
    }
    out += `\\x${lead.toString(16).padStart(2, '0')}`;
    i += 1;
  }
  return out;
}

/** What a box wrote on one stream, head (and tail when the middle was left out), every byte shown. */
export function captureText(c: CaptureSummary): string {
  const head = visibleBytes(Buffer.from(c.headBase64, 'base64'));
  if (!c.tailBase64) return head;
  return `${head}\n…[${c.bytes} bytes in all; the middle is not kept]…\n${visibleBytes(Buffer.from(c.tailBase64, 'base64'))}`;
}
