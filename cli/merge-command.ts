import { summaryText } from '../reports/summary-table.js';
import { mergeShardDirs } from '../reports/merge-shards.js';
import { checkOutDir, createOutDir } from '../core/out-dir.js';

/** `sandcheck merge DIR… --out OUT`: the shards of one evaluation (run --shard i/n) as one pair of scorecards; exit as a run would. */
export async function mergeCommand(dirs: readonly string[], opts: { out: string }, out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const checked = await checkOutDir(opts.out);
  const merged = await mergeShardDirs(dirs, opts.out, () => createOutDir(checked, (m) => process.stderr.write(`${m}\n`)));
  out.write(`merged ${dirs.length} shard(s) of ${merged.security.backend.name}\n`);
  out.write(`${summaryText(merged.security, merged.task)}\n`);
  out.write(`reports: ${Object.values(merged.files).join(', ')}\n`);
  return merged.exitCode;
}
