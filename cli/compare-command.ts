import { writeReportFile } from '../core/atomic-write.js';
import { EXIT } from '../core/errors.js';
import { compareCards, comparisonMarkdown, comparisonText } from '../reports/compare.js';
import { readRunCards } from '../reports/read-cards.js';

export async function compareCommand(dirs: string[], opts: { markdown?: string }): Promise<number> {
  const runs = [];
  for (const dir of dirs) runs.push(await readRunCards(dir));
  const comparison = compareCards(runs);
  process.stdout.write(`${comparisonText(comparison)}\n`);
  if (opts.markdown) {
    await writeReportFile(opts.markdown, comparisonMarkdown(comparison));
    process.stdout.write(`wrote ${opts.markdown}\n`);
  }
  return EXIT.ok;
}
