import { EXIT } from '../core/errors.js';
import { writeScorecards } from '../reports/write-cards.js';
import { recoverResultsJournal } from '../harness/results-journal.js';

/** `sandcheck report --recover DIR`: the run journal a dead run left in DIR becomes valid scorecards marked incomplete. */
export async function recoverCommand(dir: string, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const r = await recoverResultsJournal(dir, writeScorecards);
  out.write(
    `recovered run ${r.runId}: ${r.results} result(s)${r.dropped ? `, ${r.dropped} unreadable line(s) dropped` : ''}; the cards are marked incomplete\n`,
  );
  out.write(`reports: ${Object.values(r.files).join(', ')}\n`);
  return EXIT.ok;
}
