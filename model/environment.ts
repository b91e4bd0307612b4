import { z } from 'zod';
import { RunConfigRecordSchema } from './run-options.js';

/** What a run was: recorded in both scorecards (`environment`) and in a sign-off bundle's fingerprint. */

export const LABEL_MAX = 128;
/** The backend configuration file kept in the card: larger files keep their hash and a head of the text. */
export const BACKEND_CONFIG_CONTENT_MAX = 64 * 1024;

export const Sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, { error: 'a lower-case hex SHA-256' });

export const ToolVersionSchema = z.strictObject({
  tool: z.string().max(64),
  /** ok: it answered; missing: not installed in the system binary directories; failed: it did not answer in time or exited non-zero. */
  status: z.enum(['ok', 'missing', 'failed']),
  version: z.string().max(256).optional().describe('the first line the tool printed for its version, cleaned'),
  detail: z.string().max(512).optional().describe('why the version is not known, or how it was asked for'),
});
export type ToolVersion = z.infer<typeof ToolVersionSchema>;

export const BackendConfigRecordSchema = z.strictObject({
  file: z.string().max(256).describe('the base name of the --backend-config file'),
  bytes: z.number().int().nonnegative(),
  sha256: Sha256Hex.describe('of the whole file as read'),
  options: z
    .unknown()
    .optional()
    .describe('the options as the backend parsed and applies them (defaults filled in), as JSON: what ran, not what the file says'),
  optionsSha256: Sha256Hex.optional().describe('of `options` as canonical JSON (keys sorted, no whitespace)'),
  checkedBy: z
    .enum(['sandcheck', 'adapter'])
    .optional()
    .describe("sandcheck: a built-in backend's own schema parsed them; adapter: handed as they are to your adapter, which checks them itself"),
  content: z.string().max(BACKEND_CONFIG_CONTENT_MAX).optional().describe('cards of earlier versions: the file as text'),
  truncated: z.boolean().optional().describe('cards of earlier versions'),
});

export const BackendFactSchema = z.strictObject({
  name: z.string().max(64),
  value: z.string().max(256),
});
export type BackendFact = z.infer<typeof BackendFactSchema>;

export const CgroupMode = z.enum(['v1', 'hybrid', 'v2', 'unknown']);

export const EnvironmentSchema = z.strictObject({
  label: z.string().max(LABEL_MAX).optional().describe('--label: tells two runs of one backend apart in every comparison'),
  sandcheckVersion: z.string().max(64),
  node: z.string().max(64),
  kernel: z.string().max(256).describe('uname release'),
  cgroupMode: CgroupMode.describe('v1, hybrid (v1 controllers plus a v2 tree at /sys/fs/cgroup/unified) or v2 (unified)'),
  policySha256: Sha256Hex.describe('of the policy as used, as canonical JSON (keys sorted, no whitespace)'),
  tools: z.array(ToolVersionSchema).max(32).describe('sandbox tools on this machine, asked with `<tool> --version`; missing is recorded, never an error'),
  backendConfig: BackendConfigRecordSchema.optional(),
  runConfig: RunConfigRecordSchema.optional(),
  backendFacts: z
    .array(BackendFactSchema)
    .max(16)
    .optional()
    .describe("what the backend told of itself while its boxes still ran (describe()): e.g. the image digest, the daemon's version and API version"),
});
export type RunEnvironment = z.infer<typeof EnvironmentSchema>;
