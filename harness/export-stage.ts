import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { GotFile } from '../model/backend-contract.js';
import { createNaiveExporter } from './export/naive-exporter.js';
import { referenceExporter } from './export/reference-exporter.js';
import type { ExportCandidate, Exporter, ExportLimits, ExportOutcome } from '../model/export-types.js';
import type { Policy } from '../model/policy.js';

import type { ExporterChoice } from './export/exporter-choice.js';
export type { ExporterChoice } from './export/exporter-choice.js';

export type { ExportOutcome } from '../model/export-types.js';

const MiB = 1024 * 1024;

export function exportLimits(policy: Policy): ExportLimits {
  return {
    maxFiles: policy.exports.maxFiles,
    maxFileBytes: Math.floor(policy.exports.maxFileMb * MiB),
    maxTotalBytes: Math.floor(policy.exports.maxTotalMb * MiB),
  };
}

export function toCandidate(f: GotFile): ExportCandidate {
  return {
    path: f.path,
    kind: f.kind,
    size: f.size,
    ...(f.content ? { content: f.content } : {}),
    ...(f.linkTarget !== undefined ? { linkTarget: f.linkTarget } : {}),
    ...(f.nlink !== undefined ? { nlink: f.nlink } : {}),
  };
}

async function snapshot(root: string, skip: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (dir: string): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const abs = join(dir, e.name);
      if (abs === skip || out.size > 10_000) continue;
      if (e.isDirectory()) await walk(abs);
      else
        out.set(
          relative(root, abs),
          e.isFile()
            ? createHash('sha256')
                .update(await readFile(abs))
                .digest('hex')
            : `(${e.isSymbolicLink() ? 'symlink' : 'special'})`,
        );
    }
  };
  await walk(root);
  return out;
}

async function filesUnder(dir: string): Promise<Buffer[]> {
  const out: Buffer[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (e.isFile() && out.length < 1000) out.push(await readFile(join(e.parentPath, e.name)));
  }
  return out;
}

/**
 * The export stage: artifacts from the backend's download API pass an exporter into a directory
 * three levels below an export root, where planted host files witness any write outside it.
 */
export async function runExportStage(opts: {
  files: readonly GotFile[];
  policy: Policy;
  exportRoot: string;
  choice: ExporterChoice;
  canaries: readonly string[];
  /** The naive exporter's safety net: everything it touches must stay under this directory. */
  confineTo: string;
  /** The host directory behind the box's workspace, if any: where the naive exporter reads links. */
  hostWorkspace?: string;
}): Promise<ExportOutcome> {
  const destDir = join(opts.exportRoot, 'host', 'run', 'export');
  await mkdir(destDir, { recursive: true });
  // Host files a traversal would hit: one next to the export directory, one further out.
  await writeFile(join(opts.exportRoot, 'host', 'run', 'neighbour.txt'), 'planted next to the export directory\n');
  await writeFile(join(opts.exportRoot, 'host', 'outside.txt'), 'planted outside the export directory\n');
  const before = await snapshot(opts.exportRoot, destDir);
  const exporter: Exporter =
    opts.choice === 'naive'
      ? createNaiveExporter({ workspaceRoot: opts.hostWorkspace ?? opts.exportRoot, confineTo: opts.confineTo })
      : opts.choice === 'reference'
        ? referenceExporter
        : opts.choice;
  const decision = await exporter.export(opts.files.map(toCandidate), exportLimits(opts.policy), destDir);
  const after = await snapshot(opts.exportRoot, destDir);
  const hostChanges = [...new Set([...before.keys(), ...after.keys()])]
    .filter((k) => before.get(k) !== after.get(k))
    .map((k) => `${k}: ${!before.has(k) ? 'appeared' : !after.has(k) ? 'vanished' : 'changed'}`);
  const written = await filesUnder(destDir);
  const exportedCanaries = opts.canaries.filter((c) => written.some((b) => b.includes(c)));
  return { exporter: exporter.name, decision, hostChanges, exportedCanaries, destDir };
}
