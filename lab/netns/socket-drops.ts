import { readdir, readFile, readlink } from 'node:fs/promises';

/** Inodes of the sockets process `pid` holds open. */
async function socketInodes(pid: number): Promise<Set<string>> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '');
    const m = /^socket:\[(\d+)\]$/.exec(target);
    if (m?.[1] !== undefined) inodes.add(m[1]);
  }
  return inodes;
}

/** Sum of the `drops` column (the last) of /proc/net/udp{,6} lines whose inode (column 10) is in `inodes`. */
export function udpDrops(table: string, inodes: ReadonlySet<string>): number {
  let total = 0;
  for (const line of table.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    if (cols.length < 13 || !inodes.has(cols[9] ?? '')) continue;
    total += Number(cols.at(-1)) || 0;
  }
  return total;
}

/** TcpExt ListenDrops of /proc/net/netstat (it includes the accept-queue overflows). */
export function tcpListenDrops(netstat: string): number {
  const lines = netstat.split('\n').filter((l) => l.startsWith('TcpExt:'));
  const names = (lines[0] ?? '').split(/\s+/);
  const values = (lines[1] ?? '').split(/\s+/);
  const at = names.indexOf('ListenDrops');
  return at < 0 ? 0 : Number(values[at]) || 0;
}

/**
 * What the kernel threw away before the decoys of process `pid` read it: datagrams dropped on its UDP
 * sockets (a full receive buffer) plus connections dropped by a full listen queue in its network
 * namespace (/proc/<pid>/net is that process's namespace). Cumulative; undefined if unreadable.
 */
export async function decoySocketDrops(pid: number): Promise<number | undefined> {
  try {
    const inodes = await socketInodes(pid);
    const [udp4, udp6, netstat] = await Promise.all(['udp', 'udp6', 'netstat'].map((f) => readFile(`/proc/${pid}/net/${f}`, 'utf8')));
    return udpDrops(udp4 ?? '', inodes) + udpDrops(udp6 ?? '', inodes) + tcpListenDrops(netstat ?? '');
  } catch {
    return undefined;
  }
}
