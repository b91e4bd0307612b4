/**
 * host-credential-paths judged against a stand-in host (a test directory as the host's root), on the fake
 * backend and directly: how a broken or lying box could get `held`, each way tried. Only a box whose payload
 * ran, hashed its own source with this execution's nonce and answered for every path may be held; a hash
 * equal to the host's own computation is a crossing whatever else the box printed.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { fakeProof, forgedMarkers, type FakeExecInput, type FakeScript } from '../../backends/fake/fake-backend.js';
import type { ExecObservation } from '../../model/observation.js';
import { CI_POLICY } from '../../model/policy.js';
import type { Observation, ProbeContext, SecurityProbe } from '../../model/probe.js';
import { makeCanaries } from '../../lab/canaries.js';
import { attachPosture, type ProcessPosture } from '../../lab/host-process.js';
import { attachRootView, lookupInRoot } from '../../lab/root-view.js';
import { CREDENTIAL_PATHS, hostPreconditionFor, judgeCredentialPaths, payloadSource } from '../../probes/host-credential-paths/judge.js';
import { hostCredentialPaths } from '../../probes/host-credential-paths/probe.js';
import { securitySuite } from '../../suites/security.js';
import { runFake } from '../helpers/fake-run.js';
import { capture, fakeObservation } from '../helpers/observation.js';

type ProcessIdentity = NonNullable<ExecObservation['hostProcesses']>[number];

/** The stand-in host: a shadow file, an SSH key, pid 1's environment (random bytes, made here). */
const hostRoot = mkdtempSync(join(tmpdir(), 'sc-credhost-'));
const HOST: Record<string, Buffer> = {
  '/etc/shadow': Buffer.from(`root:$6$${randomBytes(24).toString('base64')}:19000:0:99999:7:::\n`),
  '/root/.ssh/id_ed25519': randomBytes(400),
  '/proc/1/environ': Buffer.from(`PATH=/usr/bin\0SECRET=${randomBytes(8).toString('hex')}\0`),
};
for (const [path, bytes] of Object.entries(HOST)) {
  mkdirSync(join(hostRoot, path, '..'), { recursive: true });
  writeFileSync(join(hostRoot, path), bytes);
}
afterAll(() => rmSync(hostRoot, { recursive: true, force: true }));

const against = (root: string): SecurityProbe => ({
  ...hostCredentialPaths,
  hostPrecondition: () => hostPreconditionFor(root, CREDENTIAL_PATHS),
  judge: (obs, ctx) => judgeCredentialPaths(obs, ctx, { hostRoot: root, paths: CREDENTIAL_PATHS, payloadBytes: payloadSource }),
});
/** The same without the precondition: the judge's own answer when the host has nothing. */
function judgedEvenIfEmpty(root: string): SecurityProbe {
  const { hostPrecondition: _skip, ...rest } = against(root);
  return rest;
}
const probe = against(hostRoot);

type BoxFile = Uint8Array | string;
const hash = (nonce: string, bytes: Uint8Array): string => createHash('sha256').update(nonce).update(bytes).digest('hex');

/** The lines the payload prints, as a box whose files are `box` (bytes, or the errno of the open) would print them. */
function lines(lineToken: string, nonce: string, control: Uint8Array, box: Record<string, BoxFile>, paths: readonly string[] = CREDENTIAL_PATHS): string {
  const one = (path: string, f: BoxFile): string =>
    `SANDCHECK-CRED ${lineToken} ${JSON.stringify(typeof f === 'string' ? { outcome: f, path } : { dev: 1, ino: 2, outcome: 'read', path, sha256: hash(nonce, f), size: f.length })}\n`;
  return [one('(control) payload.py', control), ...paths.map((p) => one(p, box[p] ?? 'ENOENT'))].join('');
}

/** A payload that ran in a box with files `box`: it answers the challenge, hashes with this nonce, finishes. */
function honest(box: Record<string, BoxFile>, tweak: (text: string) => string = (t) => t): FakeScript {
  return ({ files }: FakeExecInput) => {
    const proof = fakeProof({ files });
    const body = lines(proof.token('credential-line'), proof.token('credential-hash'), files.get('payload.py') ?? new Uint8Array(), box);
    return { stdout: tweak(`${proof.attemptLine}\n${body}${proof.doneLine}\n`), exitCode: 0 };
  };
}

const OWN_INIT = Buffer.from('container=bwrap\0');
const HARDENED: Record<string, BoxFile> = { '/proc/1/environ': OWN_INIT };
const HOST_ETC: Record<string, BoxFile> = { '/etc/shadow': HOST['/etc/shadow'] ?? '', '/root/.ssh/id_ed25519': 'EACCES', '/proc/1/environ': OWN_INIT };

async function verdictOf(
  script: FakeScript,
  p: SecurityProbe = probe,
): Promise<{ verdict: string; reason: string; evidence: { source: string; witness: string; detail: string }[] }> {
  const { security } = await runFake([p], script);
  const r = security[0];
  if (!r) throw new Error('no result');
  return r;
}

describe('host-credential-paths: registration', () => {
  it('is a files.hostPaths security probe of the suite, mapped to T1552.001 / T1003.008 and CWE-552 / CWE-200', () => {
    const p = securitySuite.find((s) => s.id === 'host-credential-paths');
    expect(p).toMatchObject({
      category: 'files',
      policyItem: 'files.hostPaths',
      attack: ['T1552.001', 'T1003.008'],
      cwe: ['CWE-552', 'CWE-200'],
      sampleProcesses: true,
    });
    expect(p?.rootPaths).toEqual(CREDENTIAL_PATHS);
  });
});

describe('host-credential-paths: honest boxes', () => {
  it("a box that reads the host file is crossed, with the host's own hash comparison as outside evidence (no hash printed)", async () => {
    const r = await verdictOf(honest(HOST_ETC));
    expect(r.verdict, r.reason).toBe('crossed');
    const e = r.evidence.find((x) => x.source === 'outside' && x.witness === 'host-file-hash');
    expect(e?.detail).toMatch(/^\/etc\/shadow: .* is equal: the box read the host's bytes/);
    expect(JSON.stringify({ reason: r.reason, evidence: r.evidence })).not.toMatch(/[0-9a-f]{64}/);
  });

  it("a hardened box (nothing there, its own pid 1) is held, on the host's own hashes", async () => {
    const r = await verdictOf(honest(HARDENED));
    expect(r.verdict, r.reason).toBe('held');
    expect(
      r.evidence.some(
        (x) => x.source === 'outside' && x.witness === 'host-file-hash' && x.detail.startsWith('/proc/1/environ:') && x.detail.includes('differs'),
      ),
    ).toBe(true);
  });

  it('a host with none of the files, and a box that read none: not-applicable, never held', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'sc-credempty-'));
    try {
      // Before anything runs: the harness can open none of them (also what a harness that is not root gets).
      const early = await verdictOf(honest({}), against(empty));
      expect(early.verdict, early.reason).toBe('not-applicable');
      expect(early.reason).toMatch(/the harness can open none of the 9 classic credential paths on this host/);
      // And the judge on its own, had it run.
      const r = await verdictOf(honest({}), judgedEvenIfEmpty(empty));
      expect(r.verdict, r.reason).toBe('not-applicable');
      expect(r.reason).toMatch(/none of the 9 classic credential paths has a file on this host/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});

describe('host-credential-paths: a broken or lying box earns no held', () => {
  const liars: Record<string, FakeScript> = {
    'prints errno lines without running (old markers, tokens from argv)': ({ args }) => {
      const m = forgedMarkers(args.nonce);
      return { stdout: `${m.start}${lines(args.nonce, args.nonce, Buffer.from('x'), {})}${m.done}`, exitCode: 0 };
    },
    "answers the challenge but hashes with another nonce (argv's) while reading the host's files": ({ files, args }) => {
      const proof = fakeProof({ files });
      const body = lines(proof.token('credential-line'), args.nonce, files.get('payload.py') ?? new Uint8Array(), HOST_ETC);
      return { stdout: `${proof.attemptLine}\n${body}${proof.doneLine}\n`, exitCode: 0 };
    },
    'answers the challenge but prints plain sha256 of what it read (no nonce)': ({ files }) => {
      const proof = fakeProof({ files });
      const body = lines(proof.token('credential-line'), '', files.get('payload.py') ?? new Uint8Array(), HARDENED);
      return { stdout: `${proof.attemptLine}\n${body}${proof.doneLine}\n`, exitCode: 0 };
    },
    'its lines signed with another kind of token (the attempt token)': ({ files }) => {
      const proof = fakeProof({ files });
      const body = lines(proof.token('attempt'), proof.token('credential-hash'), files.get('payload.py') ?? new Uint8Array(), HARDENED);
      return { stdout: `${proof.attemptLine}\n${body}${proof.doneLine}\n`, exitCode: 0 };
    },
    'stops before it finished (no done line)': honest(HARDENED, (t) => t.replace(/SANDCHECK-DONE \S+\n/, '')),
    'leaves one path unanswered': honest(HARDENED, (t) => t.replace(/SANDCHECK-CRED \S+ \{[^\n]*"\/root\/\.kube\/config"[^\n]*\n/, '')),
    'gives two different answers for one path': honest(HARDENED, (t) =>
      t.replace(/(SANDCHECK-CRED (\S+) \{[^\n]*"\/etc\/shadow"[^\n]*\n)/, '$1SANDCHECK-CRED $2 {"outcome": "EACCES", "path": "/etc/shadow"}\n'),
    ),
    'its control read failed': honest(HARDENED, (t) =>
      t.replace(/\{[^\n]*"\(control\) payload\.py"[^\n]*\}/, '{"outcome": "EACCES", "path": "(control) payload.py"}'),
    ),
    'exits 0 silently': () => ({ exitCode: 0 }),
    'is killed at once': () => ({ exitCode: null, signal: 'SIGKILL' }),
  };
  for (const [name, script] of Object.entries(liars)) {
    it(name, async () => {
      const r = await verdictOf(script);
      expect(r.verdict, r.reason).toBe('inconclusive');
    });
  }

  it("replaying an old run's output (a crossing one, and a held one) is inconclusive", async () => {
    for (const box of [HOST_ETC, HARDENED]) {
      let cached = '';
      await verdictOf((input) => {
        const out = honest(box)(input);
        cached = String(out.stdout);
        return out;
      });
      const r = await verdictOf(() => ({ stdout: cached, exitCode: 0 }));
      expect(r.verdict, r.reason).toBe('inconclusive');
    }
  });

  it("a hash equal to the host's is a crossing even when the payload did not finish or printed other answers too", async () => {
    expect((await verdictOf(honest(HOST_ETC, (t) => t.replace(/SANDCHECK-DONE \S+\n/, '')))).verdict).toBe('crossed');
    const twice = honest(HOST_ETC, (t) =>
      t.replace(/(SANDCHECK-CRED (\S+) \{[^\n]*"\/etc\/shadow"[^\n]*\n)/, 'SANDCHECK-CRED $2 {"outcome": "ENOENT", "path": "/etc/shadow"}\n$1'),
    );
    expect((await verdictOf(twice)).verdict).toBe('crossed');
  });

  it("an empty host file proves nothing: its nonce-bound hash is the nonce's own, so a match is no crossing", async () => {
    const root = mkdtempSync(join(tmpdir(), 'sc-credzero-'));
    try {
      mkdirSync(join(root, 'etc'));
      writeFileSync(join(root, 'etc/gshadow'), '');
      const r = await verdictOf(honest({ '/etc/gshadow': Buffer.alloc(0) }), judgedEvenIfEmpty(root));
      expect(r.verdict, r.reason).toBe('not-applicable');
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe("host-credential-paths: what the host saw in the box's root decides contradictions", () => {
  const ctx: ProbeContext = {
    policy: CI_POLICY,
    runId: 'rcred0001',
    nonce: 'n0nce',
    canaries: makeCanaries(),
    decoyDir: '/tmp/sandcheck-rcred0001-ab/decoys',
    hostDecoys: { processPid: 1, socketPath: '/tmp/sandcheck-rcred0001-ab/decoy.sock' },
    hostProbeDir: '/tmp/sandcheck-rcred0001-ab/probe-n0nce',
  };
  const identity = (): ProcessIdentity => ({
    pid: 42,
    command: 'python3',
    realUid: 0,
    effectiveUid: 0,
    capEff: '0',
    noNewPrivs: 1,
    seccomp: 2,
    peakRssBytes: null,
    hostUserNamespace: false,
  });
  const cmdline = 'python3 payload.py {"nonce": "n0nce"}';
  /** The host's lookups in the box's root: the stand-in host's own inode at each path in `same`, another inode elsewhere. */
  async function observed(
    box: Record<string, BoxFile>,
    same: readonly string[],
    opts: { control?: Uint8Array; cmd?: string; ownPidNs?: boolean; hashNonce?: string } = {},
  ): Promise<Observation> {
    const id = identity();
    const entries = await Promise.all(
      CREDENTIAL_PATHS.map(async (path) =>
        same.includes(path) ? lookupInRoot(hostRoot, path) : { path, dev: 7, ino: 1000 + path.length, type: 'file' as const },
      ),
    );
    attachRootView(id, { pid: 42, cmdline: opts.cmd ?? cmdline, entries });
    if (opts.ownPidNs !== undefined)
      attachPosture(id, {
        pid: 42,
        cmdline: opts.cmd ?? cmdline,
        sharedNamespaces: { pid: !opts.ownPidNs },
        capBnd: '0',
        capAmb: '0',
        mounts: [],
        mountsTruncated: false,
        devNodes: [],
        devEntriesSeen: 0,
      } satisfies ProcessPosture);
    const text = `${lines('token-credential-line', opts.hashNonce ?? 'token-credential-hash', opts.control ?? payloadSource(), box)}`;
    return fakeObservation({ stdout: capture(text), hostProcesses: [id], hostProcessCountMax: 1 }, { finished: true });
  }
  const judge = (o: Observation) => judgeCredentialPaths(o, ctx, { hostRoot, paths: CREDENTIAL_PATHS, payloadBytes: payloadSource });

  it("identical bytes on another inode (the box's own copy of the same file) are no crossing", async () => {
    const j = judge(await observed({ ...HARDENED, '/etc/shadow': HOST['/etc/shadow'] ?? '' }, []));
    expect(j.verdict, j.reason).toBe('held');
    expect(j.reason).toMatch(/\/etc\/shadow: the box's own copy \(identical bytes, another inode\)/);
  });

  it("the same bytes on the host's own inode are a crossing, the lookup on record", async () => {
    const j = judge(await observed(HOST_ETC, ['/etc/shadow']));
    expect(j.verdict, j.reason).toBe('crossed');
    expect(j.evidence.some((e) => e.witness === 'host-file-hash' && e.detail.includes("in the box's root the host's own file"))).toBe(true);
  });

  it('a hash that differs while the host saw its own inode there (a torn read or a lying box) is inconclusive', async () => {
    const j = judge(await observed({ ...HARDENED, '/etc/shadow': Buffer.from('root:x:1:::\n') }, ['/etc/shadow']));
    expect(j.verdict, j.reason).toBe('inconclusive');
    expect(j.reason).toMatch(/the host saw its own file at this path in the box's root, yet the box's hash differs/);
  });

  it('"no such file" where the host sees its own file in the box\'s root is inconclusive; a refusal (EACCES) of it is held', async () => {
    const j = judge(await observed({ ...HARDENED, '/etc/shadow': 'ENOENT' }, ['/etc/shadow']));
    expect(j.verdict, j.reason).toBe('inconclusive');
    expect(j.reason).toMatch(/\/etc\/shadow: the box answered ENOENT, yet the host saw its own file/);
    const refused = judge(await observed({ ...HARDENED, '/etc/shadow': 'EACCES' }, ['/etc/shadow']));
    expect(refused.verdict, refused.reason).toBe('held');
    expect(refused.evidence.some((e) => e.witness === 'host-proc-root' && e.detail.startsWith("/etc/shadow in the box's root: the host's own file"))).toBe(
      true,
    );
  });

  it("a read the host cannot find in the box's root is inconclusive", async () => {
    const o = await observed({ ...HARDENED, '/root/.ssh/id_ed25519': Buffer.from('other key') }, []);
    const view = o.exec.hostProcesses?.[0];
    if (view) attachRootView(view, { pid: 42, cmdline, entries: CREDENTIAL_PATHS.map((path) => ({ path, error: 'ENOENT' })) });
    expect(judge(o).verdict).toBe('inconclusive');
  });

  it('a control hashed with another nonce makes every differing hash worthless: inconclusive', async () => {
    expect(judge(await observed(HARDENED, [], { hashNonce: 'another-nonce' })).verdict).toBe('inconclusive');
    expect(judge(await observed(HARDENED, [], { control: Buffer.from('not the payload') })).verdict).toBe('inconclusive');
  });

  it("pid 1's environment: judged by the host's view of the PID namespace when the host cannot hash its own pid 1", async () => {
    const noEnviron = mkdtempSync(join(tmpdir(), 'sc-credproc-'));
    try {
      // The host's own /proc/1/environ exists but cannot be hashed (a directory here; EACCES on a host without ptrace rights over its pid 1).
      mkdirSync(join(noEnviron, 'proc/1/environ'), { recursive: true });
      const judgeAt = (o: Observation) => judgeCredentialPaths(o, ctx, { hostRoot: noEnviron, paths: CREDENTIAL_PATHS, payloadBytes: payloadSource });
      expect(judgeAt(await observed(HARDENED, [], { ownPidNs: true })).verdict).toBe('held');
      // Inconclusive, and the reason says which view the host lacked (a blind sampler reads differently from a shared namespace).
      const shared = judgeAt(await observed(HARDENED, [], { ownPidNs: false }));
      expect(shared.verdict).toBe('inconclusive');
      expect(shared.reason).toMatch(
        /could not read its own file to compare \(EISDIR\); the host saw the payload's process but not a PID namespace of its own$/,
      );
      // A posture of some other process (not carrying this execution's nonce) decides nothing.
      const other = judgeAt(await observed(HARDENED, [], { ownPidNs: true, cmd: 'python3 other.py' }));
      expect(other.verdict).toBe('inconclusive');
      expect(other.reason).toMatch(/; the host never saw the payload's own process while it ran$/);
    } finally {
      rmSync(noEnviron, { recursive: true, force: true });
    }
  });
});

describe("lookupInRoot: symlinks resolve inside the root, never in the host's tree", () => {
  it("an absolute link in the box's root is followed from that root", async () => {
    const root = mkdtempSync(join(tmpdir(), 'sc-credroot-'));
    try {
      mkdirSync(join(root, 'real'), { recursive: true });
      writeFileSync(join(root, 'real/shadow'), 'x');
      mkdirSync(join(root, 'etc'));
      symlinkSync('/real/shadow', join(root, 'etc/shadow'));
      symlinkSync('/etc', join(root, 'hostetc'));
      const st = statSync(join(root, 'real/shadow'));
      expect(await lookupInRoot(root, '/etc/shadow')).toEqual({ path: '/etc/shadow', dev: st.dev, ino: st.ino, type: 'file' });
      // /hostetc -> /etc resolves to the root's own etc (which has no passwd), not the host's /etc/passwd.
      expect(await lookupInRoot(root, '/hostetc/passwd')).toEqual({ path: '/hostetc/passwd', error: 'ENOENT' });
      expect((await lookupInRoot(root, '/../../etc/shadow')).ino).toBe(st.ino);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
