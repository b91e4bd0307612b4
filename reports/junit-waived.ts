import type { XMLElement } from 'xmlbuilder';
import type { WaiverNote } from '../model/waiver.js';
import { cleanForReport } from '../core/clean-text.js';

/** The testcase API junit-report-builder gives us, as far as a waived case needs it. */
interface SkippableCase {
  skipped(): unknown;
  standardOutput(log?: string): unknown;
  build(parent: XMLElement): XMLElement;
}

export const waivedMessage = (w: WaiverNote): string => cleanForReport(`waived: ${w.reason} (${w.owner}, expires ${w.expires})`.replace(/\s+/g, ' '), 300);

/**
 * A crossing a live waiver accepts: `<skipped message="waived: reason (owner, expires …)">`, the full report in
 * system-out (no testcase property: junit-10.xsd allows none there). junit-report-builder writes a bare
 * `<skipped/>`, so the message is added to the built element.
 */
export function markWaived(c: SkippableCase, waiver: WaiverNote, body: string): void {
  const message = waivedMessage(waiver);
  c.skipped();
  c.standardOutput(cleanForReport(`${message}\n\n${body}`));
  const build = c.build.bind(c);
  c.build = (parent: XMLElement): XMLElement => {
    const element = build(parent);
    for (const child of element.children) {
      if ((child as XMLElement).name === 'skipped') (child as XMLElement).att('message', message);
    }
    return element;
  };
}
