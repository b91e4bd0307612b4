import { readdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join, relative } from 'node:path';
import { z } from 'zod';
import { visibleLine } from '../core/clean-text.js';
import { INPUT_FILE_MAX_BYTES, readBoundedFile } from '../core/bounded-file.js';
import { EnvironmentSchema, Sha256Hex, ToolVersionSchema, type RunEnvironment, type ToolVersion } from '../model/environment.js';
import { sha256Hex } from './environment-facts.js';
import type { ProbeSpec } from '../model/probe.js';
import { packageRoot, probeFolder, probeFolderInPackage } from '../core/paths.js';

/** The sign-off bundle's environment fingerprint (environment.json): what ran, on what, with which code. */
export const FINGERPRINT_VERSION = '1.0.0';
const FILES_PER_DIR_MAX = 200;

const FileHash = z.strictObject({ path: z.string().max(1024), sha256: Sha256Hex });

export const EnvironmentFingerprintSchema = z
  .strictObject({
    fingerprint: z.literal('sandcheck-environment'),
    version: z.literal(FINGERPRINT_VERSION),
    sandcheckVersion: z.string().max(64),
    suiteSha256: Sha256Hex.describe('of every probe file hash below, in order: the suite as it ran'),
    probes: z.array(
      z.strictObject({
        id: z.string().max(128),
        files: z
          .array(FileHash)
          .describe(
            'every file of the probe folder (payload, spec source, helpers), the shared payload helper, the compiled spec where the source is not shipped',
          ),
        inlineSourceSha256: Sha256Hex.optional().describe('a user task case given as inline source'),
      }),
    ),
    backend: z.strictObject({
      name: z.string().max(256),
      version: z.string().max(256).describe('the version of the tool the backend drives, or why it is not known'),
      runtime: z.string().max(256).describe('what runs the boxes (runc, runsc, bwrap, the host, the command backend tools)'),
      image: z.strictObject({ ref: z.string().max(512), digest: z.string().max(128).nullable(), note: z.string().max(512) }).optional(),
      tools: z.array(ToolVersionSchema),
    }),
    environment: EnvironmentSchema,
  })
  .meta({ id: 'sandcheck-environment-fingerprint', title: 'sandcheck sign-off bundle: environment fingerprint' });
export type EnvironmentFingerprint = z.infer<typeof EnvironmentFingerprintSchema>;

async function hashFile(path: string): Promise<z.infer<typeof FileHash> | undefined> {
  const read = await readBoundedFile(path, INPUT_FILE_MAX_BYTES);
  if (!read.ok) return undefined;
  const root = packageRoot();
  const shown = path.startsWith(`${root}/`) ? relative(root, path) : path;
  return { path: visibleLine(shown).slice(0, 1024), sha256: sha256Hex(read.bytes) };
}

async function hashDir(dir: string): Promise<z.infer<typeof FileHash>[]> {
  let names: string[];
  try {
    names = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isFile())
      .map((e) => e.name)
      .sort();
  } catch {
    return [];
  }
  const out = await Promise.all(names.slice(0, FILES_PER_DIR_MAX).map((n) => hashFile(join(dir, n))));
  return out.flatMap((h) => (h ? [h] : []));
}

const probeDir = probeFolder;

/** Hashes of every file a probe's run depends on: its folder (payload, spec source), a companion's, the shared payload helper. */
export async function probeFileHashes(probes: readonly ProbeSpec[]): Promise<EnvironmentFingerprint['probes']> {
  const shared = await hashFile(join(packageRoot(), 'probes', '_shared', 'sandcheck_payload.py'));
  return Promise.all(
    probes.map(async (p) => {
      const dirs = [p.payload, ...(p.kind === 'security' && p.companion ? [p.companion.payload] : [])];
      const files = (await Promise.all(dirs.map((d) => hashDir(probeDir(d))))).flat();
      // An installed package ships payloads, not spec sources: the compiled spec stands in.
      for (const d of dirs) {
        const inPackage = probeFolderInPackage(d);
        if (inPackage !== undefined && !existsSync(join(probeDir(d), 'probe.ts'))) {
          const compiled = await hashFile(join(packageRoot(), 'dist', inPackage, 'probe.js'));
          if (compiled) files.push(compiled);
        }
      }
      if (shared) files.push(shared);
      return { id: p.id, files, ...(p.source !== undefined ? { inlineSourceSha256: sha256Hex(p.source) } : {}) };
    }),
  );
}

const tool = (tools: readonly ToolVersion[], name: string): string => {
  const t = tools.find((x) => x.tool === name);
  return t?.status === 'ok' && t.version ? t.version : `${name}: ${t?.status ?? 'not asked'}`;
};

/** The tool a built-in backend drives and what runs its boxes; an adapter of the user's own does not report one. */
export function backendVersion(name: string, env: RunEnvironment): { version: string; runtime: string } {
  const t = env.tools;
  if (name === 'bwrap') return { version: tool(t, 'bwrap'), runtime: 'bubblewrap namespaces on the host kernel' };
  // The daemon that ran the boxes, as it answered after the run (private daemons), over the binary on PATH.
  const daemon = env.backendFacts?.find((f) => f.name === 'daemon')?.value;
  if (name === 'gvisor') return { version: `${tool(t, 'runsc')}; ${daemon ?? tool(t, 'dockerd')}`, runtime: `runsc (gVisor): ${tool(t, 'runsc')}` };
  if (['docker', 'docker-default', 'docker-hardened'].includes(name)) {
    const api = t.find((x) => x.tool === 'docker-api');
    return { version: api?.version ?? daemon ?? tool(t, 'dockerd'), runtime: `runc: ${tool(t, 'runc')}` };
  }
  if (name === 'process') return { version: tool(t, 'python3'), runtime: 'none: plain host processes (the unsandboxed control)' };
  const told = t.find((x) => x.tool.startsWith('backend:') && x.status === 'ok');
  if (name === 'command' || (told && name.startsWith('preset:'))) {
    if (told?.version) return { version: told.version, runtime: 'the command backend (see backendConfig)' };
    const own = t.filter((x) => !['bwrap', 'docker', 'dockerd', 'runc', 'runsc', 'podman', 'crun', 'python3'].includes(x.tool));
    const shown = own.map((x) => `${x.tool} ${x.version ?? x.status}`).join(', ');
    return { version: shown.slice(0, 256) || 'unknown: no tool recognised in the configuration', runtime: 'the command backend (see backendConfig)' };
  }
  return told?.version
    ? { version: told.version, runtime: 'unknown: the adapter does not say' }
    : { version: 'unknown: this adapter does not report a version', runtime: 'unknown' };
}

/** backendKind: the --backend value (a built-in name picks the tool to report); backendName: the backend's own name. */
export async function environmentFingerprint(opts: {
  probes: readonly ProbeSpec[];
  backendName: string;
  backendKind: string;
  environment: RunEnvironment;
  image?: string;
}): Promise<EnvironmentFingerprint> {
  const probes = await probeFileHashes(opts.probes);
  const suiteSha256 = sha256Hex(
    probes.map((p) => `${p.id}\n${p.files.map((f) => `${f.sha256}  ${f.path}`).join('\n')}\n${p.inlineSourceSha256 ?? ''}`).join('\n'),
  );
  const isDocker = ['docker', 'docker-default', 'docker-hardened', 'gvisor'].includes(opts.backendKind);
  const fact = (name: string): string | undefined => opts.environment.backendFacts?.find((f) => f.name === name)?.value;
  const digest = fact('image digest');
  return {
    fingerprint: 'sandcheck-environment',
    version: FINGERPRINT_VERSION,
    sandcheckVersion: opts.environment.sandcheckVersion,
    suiteSha256,
    probes,
    backend: {
      name: visibleLine(opts.backendName).slice(0, 256),
      ...backendVersion(opts.backendKind, opts.environment),
      ...(isDocker
        ? {
            image: {
              ref: visibleLine(fact('image') ?? opts.image ?? 'sandcheck-python:<hash> (built offline from the host python3)').slice(0, 512),
              digest: digest?.slice(0, 128) ?? null,
              note: digest
                ? "the image ID the run's daemon reported after the last box (Engine API image inspect)"
                : 'the backend did not report the image it ran (the run ended before its daemon answered)',
            },
          }
        : {}),
      tools: opts.environment.tools,
    },
    environment: opts.environment,
  };
}
