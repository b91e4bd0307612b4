import { readlink, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { POLICY_ITEMS, type PolicyItem } from '../../model/backend-contract.js';
import { findProcessesWithCmdline, killPids } from '../../lab/process-scan.js';
import { watchForProcess } from '../../harness/process-watch.js';
import { errorMessage } from '../../core/errors.js';
import { fail, pass, skip, type CheckOutcome } from './model.js';
import { CheckSink, describeRun, within, type CheckSession } from './session.js';

export function capabilitiesConsistent(s: CheckSession): CheckOutcome {
  const a = s.backend.capabilities(s.policy);
  const b = s.backend.capabilities(s.policy);
  const problems: string[] = [];
  if (a.isolation !== 'none' && a.isolation !== 'sandbox') problems.push(`isolation "${String(a.isolation)}" is neither "none" nor "sandbox"`);
  const known = new Set<string>(POLICY_ITEMS);
  const unknown = (items: readonly string[]): string[] => items.filter((i) => !known.has(i));
  if (!Array.isArray(a.enforces)) problems.push('enforces is not an array');
  else {
    for (const i of unknown(a.enforces)) problems.push(`enforces names an unknown policy item "${i}"`);
    if (new Set(a.enforces).size !== a.enforces.length) problems.push('enforces names an item twice');
  }
  for (const [field, map] of [
    ['notEnforcedReasons', a.notEnforcedReasons],
    ['notObservable', a.notObservable],
  ] as const) {
    const keys = Object.keys(map ?? {});
    for (const i of unknown(keys)) problems.push(`${field} names an unknown policy item "${i}"`);
    for (const i of keys.filter((k) => (a.enforces as readonly string[]).includes(k))) problems.push(`"${i}" is both claimed (enforces) and in ${field}`);
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) problems.push('two calls with the same policy gave different answers');
  if (problems.length > 0) return fail(problems.join('; '));
  const claimed = a.enforces as readonly PolicyItem[];
  return pass(`isolation ${a.isolation}; claims ${claimed.length === 0 ? 'nothing' : claimed.join(', ')}`);
}

const LEAVE = `
import sys
open(sys.argv[1], 'w').write('residue\\n')
print('left')
`;
const LOOK = `
import os, sys
print('present' if os.path.exists(sys.argv[1]) else 'absent')
`;

/** Writes `path` in one environment, destroys it, and looks for it from a new one (program and getFiles). */
async function residue(s: CheckSession, path: string, viaGetFiles: boolean): Promise<CheckOutcome> {
  const first = await s.withEnv((env) => s.run(env, { source: LEAVE, args: [path] }));
  if (!first.stdout.text().includes('left')) return skip(`the first environment could not write ${path}: nothing to look for (${describeRun(first)})`);
  return s.withEnv(async (env) => {
    const got = viaGetFiles ? (await env.getFiles([path], { maxBytesPerFile: 1024 }))[0] : undefined;
    if (got && got.kind !== 'missing') return fail(`getFiles in a new environment found ${path} (${got.kind}) written in the previous one`);
    const look = await s.run(env, { source: LOOK, args: [path] });
    if (look.stdout.text().includes('present')) return fail(`a program in a new environment found ${path}, written in the previous one`);
    if (!look.stdout.text().includes('absent')) return skip(`the look-up program did not answer (${describeRun(look)})`);
    return pass(`${path}, written in one environment, is absent in the next (program${viaGetFiles ? ' and getFiles' : ''})`);
  });
}

export function freshWorkspace(s: CheckSession): Promise<CheckOutcome> {
  return residue(s, s.nonce('residue'), true);
}

export async function freshTmp(s: CheckSession): Promise<CheckOutcome> {
  const path = `/tmp/${s.nonce('residue')}`;
  try {
    return await residue(s, path, false);
  } finally {
    // A backend that shares the host's /tmp left our file there: it is ours (named by the nonce), remove it.
    await rm(path, { force: true }).catch(() => undefined);
  }
}

export async function destroyIdempotent(s: CheckSession): Promise<CheckOutcome> {
  const env = await s.create();
  try {
    const r = await s.run(env, { source: "print('hello')\n" });
    if (!r.stdout.text().includes('hello')) return skip(`the environment could not run a program (${describeRun(r)})`);
  } catch (err) {
    await s.destroy(env).catch(() => undefined);
    throw err;
  }
  const first = await s.destroy(env);
  let again: string[][];
  try {
    again = await Promise.all([env.destroy(), env.destroy()]).then((ls) => ls.map((l) => l.items));
  } catch (err) {
    return fail(`destroy() threw when called again: ${errorMessage(err)}`);
  }
  const extra = again.flat();
  if (extra.length > 0) return fail(`a repeated destroy() reported leftovers again: ${extra.join('; ').slice(0, 300)}`);
  return pass(`destroy() resolved three times (twice concurrently); the first reported ${first.length} leftover(s), the others none`);
}

const DAEMON = `
import os, subprocess, sys, time
subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)', sys.argv[1]],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
time.sleep(1.0)
print('spawned', flush=True)
`;

export async function destroyLeavesNothing(s: CheckSession): Promise<CheckOutcome> {
  const marker = s.nonce('daemon');
  const env = await s.create();
  // Started once the environment exists: a create() that throws must not leave the watch polling forever.
  const watch = watchForProcess(marker);
  let r;
  let seen: boolean;
  let aliveBeforeDestroy: boolean;
  let leftovers: string[];
  try {
    r = await s.run(env, { source: DAEMON, args: [marker] });
  } finally {
    seen = await watch.stop();
    aliveBeforeDestroy = (await findProcessesWithCmdline(marker)).length > 0;
    leftovers = await s.destroy(env).catch((err: unknown) => [`destroy threw: ${errorMessage(err)}`]);
  }
  if (!seen) return skip(`the daemon was never seen on this host: the box's processes are not visible here, nothing to judge (${describeRun(r)})`);
  let left = await findProcessesWithCmdline(marker);
  for (let i = 0; i < 10 && left.length > 0; i++) {
    await new Promise((res) => setTimeout(res, 200));
    left = await findProcessesWithCmdline(marker);
  }
  if (left.length > 0) {
    killPids(left.map((p) => p.pid));
    return fail(
      `${left.length} process(es) the environment started (setsid daemon, seen alive${aliveBeforeDestroy ? ' until destroy' : ''}) still ran 2 s after destroy() returned; killed by the check (destroy reported: ${leftovers.join('; ') || 'nothing'})`,
    );
  }
  return pass(
    `the daemon, seen alive on the host${aliveBeforeDestroy ? ' until destroy()' : ' while the program ran'}, is gone after destroy() (destroy reported: ${leftovers.join('; ') || 'nothing'})`,
  );
}

/** The check makes an empty network namespace of its own, hands it to create() as the lab, and reads the box's from /proc. */
export async function labNetns(s: CheckSession): Promise<CheckOutcome> {
  if (process.getuid?.() !== 0) return skip('needs root to create a network namespace (ip netns add)');
  const name = `scchk${s.nonce('x').slice(-8)}`;
  const add = await execa('ip', ['netns', 'add', name], { reject: false });
  if (add.exitCode !== 0) return skip(`could not create a network namespace: ${add.stderr.trim() || add.shortMessage}`);
  const netnsPath = `/run/netns/${name}`;
  const resolvConfPath = join(s.ctx.scratchDir, `${name}-resolv.conf`);
  try {
    const inode = (await stat(netnsPath)).ino;
    await writeFile(resolvConfPath, 'nameserver 192.0.2.53\n');
    const marker = s.nonce('netns');
    return await s.withEnv(
      async (env) => {
        const ctl = new AbortController();
        const stdout = new CheckSink();
        const running = s.run(env, {
          source: "import sys, time\nprint('ready', flush=True)\ntime.sleep(30)\n",
          args: [marker],
          signal: ctl.signal,
          stdout,
          timeoutMs: 60_000,
        });
        try {
          if (!(await stdout.waitFor('ready', 20_000))) {
            const r = await abortAnd(ctl, running);
            return skip(`the program did not start in an environment given a lab (${r ? describeRun(r) : 'exec did not return'})`);
          }
          const procs = await findProcessesWithCmdline(marker);
          if (procs.length === 0) return skip("the box's processes are not visible on this host: cannot read its network namespace");
          // The safety property: no box process in the host's own namespace. The lab's, or one of the box's own inside it, are fine.
          const hostNs = await readlink('/proc/self/ns/net');
          const inHost: number[] = [];
          let inLab = 0;
          for (const p of procs) {
            const ns = await readlink(`/proc/${p.pid}/ns/net`).catch(() => undefined);
            if (ns === hostNs) inHost.push(p.pid);
            else if (ns === `net:[${inode}]`) inLab++;
          }
          if (inHost.length > 0)
            return fail(
              `given the lab ${netnsPath}, ${inHost.length} box process(es) ran in the host's own network namespace (${hostNs}): network probes would leave the lab`,
            );
          return pass(
            `none of the box's ${procs.length} process(es) is in the host's network namespace (${inLab} in the lab's net:[${inode}], ${procs.length - inLab} in a namespace of the box's own)`,
          );
        } finally {
          await abortAnd(ctl, running);
        }
      },
      { netnsPath, resolvConfPath },
    );
  } finally {
    await execa('ip', ['netns', 'del', name], { reject: false });
    await rm(resolvConfPath, { force: true });
  }
}

async function abortAnd<T>(ctl: AbortController, running: Promise<T>): Promise<T | undefined> {
  ctl.abort();
  return within(running, 5000);
}
