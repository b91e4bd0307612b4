import { isAbsolute } from 'node:path';
import { z } from 'zod';

/**
 * Host uid the box runs as by default. Not 65534 (`nobody`): RLIMIT_NPROC counts per real uid across the
 * whole host, and same-uid processes may read each other's /proc entries, so sharing `nobody` with runsc
 * sandboxes or daemons would couple the boxes to unrelated processes. 65520–65533 is left unassigned by
 * both Debian (60000–64999 are Debian's global allocations, e.g. 64055 is libvirt-qemu) and systemd
 * (61184–65519 is its DynamicUser range); preflight refuses a uid that has a passwd entry.
 */
export const DEFAULT_UNPRIVILEGED_UID = 65529;

const absolutePath = (what: string) =>
  z
    .string()
    .min(1)
    .refine((p) => isAbsolute(p), { error: `${what} must be an absolute path` });

export const ExtraBindSchema = z.strictObject({
  src: absolutePath('extraBinds[].src'),
  dest: absolutePath('extraBinds[].dest'),
  readOnly: z.boolean().default(true),
});

export const BwrapOptionsSchema = z
  .strictObject({
    /**
     * More host paths bound into the box (a deliberate weakening: the backend keeps claiming
     * files.hostPaths, so a probe must catch it).
     */
    extraBinds: z.array(ExtraBindSchema).default([]),
    /**
     * Share the network namespace instead of `--unshare-net` (a deliberate weakening; the backend keeps
     * claiming network.egress). Only allowed inside a lab: the box would otherwise get the host's network.
     */
    shareNetwork: z.boolean().default(false),
    /** Each cgroup limit; false = not applied and declared not enforced (counters are still read). */
    limits: z
      .strictObject({
        memory: z.boolean().default(true),
        pids: z.boolean().default(true),
        cpu: z.boolean().default(true),
      })
      .default({ memory: true, pids: true, cpu: true }),
    /**
     * 'empty-launcher-env' (the fix): bwrap is started with an empty environment, so its own PID 1 holds
     * nothing. 'none': bwrap is started with the controller's environment and only `--clearenv`, the known
     * leak through /proc/1/environ (a deliberate weakening; identity.hostCredentials stays claimed).
     */
    envFix: z.enum(['empty-launcher-env', 'none']).default('empty-launcher-env'),
    /**
     * Host uid (and gid) the box runs as, dropped with setpriv before bwrap starts. null = bwrap runs with
     * the harness's own uid (as root: root with capabilities inside the box — a deliberate weakening).
     */
    unprivilegedUid: z.number().int().min(1).max(4294967294).nullable().default(DEFAULT_UNPRIVILEGED_UID),
    /** `--unshare-pid`; false shows the box every host process (a deliberate weakening). */
    unsharePid: z.boolean().default(true),
    /** The seccomp deny list (backends/bwrap/seccomp.ts) via `--seccomp`; false runs the box without a filter (a deliberate weakening). */
    seccomp: z.boolean().default(true),
    /**
     * 'disk-image' (default as root with mkfs.ext4 and loop devices): the workspace and /tmp share one ext4 image
     * file of policy diskMb, loop-mounted from the run's scratch directory; its page cache is reclaimable, so
     * the disk limit is reached before the memory limit and can be tested on its own. 'tmpfs' (the default
     * as root without them): one host tmpfs of policy diskMb — enforced, but its pages count against the
     * box's memory cgroup, so with less memory than disk the memory limit stops a writer first. Both enforce
     * resources.diskMb. 'host-dir': a plain host directory (/tmp is still a sized tmpfs), and resources.diskMb
     * is declared not enforced.
     */
    workspace: z.enum(['disk-image', 'tmpfs', 'host-dir']).optional(),
    /** Which cgroup hierarchy to use; 'auto' prefers v1 controllers (hybrid hosts), then a cgroup2 /sys/fs/cgroup. */
    cgroups: z
      .strictObject({
        mode: z.enum(['auto', 'v1', 'v2', 'off']).default('auto'),
        /** cgroup2 directory the environments' cgroups are created in (default: the cgroup2 mount). */
        v2Parent: absolutePath('cgroups.v2Parent').optional(),
      })
      .default({ mode: 'auto' }),
    /** Where environment roots and ownership records live (default /run/sandcheck/bwrap as root). */
    stateDir: absolutePath('stateDir').optional(),
    /** See the description: a deliberate weakening for positive controls. */
    wallClock: z
      .boolean()
      .default(true)
      .describe(
        "The backend's own wall clock (request.timeoutMs). false = no backend timer at all: only the harness's later deadline (or its abort) stops a program. A deliberate weakening for positive controls; resources.wallSeconds is then declared not enforced unless misdeclare.",
      ),
    /** See the description: a deliberate weakening for positive controls. */
    outputCap: z
      .boolean()
      .default(true)
      .describe(
        "The backend's own output cap (request.maxOutputBytes, stdout + stderr). false = every byte is passed on and nothing is stopped for output. A deliberate weakening for positive controls; output.maxBytes is then declared not enforced unless misdeclare.",
      ),
    /** See the description: 'launcher-tree' is a deliberate weakening for positive controls. */
    teardown: z
      .enum(['thorough', 'launcher-tree'])
      .default('thorough')
      .describe(
        "'thorough' (the fix): the end of every exec and destroy kill the whole box through its cgroup and every process carrying the environment's marker. 'launcher-tree': only the launcher's process tree is killed — the classic 'kill the first pid' teardown that a double-forked daemon escapes (with unsharePid: false; a pid namespace still takes it down with bwrap). A deliberate weakening for positive controls; lifecycle.destroyAfter is then declared not enforced unless misdeclare. Needs cgroups.mode 'off' (a cgroup would still catch the strays).",
      ),
    /** See the description: false is a deliberate weakening for positive controls. */
    unshareUser: z
      .boolean()
      .default(true)
      .describe(
        'Give the box its own user namespace (--unshare-user, nested user namespaces disabled). false = the box stays in the host user namespace; only with unprivilegedUid: null, and then the box is host root with real host capabilities (CAP_SYS_PTRACE, CAP_NET_RAW, …). A deliberate weakening for positive controls; the backend keeps claiming identity.unprivileged and identity.hostCredentials, so a probe has to catch it.',
      ),
    /** See the description: 'naive' is a deliberate weakening for positive controls. */
    downloadApi: z
      .enum(['lstat', 'naive'])
      .default('lstat')
      .describe(
        "How getFiles reads artifacts. 'lstat' (the fix): every path component is lstat'ed and nothing is followed; symlinks come back with their target and no content, hardlinked files with their link count and no content, FIFOs, sockets and devices are never opened. 'naive': a download API that follows symlinks on the host and reads hardlinked files — the classic bug that hands over host files. A deliberate weakening for positive controls; the backend keeps claiming files.hostPaths, so a probe has to catch it.",
      ),
    /** See the description: 'ignored' is a deliberate weakening for positive controls. */
    readOnlyInputs: z
      .enum(['enforced', 'ignored'])
      .default('enforced')
      .describe(
        "'enforced' (the fix): inputs marked readOnly stay root-owned, lose their write bits and are bound read-only over themselves at exec, so the box can neither write nor unlink, rename or replace them. 'ignored': they are put like any other input (owned by the box uid, writable, no bind). A deliberate weakening for positive controls; the backend keeps claiming files.readOnlyInput, so a probe has to catch it.",
      ),
    /** See the description: 'off' leaves the persistence places of the workspace writable. */
    protectedPaths: z
      .enum(['read-only', 'off'])
      .default('read-only')
      .describe(
        "'read-only' (the fix): at every exec, each path of the policy's files.protected (default: .git/hooks, .git/config, .bashrc, .vscode/tasks.json, .claude/settings.json) that exists in the workspace is bound read-only over itself, and its parent directories inside the workspace over themselves, so it can be neither written, replaced nor moved aside; files.protected is claimed. A path that does not exist (or reaches through a link) is not bound. 'off': no such binds, and files.protected is not claimed (unless misdeclare).",
      ),
    /** See the description: 'off' leaves the deny-listed files of the workspace readable. */
    denyReadPaths: z
      .enum(['hidden', 'off'])
      .default('hidden')
      .describe(
        "'hidden' (the fix): when the policy asks files.denyRead, at every exec each file of the workspace a deny glob matches is hidden after the workspace bind (/dev/null bound over a file, an empty read-only tmpfs over a directory), and files.denyRead is claimed. A matching symbolic link is not hidden. 'off': nothing is hidden, and files.denyRead is not claimed (unless misdeclare).",
      ),
    /** DELIBERATELY BROKEN: see the description. For sandcheck's own positive controls, never for real use. */
    misdeclare: z
      .boolean()
      .default(false)
      .describe(
        "DELIBERATELY BROKEN — for sandcheck's own positive controls, never for real use. true = the backend claims every policy item even where other options (limits.*, workspace 'host-dir', cgroups.mode 'off', wallClock, outputCap, teardown) or the host's cgroup setup left it unenforced: the classic 'limit configured but silently not applied'. Probes then run against the weakened box instead of becoming not-applicable, and must come out crossed. Only what bwrap has no code for at all stays unclaimed (output.sanitized, a network allowlist).",
      ),
  })
  .superRefine((o, ctx) => {
    if (o.teardown === 'launcher-tree' && o.cgroups.mode !== 'off') {
      ctx.addIssue({
        code: 'custom',
        path: ['teardown'],
        message: "teardown 'launcher-tree' needs cgroups.mode 'off' (the environment's cgroup would still kill the strays)",
      });
    }
    if (!o.unshareUser && o.unprivilegedUid !== null) {
      ctx.addIssue({
        code: 'custom',
        path: ['unshareUser'],
        message: 'unshareUser: false needs unprivilegedUid: null (without a user namespace bwrap needs root)',
      });
    }
  })
  .meta({ id: 'sandcheck-bwrap-options', title: 'bwrap backend options' });

export type BwrapOptions = z.input<typeof BwrapOptionsSchema>;
export type ResolvedBwrapOptions = z.output<typeof BwrapOptionsSchema>;
