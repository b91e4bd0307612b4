import { constants } from 'node:fs';
import { mkdir, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { CANDIDATE_KINDS, type ExportCandidate, type ExportLimits } from '../../model/export-types.js';

/**
 * How a command exporter receives the box's files: a staging directory the harness builds from what the
 * download API returned. Every byte the API delivered is a plain file the harness created itself
 * (`files/<n>`, O_EXCL|O_NOFOLLOW); names, kinds and link targets are data in `manifest.json` only.
 * No symlink, hardlink, FIFO or device is ever made on the host, and no box-chosen path is used as a
 * host path: a hostile name (`../../x`, `/etc/x`) is just a JSON string.
 */
export const StagingEntrySchema = z.strictObject({
  /** The path as the box named it (hostile data). */
  path: z.string(),
  kind: z.enum(CANDIDATE_KINDS),
  size: z.number().int().nonnegative(),
  /** Staging-relative file holding the bytes the download API returned, when it returned any. */
  file: z.string().optional(),
  linkTarget: z.string().optional(),
  nlink: z.number().int().nonnegative().optional(),
});

export const StagingManifestSchema = z
  .strictObject({
    version: z.literal(1),
    limits: z.strictObject({
      maxFiles: z.number().int(),
      maxFileBytes: z.number().int(),
      maxTotalBytes: z.number().int(),
      allowedTypes: z.array(z.string()).optional(),
    }),
    entries: z.array(StagingEntrySchema),
  })
  .meta({ id: 'sandcheck-export-staging-manifest', title: 'what a command exporter receives (manifest.json)' });
export type StagingManifest = z.infer<typeof StagingManifestSchema>;

export const MANIFEST_NAME = 'manifest.json';
export const FILES_DIR = 'files';

/** Writes the staging directory (which must not exist yet) and returns the manifest it wrote. */
export async function writeStaging(dir: string, candidates: readonly ExportCandidate[], limits: ExportLimits): Promise<StagingManifest> {
  await mkdir(join(dir, FILES_DIR), { recursive: true, mode: 0o700 });
  const entries: StagingManifest['entries'] = [];
  let n = 0;
  for (const c of candidates) {
    let file: string | undefined;
    if (c.content) {
      file = `${FILES_DIR}/${String(n++).padStart(6, '0')}`;
      const fh = await open(join(dir, file), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
      try {
        await fh.writeFile(c.content);
      } finally {
        await fh.close();
      }
    }
    entries.push({
      path: c.path,
      kind: c.kind,
      size: c.size,
      ...(file !== undefined ? { file } : {}),
      ...(c.linkTarget !== undefined ? { linkTarget: c.linkTarget } : {}),
      ...(c.nlink !== undefined ? { nlink: c.nlink } : {}),
    });
  }
  const manifest: StagingManifest = {
    version: 1,
    limits: {
      maxFiles: limits.maxFiles,
      maxFileBytes: limits.maxFileBytes,
      maxTotalBytes: limits.maxTotalBytes,
      ...(limits.allowedTypes ? { allowedTypes: limits.allowedTypes } : {}),
    },
    entries,
  };
  await writeFile(join(dir, MANIFEST_NAME), `${JSON.stringify(manifest, null, 2)}\n`, { flag: 'wx', mode: 0o600 });
  return manifest;
}
