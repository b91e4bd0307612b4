import { z } from 'zod';
import { MAX_SHARDS } from './shard-arg.js';

/** One slice of a selection, as a scorecard records it (`run --shard i/n`). */
export const ShardSchema = z.strictObject({
  index: z.number().int().positive().describe('this shard, 1-based'),
  total: z.number().int().positive().max(MAX_SHARDS).describe('how many shards the selection was cut into'),
});
export type Shard = z.infer<typeof ShardSchema>;
