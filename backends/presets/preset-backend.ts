import { z } from 'zod';
import { SandcheckError } from '../../core/errors.js';
import type { BackendContext, Environment } from '../../model/backend-contract.js';
import type { Policy } from '../../model/policy.js';
import { CommandBackend, commandRuntime, parseCommandConfig, type CommandRuntime } from '../command/index.js';
import { findPreset, missingRequirements, PRESET_PREFIX, presetNames } from './catalog.js';
import type { PresetDefinition } from './model.js';

/** A preset: the command backend on a shipped file, whose preflight first names what is missing and how to install it. */
export class PresetBackend extends CommandBackend {
  constructor(
    readonly preset: PresetDefinition,
    rt: CommandRuntime,
  ) {
    super(rt);
  }

  override async preflight(): Promise<void> {
    const missing = await missingRequirements(this.preset);
    if (missing.length > 0) {
      // The hint is the exact command alone: `backends` and `doctor` show it as the install command, `run` prints it.
      throw new SandcheckError(
        'BACKEND_UNAVAILABLE',
        `preset ${this.preset.name}: ${missing.map((m) => m.binary).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not installed; install with: ${this.preset.install}`,
        {
          hint: this.preset.install,
        },
      );
    }
    await super.preflight();
  }

  /** A preset that runs an image of sandcheck's own makes it here, at its first box (the preset caches it). */
  override async create(policy: Policy, ctx: BackendContext): Promise<Environment> {
    if (this.preset.image) this.rt.cfg = { ...this.rt.cfg, image: await this.preset.image() };
    return super.create(policy, ctx);
  }
}

/** Presets take no options: what they run is the tool's documented mode; your own variant is a command backend file. */
const PresetOptions = z.union([z.undefined(), z.null(), z.strictObject({})]);

export async function loadPreset(name: string, options?: unknown): Promise<PresetBackend> {
  const def = findPreset(name);
  if (!def) {
    throw new SandcheckError('BACKEND_UNKNOWN', `no preset "${name}"`, {
      hint: `presets: ${presetNames()
        .map((n) => PRESET_PREFIX + n)
        .join(', ')}`,
    });
  }
  if (!PresetOptions.safeParse(options).success) {
    throw new SandcheckError('CONFIG_INVALID', `preset ${name} takes no --backend-config options`, {
      hint: 'to change its flags, copy its configuration into a file of your own and run it with --backend command --backend-config FILE (docs/presets.md)',
    });
  }
  const { raw, configDir } = await def.config();
  const file = `preset ${name}`;
  const cfg = parseCommandConfig(raw, file);
  return new PresetBackend(def, await commandRuntime(cfg, file, configDir));
}
