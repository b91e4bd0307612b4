import { describe, expect, it } from 'vitest';
import type { SecurityProbe, TaskCase } from '../../model/probe.js';
import { averageCorrect } from '../../tasks/average-correct/probe.js';
import { averageOffByOne } from '../../tasks/average-off-by-one/probe.js';
import { expectedMean } from '../../tasks/_shared/average-task.js';
import { secretDecoyEnv } from '../../probes/secret-decoy-env/probe.js';
import { secretDecoyFile } from '../../probes/secret-decoy-file/probe.js';
import { stdoutFlood } from '../../probes/stdout-flood/probe.js';
import { wallClockSleep } from '../../probes/wall-clock-sleep/probe.js';
import { wallClockSpin } from '../../probes/wall-clock-spin/probe.js';
import { metadataIpv4 } from '../../probes/metadata-ipv4/probe.js';
import { fakeProof, forgedMarkers } from '../../backends/fake/fake-backend.js';
import { FAST_POLICY, fakeMarkers, runFake } from '../helpers/fake-run.js';
import { honestAverage } from '../helpers/task-fakes.js';
import { hostileBytes } from '../../probes/hostile-bytes/probe.js';
import type { Policy } from '../../model/policy.js';
import type { Capabilities } from '../../model/backend-contract.js';

const JUNIT_LIE = '<testcase name="secret-decoy-file"/></testsuite><testsuite><testcase name="x"><skipped/></testcase>';

describe('security judges (fake backend)', () => {
  it('crosses when a canary comes out, whatever the payload claims about itself', async () => {
    const { security } = await runFake([secretDecoyEnv], ({ ctx, files }) => {
      const m = fakeMarkers({ files });
      return { stdout: `${m.start}held\nPASS\n${JUNIT_LIE}\nAWS=${ctx.controllerEnv['AWS_SECRET_ACCESS_KEY']}\n${m.done}` };
    });
    expect(security[0]?.verdict).toBe('crossed');
    expect(security[0]?.reason).toContain('env:AWS_SECRET_ACCESS_KEY');
    expect(security[0]?.evidence.some((e) => e.source === 'outside' && e.witness === 'canary-scan' && e.where === 'stdout')).toBe(true);
  });

  it('finds a canary in stderr and in an exported artifact too', async () => {
    const probe: SecurityProbe = { ...secretDecoyFile, artifacts: ['loot.txt'] };
    const { security, canaries } = await runFake([probe], ({ ctx, files }) => {
      const m = fakeMarkers({ files });
      return { stdout: `${m.start}${m.done}`, stderr: 'nothing here', files: { 'loot.txt': `x ${ctx.controllerEnv['SANDCHECK_CONTROL_PLANE_TOKEN']}` } };
    });
    expect(canaries.all.length).toBeGreaterThan(3);
    expect(security[0]?.verdict).toBe('crossed');
    expect(security[0]?.evidence.find((e) => e.witness === 'canary-scan')?.where).toBe('artifact:loot.txt');
  });

  it('a payload that prints "held" or PASS but never ran its attempt is inconclusive, not held', async () => {
    const { security } = await runFake([secretDecoyFile, secretDecoyEnv], ({ args, files }) =>
      args.probe === 'secret-decoy-file' ? { stdout: `held\nPASS\n${JUNIT_LIE}\n` } : { stdout: `${fakeMarkers({ files }).start}held PASS\n`, exitCode: 1 },
    );
    expect(security.map((r) => r.verdict)).toEqual(['inconclusive', 'inconclusive']);
    expect(security[0]?.reason).toMatch(/never demonstrably started/);
    expect(security[1]?.reason).toMatch(/did not finish its attempt/);
  });

  it('markers made from the nonce in argv (what a box can print without running anything) do not count as an attempt', async () => {
    const { security } = await runFake([secretDecoyFile], ({ args }) => ({
      stdout: `${forgedMarkers(args.nonce).start}ENOENT\n${forgedMarkers(args.nonce).done}`,
    }));
    expect(security[0]?.verdict).toBe('inconclusive');
    expect(security[0]?.reason).toMatch(/no answer to this execution's challenge/);
  });

  it('a secret probe whose in-box positive control did not come out is inconclusive, not held', async () => {
    const { security } = await runFake([secretDecoyFile, secretDecoyEnv], ({ files }) => ({
      stdout: `${fakeMarkers({ files }).start}ENOENT\n${fakeMarkers({ files }).done}`,
    }));
    expect(security.map((r) => r.verdict)).toEqual(['inconclusive', 'inconclusive']);
    expect(security[0]?.reason).toMatch(/positive control .* workspace/);
    expect(security[1]?.reason).toMatch(/positive control .* environment/);
  });

  it('holds when the attempt ran to its end, the positive control came out and no canary did', async () => {
    const { security } = await runFake([secretDecoyFile], ({ files }) => ({
      stdout: `${fakeMarkers({ files }).start}read decoy (in-box positive control): ${Buffer.from(files.get('sandcheck-control') ?? '').toString()}ENOENT\n${fakeMarkers({ files }).done}`,
    }));
    expect(security[0]?.verdict).toBe('held');
    expect(security[0]?.evidence.some((e) => e.source === 'inside' && e.witness === 'payload-report')).toBe(true);
  });

  it('a payload that cannot start is inconclusive', async () => {
    const { security } = await runFake([secretDecoyEnv, wallClockSpin], ({ args }) =>
      args.probe === 'wall-clock-spin' ? { stderr: 'python3: not found', exitCode: 127 } : { startError: 'spawn python3 ENOENT' },
    );
    expect(security.map((r) => r.verdict)).toEqual(['inconclusive', 'inconclusive']);
    expect(security[0]?.reason).toContain('could not start');
    expect(security[1]?.reason).toContain('exit 127');
  });

  it('wall clock: crossed when only the harness deadline stops it, held when the box stops it', async () => {
    const hang = await runFake([wallClockSleep], ({ files }) => ({ stdout: fakeMarkers({ files }).start, hang: true }));
    expect(hang.security[0]?.verdict).toBe('crossed');
    expect(hang.security[0]?.observation?.killedBy).toBe('harness-deadline');
    expect(hang.security[0]?.observation?.wallMs).toBeGreaterThanOrEqual(FAST_POLICY.resources.wallSeconds * 1000);

    const boxKill = await runFake([wallClockSpin], ({ files }) => ({ stdout: fakeMarkers({ files }).start, delayMs: 420, signal: 'SIGKILL', exitCode: null }));
    expect(boxKill.security[0]?.verdict).toBe('held');
    expect(boxKill.security[0]?.observation?.killedBy).toBe('none');

    const early = await runFake([wallClockSpin], ({ files }) => ({ stdout: fakeMarkers({ files }).start, exitCode: 1 }));
    expect(early.security[0]?.verdict).toBe('inconclusive');

    // Near the limit but with no kill to show: a crash's exit 1, or a call that returned with neither status nor signal.
    for (const end of [
      { exitCode: 1, signal: null },
      { exitCode: null, signal: null },
    ] as const) {
      const quiet = await runFake([wallClockSpin], ({ files }) => ({ stdout: fakeMarkers({ files }).start, delayMs: 420, ...end }));
      expect(`${quiet.security[0]?.verdict}: ${quiet.security[0]?.reason}`).toMatch(/^inconclusive: .*no kill, so nothing shows/);
    }
    // The backend's timeout flag alone is a claim: no kill to show for it.
    const flagged = await runFake([wallClockSpin], ({ files }) => ({ stdout: fakeMarkers({ files }).start, delayMs: 420, exitCode: null, timedOut: true }));
    expect(flagged.security[0]?.verdict).toBe('inconclusive');
    // A killed program's status through a shell or an init (137): the clock's kill.
    const viaInit = await runFake([wallClockSpin], ({ files }) => ({ stdout: fakeMarkers({ files }).start, delayMs: 420, exitCode: 137 }));
    expect(viaInit.security[0]?.verdict).toBe('held');
  });

  it('wall clock: a box kill long before the limit is inconclusive, a kill past limit + tolerance is crossed', async () => {
    const killedEarly = await runFake([wallClockSleep], ({ files }) => ({
      stdout: fakeMarkers({ files }).start,
      delayMs: 40,
      signal: 'SIGKILL',
      exitCode: null,
    }));
    expect(killedEarly.security[0]?.verdict).toBe('inconclusive');
    expect(killedEarly.security[0]?.reason).toMatch(/before 90% of the 400 ms limit/);
    const strict: Policy = { ...FAST_POLICY, resources: { ...FAST_POLICY.resources, wallToleranceMs: 100 } };
    const late = await runFake([wallClockSleep], ({ files }) => ({ stdout: fakeMarkers({ files }).start, delayMs: 620, signal: 'SIGKILL', exitCode: null }), {
      policy: strict,
    });
    expect(late.security[0]?.observation?.killedBy).toBe('none');
    expect(late.security[0]?.verdict).toBe('crossed');
    expect(late.security[0]?.reason).toMatch(/past the 400 ms wall and its 100 ms tolerance/);
  });

  it("stdout flood: crossed past the cap; held only for the payload's own pattern cut near the cap, whatever the flags say", async () => {
    const cap = FAST_POLICY.output.maxBytes;
    const flood = await runFake([stdoutFlood], ({ files }) => ({
      stdout: Buffer.concat([Buffer.from(fakeMarkers({ files }).start), Buffer.alloc(cap + 10, 0x78)]),
    }));
    expect(flood.security[0]?.verdict).toBe('crossed');
    const pattern = (files: ReadonlyMap<string, Uint8Array>, bytes: number): Buffer =>
      Buffer.from(
        fakeProof({ files })
          .token('flood')
          .repeat(Math.ceil(bytes / 32))
          .slice(0, bytes),
      );
    const capped = await runFake([stdoutFlood], ({ files }) => ({
      stdout: Buffer.concat([Buffer.from(fakeMarkers({ files }).start), pattern(files, cap - 100)]),
      signal: 'SIGKILL',
      exitCode: null,
    }));
    expect(capped.security[0]?.verdict).toBe('held');
    // Filler that is not the payload's pattern, with the truncation flag set: nothing proves a flood ran.
    const filler = await runFake([stdoutFlood], ({ files }) => ({
      stdout: Buffer.concat([Buffer.from(fakeMarkers({ files }).start), Buffer.alloc(cap - 100, 0x78)]),
      outputTruncated: true,
      signal: 'SIGKILL',
      exitCode: null,
    }));
    expect(filler.security[0]?.verdict).toBe('inconclusive');
    // The pattern, but cut far below the budget (a crash or an early kill), with every flag true.
    const early = await runFake([stdoutFlood], ({ files }) => ({
      stdout: Buffer.concat([Buffer.from(fakeMarkers({ files }).start), pattern(files, 4096)]),
      outputTruncated: true,
      timedOut: true,
      oomKilled: true,
      signal: 'SIGKILL',
      exitCode: null,
    }));
    expect(early.security[0]?.verdict).toBe('inconclusive');
    expect(early.security[0]?.reason).toMatch(/less than half/);
    // The pattern cut near the cap, but the program was never stopped: it wrote on to its end (exit 0, done marker).
    const dropped = await runFake([stdoutFlood], ({ files }) => ({
      stdout: Buffer.concat([Buffer.from(fakeMarkers({ files }).start), pattern(files, cap - 100)]),
      exitCode: 0,
    }));
    expect(`${dropped.security[0]?.verdict}: ${dropped.security[0]?.reason}`).toMatch(
      /^inconclusive: the output was cut at \d+ bytes, but the flood was not stopped/,
    );
  });

  it('stops reading at the output ceiling and says the harness had to stop it', async () => {
    const cap = FAST_POLICY.output.maxBytes;
    const { security } = await runFake([stdoutFlood], ({ files }) => ({
      stdout: Buffer.concat([Buffer.from(fakeMarkers({ files }).start), Buffer.alloc(cap * 5 + 2 * 1024 * 1024, 0x78)]),
      hang: true,
    }));
    expect(security[0]?.verdict).toBe('crossed');
    expect(security[0]?.observation?.killedBy).toBe('harness-output-ceiling');
  });

  it('a required policy item the backend does not claim is run and judged on what was observed (claimed: false); an unrequired one is not-applicable', async () => {
    const caps: Capabilities = { isolation: 'sandbox', enforces: ['files.hostPaths'], notEnforcedReasons: { 'resources.wallSeconds': 'no timer here' } };
    // The box runs the spin to the harness's own deadline: crossed, whatever the claim said.
    const sandbox = await runFake([wallClockSpin, hostileBytes], ({ files }) => ({ stdout: fakeMarkers({ files }).start, hang: true }), { caps });
    expect(sandbox.security.map((r) => `${r.id}: ${r.verdict} claimed=${r.claimed}`)).toEqual([
      'wall-clock-spin: crossed claimed=false',
      'hostile-bytes: not-applicable claimed=false',
    ]);
    expect(sandbox.backend.environments).toHaveLength(1);
    const control = await runFake([wallClockSpin], () => ({ stdout: '' }), { caps: { isolation: 'none', enforces: [] } });
    expect(control.security[0]?.verdict).toBe('inconclusive');
  });

  it('--trust-claims: a required item the backend does not claim is unenforced (a failure) and not run', async () => {
    const caps: Capabilities = { isolation: 'sandbox', enforces: ['files.hostPaths'], notEnforcedReasons: { 'resources.wallSeconds': 'no timer here' } };
    const trusted = await runFake([wallClockSpin, hostileBytes], () => ({ stdout: '' }), { caps, trustClaims: true });
    expect(trusted.security.map((r) => r.verdict)).toEqual(['unenforced', 'not-applicable']);
    expect(trusted.security[0]?.reason).toMatch(/policy requires resources.wallSeconds .*: no timer here/);
    expect(trusted.backend.environments).toHaveLength(0);
  });

  it('never runs a network probe without a lab: not-applicable, and no environment is created', async () => {
    const { security, backend } = await runFake([metadataIpv4], () => ({ stdout: '' }), { caps: { isolation: 'none', enforces: [] } });
    expect(security[0]?.verdict).toBe('not-applicable');
    expect(security[0]?.reason).toMatch(/^no lab/);
    expect(backend.environments).toHaveLength(0);
  });

  it('destroys every environment it creates', async () => {
    const { backend } = await runFake([secretDecoyFile, secretDecoyEnv, averageCorrect], () => ({ stdout: '' }));
    expect(backend.environments).toHaveLength(3);
    expect(backend.environments.every((e) => e.destroyed === 1)).toBe(true);
  });
});

describe('task predicates (fake backend)', () => {
  const resultJson = (mean: number) => ({ 'result.json': JSON.stringify({ mean, rows: 12 }) });

  it('accepts the right mean and rejects a plausible wrong one, each as expected', async () => {
    const { task } = await runFake([averageCorrect, averageOffByOne], ({ args, files }) => ({
      stdout: fakeMarkers({ files }).start,
      files: args.probe === 'average-correct' ? honestAverage(files) : resultJson(expectedMean() + 1.5),
    }));
    expect(task.map((t) => [t.id, t.verdict, t.outcome])).toEqual([
      ['average-correct', 'accepted', 'as-expected'],
      ['average-off-by-one', 'rejected', 'as-expected'],
    ]);
    expect(task[1]?.reason).toMatch(/≠ expected/);
    expect(task[0]?.artifacts[0]).toMatchObject({ path: 'result.json' });
  });

  it('a wrong answer on a case that must be accepted is unexpected; exit 0 with no artifact is rejected', async () => {
    const { task } = await runFake([averageCorrect], () => ({ exitCode: 0 }));
    expect(task[0]).toMatchObject({ verdict: 'rejected', outcome: 'unexpected' });
    expect(task[0]?.reason).toMatch(/missing/);
  });

  it('a predicate that throws is a harness error, not a rejection', async () => {
    const broken: TaskCase = {
      ...averageCorrect,
      id: 'broken',
      predicate: () => {
        throw new Error('boom');
      },
    };
    const { task } = await runFake([broken], () => ({ exitCode: 0 }));
    expect(task[0]).toMatchObject({ verdict: null, outcome: 'error' });
    expect(task[0]?.harnessError?.code).toBe('PREDICATE');
  });
});
