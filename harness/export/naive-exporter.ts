import { createHash } from 'node:crypto';
import { link, lstat, mkdir, readFile, readlink, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { entryContent } from './archive-data.js';
import type { ArchiveListing } from './archive-entry.js';
import { looksLikeTar, sniffContentType } from './content-type.js';
import { ExportError } from './errors.js';
import { listTarEntries } from './tar-reader.js';
import type { ExportCandidate, ExportDecision, ExportedFile, Exporter } from '../../model/export-types.js';
import { listZipEntries } from './zip-reader.js';

export interface NaiveExporterOptions {
  /** Host directory that backs the box's workspace: symlink targets and hardlinks are read from here. */
  workspaceRoot: string;
  /**
   * Host safety net, not a policy: every read, write and link must resolve inside this directory (default:
   * the OS temp dir), and destDir must sit at least 3 levels below it so '../../x' still lands inside it.
   */
  confineTo?: string;
}

/** Host-health ceilings only; the naive exporter enforces no export policy at all. */
const SAFETY_MAX_BYTES = 256 * 1024 * 1024;
const SAFETY_MAX_ENTRIES = 100_000;
const MIN_DEST_DEPTH = 3;
const MAX_NESTING = 2;

/** Real path of p even when p or some of its ancestors do not exist yet; follows symlinks like the kernel would. */
async function resolveReal(p: string): Promise<string> {
  const rest: string[] = [];
  let cur = resolve(p);
  for (let hops = 0; hops < 64; hops++) {
    try {
      return join(await realpath(cur), ...rest.reverse());
    } catch {
      const st = await lstat(cur).catch(() => undefined);
      if (st?.isSymbolicLink()) {
        cur = resolve(dirname(cur), await readlink(cur));
        continue;
      }
      const up = dirname(cur);
      if (up === cur) return join(cur, ...rest.reverse());
      rest.push(basename(cur));
      cur = up;
    }
  }
  throw new ExportError('EXPORT_NAIVE_CONFINEMENT', `too many symbolic links resolving ${p}`, { path: p });
}

class Naive {
  readonly exported: ExportedFile[] = [];
  constructor(
    private readonly destDir: string,
    private readonly confine: string,
    private readonly workspaceRoot: string,
  ) {}

  private async confined(p: string, what: string): Promise<void> {
    const real = await resolveReal(p);
    if (real !== this.confine && !real.startsWith(this.confine + sep)) {
      throw new ExportError('EXPORT_NAIVE_CONFINEMENT', `naive exporter would ${what} ${real}, outside ${this.confine}; refusing for the host's sake`, {
        path: real,
      });
    }
  }

  /** mkdir -p and writeFile, both following any symlink on the way: exactly the bug being demonstrated. */
  async write(target: string, content: Uint8Array, depth = 0): Promise<void> {
    await this.confined(target, 'write');
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, content);
    this.exported.push({ path: relative(this.destDir, target), bytes: content.length, sha256: createHash('sha256').update(content).digest('hex') });
    // Archives inside archives are extracted one level deep only: a zip quine must not loop forever.
    if (depth < MAX_NESTING) await this.maybeExtract(content, depth + 1);
  }

  async read(hostPath: string): Promise<Uint8Array> {
    await this.confined(hostPath, 'read');
    return readFile(hostPath);
  }

  async candidate(c: ExportCandidate): Promise<void> {
    const target = join(this.destDir, c.path);
    const inWorkspace = resolve(this.workspaceRoot, c.path);
    if (c.kind === 'symlink' && c.content) {
      // The download API already read through the link: a naive exporter trusts it.
      await this.write(target, c.content);
    } else if (c.kind === 'symlink' && c.linkTarget !== undefined) {
      await this.write(target, await this.read(resolve(dirname(inWorkspace), c.linkTarget)));
    } else if (c.kind === 'file' || c.kind === 'hardlink') {
      // No bytes from the download API and none on the host side to read: a naive exporter just skips it.
      const content = c.content ?? (await this.read(inWorkspace).catch((err: unknown) => (isMissing(err) ? undefined : Promise.reject(err))));
      if (content) await this.write(target, content);
    }
    // directories, fifos, sockets, devices, missing: nothing to copy (reading a fifo would hang)
  }

  private async maybeExtract(content: Uint8Array, depth: number): Promise<void> {
    const type = sniffContentType(content);
    if (type === 'tar') return this.extract(content, listTarEntries(content, { maxEntries: SAFETY_MAX_ENTRIES }), depth);
    if (type === 'zip') return this.extract(content, listZipEntries(content, { maxEntries: SAFETY_MAX_ENTRIES }), depth);
    if (type === 'gzip') {
      let inner: Uint8Array;
      try {
        inner = gunzipSync(content, { maxOutputLength: SAFETY_MAX_BYTES });
      } catch {
        return;
      }
      if (looksLikeTar(inner)) await this.extract(inner, listTarEntries(inner, { maxEntries: SAFETY_MAX_ENTRIES }), depth);
    }
  }

  /** Names are joined onto destDir as they are: '..' climbs, '/etc/x' lands at destDir/etc/x, links are made. */
  private async extract(archive: Uint8Array, listing: ArchiveListing, depth: number): Promise<void> {
    for (const e of listing.entries) {
      const target = join(this.destDir, e.name);
      if (e.type === 'directory') {
        await this.confined(target, 'create');
        await mkdir(target, { recursive: true });
      } else if (e.type === 'file' && e.data !== undefined) {
        const body = entryContent(archive, e.data, SAFETY_MAX_BYTES);
        if (body !== undefined) await this.write(target, body, depth);
      } else if (e.type === 'symlink' && e.linkTarget !== undefined) {
        await this.confined(target, 'link');
        // Whatever later reads destDir follows this link, so its target must stay inside confineTo as well.
        await this.confined(resolve(dirname(target), e.linkTarget), 'link to');
        await mkdir(dirname(target), { recursive: true });
        await rm(target, { force: true });
        await symlink(e.linkTarget, target);
      } else if (e.type === 'hardlink' && e.linkTarget !== undefined) {
        const existing = join(this.destDir, e.linkTarget);
        await this.confined(existing, 'hard-link to');
        await this.confined(target, 'link');
        await mkdir(dirname(target), { recursive: true });
        await rm(target, { force: true });
        await link(existing, target);
      }
    }
  }
}

/**
 * A deliberately unsafe exporter for positive controls: it follows symlinks on the host, copies hardlinks,
 * and extracts archives honouring '..', absolute-looking names (relative to destDir) and link entries.
 * It exists to prove the probes can see a crossing. Run it only inside a temp tree you created, with destDir
 * at least 3 levels deep so '../../x' lands inside that tree; it refuses (EXPORT_NAIVE_CONFINEMENT) otherwise.
 */
function isMissing(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}

export function createNaiveExporter(options: NaiveExporterOptions): Exporter {
  return {
    name: 'naive',
    async export(candidates, _limits, destDir): Promise<ExportDecision> {
      const confine = await realpath(options.confineTo ?? tmpdir());
      await mkdir(destDir, { recursive: true });
      const dest = await realpath(destDir);
      const depth = relative(confine, dest)
        .split(sep)
        .filter((s) => s !== '' && s !== '.').length;
      if (relative(confine, dest).startsWith('..') || depth < MIN_DEST_DEPTH) {
        throw new ExportError('EXPORT_NAIVE_CONFINEMENT', `destDir ${dest} must lie at least ${MIN_DEST_DEPTH} levels below ${confine}`, { path: dest });
      }
      const naive = new Naive(dest, confine, resolve(options.workspaceRoot));
      for (const c of candidates) await naive.candidate(c);
      return { accepted: true, exported: naive.exported, refusals: [], findings: [] };
    },
  };
}
