import { SandcheckError } from '../core/errors.js';

/** Most slices a selection may be cut into. */
export const MAX_SHARDS = 1000;

/**
 * `i/n` with 1 ≤ i ≤ n ≤ MAX_SHARDS. Without zod, so that the command line can parse `--shard` before it
 * loads anything heavy (harness/shard.ts re-exports it next to the schema a scorecard records).
 */
export function parseShard(text: string): { index: number; total: number } {
  const m = /^(\d{1,4})\/(\d{1,4})$/.exec(text.trim());
  const index = Number(m?.[1]);
  const total = Number(m?.[2]);
  if (!m || index < 1 || total < 1 || total > MAX_SHARDS || index > total) {
    throw new SandcheckError('USAGE', `--shard ${JSON.stringify(text)}: expected i/n with 1 ≤ i ≤ n ≤ ${MAX_SHARDS} (e.g. 2/3)`, {
      hint: 'give each CI job one of 1/n … n/n, then `sandcheck merge` their --out directories',
    });
  }
  return { index, total };
}
