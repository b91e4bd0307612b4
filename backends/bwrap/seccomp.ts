/**
 * The box's seccomp filter (bwrap --seccomp FD): a deny list of what lets a process reach past its
 * namespaces — mounts, new namespaces, tracing, kernel modules and kexec, keyrings, file handles, bpf,
 * perf and userfaultfd — answered EPERM; every other call, and any other architecture's calls, kill.
 * Classic BPF as the kernel reads it (struct sock_filter, 8 bytes each).
 */

const AUDIT_ARCH_X86_64 = 0xc000003e;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO_EPERM = 0x00050001;
const SECCOMP_RET_KILL_PROCESS = 0x80000000;

/** x86_64 numbers: ptrace, pivot_root, mount, umount2, init_module, delete_module, kexec_load, add_key, request_key, keyctl, unshare, perf_event_open, open_by_handle_at, setns, finit_module, bpf, userfaultfd, kexec_file_load, fsopen, fsconfig, fsmount, move_mount, open_tree, fspick, mount_setattr. */
const DENY_X86_64 = [101, 155, 165, 166, 175, 176, 246, 248, 249, 250, 272, 298, 304, 308, 313, 320, 321, 323, 428, 429, 430, 431, 432, 433, 442];

/** The filter for this machine's architecture, or why there is none. */
export function boxSeccompFilter(arch: string = process.arch): { filter: Buffer } | { reason: string } {
  if (arch !== 'x64') return { reason: `bwrap's seccomp deny list is built for x86_64 only (this is ${arch})` };
  const n = DENY_X86_64.length;
  const ins: [number, number, number, number][] = [
    [0x20, 0, 0, 4], // ld [arch]
    [0x15, 0, n + 4, AUDIT_ARCH_X86_64], // another architecture: kill
    [0x20, 0, 0, 0], // ld [nr]
    // x32 calls carry bit 30: refuse them all rather than map each one.
    [0x35, n + 1, 0, 0x40000000], // jge 0x40000000 → EPERM
    ...DENY_X86_64.map((nr, i): [number, number, number, number] => [0x15, n - i, 0, nr]),
    [0x06, 0, 0, SECCOMP_RET_ALLOW],
    [0x06, 0, 0, SECCOMP_RET_ERRNO_EPERM],
    [0x06, 0, 0, SECCOMP_RET_KILL_PROCESS],
  ];
  const b = Buffer.alloc(ins.length * 8);
  ins.forEach(([code, jt, jf, k], i) => {
    b.writeUInt16LE(code, i * 8);
    b.writeUInt8(jt, i * 8 + 2);
    b.writeUInt8(jf, i * 8 + 3);
    b.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return { filter: b };
}
