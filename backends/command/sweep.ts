import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ownerAlive, readOwner, removeEnvRoot } from '../bwrap/workspace.js';
import { CountingCgroup, detectCountingRoots } from './counting-cgroup.js';
import { CGROUP_NAMES } from '../shared/cgroup-names.js';
import { RUN_MARKER } from '../../model/backend-contract.js';
import { ENV_MARKER } from './command-backend.js';
import { readToolTempRecord, removeToolTemp } from './tool-temp.js';

/** `<runId>-<envId>`: the only names the command backend gives environments. */
const ENV_KEY = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}-[0-9a-f]{8}$/;

/**
 * Crash sweep: environments under `stateDir` whose ownership record names a process that is gone (a
 * harness killed mid-run) lose their counting cgroup subtree (processes killed first) and their workspace
 * (unmounted, removed). Anything whose owner lives is left alone, and so is anything without a record unless
 * its run is one the ownership journal proved dead (`deadRunIds`: killed between mkdir and the record).
 * The tool's own temp directories of such an environment (`toolTemp`, recorded in its root) go too.
 */
export async function sweepStaleCommandEnvironments(
  stateDir: string,
  dryRun = false,
  deadRunIds: readonly string[] = [],
): Promise<{ removed: string[]; kept: string[] }> {
  const removed: string[] = [];
  const kept: string[] = [];
  const counting = await detectCountingRoots();
  for (const key of await readdir(stateDir).catch(() => [] as string[])) {
    if (!ENV_KEY.test(key)) continue;
    const root = join(stateDir, key);
    const owner = await readOwner(join(root, 'owner.json'));
    const runId = key.slice(0, -9);
    if (owner === undefined ? !deadRunIds.includes(runId) : await ownerAlive(owner)) continue;
    const name = `${CGROUP_NAMES.command}${key}`;
    // Read before the root goes; used after the kill (the tool may still be writing into its directory).
    const toolTemp = await readToolTempRecord(root);
    const markers = { [RUN_MARKER]: runId, [ENV_MARKER]: key.slice(-8) };
    const toolDir = (dir: string): string => `${key}: the tool's directory ${join(toolTemp?.dir ?? '', dir)}`;
    if (dryRun) {
      if (toolTemp) removed.push(...(await removeToolTemp(toolTemp, markers, { dryRun })).removed.map(toolDir));
      removed.push(`command environment ${key}`);
      continue;
    }
    let survived = false;
    if ('roots' in counting) {
      const cg = CountingCgroup.open(counting.roots, name);
      const left = await cg.killAll();
      survived = left.length > 0;
      const problems = survived ? [`${left.length} process(es) survived`] : await cg.remove();
      if (problems.length > 0) kept.push(`${name}: ${problems.join('; ')}`);
      else removed.push(`cgroup ${name}`);
    }
    if (toolTemp && survived) kept.push(`${key}: the tool's directories, while its processes survive`);
    else if (toolTemp) {
      const r = await removeToolTemp(toolTemp, markers);
      removed.push(...r.removed.map(toolDir));
      kept.push(...r.kept.map(toolDir));
    }
    const mounted =
      owner?.mounted ?? (await readFile('/proc/self/mounts', 'utf8').catch(() => '')).split('\n').some((l) => l.split(' ')[1] === join(root, 'fs'));
    const problems = await removeEnvRoot(root, mounted, name, owner?.image);
    if (problems.length > 0) kept.push(`${key}: ${problems.join('; ')}`);
    else removed.push(`command environment ${key}`);
  }
  return { removed, kept };
}
