import { z } from 'zod';

const positiveInt = () => z.number({ error: 'expected a positive integer' }).int({ error: 'expected a positive integer' }).positive({ error: 'expected a positive integer' });
const positiveNumber = () => z.number({ error: 'expected a positive number' }).positive({ error: 'expected a positive number' });
const nonNegativeInt = () => z.number({ error: 'expected an integer ≥ 0' }).int({ error: 'expected an integer ≥ 0' }).min(0, { error: 'expected an integer ≥ 0' });

export const NetworkTarget = z
  .string()
  .min(1)
  .describe('host:port, [v6]:port, or a CIDR such as 203.0.113.0/24');

export const PolicySchema = z
  .strictObject({
    name: z.string().min(1),
    files: z.strictObject({
      /** Inputs are copied in read-only; the payload may not change them. */
      readOnlyInput: z.boolean(),
      /** Host paths visible inside the box beyond the runtime itself. */
      hostPaths: z.enum(['none']),
    }),
    network: z.strictObject({
      mode: z.enum(['off', 'allowlist']),
      allow: z.array(NetworkTarget),
    }),
    resources: z.strictObject({
      cpus: positiveNumber(),
      memoryMb: positiveInt(),
      wallSeconds: positiveNumber(),
      processes: positiveInt(),
      diskMb: positiveInt(),
    }),
    identity: z.strictObject({
      unprivileged: z.boolean(),
      hostCredentials: z.enum(['none']),
    }),
    lifecycle: z.strictObject({
      freshEnvironment: z.boolean(),
      destroyAfter: z.boolean(),
    }),
    exports: z.strictObject({
      maxFiles: positiveInt(),
      maxFileMb: positiveNumber(),
      maxTotalMb: positiveNumber(),
    }),
    output: z.strictObject({
      /** stdout + stderr together, per execution. */
      maxBytes: positiveInt(),
    }),
    attempts: z.strictObject({
      corrections: nonNegativeInt(),
      queueStartupSeconds: positiveNumber(),
    }),
  })
  .meta({ id: 'sandcheck-policy', title: 'sandcheck policy' });

export type Policy = z.infer<typeof PolicySchema>;

/** The essay's numbers. */
export const REFERENCE_POLICY: Policy = {
  name: 'reference',
  files: { readOnlyInput: true, hostPaths: 'none' },
  network: { mode: 'off', allow: [] },
  resources: { cpus: 2, memoryMb: 512, wallSeconds: 30, processes: 64, diskMb: 1024 },
  identity: { unprivileged: true, hostCredentials: 'none' },
  lifecycle: { freshEnvironment: true, destroyAfter: true },
  exports: { maxFiles: 20, maxFileMb: 5, maxTotalMb: 40 },
  output: { maxBytes: 2 * 1024 * 1024 },
  attempts: { corrections: 3, queueStartupSeconds: 12 },
};

/** Same as reference with a 5 s wall so a full run fits in CI. */
export const CI_POLICY: Policy = {
  ...REFERENCE_POLICY,
  name: 'ci',
  resources: { ...REFERENCE_POLICY.resources, wallSeconds: 5 },
};

export const POLICY_PRESETS = { reference: REFERENCE_POLICY, ci: CI_POLICY } as const;
export type PresetName = keyof typeof POLICY_PRESETS;

export function isPresetName(name: string): name is PresetName {
  return Object.hasOwn(POLICY_PRESETS, name);
}
