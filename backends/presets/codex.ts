import { join } from 'node:path';
import { ADAPTER_CLAIMS, type PresetDefinition } from './model.js';
import { npmInstallCommand, presetToolPrefix } from './tools-dir.js';

/** The version the presets were measured with (docs/presets.md); scripts/install-debian-deps.sh installs the same. */
export const CODEX_PACKAGE = '@openai/codex@0.171.0';

/** The native Codex binary of the npm package (the package's node launcher only finds and spawns it). */
function codexBinary(): string {
  const triple = process.arch === 'arm64' ? 'aarch64-unknown-linux-musl' : 'x86_64-unknown-linux-musl';
  return join(presetToolPrefix('codex'), 'node_modules', '@openai', `codex-linux-${process.arch}`, 'vendor', triple, 'bin', 'codex');
}

const NOT_CLAIMED = {
  'files.writeScope':
    "codex's workspace-write roots include the host's shared /tmp and $TMPDIR, not a temp of the box's own; its read-only mode is not declared here yet",
  'files.protected': "codex re-binds .git and .codex read-only, not shell rc files or other agents' settings; not declared from its settings yet",
  'files.denyRead': "codex's sandbox lets commands read every file of the workspace (reads are not restricted by the built-in profiles)",
  'files.hostPaths':
    "Codex's sandbox lets commands read the whole host filesystem (its permissions documentation: reads are not restricted by the built-in profiles)",
  'identity.unprivileged': "codex sandbox keeps the caller's uid (root here); it drops capabilities and sets no_new_privs but does not change user",
  'lifecycle.freshEnvironment': "codex sandbox runs in the caller's environment: /tmp and home are the host's",
  'resources.memoryMb': 'codex sandbox has no resource limits (filesystem and network confinement only)',
  'resources.processes': 'codex sandbox has no resource limits (filesystem and network confinement only)',
  'resources.cpus': 'codex sandbox has no resource limits (filesystem and network confinement only)',
  'resources.diskMb': 'codex sandbox has no resource limits (filesystem and network confinement only)',
  'output.sanitized': "codex sandbox passes the program's output through unchanged",
} as const;

/**
 * OpenAI Codex CLI's sandbox (`codex sandbox --permission-profile <profile> -C <dir> -- cmd`: bubblewrap + seccomp on
 * Linux), with a CODEX_HOME of the environment's own so no user configuration is read. Claims: what the built-in
 * profile documents (network off; no writes outside the workspace roots, or none at all for :read-only) and its
 * PID namespace.
 */
function codexPreset(
  name: string,
  profile: ':read-only' | ':workspace',
  summary: string,
  fileClaims: readonly 'files.readOnlyInput'[],
  extra: { readOnlyReason?: string; noResultsReason?: string } = {},
): PresetDefinition {
  const { readOnlyReason, noResultsReason } = extra;
  return {
    name,
    summary,
    install: npmInstallCommand('codex', CODEX_PACKAGE),
    requires: [{ binary: codexBinary(), install: npmInstallCommand('codex', CODEX_PACKAGE) }],
    config() {
      return Promise.resolve({
        configDir: '/',
        raw: {
          name,
          description: `codex sandbox --permission-profile ${profile}`,
          shape: 'one-shot',
          claims: ['network.egress', 'identity.hostCredentials', ...fileClaims, ...ADAPTER_CLAIMS],
          notClaimedReasons: { ...NOT_CLAIMED, ...(readOnlyReason ? { 'files.readOnlyInput': readOnlyReason } : {}) },
          ...(noResultsReason ? { results: 'none', resultsReason: noResultsReason } : {}),
          workspace: 'disk-image',
          boxWorkspace: '{workspace}',
          version: { argv: [codexBinary(), '--version'] },
          exec: {
            env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8' },
            // CODEX_HOME (and HOME) in the environment's own {tmp}: no ~/.codex of the machine's user is read or written.
            argv: [
              '/bin/sh',
              '-c',
              'CODEX_HOME=$1 HOME=$1 && export CODEX_HOME HOME && shift && exec "$@"',
              'sandcheck-codex',
              '{tmp}',
              codexBinary(),
              'sandbox',
              '--permission-profile',
              profile,
              '-C',
              '{boxCwd}',
              '--',
              '{argv...}',
            ],
            stdin: 'pipe',
          },
        },
      });
    },
  };
}

/**
 * The default mode: everything read-only, network off. Measured with 0.171.0: the only writable places are a
 * private /dev (a fresh tmpfs that vanishes with the box), so no program can write a result the harness reads back.
 */
export const codexSandbox = codexPreset(
  'codex-sandbox',
  ':read-only',
  "OpenAI Codex CLI's sandbox in its default mode (`--permission-profile :read-only`: nothing writable, network off)",
  ['files.readOnlyInput'],
  {
    noResultsReason:
      "codex sandbox --permission-profile :read-only (Codex's default mode) keeps every filesystem read-only: the program can write no result the harness reads back",
  },
);

/** Workspace-write: the workspace writable (inputs included), network off. */
export const codexSandboxWorkspace = codexPreset(
  'codex-sandbox-workspace',
  ':workspace',
  "OpenAI Codex CLI's sandbox in workspace-write mode (`--permission-profile :workspace`: writes only in the workspace, network off)",
  [],
  { readOnlyReason: 'the :workspace profile makes the whole workspace writable: it has no per-file read-only inputs' },
);
