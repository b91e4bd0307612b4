/**
 * How a broken or lying box could get `held` on the exposure probes, each way tried: boxes that run nothing,
 * boxes whose payload ran but whose own control did not act, witnesses that could not see. None may be held.
 */
import { describe, expect, it } from 'vitest';
import { fakeMarkers, fakeProof, forgedMarkers, type FakeExecInput, type FakeScript } from '../../backends/fake/fake-backend.js';
import type { ExecObservation } from '../../model/observation.js';
import type { Observation } from '../../model/probe.js';
import { ThreatMappingSchema } from '../../model/probe.js';
import { judgeAbstractSocket } from '../../probes/abstract-socket/probe.js';
import { judgeAgentSocket } from '../../probes/agent-socket/probe.js';
import { judgeHostSearch } from '../../probes/host-search/probe.js';
import { judgeIpcCovert } from '../../probes/ipc-covert/probe.js';
import { judgeKeyring } from '../../probes/keyring-decoy/probe.js';
import { exposureProbes } from '../../suites/exposure.js';
import { runFake } from '../helpers/fake-run.js';
import { attachPosture } from '../../lab/host-process.js';
import { capture, fakeObservation } from '../helpers/observation.js';

type ProcessIdentity = NonNullable<ExecObservation['hostProcesses']>[number];
const N = { nonce: 'n0nce1' };
const control = (files: FakeExecInput['files']): string =>
  Buffer.from(files.get('sandcheck-control') ?? '')
    .toString()
    .trim();
const report = (o: Record<string, unknown>): string => `SANDCHECK-REPORT ${JSON.stringify(o)}\n`;
/** The agent decoy's inode on the host. */
const DECOY_INODE = 4242;
const agent = (obs: Observation) => judgeAgentSocket(obs, { hostDecoys: { processPid: 1, socketPath: '/decoy/docker.sock', agentSocketInode: DECOY_INODE } });

/** What each payload prints on a hardened box where everything worked. */
function honestHeld({ args, files }: FakeExecInput): string {
  const m = fakeMarkers({ files });
  const socketControl = fakeProof({ files }).token('socket-control');
  const body: Record<string, string> = {
    'host-search': `decoy marker in .../work/sandcheck-control: ${control(files)}\ncontrol socket answered: ${socketControl}\n${report({ walk: { priorityComplete: true } })}`,
    'agent-socket': `agent (in-box positive control) holds identities named: ${control(files)}\n${report({ walk: { complete: true } })}`,
    'keyring-decoy': `key (in-box positive control) holds: ${control(files)}\n${report({ control: 'read back' })}`,
    'ipc-covert': `own segment (in-box positive control) holds: ${control(files)}\n`,
  };
  return `${m.start}${body[args.probe] ?? ''}${m.done}`;
}

/** The companion box of a two-box probe (its listener takes a ceiling). */
const isCompanion = (input: FakeExecInput): boolean => String(input.request.argv[2]).includes('"ceilingSeconds"');

describe('exposure probes: mapping', () => {
  it('each names ATT&CK techniques and CWEs in their id formats, and its id once', () => {
    for (const p of exposureProbes) expect(ThreatMappingSchema.safeParse({ attack: p.attack, cwe: p.cwe }).success, p.id).toBe(true);
    expect(new Set(exposureProbes.map((p) => p.id)).size).toBe(exposureProbes.length);
  });
});

describe('exposure probes: a box that runs nothing earns no held', () => {
  const liars: Record<string, FakeScript> = {
    'prints the old markers and a control-looking value': ({ args }) => {
      const m = forgedMarkers(args.nonce);
      return {
        stdout: `${m.start}decoy marker in x: SCNRYPOSCTL000000000000000000000000\ncontrol socket answered: ${args.nonce}\n${report({ walk: { priorityComplete: true }, control: 'read back' })}SANDCHECK-READY ${args.nonce}\n${m.done}`,
        exitCode: 0,
      };
    },
    'kills every payload at once': () => ({ exitCode: null, signal: 'SIGKILL' }),
    'exits 0 silently': () => ({ exitCode: 0 }),
  };
  for (const [name, script] of Object.entries(liars)) {
    it(
      name,
      async () => {
        const { security } = await runFake([...exposureProbes], script);
        expect(security.filter((r) => r.verdict === 'held').map((r) => `${r.id}: ${r.reason}`)).toEqual([]);
        const ran = security.filter((r) => r.verdict !== 'not-applicable');
        expect(ran.length).toBeGreaterThanOrEqual(3);
        expect(ran.every((r) => r.verdict === 'inconclusive')).toBe(true);
      },
      60_000,
    );
  }
});

describe('exposure probes: the payload ran, but its own control did not act', () => {
  it('an honest hardened box is held (the judges can hold), and each missing control turns that into inconclusive', async () => {
    const held = await runFake([...exposureProbes], (input) => {
      if (isCompanion(input)) return { stdout: `SANDCHECK-READY ${input.args.nonce} ${fakeProof(input).token('ready')} made sysv segment\n`, exitCode: 0 };
      return { stdout: honestHeld(input), exitCode: 0 };
    });
    const verdicts = Object.fromEntries(held.security.map((r) => [r.id, r.verdict]));
    expect(verdicts).toMatchObject({ 'host-search': 'held', 'agent-socket': 'held', 'keyring-decoy': 'held', 'ipc-covert': 'held' });

    // A companion that prints a ready line without the answer to its own challenge (it never ran the listener), or one
    // that ran it but made nothing: there was nothing to read, so nothing is held.
    for (const ready of [
      (i: FakeExecInput) => `SANDCHECK-READY ${i.args.nonce} made sysv segment`,
      (i: FakeExecInput) => `SANDCHECK-READY ${i.args.nonce} ${fakeProof(i).token('ready')} made nothing`,
    ]) {
      const r = await runFake([...exposureProbes.filter((p) => p.id === 'ipc-covert')], (input) => ({
        stdout: isCompanion(input) ? `${ready(input)}\n` : honestHeld(input),
        exitCode: 0,
      }));
      expect(r.security.map((x) => `${x.id}: ${x.verdict}`)).toEqual(['ipc-covert: inconclusive']);
    }

    // The same output without the socket control, the walk's coverage, the companion: nothing is held.
    const crippled = await runFake([...exposureProbes], (input) => {
      const text = honestHeld(input)
        .replace(/control socket answered: \S+\n/, '')
        .replace(/"priorityComplete": ?true/, '"priorityComplete": false')
        .replace(/"complete": ?true/, '"complete": false')
        .replace(/key \(in-box positive control\) holds: \S+\n/, '');
      return { stdout: text, exitCode: 0 };
    });
    const after = Object.fromEntries(crippled.security.map((r) => [r.id, r.verdict]));
    expect(after).toMatchObject({
      'host-search': 'inconclusive',
      'agent-socket': 'inconclusive',
      'keyring-decoy': 'inconclusive',
      'ipc-covert': 'inconclusive',
    });
  }, 60_000);

  it('host-search: a walk cut short, or a watched daemon whose log could not be read, is never held', () => {
    const base = { attempted: true, finished: true, positiveControl: { where: 'file' as const, seen: true } };
    const out = (walk: boolean) => capture(`control socket answered: token-socket-control\n${report({ walk: { priorityComplete: walk } })}`);
    expect(judgeHostSearch(fakeObservation({ stdout: out(true) }, base)).verdict).toBe('held');
    expect(judgeHostSearch(fakeObservation({ stdout: out(false) }, base)).verdict).toBe('inconclusive');
    expect(
      judgeHostSearch(fakeObservation({ stdout: out(true) }, { ...base, daemonEvents: [{ daemon: '/x.sock', events: [], error: 'HTTP 500' }] })).verdict,
    ).toBe('inconclusive');
    // The daemon's own log naming the nonce is a crossing, whatever the box printed.
    const logged = judgeHostSearch(
      fakeObservation({ stdout: out(true) }, { ...base, daemonEvents: [{ daemon: '/x.sock', events: ['{"Type":"volume","Action":"create"}'] }] }),
    );
    expect(logged.verdict).toBe('crossed');
    expect(logged.evidence.some((e) => e.source === 'outside' && e.witness === 'daemon-event-log')).toBe(true);
    // A decoy socket's log is a crossing even when the payload never finished.
    expect(judgeHostSearch(fakeObservation({}, { attempted: false, decoyContacts: { 'daemon-socket': 1 } })).verdict).toBe('crossed');
  });

  it('keyring: keyctl refused is held only when the host saw a seccomp filter on the box program', () => {
    const refused = capture(report({ control: 'keyctl refused: Operation not permitted' }));
    const base = { attempted: true, finished: true, positiveControl: { where: 'file' as const, seen: false } };
    expect(judgeKeyring(fakeObservation({ stdout: refused }, base), N).verdict).toBe('inconclusive');
    const proc = (seccomp: number, cmdline = `python3 payload.py {"nonce": "${N.nonce}"}`): ProcessIdentity => {
      const id: ProcessIdentity = {
        pid: 9,
        command: 'python3',
        realUid: 65529,
        effectiveUid: 65529,
        capEff: '0',
        noNewPrivs: 1,
        seccomp,
        peakRssBytes: null,
        hostUserNamespace: true,
      };
      attachPosture(id, {
        pid: 9,
        cmdline,
        sharedNamespaces: {},
        capBnd: '0',
        capAmb: '0',
        mounts: [],
        mountsTruncated: false,
        devNodes: [],
        devEntriesSeen: 0,
      });
      return id;
    };
    expect(judgeKeyring(fakeObservation({ stdout: refused, hostProcesses: [proc(0)] }, base), N).verdict).toBe('inconclusive');
    expect(judgeKeyring(fakeObservation({ stdout: refused, hostProcesses: [proc(2)] }, base), N).verdict).toBe('held');
    // A filtered python3 that is not this execution's payload (another box's, a launcher's): not the cause shown.
    expect(judgeKeyring(fakeObservation({ stdout: refused, hostProcesses: [proc(2, 'python3 /usr/bin/some-agent')] }, base), N).verdict).toBe('inconclusive');
    // The box's word that keyctl was refused, with no filter seen and the control silent: not held.
    expect(judgeKeyring(fakeObservation({ stdout: capture(report({ control: 'read back' })), hostProcesses: [proc(2)] }, base), N).verdict).toBe(
      'inconclusive',
    );
  });

  it('keyring on a user-space kernel: refused is held only on the kernel tied to this execution, never on a filter of the runtime', () => {
    const refused = capture(report({ control: 'keyctl refused: Function not implemented' }));
    const base = { attempted: true, finished: true, positiveControl: { where: 'file' as const, seen: false } };
    const runsc = (pid: number): ProcessIdentity => ({
      pid,
      command: 'runsc',
      realUid: 0,
      effectiveUid: 0,
      capEff: '0',
      noNewPrivs: 1,
      seccomp: 2,
      peakRssBytes: null,
      hostUserNamespace: true,
    });
    const usk = (kernels: ProcessIdentity[]) => ({
      kernel: 'gVisor (runsc)',
      tie: "this execution's nonce in host pid 9's memory",
      addressSpaces: [runsc(9)],
      kernels,
      fileServers: [],
    });
    const held = judgeKeyring(fakeObservation({ stdout: refused, userSpaceKernel: usk([runsc(8)]) }, base), N);
    expect(`${held.verdict}: ${held.reason}`).toMatch(/^held: the box's program runs on a user-space kernel, gVisor \(runsc\) .*refused by that kernel/);
    expect(held.evidence.some((e) => e.source === 'outside' && e.witness === 'host-proc-mem')).toBe(true);
    // The kernel never read: the layer that refused is unknown.
    expect(judgeKeyring(fakeObservation({ stdout: refused, userSpaceKernel: usk([]) }, base), N).verdict).toBe('inconclusive');
    // The tie without a refusal the box reported (nor its own key read back): nothing explains the silence.
    expect(judgeKeyring(fakeObservation({ stdout: capture(report({})), userSpaceKernel: usk([runsc(8)]) }, base), N).verdict).toBe('inconclusive');
    // The runtime's own filtered processes named as the box's (the old rule's cause): no longer held.
    expect(judgeKeyring(fakeObservation({ stdout: refused, hostProcesses: [runsc(8)] }, base), N).verdict).toBe('inconclusive');
  });

  it('socket probes: a contact logged by the decoy crosses; silence is held only after the box reached its own socket', () => {
    const done = { attempted: true, finished: true };
    expect(agent(fakeObservation({}, { ...done, decoyContacts: { 'agent-socket': 1 } })).verdict).toBe('crossed');
    expect(agent(fakeObservation({}, { ...done, positiveControl: { where: 'file', seen: false } })).verdict).toBe('inconclusive');
    // The own agent answered, but the walk was cut short (a crowded mount) or its coverage is not reported: not held.
    const walked = (complete: boolean | undefined) => capture(report(complete === undefined ? {} : { walk: { complete } }));
    const controlSeen = { ...done, positiveControl: { where: 'file' as const, seen: true } };
    expect(agent(fakeObservation({ stdout: walked(true) }, controlSeen)).verdict).toBe('held');
    expect(agent(fakeObservation({ stdout: walked(false) }, controlSeen)).verdict).toBe('inconclusive');
    expect(agent(fakeObservation({ stdout: walked(undefined) }, controlSeen)).verdict).toBe('inconclusive');
    // A walk cut short by a crowded host /tmp, but the decoy seen at its host path and refused there (runsc do): held.
    const atHost = (hostPath: string, hostPathInode: number | null = DECOY_INODE) => capture(report({ hostPath, hostPathInode, walk: { complete: false } }));
    const refused = agent(fakeObservation({ stdout: atHost('socket there, Connection refused (ECONNREFUSED)') }, controlSeen));
    expect(`${refused.verdict}: ${refused.reason}`).toMatch(
      /^held: the box sees the host user's agent socket at its host path, and reaching it failed \(Connection refused/,
    );
    // Refused at another socket the box keeps at that path (another inode, or none reported): says nothing of the decoy.
    const elsewhere = agent(fakeObservation({ stdout: atHost('socket there, Connection refused (ECONNREFUSED)', 99) }, controlSeen));
    expect(`${elsewhere.verdict}: ${elsewhere.evidence.find((e) => e.witness === 'decoy-inode')?.detail ?? ''}`).toMatch(
      /^inconclusive: .*inode 99; the decoy's is 4242/,
    );
    expect(agent(fakeObservation({ stdout: atHost('socket there, Connection refused (ECONNREFUSED)', null) }, controlSeen)).verdict).toBe('inconclusive');
    // Connected there with no contact at the decoy (not the decoy's socket), or not seen there: the walk must be complete.
    expect(agent(fakeObservation({ stdout: atHost('socket there, connected, identities answer 5 bytes') }, controlSeen)).verdict).toBe('inconclusive');
    expect(agent(fakeObservation({ stdout: atHost('not there: No such file or directory (ENOENT)') }, controlSeen)).verdict).toBe('inconclusive');
    expect(judgeAbstractSocket(fakeObservation({}, { ...done, decoyContacts: { 'abstract-socket': 2 } })).verdict).toBe('crossed');
    expect(judgeAbstractSocket(fakeObservation({}, done)).verdict).toBe('inconclusive');
    expect(judgeAbstractSocket(fakeObservation({ stdout: capture('control socket answered: token-socket-control\n') }, done)).verdict).toBe('held');
  });

  it('ipc-covert: without the other box up there was nothing to read; residue the harness removed from the host is shown', () => {
    const done = { attempted: true, finished: true, positiveControl: { where: 'file' as const, seen: true } };
    expect(judgeIpcCovert(fakeObservation({}, { ...done, companionReady: false })).verdict).toBe('inconclusive');
    const held = judgeIpcCovert(
      fakeObservation({}, { ...done, companionReady: true, hostResidue: ['a System V segment was in the host IPC namespace (removed)'] }),
    );
    expect(held.evidence.some((e) => e.witness === 'host-ipc')).toBe(true);
  });
});
