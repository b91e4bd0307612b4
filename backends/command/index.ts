import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { formatIssues } from '../../core/config-issues.js';
import { readConfigFile } from '../../core/config-file.js';
import { withAppliedOptions } from '../shared/applied-options.js';
import { SandcheckError } from '../../core/errors.js';
import { findBinary } from '../../core/find-binary.js';
import { CommandBackend, type CommandRuntime } from './command-backend.js';
import { CommandBackendConfigSchema, type CommandBackendConfig } from './config.js';
import { detectCountingRoots } from './counting-cgroup.js';
import { checkTemplates } from './template.js';

export { CommandBackend, ENV_MARKER, type CommandRuntime, type ToolVersionAnswer } from './command-backend.js';
export { CommandBackendConfigSchema, HOST_PATH, StatusSourceSchema, type CommandBackendConfig } from './config.js';
export { sweepStaleCommandEnvironments } from './sweep.js';
export { checkTemplates, expand, policyValues, POLICY_PLACEHOLDERS } from './template.js';

export const DEFAULT_STATE_DIR = '/run/sandcheck/command';

/** The file parsed and every template checked: errors name the file and the key (CONFIG_INVALID, exit 3). */
export function parseCommandConfig(raw: unknown, file: string): CommandBackendConfig {
  const parsed = CommandBackendConfigSchema.safeParse(raw);
  if (!parsed.success) throw new SandcheckError('CONFIG_INVALID', `invalid command backend configuration\n${formatIssues(parsed.error, raw, file)}`);
  checkTemplates(parsed.data, file);
  return parsed.data;
}

const FileRef = z.strictObject({ configFile: z.string().min(1) });

/**
 * `--backend command --backend-config FILE`: options are `{ configFile }` (the CLI's form, so errors can
 * name the file) or the configuration itself (programmatic use).
 */
export default async function createCommandBackend(options: unknown): Promise<CommandBackend> {
  const ref = FileRef.safeParse(options);
  let file: string;
  let raw: unknown;
  if (ref.success) {
    file = ref.data.configFile;
    raw = await readConfigFile(file);
  } else {
    if (options === undefined || options === null) {
      throw new SandcheckError('CONFIG_INVALID', 'the command backend needs --backend-config FILE (see examples/command-bwrap.yaml)');
    }
    file = '<inline configuration>';
    raw = options;
  }
  const cfg = parseCommandConfig(raw, file);
  return withAppliedOptions(new CommandBackend(await commandRuntime(cfg, file, ref.success ? dirname(resolve(file)) : process.cwd())), cfg);
}

/** What a command backend needs from this machine besides its file (also used by the presets). */
export async function commandRuntime(cfg: CommandBackendConfig, file: string, configDir: string): Promise<CommandRuntime> {
  const [nsenter, mkfs, counting] = await Promise.all([findBinary('nsenter'), findBinary('mkfs.ext4'), detectCountingRoots()]);
  const isRoot = process.getuid?.() === 0;
  return {
    cfg,
    file,
    configDir,
    tools: { nsenter, mkfs },
    counting,
    stateDir: isRoot ? DEFAULT_STATE_DIR : join(tmpdir(), `sandcheck-command-${process.getuid?.() ?? 'u'}`),
  };
}

export { createCommandBackend };
