import { isAbsolute } from 'node:path';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { findBinary } from '../../core/find-binary.js';
import { bwrapCli } from './bwrap-cli.js';
import { codexSandbox, codexSandboxWorkspace } from './codex.js';
import { firejail } from './firejail.js';
import type { PresetDefinition, PresetRequirement } from './model.js';
import { nspawn } from './nspawn.js';
import { podmanCrun, podmanRunsc } from './podman.js';
import { runscDo } from './runsc-do.js';
import { srtDefault, srtDenyHome } from './srt.js';

export { ADAPTER_CLAIMS, type PresetDefinition, type PresetRequirement } from './model.js';

/** The shipped presets and what they need; loading one (preset-backend.ts) pulls in the command backend. */

/** `--backend preset:<name>`. */
export const PRESET_PREFIX = 'preset:';

/** Every shipped preset, in the order `sandcheck backends` lists them. */
export const PRESETS: readonly PresetDefinition[] = [
  bwrapCli,
  firejail,
  runscDo,
  nspawn,
  codexSandbox,
  codexSandboxWorkspace,
  srtDefault,
  srtDenyHome,
  podmanCrun,
  podmanRunsc,
];

export function presetNames(): string[] {
  return PRESETS.map((p) => p.name);
}

export function findPreset(name: string): PresetDefinition | undefined {
  return PRESETS.find((p) => p.name === name);
}

async function present(req: PresetRequirement): Promise<boolean> {
  if (!isAbsolute(req.binary)) return (await findBinary(req.binary)) !== undefined;
  return access(req.binary, constants.X_OK).then(
    () => true,
    () => false,
  );
}

/** The requirements of a preset missing on this machine (empty: all there). */
export async function missingRequirements(def: PresetDefinition): Promise<PresetRequirement[]> {
  const missing: PresetRequirement[] = [];
  for (const r of def.requires) if (!(await present(r))) missing.push(r);
  return missing;
}
