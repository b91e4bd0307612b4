import { EXIT } from '../core/errors.js';
import { visibleLine } from '../core/clean-text.js';
import { sweepDeadRuns } from '../harness/ownership/sweep.js';
import { defaultSweepHooks } from '../harness/ownership/sweep-hooks.js';
import { defaultJournalDir } from '../core/ownership-journal.js';

/**
 * `sandcheck clean [--dry-run]`: removes what runs that died left behind, by their ownership journals (a killed
 * witness's socket and state file too, each only while it is still the one recorded).
 */
export async function cleanCommand(opts: { dryRun?: boolean }, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const dir = defaultJournalDir();
  const report = await sweepDeadRuns({ dir, dryRun: opts.dryRun === true, hooks: defaultSweepHooks() });
  const verb = opts.dryRun ? 'would remove' : 'removed';
  for (const r of report.removed) out.write(`${verb}: ${visibleLine(r)}\n`);
  for (const k of report.kept) out.write(`left: ${visibleLine(k.what)}: ${visibleLine(k.reason)}\n`);
  out.write(`${report.deadRuns.length} run(s) that died (journals in ${dir}); ${report.removed.length} item(s) ${verb}, ${report.kept.length} left\n`);
  return report.kept.length > 0 && !opts.dryRun ? EXIT.inconclusive : EXIT.ok;
}
