/**
 * What the capability escapes must leave exactly as they found it: the run's decoy files (bytes, mode,
 * mtime), the host's mounts, its kernel modules, and no device node of theirs anywhere they may make one.
 * The machine is shared with other test runs that mount and unmount their own things meanwhile, so the
 * mount comparison is scoped: nothing added under this test's own directories or named by a payload
 * (`sc-escape`), nothing removed that is not another sandcheck run's or a container runtime's own.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';

export interface HostSnapshot {
  decoys: Record<string, string>;
  mounts: string[];
  /** Module names from /proc/modules; null on a kernel without module support. */
  modules: string[] | null;
  /** Device nodes a payload made (sc-escape-disk-*) in the places it may make them. */
  nodes: string[];
}

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await walk(p)));
    else out.push(p);
  }
  return out;
}

/** mount id, mount point, fs root, device, type, source: enough to tell one mount from another. */
function mountLines(text: string): string[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [left = '', right = ''] = l.split(' - ');
      const f = left.split(' ');
      return `${f[0]} ${f[4]} ${f[3]} ${f[2]} ${right.split(' ').slice(0, 2).join(' ')}`;
    });
}

export async function hostSnapshot(decoyDir: string): Promise<HostSnapshot> {
  const decoys: Record<string, string> = {};
  for (const file of await walk(decoyDir)) {
    const st = await stat(file);
    decoys[relative(decoyDir, file)] = `${createHash('sha256').update(await readFile(file)).digest('hex')} mode ${st.mode.toString(8)} mtime ${st.mtimeMs}`;
  }
  const modules = await readFile('/proc/modules', 'utf8').then(
    (t) => t.split('\n').filter(Boolean).map((l) => l.split(' ')[0] ?? '').sort(),
    () => null,
  );
  const nodes: string[] = [];
  for (const dir of ['/dev', '/dev/shm', '/tmp', '/']) nodes.push(...(await readdir(dir).catch(() => [])).filter((n) => n.startsWith('sc-escape')).map((n) => join(dir, n)));
  return { decoys, mounts: mountLines(await readFile('/proc/self/mountinfo', 'utf8')), modules, nodes };
}

const OTHERS = /sandcheck|sccmd|\/run\/netns\/|docker|containerd|runsc|\/sc-/;

/** Differences that are this test's (or its payloads') doing; empty when the host is as it was. */
export function hostChanges(before: HostSnapshot, after: HostSnapshot, ownDirs: readonly string[]): string[] {
  const changes: string[] = [];
  for (const [k, v] of Object.entries(before.decoys)) if (after.decoys[k] !== v) changes.push(`decoy ${k}: ${v} → ${after.decoys[k] ?? 'gone'}`);
  for (const k of Object.keys(after.decoys)) if (!(k in before.decoys)) changes.push(`decoy ${k} appeared`);
  const was = new Set(before.mounts);
  const is = new Set(after.mounts);
  for (const m of after.mounts) {
    const point = m.split(' ')[1] ?? '';
    if (!was.has(m) && (m.includes('sc-escape') || ownDirs.some((d) => point === d || point.startsWith(`${d}/`)))) changes.push(`mount added: ${m}`);
  }
  for (const m of before.mounts) if (!is.has(m) && !OTHERS.test(m.split(' ')[1] ?? '')) changes.push(`mount removed: ${m}`);
  if (JSON.stringify(before.modules) !== JSON.stringify(after.modules)) changes.push(`kernel modules: ${JSON.stringify(before.modules)} → ${JSON.stringify(after.modules)}`);
  changes.push(...after.nodes.filter((n) => !before.nodes.includes(n)).map((n) => `device node left: ${n}`));
  return changes;
}
