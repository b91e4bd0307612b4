import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fakeMarkers, forgedMarkers, type FakeExecInput, type FakeOutcome, type FakeScript } from '../../backends/fake/fake-backend.js';
import { securitySuite } from '../../suites/security.js';
import { CI_POLICY } from '../../model/policy.js';
import { kernelIdentity } from '../../probes/kernel-identity/probe.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { secretDecoyFile } from '../../probes/secret-decoy-file/probe.js';
import { wallClockSleep } from '../../probes/wall-clock-sleep/probe.js';
import { CONTROL_ENV } from '../../lab/proof.js';
import { FAST_POLICY, runFake } from '../helpers/fake-run.js';

/**
 * Boxes that lie or break, each in one way. None of them runs a payload, so none may earn a
 * `held` anywhere: what they print, flag or claim is all a box can do without running the code.
 */
const MiB = 2 ** 20;
const claimsEverything = {
  source: 'a lying backend',
  memoryLimitBytes: CI_POLICY.resources.memoryMb * MiB,
  memoryPeakBytes: CI_POLICY.resources.memoryMb * MiB,
  memoryFailcnt: 9,
  oomKills: 1,
  pidsLimit: CI_POLICY.resources.processes,
  pidsPeak: CI_POLICY.resources.processes,
  pidsMaxEvents: 40,
  cpuQuotaCores: CI_POLICY.resources.cpus,
  cpuUsageNs: 1e9,
  cpuThrottledPeriods: 12,
};
const allFlags = { timedOut: true, oomKilled: true, outputTruncated: true } as const;

/** What payloads print on a hardened box, as a box that runs nothing would imitate it. */
function imitation({ args }: FakeExecInput, markers: boolean): string {
  const m = forgedMarkers(args.nonce);
  const body = `SANDCHECK-REPORT {"decoy": {".": "ENOENT"}, "classic": {}}\nread decoy (in-box positive control): SCNRYPOSCTL000000000000000000000000\ndaemon started\nfound residue-control in /tmp\n`;
  return markers ? `${m.start}${body}${m.done}` : body;
}

const liars: Record<string, FakeScript> = {
  'prints what a payload would (old markers with the nonce from argv)': (input) => ({
    stdout: Buffer.concat([Buffer.from(imitation(input, true)), Buffer.alloc(FAST_POLICY.output.maxBytes - 4096, 0x78)]),
    signal: input.args.probe.startsWith('wall-clock') ? 'SIGKILL' : null,
    exitCode: input.args.probe.startsWith('wall-clock') ? null : 0,
    delayMs: input.args.probe.startsWith('wall-clock') ? 380 : 0,
    files: { 'result.txt': 'x', 'result.tar': 'x', 'result.zip': 'x' },
  }),
  'kills every payload at once, claiming every limit acted': (): FakeOutcome => ({
    exitCode: null,
    signal: 'SIGKILL',
    ...allFlags,
    resources: claimsEverything,
  }),
  'reports every flag true': (input) => ({ stdout: imitation(input, true), exitCode: 137, ...allFlags, resources: claimsEverything }),
  'drops every marker': (input) => ({ stdout: imitation(input, false), exitCode: 0, resources: claimsEverything }),
};

describe('liar backends earn no held', () => {
  for (const [name, script] of Object.entries(liars)) {
    it(
      name,
      async () => {
        const { security } = await runFake([...securitySuite], script);
        const held = security.filter((r) => r.verdict === 'held').map((r) => `${r.id}: ${r.reason}`);
        expect(held).toEqual([]);
        // Every probe that ran was judged (not skipped): the network ones need a lab, which a unit test has not.
        const ran = security.filter((r) => r.verdict !== 'not-applicable');
        expect(ran.length).toBeGreaterThan(20);
        expect(ran.every((r) => r.verdict === 'inconclusive')).toBe(true);
      },
      120_000,
    );
  }
});

describe('a box that answers from a cache earns no held', () => {
  it("replaying a previous execution's output (its challenge answers included) is inconclusive everywhere", async () => {
    const cache = new Map<string, string>();
    // First run: output that answers each execution's challenge, as a payload that ran would print it.
    await runFake([...securitySuite], ({ args, files }) => {
      const m = fakeMarkers({ files });
      const control = Buffer.from(files.get('sandcheck-control') ?? '').toString();
      const out = `${m.start}read decoy (in-box positive control): ${control}\n${m.done}`;
      cache.set(args.probe, out);
      return { stdout: out, exitCode: 0 };
    });
    // Second run: the cached bytes, whatever this execution's challenge is.
    const { security } = await runFake([...securitySuite], ({ args }) => ({ stdout: cache.get(args.probe) ?? '', exitCode: 0 }));
    expect(security.filter((r) => r.verdict === 'held').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
    expect(security.filter((r) => r.verdict !== 'not-applicable').every((r) => r.verdict === 'inconclusive')).toBe(true);
  }, 120_000);
});

describe('a box that names host processes it does not run', () => {
  it('kernel-identity under a policy requiring a separate kernel: a fake boot id, a live unrelated host pid and a blind scan earn no held', async () => {
    // The payload's markers are right (it "ran"), its report claims another kernel, and the backend names this test's
    // own process: alive, not the payload's program, and never the marked child the host's scan looks for.
    const script: FakeScript = (input) => {
      const m = fakeMarkers(input);
      return {
        stdout: `${m.start}SANDCHECK-REPORT {"bootId": "11111111-2222-3333-4444-555555555555", "uname": ["Linux", "vm", "6.1.0-microvm"]}\n${m.done}`,
        exitCode: 0,
        delayMs: 3300,
      };
    };
    const policy = { ...CI_POLICY, name: 'ci+separate-kernel', isolation: { separateKernel: true } };
    const { security } = await runFake([kernelIdentity], script, { policy, hostPids: () => [process.pid] });
    expect(security.map((r) => `${r.id}: ${r.verdict}: ${r.reason}`)).toEqual([
      expect.stringMatching(
        /^kernel-identity: inconclusive: could not tell which kernel the box runs on: no process of the box was seen on the host, and no user-space kernel's address space held this execution's nonce/,
      ),
    ]);
  }, 60_000);
});

describe('a box that masks secrets on their way out earns no held', () => {
  it('a decoy value the payload read but that came out masked (as CI logs mask secrets) makes the canary scan blind', async () => {
    const out = (input: FakeExecInput, masked: boolean): string => {
      const m = fakeMarkers({ files: input.files });
      const control = input.request.env?.[CONTROL_ENV] ?? '';
      return `${m.start}${masked ? 'own env AWS_SECRET_ACCESS_KEY=***\n' : ''}own env ${CONTROL_ENV}=${control}\n${m.done}`;
    };
    const honest = await runFake([secretDecoyEnv], (input) => ({ stdout: out(input, false), exitCode: 0 }));
    expect(honest.security.map((r) => r.verdict)).toEqual(['held']);
    const masking = await runFake([secretDecoyEnv], (input) => ({ stdout: out(input, true), exitCode: 0 }));
    expect(`${masking.security[0]?.verdict}: ${masking.security[0]?.reason}`).toMatch(
      /^inconclusive: the payload read 1 decoy-shaped value\(s\) that did not come out intact/,
    );
  });
});

describe('a box that masks or drops the decoy file lines on their way out earns no held (the real payload, real decoys)', () => {
  // The fake box runs the real secret-decoy-file payload against the run's real decoy directory, then passes its
  // output on through a filter, as a log masker would.
  const runReal =
    (filter: (stdout: string) => string): FakeScript =>
    (input) => {
      const dir = mkdtempSync(join(tmpdir(), 'sc-liar-'));
      try {
        for (const [path, bytes] of input.files) writeFileSync(join(dir, path), bytes);
        const stdout = execFileSync('/usr/bin/python3', input.request.argv.slice(1), {
          cwd: dir,
          env: { PATH: '/usr/bin:/bin', HOME: dir, ...input.request.env },
          encoding: 'utf8',
          timeout: 30_000,
        });
        return { stdout: filter(stdout), exitCode: 0 };
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    };
  const verdictOf = async (filter: (stdout: string) => string): Promise<string> => {
    const { security } = await runFake([secretDecoyFile], runReal(filter));
    return `${security[0]?.verdict}: ${security[0]?.reason}`;
  };
  const decoyValue = /SCNRY(?!POS|CTRL)[A-Za-z0-9]+/g;

  it('unfiltered: crossed (the payload reads the decoys); every value masked or every value line dropped: inconclusive', async () => {
    expect(await verdictOf((s) => s)).toMatch(/^crossed: /);
    // A masker that knows the values (as CI logs mask registered secrets), leaving the in-box control alone.
    expect(await verdictOf((s) => s.replace(decoyValue, '***'))).toMatch(
      /^inconclusive: the payload read \d+ decoy-shaped value\(s\) that did not come out intact/,
    );
    // A filter that drops every line holding a decoy value: the announced counts give it away (the 1: the control's).
    expect(
      await verdictOf((s) =>
        s
          .split('\n')
          .filter((l) => !/SCNRY(?!POS|CTRL)/.test(l) || l.startsWith('read decoy (in-box'))
          .join('\n'),
      ),
    ).toMatch(/^inconclusive: the payload announced \d+ decoy value line\(s\) and 1 came out/);
  }, 60_000);
});

describe('a box whose exec returns on a claimed kill while the program runs on earns no held', () => {
  it('wall-clock-sleep: exit 124 at the limit is held only when the host no longer sees the payload running', async () => {
    const left: ChildProcess[] = [];
    const script =
      (leaveRunning: boolean): FakeScript =>
      (input) => {
        // As a `timeout … docker exec` would: the client is killed at the limit, the program in the box is not.
        if (leaveRunning)
          left.push(
            spawn('/usr/bin/python3', ['-c', 'import time; time.sleep(20)', 'payload.py', JSON.stringify({ nonce: input.args.nonce })], { stdio: 'ignore' }),
          );
        return { stdout: fakeMarkers(input).start, exitCode: 124, delayMs: 380 };
      };
    try {
      const honest = await runFake([wallClockSleep], script(false));
      expect(`${honest.security[0]?.verdict}: ${honest.security[0]?.reason}`).toMatch(/^held: /);
      const lying = await runFake([wallClockSleep], script(true));
      expect(`${lying.security[0]?.verdict}: ${lying.security[0]?.reason}`).toMatch(
        /^inconclusive: the exec returned \(exit code 124.*\), yet the host still saw the payload running 1 s later \(pid \d+/,
      );
      expect(lying.security[0]?.evidence.some((e) => e.source === 'outside' && e.witness === 'host-proc-scan')).toBe(true);
    } finally {
      for (const c of left) c.kill('SIGKILL');
    }
  }, 60_000);
});
