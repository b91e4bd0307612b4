import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, lstatSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { inodeIdentity, openOwnershipJournal, parseJournal, processStartTime, readBootIdSync, type OwnedResource } from '../../core/ownership-journal.js';
import { sweepDeadRuns } from '../../harness/ownership/sweep.js';
import { openRunContext } from '../../harness/run-context.js';
import { DECOY_SCRIPT } from '../../lab/host-decoys.js';
import { listKeys } from '../../lab/keyring.js';
import { runIdCgroups } from '../../harness/ownership/run-id-cgroups.js';
import { defaultSweepHooks } from '../../harness/ownership/sweep-hooks.js';
import { DEFAULT_STATE_DIR as BWRAP_STATE_DIR } from '../../backends/bwrap/bwrap-backend.js';
import { DEFAULT_STATE_DIR as COMMAND_STATE_DIR } from '../../backends/command/index.js';

const made: string[] = [];
afterAll(async () => {
  await Promise.all(made.map((d) => rm(d, { recursive: true, force: true })));
});
async function tempDir(tag: string): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), `sandcheck-test-${tag}-`));
  made.push(d);
  return d;
}

/** A journal as a run that was SIGKILLed leaves it: its owner pid names no live process. */
function deadRunJournal(dir: string, runId: string, lines: unknown[]): string {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${runId}.jsonl`);
  // A child that already exited: its pid + start time name nobody now.
  const gone = spawnSync('true');
  const owner = { op: 'run', runId, pid: gone.pid ?? 999_999, startTime: 1, bootId: readBootIdSync(), createdAt: new Date().toISOString() };
  appendFileSync(path, [owner, ...lines].map((l) => JSON.stringify(l)).join('\n') + '\n');
  return path;
}

/** Whether the process is gone within 5 s: a killed child of this worker stays a zombie until node reaps it. */
async function reaped(pid: number): Promise<boolean> {
  for (const until = Date.now() + 5000; Date.now() < until; await new Promise((r) => setTimeout(r, 50))) {
    if (processStartTime(pid) === undefined) return true;
  }
  return false;
}

/** A unix socket nobody listens on any more, as a SIGKILLed server leaves it (python does not unlink on exit). */
function staleSocket(path: string): void {
  const r = spawnSync('python3', ['-c', 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])', path], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  expect(lstatSync(path).isSocket()).toBe(true);
}

function socketRecord(path: string): OwnedResource {
  const st = lstatSync(path, { bigint: true });
  return { kind: 'socket', path, inode: { ...inodeIdentity(st), ctimeNs: st.ctimeNs.toString() } };
}

function sleeper(): { pid: number; startTime: number } {
  const child = spawn('sleep', ['300'], { stdio: 'ignore', detached: true });
  child.unref();
  const pid = child.pid ?? 0;
  return { pid, startTime: processStartTime(pid) ?? -1 };
}

describe('ownership journal and crash sweep', () => {
  it('a SIGKILLed run leaks nothing: the next sweep removes its process and scratch directory by recorded identity', async () => {
    const journalDir = join(await tempDir('owners'), 'j');
    const scratch = await tempDir('rdead00001');
    const proc = sleeper();
    expect(proc.startTime).toBeGreaterThan(-1);
    deadRunJournal(journalDir, 'rdead00001', [
      { op: 'own', resource: { kind: 'dir', path: scratch } },
      { op: 'own', resource: { kind: 'process', pid: proc.pid, startTime: proc.startTime, name: 'decoy process' } },
    ]);
    const dry = await sweepDeadRuns({ dir: journalDir, dryRun: true });
    expect(dry.removed).toHaveLength(2);
    expect(existsSync(scratch)).toBe(true);
    expect(processStartTime(proc.pid)).toBe(proc.startTime);

    const report = await sweepDeadRuns({ dir: journalDir });
    expect(report.deadRuns).toEqual(['rdead00001']);
    expect(report.removed.sort()).toEqual([`rdead00001: dir ${scratch}`, `rdead00001: process ${proc.pid}@${proc.startTime}`].sort());
    expect(existsSync(scratch)).toBe(false);
    expect(await reaped(proc.pid)).toBe(true);
    // The journal of a fully cleaned run goes too.
    expect(existsSync(join(journalDir, 'rdead00001.jsonl'))).toBe(false);
  });

  const pidsV1 = '/sys/fs/cgroup/pids';
  it.skipIf(process.getuid?.() !== 0 || !existsSync(`${pidsV1}/cgroup.procs`))(
    'cgroups named after a dead run (a Docker parent with a container inside) go with their processes, though no backend journalled them',
    async () => {
      const journalDir = join(await tempDir('owners'), 'j');
      const runId = 'rcgdead001';
      const parent = join(pidsV1, `sandcheck-docker-${runId}-0a1b2c3d`);
      const inner = join(parent, 'container');
      mkdirSync(inner, { recursive: true });
      const proc = sleeper();
      writeFileSync(join(inner, 'cgroup.procs'), String(proc.pid));
      deadRunJournal(journalDir, runId, []);
      expect(runIdCgroups(runId)).toContain(parent);
      const report = await sweepDeadRuns({ dir: journalDir });
      expect(report.removed).toContain(`${runId}: cgroup ${parent}`);
      expect(existsSync(parent)).toBe(false);
      expect(await reaped(proc.pid)).toBe(true);
    },
  );

  it.skipIf(process.getuid?.() !== 0)(
    'a bwrap or command-backend workspace of a dead run without its owner record (killed between mkdir and the record) goes; an unowned one of a run not proven dead stays',
    async () => {
      const journalDir = join(await tempDir('owners'), 'j');
      const tag = process.pid.toString(16).padStart(6, '0').slice(-6);
      const deadRun = `rwsdead${tag}`;
      const otherRun = `rwsalive${tag}`;
      const deadWs = join(BWRAP_STATE_DIR, `${deadRun}-0a1b2c3d`);
      const otherWs = join(BWRAP_STATE_DIR, `${otherRun}-0a1b2c3d`);
      const deadCmd = join(COMMAND_STATE_DIR, `${deadRun}-0a1b2c3d`);
      const otherCmd = join(COMMAND_STATE_DIR, `${otherRun}-0a1b2c3d`);
      for (const ws of [deadWs, otherWs, deadCmd, otherCmd]) {
        mkdirSync(ws, { recursive: true, mode: 0o711 });
        writeFileSync(join(ws, 'owner.json.tmp'), ''); // what the chaos test found: SIGKILL before the rename
        made.push(ws);
      }
      deadRunJournal(journalDir, deadRun, []);
      const hooks = defaultSweepHooks().filter((h) => h.name === 'bwrap' || h.name === 'command backend');
      expect(hooks).toHaveLength(2);
      const dry = await sweepDeadRuns({ dir: journalDir, dryRun: true, hooks });
      expect(dry.removed).toContain(`bwrap: workspace ${deadRun}-0a1b2c3d`);
      expect(dry.removed).toContain(`command backend: command environment ${deadRun}-0a1b2c3d`);
      expect(existsSync(deadWs) && existsSync(deadCmd)).toBe(true);
      const report = await sweepDeadRuns({ dir: journalDir, hooks });
      expect(report.deadRuns).toEqual([deadRun]);
      expect(report.removed).toContain(`bwrap: workspace ${deadRun}-0a1b2c3d`);
      expect(report.removed).toContain(`command backend: command environment ${deadRun}-0a1b2c3d`);
      expect(existsSync(deadWs) || existsSync(deadCmd)).toBe(false);
      expect(existsSync(otherWs) && existsSync(otherCmd)).toBe(true);
      expect(report.removed.filter((r) => r.includes(otherRun))).toEqual([]);
    },
  );

  it('leaves a live run alone, released resources alone, and records that do not name their run', async () => {
    const journalDir = join(await tempDir('owners'), 'j');
    const live = openOwnershipJournal('rlive00001', journalDir);
    const liveDir = await tempDir('rlive00001');
    live.own({ kind: 'dir', path: liveDir });
    const foreign = await tempDir('someoneelse');
    const released = await tempDir('rdead00002');
    deadRunJournal(journalDir, 'rdead00002', [
      { op: 'own', resource: { kind: 'dir', path: foreign } },
      { op: 'own', resource: { kind: 'dir', path: released } },
      { op: 'release', resource: { kind: 'dir', path: released } },
      '{"op":"own","resource":{"kind":"dir","pa', // a torn last line
    ]);
    const report = await sweepDeadRuns({ dir: journalDir });
    expect(report.deadRuns).toEqual(['rdead00002']);
    expect(report.removed).toEqual([]);
    expect(report.kept.map((k) => k.reason)).toEqual(['the record does not name its run: not provably ours']);
    expect(existsSync(liveDir)).toBe(true);
    expect(existsSync(foreign)).toBe(true);
    expect(existsSync(released)).toBe(true);
    live.close();
  });

  it("a dead witness's socket goes by recorded inode at any path, by name without one; only while it is still that socket", async () => {
    const journalDir = join(await tempDir('owners'), 'j');
    const runId = 'wsockdead1';
    const dir = await tempDir('sockets');
    // A --listen path the user chose: no run id in it, the inode and ctime prove it.
    const userSock = join(dir, 'listen.sock');
    staleSocket(userSock);
    // The default path carries the id: journalled before bind, without an inode.
    const namedSock = join(dir, `witness-${runId}.sock`);
    staleSocket(namedSock);
    // Recorded, then replaced by another socket at the same path (another server's now): not ours.
    const replaced = join(dir, 'replaced.sock');
    staleSocket(replaced);
    const replacedRecord = socketRecord(replaced);
    unlinkSync(replaced);
    staleSocket(replaced);
    // Recorded, then a regular file took its path: never removed as a socket.
    const nowFile = join(dir, 'now-a-file.sock');
    staleSocket(nowFile);
    const nowFileRecord = socketRecord(nowFile);
    unlinkSync(nowFile);
    writeFileSync(nowFile, 'not a socket');
    // A socket with no id in its path and no inode recorded: not provably ours.
    const unproven = join(dir, 'unproven.sock');
    staleSocket(unproven);
    // A socket record that is not a socket at all at its named path (a directory).
    const namedDir = join(dir, `${runId}-dir.sock`);
    mkdirSync(namedDir);

    deadRunJournal(journalDir, runId, [
      { op: 'own', resource: { kind: 'socket', path: namedSock } },
      { op: 'own', resource: socketRecord(userSock) },
      { op: 'own', resource: replacedRecord },
      { op: 'own', resource: nowFileRecord },
      { op: 'own', resource: { kind: 'socket', path: unproven } },
      { op: 'own', resource: { kind: 'socket', path: namedDir } },
    ]);
    const expected = [`${runId}: socket ${namedSock}`, `${runId}: socket ${userSock}`].sort();
    const dry = await sweepDeadRuns({ dir: journalDir, dryRun: true });
    expect(dry.removed.sort()).toEqual(expected);
    expect(dry.kept).toEqual([{ what: `${runId}: socket ${unproven}`, reason: 'the record does not name its run: not provably ours' }]);
    expect(existsSync(userSock) && existsSync(namedSock)).toBe(true);

    const report = await sweepDeadRuns({ dir: journalDir });
    expect(report.removed.sort()).toEqual(expected);
    expect(existsSync(userSock) || existsSync(namedSock)).toBe(false);
    expect(lstatSync(replaced).isSocket()).toBe(true);
    expect(readFileSync(nowFile, 'utf8')).toBe('not a socket');
    expect(lstatSync(unproven).isSocket()).toBe(true);
    expect(statSync(namedDir).isDirectory()).toBe(true);
  });

  it("a dead witness's state file goes by inode and content hash (or its temp file by name); a changed file, a new one or a symlink stays", async () => {
    const journalDir = join(await tempDir('owners'), 'j');
    const runId = 'wfiledead1';
    const dir = await tempDir('files');
    const record = (path: string, text: string): OwnedResource => {
      writeFileSync(path, text, { mode: 0o600 });
      return { kind: 'file', path, inode: inodeIdentity(lstatSync(path, { bigint: true })), sha256: createHash('sha256').update(text).digest('hex') };
    };
    const state = join(dir, 'witness.json');
    const stateRecord = record(state, '{"token":"SCNRYTOKEN1"}\n');
    const temp = join(dir, `.sandcheck-witness-${runId}.tmp`);
    writeFileSync(temp, 'partial');
    // Same inode, other content (rewritten in place since): not the file recorded.
    const edited = join(dir, 'edited.json');
    const editedRecord = record(edited, '{"token":"SCNRYTOKEN2"}\n');
    writeFileSync(edited, '{"token":"SOMEONEELSE"}\n');
    // Deleted and made anew at the same path (a later witness's state file, even if the inode number came back).
    const remade = join(dir, 'remade.json');
    const remadeRecord = record(remade, '{"token":"SCNRYTOKEN3"}\n');
    unlinkSync(remade);
    writeFileSync(remade, '{"token":"NEWWITNESS"}\n');
    // Replaced by a symlink to a file with that very content: never followed.
    const linked = join(dir, 'linked.json');
    const linkedRecord = record(linked, '{"token":"SCNRYTOKEN4"}\n');
    renameSync(linked, join(dir, 'moved.json'));
    symlinkSync(join(dir, 'moved.json'), linked);
    // No inode or hash and no run id in the name: not provably ours.
    const unproven = join(dir, 'unproven.json');
    writeFileSync(unproven, 'x');

    deadRunJournal(journalDir, runId, [
      { op: 'own', resource: { kind: 'file', path: temp } },
      { op: 'own', resource: stateRecord },
      { op: 'own', resource: editedRecord },
      { op: 'own', resource: remadeRecord },
      { op: 'own', resource: linkedRecord },
      { op: 'own', resource: { kind: 'file', path: unproven } },
    ]);
    const expected = [`${runId}: file ${state}`, `${runId}: file ${temp}`].sort();
    expect((await sweepDeadRuns({ dir: journalDir, dryRun: true })).removed.sort()).toEqual(expected);
    expect(existsSync(state) && existsSync(temp)).toBe(true);
    const report = await sweepDeadRuns({ dir: journalDir });
    expect(report.removed.sort()).toEqual(expected);
    expect(report.kept.map((k) => k.what)).toEqual([`${runId}: file ${unproven}`]);
    expect(existsSync(state) || existsSync(temp)).toBe(false);
    expect(readFileSync(edited, 'utf8')).toBe('{"token":"SOMEONEELSE"}\n');
    expect(readFileSync(remade, 'utf8')).toBe('{"token":"NEWWITNESS"}\n');
    expect(lstatSync(linked).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(dir, 'moved.json'), 'utf8')).toBe('{"token":"SCNRYTOKEN4"}\n');
    expect(existsSync(unproven)).toBe(true);
  });

  it('a socket journalled by name first and by inode later is one resource: one release frees it', () => {
    const text = [
      JSON.stringify({ op: 'run', runId: 'wparse0001', pid: 1, startTime: 2, bootId: 'b', createdAt: 'now' }),
      JSON.stringify({ op: 'own', resource: { kind: 'socket', path: '/run/sandcheck/witness-wparse0001.sock' } }),
      JSON.stringify({ op: 'own', resource: { kind: 'socket', path: '/run/sandcheck/witness-wparse0001.sock', inode: { dev: '1', ino: '2', ctimeNs: '3' } } }),
    ];
    expect(parseJournal('/x', text.join('\n'))?.live).toEqual([
      { kind: 'socket', path: '/run/sandcheck/witness-wparse0001.sock', inode: { dev: '1', ino: '2', ctimeNs: '3' } },
    ]);
    const released = [...text, JSON.stringify({ op: 'release', resource: { kind: 'socket', path: '/run/sandcheck/witness-wparse0001.sock' } })];
    expect(parseJournal('/x', released.join('\n'))?.live).toEqual([]);
    // A record whose inode is not a number, or a relative path, is not trusted.
    const bad = [text[0], JSON.stringify({ op: 'own', resource: { kind: 'socket', path: 'rel.sock', inode: { dev: '1', ino: 'x', ctimeNs: '3' } } })];
    expect(parseJournal('/x', bad.join('\n'))).toMatchObject({ live: [], skipped: 1 });
  });

  it('keeps the journal line for a resource before it exists, and a torn line does not hide the others', () => {
    const text = [
      JSON.stringify({ op: 'run', runId: 'rparse0001', pid: 1, startTime: 2, bootId: 'b', createdAt: 'now' }),
      JSON.stringify({ op: 'own', resource: { kind: 'netns', name: 'sc-rparse0001' } }),
      '{"op":"own","reso',
    ].join('\n');
    const entry = parseJournal('/x', text);
    expect(entry?.live).toEqual([{ kind: 'netns', name: 'sc-rparse0001' }]);
    expect(entry?.skipped).toBe(1);
  });

  it('the run context records its scratch directory and decoy process, and releases them on dispose', async () => {
    const journalDir = join(await tempDir('owners'), 'j');
    const journal = openOwnershipJournal('rctx000001', journalDir);
    const run = await openRunContext('rctx000001', { journal });
    const during = parseJournal(journal.path, readFileSync(journal.path, 'utf8'));
    expect(during?.live.map((r) => r.kind).sort()).toEqual(['dir', 'key', 'key', 'process']);
    expect(during?.live).toContainEqual({ kind: 'dir', path: run.scratchDir });
    expect(during?.live).toContainEqual(expect.objectContaining({ kind: 'process', pid: run.hostDecoys.processPid }));
    await run.dispose();
    const after = parseJournal(journal.path, readFileSync(journal.path, 'utf8'));
    expect(after?.live).toEqual([]);
    // Released only once the kernel lists none of them: nothing of the run stays in any keyring.
    expect(listKeys('sandcheck-decoy:rctx000001:')).toEqual([]);
    journal.close();
  });

  it("a dead run's decoy key left in the user keyring (its decoy killed unsignalled) is invalidated by the sweep", async () => {
    const journalDir = join(await tempDir('owners'), 'j');
    const description = 'sandcheck-decoy:rdeadkey01:user';
    // add_key("user", …, KEY_SPEC_USER_KEYRING) and a 120 s kernel timeout, as the decoy does, in case this test dies.
    const add = spawnSync(
      'python3',
      [
        '-c',
        [
          'import ctypes, sys',
          'libc = ctypes.CDLL(None, use_errno=True)',
          'k = libc.syscall(ctypes.c_long(248), b"user", sys.argv[1].encode(), b"SCNRYTESTKEY", ctypes.c_size_t(12), ctypes.c_long(-4))',
          'assert k > 0, ctypes.get_errno()',
          'libc.syscall(ctypes.c_long(250), ctypes.c_long(15), ctypes.c_long(k), ctypes.c_long(120))',
        ].join('\n'),
        description,
      ],
      { encoding: 'utf8' },
    );
    expect(add.status, add.stderr).toBe(0);
    expect(listKeys(description).map((k) => k.description)).toEqual([description]);
    deadRunJournal(journalDir, 'rdeadkey01', [{ op: 'own', resource: { kind: 'key', description } }]);
    expect((await sweepDeadRuns({ dir: journalDir, dryRun: true })).removed).toEqual([`rdeadkey01: key ${description}`]);
    expect(listKeys(description)).toHaveLength(1);
    expect((await sweepDeadRuns({ dir: journalDir })).removed).toEqual([`rdeadkey01: key ${description}`]);
    expect(listKeys(description)).toEqual([]);
  });

  it('the decoy process dies with its parent (parent-death signal) instead of sleeping for hours', async () => {
    // A shell stands in for the harness: it starts the decoy with its own pid as the parent, then is SIGKILLed.
    const parent = spawn('sh', ['-c', 'python3 -c "$1" $$ & echo $!; exec sleep 60', 'sh', DECOY_SCRIPT], {
      stdio: ['ignore', 'pipe', 'ignore'],
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', SANDCHECK_DECOY_SECRET: 'SCNRYTEST' },
    });
    const decoyPid = await new Promise<number>((resolve) => parent.stdout?.once('data', (d: Buffer) => resolve(Number(d.toString().trim()))));
    const decoyStart = processStartTime(decoyPid);
    await sleep(500);
    expect(processStartTime(decoyPid)).toBe(decoyStart);
    parent.kill('SIGKILL');
    const running = (): boolean => {
      if (processStartTime(decoyPid) !== decoyStart) return false;
      const stat = readFileSync(`/proc/${decoyPid}/stat`, 'utf8');
      return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
    };
    let alive = true;
    // The decoy's own fallback polls once a second; 10 s is far below its 4 h bound.
    for (let i = 0; i < 100 && alive; i++) {
      await sleep(100);
      alive = running();
    }
    expect(alive).toBe(false);
  });
});
