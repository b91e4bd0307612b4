/**
 * Weakened variants of examples/command-bwrap.yaml for the capability escapes, each granting one power
 * and nothing the backends/ code would need to know about: bwrap run as root (no setpriv, no user
 * namespace, so an added capability is a host capability; the workspace owned by root, boxUid 0) with
 * exactly one `--cap-add` after `--cap-drop ALL`, plus the one piece of reach that power needs. Written as YAML files into a directory of the caller's.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml, stringify } from 'yaml';
import { packageRoot } from '../../core/paths.js';

interface Edit {
  name: string;
  cap: string;
  /** Namespaces left shared with the host (bwrap runs in the lab's network namespace, so `net` means the lab). */
  share?: readonly ('pid' | 'net')[];
  devBindDev?: boolean;
  /** A host directory (not nodev) bound with devices allowed at /devok: somewhere a made node can be opened. */
  devBindDir?: boolean;
  /** A lying box: its output passes a filter that drops the decoy's lines and turns each `ok` step into `EPERM`. */
  liar?: boolean;
}

export const ESCAPE_VARIANTS = {
  /** CAP_SYS_ADMIN and the host's /dev: a mount of the host's disk. */
  sysAdminDev: { name: 'bwrap-root-sys-admin-dev', cap: 'CAP_SYS_ADMIN', devBindDev: true },
  /** CAP_DAC_READ_SEARCH alone (bwrap's /usr is a bind of the host's filesystem). */
  dacReadSearch: { name: 'bwrap-root-dac-read-search', cap: 'CAP_DAC_READ_SEARCH' },
  /** The host PID namespace and CAP_SYS_PTRACE. */
  hostPidPtrace: { name: 'bwrap-root-host-pid-ptrace', cap: 'CAP_SYS_PTRACE', share: ['pid'] },
  /** CAP_MKNOD and a writable place where device nodes work (not nodev). */
  mknod: { name: 'bwrap-root-mknod', cap: 'CAP_MKNOD', devBindDir: true },
  /** CAP_NET_RAW in the lab's network (the namespace bwrap is started in). */
  netRawLab: { name: 'bwrap-root-net-raw-lab', cap: 'CAP_NET_RAW', share: ['net'] },
  /** CAP_DAC_READ_SEARCH, with output rewritten to show every open refused and no decoy. */
  dacReadSearchLiar: { name: 'bwrap-root-dac-read-search-liar', cap: 'CAP_DAC_READ_SEARCH', liar: true },
  /** CAP_SYS_MODULE alone. */
  sysModule: { name: 'bwrap-root-sys-module', cap: 'CAP_SYS_MODULE' },
} as const satisfies Record<string, Edit>;

const UNSHARE = { pid: '--unshare-pid', net: '--unshare-net' } as const;

export function variantArgv(argv: readonly string[], edit: Edit, devDir?: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? '';
    if (a === '/usr/bin/setpriv') {
      // drop setpriv and its options up to its `--`
      while (i < argv.length && argv[i] !== '--') i++;
      continue;
    }
    if (a === 'command-cgroup-limits.sh') {
      out.push(join(packageRoot(), 'examples', a));
      continue;
    }
    if (a === '--unshare-all') {
      for (const [ns, flag] of Object.entries(UNSHARE)) if (!(edit.share ?? []).includes(ns as 'pid' | 'net')) out.push(flag);
      out.push('--unshare-ipc', '--unshare-uts', '--unshare-cgroup');
      continue;
    }
    if (a === '--unshare-user' || a === '--disable-userns') continue;
    if (a === '--cap-drop' && argv[i + 1] === 'ALL') {
      out.push('--cap-drop', 'ALL', '--cap-add', edit.cap);
      i++;
      continue;
    }
    if (a === '--dev' && argv[i + 1] === '/dev' && edit.devBindDev) {
      out.push('--dev-bind', '/dev', '/dev');
      i++;
      continue;
    }
    if (a === '--bind' && argv[i + 1] === '{tmp}' && edit.devBindDir && devDir) {
      out.push('--dev-bind', devDir, '/devok');
    }
    out.push(a);
  }
  if (!edit.liar) return out;
  const rewrite = `"$@" | sed -u -e '/found via a file handle/d' -e 's/"outcome": "ok"/"outcome": "EPERM"/'`;
  return ['/bin/sh', '-c', rewrite, 'sandcheck-liar', ...out];
}

/** Writes the variant's YAML (the example's claims kept: what a team would still believe) and returns its path. */
export async function writeEscapeVariant(dir: string, edit: Edit): Promise<string> {
  const devDir = join(dir, `${edit.name}-dev`);
  if (edit.devBindDir) await mkdir(devDir, { mode: 0o700 });
  const base = parseYaml(readFileSync(join(packageRoot(), 'examples', 'command-bwrap.yaml'), 'utf8')) as { exec: { argv: string[] } } & Record<string, unknown>;
  const file = join(dir, `${edit.name}.yaml`);
  await writeFile(
    file,
    stringify({
      ...base,
      name: edit.name,
      description: `command-bwrap as root with ${edit.cap}`,
      boxUid: 0,
      exec: { ...base.exec, argv: variantArgv(base.exec.argv, edit, devDir) },
    }),
  );
  return file;
}
