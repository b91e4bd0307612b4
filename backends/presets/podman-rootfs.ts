import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { join } from 'node:path';
import { SandcheckError, errorMessage } from '../../core/errors.js';

/** Where the podman presets keep the probe root filesystem, one directory per content hash (shared by runs, never written by a box). */
export const PODMAN_ROOTFS_DIR = '/var/lib/sandcheck/podman-rootfs';

/** The unpacked directory for each box uid, once per process. */
const ready = new Map<number, Promise<string>>();

/**
 * The docker backend's offline probe image (this machine's Python, standard library only), unpacked once into
 * `PODMAN_ROOTFS_DIR/<hash>` for `podman run --rootfs`: the box mounts it `--read-only`, so one copy serves every run.
 * A failed attempt is forgotten, so the next run tries again.
 */
export function ensurePodmanRootfs(boxUid: number): Promise<string> {
  const known = ready.get(boxUid);
  if (known) return known;
  const p = unpack(boxUid).catch((err: unknown) => {
    ready.delete(boxUid);
    throw err;
  });
  ready.set(boxUid, p);
  return p;
}

async function unpack(boxUid: number): Promise<string> {
  // Loaded here, not at the top: --version, list and the preset catalogue must not load the image builder or execa.
  const [{ buildProbeRootfs }, { execa }] = await Promise.all([import('../docker/image.js'), import('execa')]);
  const rootfs = await buildProbeRootfs({ boxUid });
  const dir = join(PODMAN_ROOTFS_DIR, rootfs.hash.slice(0, 16));
  if ((await stat(join(dir, 'usr')).catch(() => undefined))?.isDirectory()) return dir;
  try {
    await mkdir(PODMAN_ROOTFS_DIR, { recursive: true, mode: 0o755 });
    const tmp = await mkdtemp(join(PODMAN_ROOTFS_DIR, '.unpack-'));
    try {
      const tar = join(tmp, 'rootfs.tar');
      await pipeline(rootfs.tar(), createWriteStream(tar));
      await mkdir(join(tmp, 'rootfs'));
      await execa('tar', ['-x', '--numeric-owner', '-f', tar, '-C', join(tmp, 'rootfs')]);
      await rename(join(tmp, 'rootfs'), dir).catch(async (err: unknown) => {
        // Another run unpacked the same content first.
        if (!(await stat(join(dir, 'usr')).catch(() => undefined))) throw err;
      });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  } catch (err) {
    throw new SandcheckError('BACKEND_UNAVAILABLE', `cannot unpack the probe root filesystem into ${dir}: ${errorMessage(err)}`, {
      hint: `the podman presets run as root and need tar and write access to ${PODMAN_ROOTFS_DIR}`,
    });
  }
  return dir;
}
