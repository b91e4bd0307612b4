import { createHash, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { findProcessesWithCmdline } from '../../lab/process-scan.js';
import { fail, pass, skip, type CheckOutcome } from './model.js';
import { CheckSink, describeRun, within, type CheckSession } from './session.js';

const MIB = 1024 * 1024;
/** How long exec() may take to return after an abort. */
export const ABORT_BOUND_MS = 5000;
/** The backend timeout the timeout check asks for. */
const CHECK_TIMEOUT_MS = 2000;
/**
 * How long a check waits for a program to write its first byte, counted from the exec() call: the backend's and
 * the interpreter's start-up, which grows with the machine's load. Only a safety net for a program that never
 * writes; every bound that decides a verdict counts from the program's own first byte instead.
 */
const START_BOUND_MS = 60_000;
/** How long a program that has started may stay blocked on an empty stdin before the check calls it blocked. */
const STDIN_EOF_BOUND_MS = 10_000;

export async function exitCodes(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const seen: string[] = [];
    for (const code of [0, 3, 255]) {
      const r = await s.run(env, { source: 'import sys\nsys.exit(int(sys.argv[1]))\n', args: [String(code)] });
      if (r.result?.exitCode !== code || r.result.signal !== null) return fail(`sys.exit(${code}) came back as ${describeRun(r)}`);
      seen.push(String(code));
    }
    return pass(`exit codes ${seen.join(', ')} came back unchanged, no signal`);
  });
}

export async function signal(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: 'import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\ntime.sleep(5)\n' });
    const x = r.result;
    if (x?.signal === 'SIGTERM' && x.exitCode === null) return pass('reported as signal SIGTERM, exit code null');
    if (x?.exitCode === 143 && x.signal === null) return pass('reported as exit code 143 (128 + SIGTERM): the signal is derived, not native');
    return fail(`a program that killed itself with SIGTERM came back as ${describeRun(r)}`);
  });
}

const ARGV = ['two words', '"quoted"', "it's", '$HOME', '`id`', 'a;b|c&d', '', '*', 'ünïcödé'];

export async function argv(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: 'import json, sys\nprint(json.dumps(sys.argv[1:]))\n', args: ARGV });
    const line = r.stdout.text().trim();
    let got: unknown;
    try {
      got = JSON.parse(line);
    } catch {
      return fail(`the program did not print its argv (${describeRun(r)}): ${line.slice(0, 200)}`);
    }
    if (JSON.stringify(got) !== JSON.stringify(ARGV))
      return fail(`argv changed on the way: sent ${JSON.stringify(ARGV)}, the program saw ${JSON.stringify(got)}`);
    return pass(`${ARGV.length} argv elements arrived unchanged`);
  });
}

const STDIN_HASH = `
import hashlib, sys
print('reading', flush=True)
data = sys.stdin.buffer.read()
print('len=%d sha=%s' % (len(data), hashlib.sha256(data).hexdigest()))
`;

export async function stdin(s: CheckSession): Promise<CheckOutcome> {
  const data = randomBytes(256 * 1024);
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: STDIN_HASH, stdin: data });
    const want = `len=${data.length} sha=${createHash('sha256').update(data).digest('hex')}`;
    if (!r.stdout.text().includes(want))
      return fail(`256 KiB of random stdin did not arrive exactly: the program saw "${r.stdout.text().trim().slice(0, 120)}" (${describeRun(r)})`);
    // Without stdin the program must see EOF at once, not inherit a terminal or a pipe that never closes. The bound
    // counts from the program's "reading" (its first byte), not from exec(): a slow start under load is no blocked read.
    const none = await s.run(env, { source: STDIN_HASH, backstopMs: START_BOUND_MS, backstopAfterFirstByteMs: STDIN_EOF_BOUND_MS });
    if (none.backstopped && none.stdout.firstByteAt !== undefined)
      return fail(
        `without ExecRequest.stdin the program blocked reading stdin (still reading ${STDIN_EOF_BOUND_MS / 1000} s after it started to; stopped by the check)`,
      );
    if (none.backstopped)
      return fail(
        `without ExecRequest.stdin exec() had not returned ${START_BOUND_MS / 1000} s after the call and the program's "reading" never arrived: it blocked reading stdin (a backend that delivers output only at the end shows nothing before) or never started (${describeRun(none)})`,
      );
    if (!none.stdout.text().includes('len=0 '))
      return fail(`without ExecRequest.stdin the program read "${none.stdout.text().trim().slice(0, 120)}" (${describeRun(none)})`);
    return pass('256 KiB of random bytes arrived exactly; without stdin the program read EOF');
  });
}

export async function env(s: CheckSession): Promise<CheckOutcome> {
  const value = `spaces and = signs ü ${randomBytes(4).toString('hex')}`;
  return s.withEnv(async (e) => {
    const r = await s.run(e, { source: "import os\nprint(repr(os.environ.get('SANDCHECK_CHECK_VAR')))\n", env: { SANDCHECK_CHECK_VAR: value } });
    const got = r.stdout.text().trim();
    if (got !== `'${value}'`) return fail(`ExecRequest.env SANDCHECK_CHECK_VAR=${JSON.stringify(value)} reached the program as ${got || describeRun(r)}`);
    return pass('a variable with spaces, "=" and non-ASCII characters arrived unchanged');
  });
}

const CWD = `
import os
print('cwd-file=%s' % open('here.txt').read().strip())
`;

export async function cwd(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    await env.putFiles([
      { path: 'here.txt', content: Buffer.from('workspace\n') },
      { path: 'sub/dir/here.txt', content: Buffer.from('sub/dir\n') },
      { path: 'sub/dir/check.py', content: Buffer.from(CWD) },
    ]);
    const root = await s.run(env, { source: CWD });
    if (!root.stdout.text().includes('cwd-file=workspace'))
      return fail(`without ExecRequest.cwd the program did not start in the workspace (${root.stdout.text().trim() || describeRun(root)})`);
    const sub = await s.run(env, { argv: ['python3', 'check.py'], cwd: 'sub/dir' });
    if (!sub.stdout.text().includes('cwd-file=sub/dir'))
      return fail(`with cwd "sub/dir" the program did not start there (${sub.stdout.text().trim() || describeRun(sub)})`);
    return pass('default cwd is the workspace; cwd "sub/dir" is resolved inside it');
  });
}

const FLOOD = `
import sys
block = bytes(range(256)) * 4096
for _ in range(8):
    sys.stdout.buffer.write(block)
sys.stdout.buffer.flush()
sys.stderr.buffer.write(block)
sys.stderr.buffer.flush()
`;

export async function largeOutput(s: CheckSession): Promise<CheckOutcome> {
  const block = Buffer.alloc(MIB);
  for (let i = 0; i < MIB; i++) block[i] = i & 0xff;
  const out = createHash('sha256');
  for (let i = 0; i < 8; i++) out.update(block);
  const wantOut = out.digest('hex');
  const wantErr = createHash('sha256').update(block).digest('hex');
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: FLOOD, maxOutputBytes: 16 * MIB, backstopMs: 60_000 });
    if (r.result?.exitCode !== 0) return fail(`the writer did not finish (${describeRun(r)}; ${r.stdout.bytes} bytes of stdout received)`);
    if (r.stdout.bytes !== 8 * MIB || r.stdout.sha256() !== wantOut)
      return fail(`stdout: ${r.stdout.bytes} bytes received (sha256 ${r.stdout.sha256().slice(0, 16)}…), ${8 * MIB} written`);
    if (r.stderr.bytes !== MIB || r.stderr.sha256() !== wantErr) return fail(`stderr: ${r.stderr.bytes} bytes received, ${MIB} written`);
    if (r.result.outputTruncated === true) return fail('all output arrived but the result claims outputTruncated: true');
    return pass(`stdout ${8 * MIB} and stderr ${MIB} bytes received exactly (sha256 matches), maxOutputBytes ${16 * MIB}`);
  });
}

export async function startError(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const r = await s.run(env, { argv: ['sandcheck-no-such-program-x9'], backstopMs: 15_000 });
    if (r.threw !== undefined) return fail(`exec threw for a missing program instead of returning a result: ${r.threw}`);
    const x = r.result;
    if (x && (x.startError !== undefined || x.exitCode === 127 || x.exitCode === 126)) return pass(`returned ${describeRun(r)}`);
    return fail(`a missing program came back as ${describeRun(r)}`);
  });
}

const SLEEPER = `
import sys, time
print('ready', flush=True)
time.sleep(float(sys.argv[2]))
print('slept', flush=True)
`;

/** How long past timeoutMs the check lets a program that has started run before stopping it itself. */
const TIMEOUT_BACKSTOP_MS = CHECK_TIMEOUT_MS + 10_000;

/**
 * Runs SLEEPER with the backend's timeout; shared by exec.timeout and exec.timeout-flag. The check's backstop counts
 * from the program's first byte ("ready"): a backend whose start-up is slow under load is not stopped by the check
 * before its own timer, which may count from the program's start, has had its chance.
 */
export async function timeoutRun(s: CheckSession) {
  return s.withEnv(async (env) => {
    const n = s.nonce('timeout');
    const r = await s.run(env, {
      source: SLEEPER,
      args: [n, '30'],
      timeoutMs: CHECK_TIMEOUT_MS,
      backstopMs: START_BOUND_MS,
      backstopAfterFirstByteMs: TIMEOUT_BACKSTOP_MS,
    });
    return r;
  });
}

export function judgeTimeout(r: Awaited<ReturnType<typeof timeoutRun>>, toleranceMs: number): CheckOutcome {
  if (r.backstopped && r.stdout.firstByteAt !== undefined)
    return fail(`the program ran on past timeoutMs ${CHECK_TIMEOUT_MS}: the check stopped it ${TIMEOUT_BACKSTOP_MS} ms after its first byte`);
  if (r.backstopped)
    return fail(
      `exec() with timeoutMs ${CHECK_TIMEOUT_MS} had not returned ${START_BOUND_MS / 1000} s after the call (the check stopped it; the program's first byte never arrived)`,
    );
  if (r.stdout.text().includes('slept')) return fail('the program slept its 30 s to the end');
  const first = r.stdout.firstByteAt;
  if (first === undefined) return skip(`the program never printed "ready": nothing to judge (${describeRun(r)})`);
  const sinceStart = r.endedAt - r.startedAt;
  const sinceFirst = r.endedAt - first;
  if (sinceStart < CHECK_TIMEOUT_MS * 0.9)
    return fail(`stopped after ${Math.round(sinceStart)} ms, well before timeoutMs ${CHECK_TIMEOUT_MS} (${describeRun(r)})`);
  if (sinceFirst > CHECK_TIMEOUT_MS + toleranceMs)
    return fail(`stopped ${Math.round(sinceFirst)} ms after the program's first byte: later than timeoutMs ${CHECK_TIMEOUT_MS} + ${toleranceMs} ms`);
  return pass(`stopped ${Math.round(sinceStart)} ms after exec() was called (timeoutMs ${CHECK_TIMEOUT_MS}), ${describeRun(r)}`);
}

export function judgeTimeoutFlag(r: Awaited<ReturnType<typeof timeoutRun>>): CheckOutcome {
  if (r.backstopped || !r.result) return skip('the backend did not stop the program itself: no flag to judge');
  return r.result.timedOut === true
    ? pass('timedOut: true')
    : fail(`the backend stopped the program at its timeout but reported timedOut: ${String(r.result.timedOut)}`);
}

export async function abort(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const n = s.nonce('abort');
    const ctl = new AbortController();
    const stdout = new CheckSink();
    const running = s.run(env, { source: SLEEPER, args: [n, '60'], signal: ctl.signal, backstopMs: 120_000, timeoutMs: 120_000, stdout });
    const bounded = () => within(running, ABORT_BOUND_MS);
    // Until "ready" or the end of the run (the program sleeps 60 s): a slow start under load is waited for, not skipped.
    if (!(await stdout.waitFor('ready', START_BOUND_MS, running))) {
      ctl.abort();
      const r = await bounded();
      return skip(`the program never printed "ready", nothing to abort (${r ? describeRun(r) : 'exec did not return'})`);
    }
    const seenOnHost = (await findProcessesWithCmdline(n)).length > 0;
    const abortedAt = performance.now();
    ctl.abort();
    const r = await bounded();
    if (!r) return fail(`exec() had not returned ${ABORT_BOUND_MS} ms after the abort`);
    if (r.stdout.text().includes('slept')) return fail('the program slept to the end despite the abort');
    const returnedIn = Math.round(r.endedAt - abortedAt);
    // The program must be gone within the same bound as exec()'s return (a SIGKILLed process still has to be
    // scheduled to die, later under load): looked for again until then, never judged on one look at a fixed moment.
    const deadline = Math.max(abortedAt + ABORT_BOUND_MS, r.endedAt + 300);
    await new Promise((res) => setTimeout(res, 300));
    let left = await findProcessesWithCmdline(n);
    while (left.length > 0 && performance.now() < deadline) {
      await new Promise((res) => setTimeout(res, 100));
      left = await findProcessesWithCmdline(n);
    }
    if (left.length > 0)
      return fail(
        `exec() returned ${returnedIn} ms after the abort but ${left.length} process(es) of the program still ran on the host ${Math.round(performance.now() - abortedAt)} ms after it`,
      );
    return pass(
      `exec() returned ${returnedIn} ms after the abort${seenOnHost ? ' and the program, seen on the host before, is gone' : ' (the program is not visible on this host)'}`,
    );
  });
}
