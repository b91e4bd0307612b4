import { z } from 'zod';

/**
 * `sandcheck.yaml`: the options of `sandcheck run` kept in a file, read from the working directory (or `--config FILE`).
 * Keys are the flags' long names; a flag on the command line wins over the file, the file over the defaults.
 * Flags that say "I mean this, now" (--live-network, --skip-adapter-check, --certify, --shard, --witness) are not
 * accepted here: a file found in a checkout must not turn on real network access or skip a check unseen.
 */

export const RUN_CONFIG_FILE = 'sandcheck.yaml';

const text = (max: number) => z.string().min(1).max(max);
const ids = z.array(text(128)).min(1).max(1024);

export const RunFileSchema = z
  .strictObject({
    backend: text(1024).optional().describe('--backend: a built-in backend, preset:NAME, rpc:<command> or a module path'),
    'backend-config': text(4096).optional().describe('--backend-config: YAML/JSON options for the backend (relative to this file)'),
    policy: text(4096).optional().describe('--policy: ci, reference, or a policy file (relative to this file)'),
    out: text(4096).optional().describe('--out: the report directory (relative to this file)'),
    only: ids.optional().describe('--only: probe and task ids'),
    tasks: text(4096).optional().describe('--tasks: a directory of task cases (relative to this file)'),
    image: text(1024).optional().describe('--image: docker backends'),
    'docker-socket': text(4096).optional().describe('--docker-socket: docker backends (relative to this file)'),
    'watch-daemon': z.array(text(4096)).min(1).max(16).optional().describe('--watch-daemon: daemon sockets (relative to this file)'),
    exporter: text(4096).optional().describe('--exporter: reference, naive, command:FILE.yaml or a module path'),
    concurrency: z.number().int().min(1).max(1024).optional().describe('--concurrency'),
    'trust-claims': z.boolean().optional().describe('--trust-claims'),
    waivers: text(4096).optional().describe('--waivers: accepted findings (relative to this file)'),
    label: text(128).optional().describe('--label'),
    html: z.boolean().optional().describe('--html'),
    json: z.boolean().optional().describe('--json'),
  })
  .meta({ id: 'sandcheck-run-file', title: 'sandcheck.yaml: the options of sandcheck run' });
export type RunFile = z.infer<typeof RunFileSchema>;

/** The keys of sandcheck.yaml whose values are paths, taken relative to the file's own directory. */
export const RUN_FILE_PATH_KEYS = ['backend-config', 'out', 'tasks', 'docker-socket', 'waivers'] as const satisfies readonly (keyof RunFile)[];

/** What a run takes when neither a flag nor the file says. */
export const RUN_DEFAULTS = { policy: 'ci', out: 'out', exporter: 'reference' } as const;

export const RunConfigRecordSchema = z
  .strictObject({
    file: z.string().max(256).optional().describe('the file, relative to the working directory; absent when it lies outside it'),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, { error: 'a lower-case hex SHA-256' })
      .describe('of the whole file as read'),
    keys: z.array(z.string().max(64)).max(32).describe('the keys whose values the run took from the file'),
    overridden: z.array(z.string().max(64)).max(32).describe('the keys the file set that a command-line flag overrode'),
  })
  .describe('the sandcheck.yaml (or --config file) the run read its options from');
export type RunConfigRecord = z.infer<typeof RunConfigRecordSchema>;
