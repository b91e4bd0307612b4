import { z } from 'zod';

// Apart from outputs.ts so that loading the built-in task cases (which only use the types) does not load zod.

/**
 * How a text output is written, stated per task: `reject` makes a UTF-8 byte order mark, or a space or tab before
 * a line end or at the end of the file, a rejection; `allow` lets the task's own reader decide.
 */
export const TextContractSchema = z.strictObject({
  bom: z.enum(['reject', 'allow']).describe('a UTF-8 byte order mark (EF BB BF) at the start of a declared text output'),
  trailingSpace: z.enum(['reject', 'allow']).describe('a space or tab before a line end (\\n or \\r\\n) or at the end of a declared text output'),
});
export type TextContract = z.infer<typeof TextContractSchema>;

const OutputPath = z
  .string()
  .min(1)
  .max(1024)
  .refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), { error: 'expected a workspace-relative path without ".."' });

/**
 * The outputs a task names. The program must leave exactly these files in its workspace besides what it was given:
 * a missing one is judged by the predicate, any other file (a stray copy, a backup, a second result) is a rejection.
 */
export const DeclaredOutputsSchema = z.strictObject({
  files: z.array(OutputPath).min(1).max(100).describe('every file the program may leave in its workspace besides its inputs'),
  text: TextContractSchema.optional().describe('the text contract of the declared files (leave out for binary outputs)'),
});
export type DeclaredOutputs = z.infer<typeof DeclaredOutputsSchema>;
