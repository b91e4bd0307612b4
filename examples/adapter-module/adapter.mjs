// A complete sandcheck module adapter: `sandcheck run --backend ./adapter.mjs`.
//
// Each exec runs the program as `nobody` (uid 65534, no capabilities, no_new_privs) in fresh
// mount, pid, IPC and (network off) network namespaces made by util-linux `unshare`, with private
// tmpfs on /tmp, /var/tmp and /dev/shm and the workspace bound at /tmp/work. It is deliberately
// small: it claims only what it does, so sandcheck reports the rest as unenforced.
// Needs root, Linux, util-linux (unshare, setpriv, nsenter) and python3 on the host.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { SandcheckError, TeardownOnce, describeEntry, killGroup, processTree, segmentsOf } from 'sandcheck/adapter';

/** @typedef {import('sandcheck/adapter').Backend} Backend */
/** @typedef {import('sandcheck/adapter').Environment} Environment */
/** @typedef {import('sandcheck/adapter').PolicyItem} PolicyItem */

export const adapterApiVersion = '1.0.0';

const NOBODY = 65534;
const PATH = '/usr/local/bin:/usr/bin:/bin';
// Runs as root inside the new namespaces, then drops to the box uid. Not `exec`: sh stays pid 1, so
// the program is an ordinary process (signals work) and the whole pid namespace dies with it.
const BOX_SCRIPT = `set -e
ws=$1; rel=$2; size=$3; uid=$4; shift 4
mount --bind "$ws" /mnt
for d in /tmp /var/tmp /dev/shm; do mount -t tmpfs -o "mode=1777,size=$size" sandbox-tmp "$d"; done
mkdir /tmp/work
mount --move /mnt /tmp/work
cd "/tmp/work/$rel"
set +e
setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- "$@"
exit $?`;

/**
 * The factory: sandcheck calls it with the parsed --backend-config (here: `{ uid?: number }`).
 * @param {unknown} options
 * @returns {Backend}
 */
export default function createUnshareBackend(options) {
  const opts = /** @type {{ uid?: unknown }} */ (typeof options === 'object' && options !== null ? options : {});
  if (opts.uid !== undefined && (!Number.isInteger(opts.uid) || Number(opts.uid) <= 0)) throw new Error('uid: expected a positive integer');
  const uid = opts.uid === undefined ? NOBODY : Number(opts.uid);
  return {
    name: 'example-unshare',
    description: `example module adapter: unshare (mount, pid, ipc, net) + setpriv to uid ${uid}, private tmpfs /tmp`,
    capabilities(policy) {
      /** @type {PolicyItem[]} */
      const enforces = ['identity.unprivileged', 'files.readOnlyInput', 'lifecycle.freshEnvironment', 'lifecycle.destroyAfter', 'resources.wallSeconds', 'output.maxBytes'];
      /** @type {Partial<Record<PolicyItem, string>>} */
      const notEnforcedReasons = {
        'resources.memoryMb': 'no cgroup: this example sets no memory limit',
        'resources.processes': 'no cgroup: this example sets no process limit',
        'resources.cpus': 'no cgroup: this example sets no CPU limit',
        'resources.diskMb': 'the workspace is a plain host directory (only /tmp is a sized tmpfs)',
        'files.hostPaths': 'the host file system is visible read-only as far as its permissions allow',
        'identity.hostCredentials': 'host files readable by nobody stay readable',
        'output.sanitized': 'output is passed through unchanged',
        'exports.limits': "left to sandcheck's exporter",
        'posture.namespaces': 'this example keeps the host user namespace and does not check the rest',
        'posture.hostMounts': 'the host file system is visible read-only',
        'posture.seccomp': 'no seccomp filter',
        'posture.capabilityBounding': 'the bounding set is left as unshare gives it',
        'posture.devices': 'no device cgroup',
        'isolation.separateKernel': 'the box runs on the host kernel',
      };
      if (policy.network.mode === 'off' || policy.network.allow.length === 0) enforces.push('network.egress');
      else notEnforcedReasons['network.egress'] = 'an allowlist needs a filter; this example can only cut the network off';
      return { isolation: 'sandbox', enforces, notEnforcedReasons };
    },
    async preflight() {
      if (process.platform !== 'linux') throw new SandcheckError('BACKEND_UNAVAILABLE', 'the example adapter needs Linux');
      if (process.getuid?.() !== 0) throw new SandcheckError('BACKEND_UNAVAILABLE', 'the example adapter needs root (it mounts inside its namespaces)', { hint: 'run as root' });
      const r = await runToEnd(['unshare', '--mount', '--pid', '--fork', '--', '/bin/true']);
      if (r !== 0) throw new SandcheckError('BACKEND_UNAVAILABLE', `unshare cannot create namespaces here (exit ${r})`, { hint: 'apt-get install -y util-linux' });
    },
    async create(policy, ctx) {
      const root = await mkdtemp(join(ctx.scratchDir, 'example-env-'));
      const workspace = join(root, 'work');
      await mkdir(workspace);
      // Sticky and world-writable: the box may add files but not remove or replace root's (read-only inputs).
      await chmod(root, 0o711);
      await chmod(workspace, 0o1777);
      return new UnshareEnvironment(`${ctx.runId}-${randomBytes(3).toString('hex')}`, root, workspace, uid, policy, ctx);
    },
  };
}

/** @implements {Environment} */
class UnshareEnvironment {
  /** @type {Set<import('node:child_process').ChildProcess>} */
  #running = new Set();
  #teardown = new TeardownOnce();

  /**
   * @param {string} id @param {string} root @param {string} workspace @param {number} uid
   * @param {import('sandcheck/adapter').Policy} policy @param {import('sandcheck/adapter').BackendContext} ctx
   */
  constructor(id, root, workspace, uid, policy, ctx) {
    this.id = id;
    this.root = root;
    this.workspace = workspace;
    this.uid = uid;
    this.policy = policy;
    this.ctx = ctx;
  }

  /** @param {readonly import('sandcheck/adapter').PutFile[]} files */
  async putFiles(files) {
    for (const f of files) {
      const abs = join(this.workspace, ...segmentsOf(f.path));
      await mkdirSticky(this.workspace, dirname(abs));
      await writeFile(abs, f.content);
      // A read-only input stays root's (the sticky workspace keeps it from being replaced); others are the box's.
      if (!f.readOnly) await chown(abs, this.uid, this.uid);
      await chmod(abs, f.readOnly ? 0o444 : (f.mode ?? 0o644));
    }
  }

  /** @param {import('sandcheck/adapter').ExecRequest} req @returns {Promise<import('sandcheck/adapter').ExecResult>} */
  async exec(req) {
    const rel = req.cwd ? segmentsOf(req.cwd).join('/') : '.';
    const netOff = this.policy.network.mode === 'off' || this.policy.network.allow.length === 0;
    const tmpSize = `${Math.max(16, Math.min(this.policy.resources.diskMb, 1024))}m`;
    const argv = [
      ...(this.ctx.lab ? ['nsenter', `--net=${this.ctx.lab.netnsPath}`, '--'] : []),
      // --ipc: boxes of one run must not share System V IPC (sandcheck's ipc-covert probe found it missing).
      'unshare', '--mount', '--propagation', 'private', '--pid', '--ipc', '--fork', '--kill-child', '--mount-proc', ...(netOff ? ['--net'] : []), '--',
      '/bin/sh', '-c', BOX_SCRIPT, 'sandbox', this.workspace, rel, tmpSize, String(this.uid), ...req.argv,
    ];
    const [file, ...args] = argv;
    // The box gets a clean environment: never the controller's (it holds credentials).
    const child = spawn(/** @type {string} */ (file), args, {
      env: { PATH, HOME: '/tmp/work', LANG: 'C.UTF-8', ...req.env },
      detached: true,
      stdio: [req.stdin ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    });
    this.#running.add(child);
    let forwarded = 0;
    let truncated = false;
    let timedOut = false;
    const stop = () => child.pid !== undefined && killGroup(child.pid);
    /** @param {import('sandcheck/adapter').ByteSink} sink */
    const forward = (sink) => (/** @type {Buffer} */ chunk) => {
      const room = req.maxOutputBytes - forwarded;
      if (room <= 0) return;
      sink.write(chunk.length <= room ? chunk : chunk.subarray(0, room));
      forwarded += Math.min(chunk.length, room);
      if (chunk.length > room) {
        truncated = true;
        stop();
      }
    };
    child.stdout?.on('data', forward(req.stdout));
    child.stderr?.on('data', forward(req.stderr));
    if (req.stdin && child.stdin) {
      child.stdin.on('error', () => undefined);
      child.stdin.end(Buffer.from(req.stdin));
    }
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, req.timeoutMs);
    req.signal.addEventListener('abort', stop, { once: true });
    if (req.signal.aborted) stop();
    /** @type {{ code: number | null, signal: NodeJS.Signals | null, error?: Error }} */
    const end = await new Promise((resolve) => {
      child.on('error', (error) => resolve({ code: null, signal: null, error }));
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    clearTimeout(timer);
    req.signal.removeEventListener('abort', stop);
    stop();
    this.#running.delete(child);
    return {
      exitCode: end.code,
      signal: end.signal,
      ...(end.error ? { startError: end.error.message } : {}),
      timedOut,
      oomKilled: 'unknown',
      outputTruncated: truncated,
    };
  }

  /** @param {readonly string[]} paths @param {{ maxBytesPerFile: number }} options */
  async getFiles(paths, options) {
    // Never follows a link: a symlink the box made comes out as a symlink, without content.
    return Promise.all(paths.map((p) => describeEntry(this.workspace, p, options.maxBytesPerFile, { followLinks: false })));
  }

  async hostPids() {
    const pids = [];
    for (const child of this.#running) if (child.pid !== undefined) pids.push(...(await processTree(child.pid)));
    return pids;
  }

  destroy() {
    return this.#teardown.run(async () => {
      const items = [];
      for (const child of this.#running) {
        // SIGKILL to the launcher's group; --kill-child and the pid namespace take every box process with it.
        if (child.pid !== undefined) {
          const left = await processTree(child.pid);
          killGroup(child.pid);
          if (left.length > 0) items.push(`exec still running at destroy: ${left.length} process(es) killed`);
        }
      }
      await rm(this.root, { recursive: true, force: true });
      return { items };
    });
  }
}

/** @param {string} top @param {string} dir */
async function mkdirSticky(top, dir) {
  if (dir === top || !dir.startsWith(`${top}/`)) return;
  await mkdirSticky(top, dirname(dir));
  await mkdir(dir).catch((/** @type {NodeJS.ErrnoException} */ err) => {
    if (err.code !== 'EEXIST') throw err;
  });
  await chmod(dir, 0o1777);
}

/** @param {string[]} argv @returns {Promise<number | null>} */
function runToEnd(argv) {
  return new Promise((resolve) => {
    const [file, ...args] = argv;
    const child = spawn(/** @type {string} */ (file), args, { stdio: 'ignore' });
    child.on('error', () => resolve(null));
    child.on('close', (code) => resolve(code));
  });
}
