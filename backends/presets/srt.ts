import { join } from 'node:path';
import type { PolicyItem } from '../../model/backend-contract.js';
import { ADAPTER_CLAIMS, type PresetDefinition } from './model.js';
import { npmInstallCommand, presetToolPrefix } from './tools-dir.js';

/** The versions the presets were measured with (docs/presets.md); srt needs Node ≥ 22, which the node@22 package brings into the same private prefix. */
export const SRT_PACKAGES = '@anthropic-ai/sandbox-runtime@0.0.78 node@22';
const APT = 'apt-get install -y bubblewrap socat ripgrep';

const node22 = (): string => join(presetToolPrefix('srt'), 'node_modules', '.bin', 'node');
const srtCli = (): string => join(presetToolPrefix('srt'), 'node_modules', '@anthropic-ai', 'sandbox-runtime', 'dist', 'cli.js');

/**
 * srt runs its positional arguments as one shell string, unquoted: each argv element is quoted here with bash's
 * printf %q and handed over with -c, so the program's argv arrives unchanged. A settings file (SRT_SETTINGS, in the
 * launcher's environment only) is written into the environment's own {tmp}; without one srt reads
 * ~/.srt-settings.json, so HOME is that empty {tmp} and srt's built-in defaults apply.
 */
const LAUNCHER = [
  'tmp=$1; node=$2; cli=$3; shift 3',
  // srt's proxies put their sockets in its TMPDIR and do not remove them when stopped: in the environment's own
  // {tmp}, which destroy removes. The program gets the TMPDIR it was given (or none).
  'if printenv TMPDIR >/dev/null; then keep=$(printf "export TMPDIR=%q; " "$TMPDIR"); else keep="unset TMPDIR; "; fi',
  'cmd="$keep""exec $(printf "%q " "$@")"',
  'export TMPDIR="$tmp"',
  'if [ -n "$SRT_SETTINGS" ]; then',
  '  printf %s "$SRT_SETTINGS" > "$tmp/srt-settings.json"; unset SRT_SETTINGS',
  '  exec "$node" "$cli" --settings "$tmp/srt-settings.json" -c "$cmd"',
  'fi',
  'export HOME="$tmp"',
  'exec "$node" "$cli" -c "$cmd"',
].join('\n');

const NOT_CLAIMED = {
  'files.writeScope': "srt's allowWrite roots are not declared as a write scope yet (its defaults include the host's /tmp)",
  'files.protected': "srt's mandatory write-deny list (.bashrc, .git/hooks, …) applies on Linux only to files that already exist; not declared yet",
  'files.denyRead':
    "the preset's srt settings name no file of the workspace in filesystem.denyRead (empty, or only ~); the policy's deny-list is not turned into srt settings yet",
  'identity.unprivileged': "srt keeps the caller's uid (root here) and its capabilities inside bubblewrap's user namespace",
  'lifecycle.freshEnvironment': "srt runs in the caller's filesystem: /tmp and home are the host's",
  'resources.memoryMb': 'srt confines files and network only: no CPU, memory or time limits (its README)',
  'resources.processes': 'srt confines files and network only: no CPU, memory or time limits (its README)',
  'resources.cpus': 'srt confines files and network only: no CPU, memory or time limits (its README)',
  'resources.diskMb': 'srt confines files and network only: no disk limit',
  'output.sanitized': "srt passes the program's output through unchanged",
} as const;

/** An srt preset with its own settings file (the variants below; a test builds one that allows lab names). */
export function srtPreset(
  name: string,
  summary: string,
  settings: Record<string, unknown> | undefined,
  claims: readonly PolicyItem[],
  notClaimed: Partial<Record<PolicyItem, string>>,
): PresetDefinition {
  return {
    name,
    summary,
    install: `${APT} && ${npmInstallCommand('srt', SRT_PACKAGES)}`,
    requires: [
      { binary: 'bwrap', install: APT },
      { binary: 'socat', install: APT },
      { binary: 'rg', install: APT },
      { binary: node22(), install: npmInstallCommand('srt', SRT_PACKAGES) },
      { binary: srtCli(), install: npmInstallCommand('srt', SRT_PACKAGES) },
    ],
    config() {
      return Promise.resolve({
        configDir: '/',
        raw: {
          name,
          description: settings ? `srt --settings (${JSON.stringify(settings)})` : 'srt with its built-in defaults (no settings file)',
          shape: 'one-shot',
          claims: [...claims, ...ADAPTER_CLAIMS],
          notClaimedReasons: { ...NOT_CLAIMED, ...notClaimed },
          workspace: 'disk-image',
          boxWorkspace: '{workspace}',
          version: { argv: [node22(), srtCli(), '--version'] },
          exec: {
            env: { PATH: '/usr/local/bin:/usr/bin:/bin', LANG: 'C.UTF-8', HOME: '/root', ...(settings ? { SRT_SETTINGS: JSON.stringify(settings) } : {}) },
            argv: ['/usr/bin/env', '-C', '{boxCwd}', '/bin/bash', '-c', LAUNCHER, 'sandcheck-srt', '{tmp}', node22(), srtCli(), '{argv...}'],
            stdin: 'pipe',
          },
        },
      });
    },
  };
}

/**
 * The settings of srt: its defaults (network off, reads allowed everywhere) with the workspace writable. With no
 * settings file at all srt denies every write, so a program cannot leave its results and the preset failed
 * `sandcheck adapter check` (files.nested), which `run` requires.
 */
export const SRT_SETTINGS = {
  network: { allowedDomains: [], deniedDomains: [] },
  filesystem: { denyRead: [], allowWrite: ['.'], denyWrite: [] },
};

/** srt with its default read and network policy and the workspace writable: the least a program that writes results needs. */
export const srtDefault = srtPreset(
  'srt',
  "Anthropic's sandbox-runtime with its defaults and the workspace writable (network off, reads allowed everywhere)",
  SRT_SETTINGS,
  ['network.egress', 'identity.hostCredentials'],
  {
    'files.hostPaths': 'srt allows reads everywhere by default (its README: "By default, read access is allowed everywhere")',
    'files.readOnlyInput': 'allowWrite "." makes the whole workspace writable: srt has no per-file read-only inputs',
  },
);

/** The settings of srt-deny-home: the home directory unreadable, the workspace writable, no network. */
export const SRT_DENY_HOME_SETTINGS = {
  network: { allowedDomains: [], deniedDomains: [] },
  filesystem: { denyRead: ['~'], allowWrite: ['.'], denyWrite: [] },
};

/** srt with a settings file that denies reads of the home directory and lets the workspace be written. */
export const srtDenyHome = srtPreset(
  'srt-deny-home',
  "Anthropic's sandbox-runtime with a settings file denying reads of ~ (root's home), the workspace writable, network off",
  SRT_DENY_HOME_SETTINGS,
  ['network.egress', 'files.hostPaths', 'identity.hostCredentials'],
  {
    'files.readOnlyInput': 'allowWrite "." makes the whole workspace writable: srt has no per-file read-only inputs',
  },
);
