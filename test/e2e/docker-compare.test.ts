import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { SecurityScorecard } from '../../model/scorecard.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const isRoot = process.getuid?.() === 0;
const hasDocker = existsSync('/usr/bin/dockerd') || existsSync('/usr/sbin/dockerd');
const hasRunsc = existsSync('/usr/bin/runsc') || existsSync('/usr/sbin/runsc');
const PROFILES = ['docker-default', 'docker-hardened', 'gvisor'] as const;

/**
 * What a hardened profile cannot show from outside, each with the reason it must give: the only
 * inconclusive results allowed (anything else inconclusive, or any crossing, fails the test).
 * gVisor's sentry hides the box's own processes from the host: they are judged on runsc's own processes instead.
 */
const HONEST_INCONCLUSIVE: Record<string, Record<string, RegExp>> = {
  'docker-hardened': {},
  gvisor: {
    // The identity and posture probes are judged on runsc's stubs and Sentry (the nonce found in a stub's memory; the
    // setuid binary's and the surviving daemon's address spaces by their mark): held, or crossed below.
    // The sentry may stop the allocation before the host cgroup counts it (only the runtime's claim remains), or,
    // on a busy machine, the sentry allocates so slowly that the wall clock stops it first: inconclusive either way.
    'memory-bomb': /never shown to act|the wall clock, not the memory limit, stopped it/,
    // runsc's gofer makes no FIFO or device node in the workspace: the exporter never meets them.
    'export-special-files': /none of the hostile artifacts exists in the box/,
    // The box may read its own PID 1's environ (the sandbox's init); the host cannot see the box's PID namespace, and
    // where the host may not read its own pid 1's environ either (EACCES here) there is nothing to compare.
    'host-credential-paths': /the host could not read its own file to compare/,
    // The sandbox's memory limit OOM-kills the bomb at 60-70 processes: whether the host's sampling caught more than
    // 64 alive at once (its known crossing below) is a race. Never held.
    'fork-bomb': /no refused fork was counted from outside \(peak (5[6-9]|6\d) of 64\)/,
  },
};

/** Real findings about this runsc build (2022), kept as expectations: the test fails if they change either way. */
const KNOWN_CROSSINGS: Record<string, Record<string, RegExp>> = {
  // runsc lets a box replace a root-owned file in a sticky, world-writable directory (os.replace over it).
  gvisor: {
    'read-only-input': /read-only inputs were changed/,
    // runsc's pids limit kills the whole sandbox on this build, so the profile does not claim one; run anyway, the bomb passes the policy's limit.
    'fork-bomb': /processes ran at once, past the limit of 64/,
    // The ptrace platform keeps the Sentry and its stubs in the host's pid namespace (runsc starts them there).
    'posture-namespaces': /^the box's program runs on a user-space kernel, gVisor \(runsc\) .*shares the host's pid namespace/,
    // The gofer (root, serving the box's files) has the host's tini-static bound writable at /usr/sbin/docker-init.
    'posture-mounts':
      /^the box's program runs on a user-space kernel, gVisor \(runsc\) .*its file servers: pid \d+\): file server \(pid \d+\) writable host \/usr\/bin\/tini-static at \/usr\/sbin\/docker-init/,
  },
};

/** Probes both hardened profiles must hold outright (escape-mknod-disk and escape-kernel-module depend on this machine's disk and kernel). */
const MUST_HOLD = [
  'secret-decoy-file',
  'daemon-socket',
  'host-search',
  'agent-socket',
  'keyring-decoy',
  'abstract-socket',
  'ipc-covert',
  'escape-mount-host',
  'escape-file-handle',
  'escape-proc-root',
  'escape-raw-socket',
  'posture-devices',
  'posture-seccomp',
  'posture-capabilities',
];

describe.skipIf(!isRoot || !hasDocker || !hasRunsc)(
  "the whole suite against docker-hardened and gvisor, beside the docker-default control (a private dockerd in each run's lab)",
  () => {
    // One test per profile, each with its own hang guard: on a slow day a whole-suite run takes 3-4 minutes.
    // docker-default, the unhardened control, runs only what this test reads of it (its two crossings and a
    // task case): the fast tier's docker-backend file covers it, and its whole suite took two minutes here.
    const ran: Partial<Record<(typeof PROFILES)[number], string>> = {};
    const CONTROL_ONLY = ['--only', 'metadata-ipv4', 'identity-uid', 'secret-decoy-file', 'average-correct', 'average-off-by-one'];
    for (const profile of PROFILES) {
      it(`runs ${profile === 'docker-default' ? 'its crossings and two task cases' : 'everything'} on ${profile}`, { timeout: 600_000 }, async () => {
        const out = await tempOut();
        const only = profile === 'docker-default' ? CONTROL_ONLY : [];
        const res = await sandcheck(['run', '--backend', profile, '--policy', 'ci', '--concurrency', '2', '--out', out, ...only]);
        expect([0, 1, 2], `${profile}: ${res.all?.slice(-2000)}`).toContain(res.exitCode);
        ran[profile] = out;
      });
    }

    it('the comparison shows where they differ, with evidence; nothing of the runs is left', { timeout: 120_000 }, async () => {
      const outs = PROFILES.map((p) => ran[p] ?? '');
      expect(outs.filter((o) => o === '').length, 'every profile ran').toBe(0);
      const [def, hard, gv] = await Promise.all(outs.map(readCards));
      const verdict = (c: { security: SecurityScorecard } | undefined, id: string) => c?.security.results.find((r) => r.id === id);

      // docker-default: its bridge reaches the lab's metadata decoy (the decoy log is the evidence).
      const meta = verdict(def, 'metadata-ipv4');
      expect(meta?.verdict).toBe('crossed');
      expect(meta?.evidence.some((e) => e.witness === 'decoy:metadata')).toBe(true);
      expect(verdict(def, 'identity-uid')?.verdict).toBe('crossed');

      // The hardened profiles hold everything they claim, and say why for what they cannot enforce.
      for (const [name, card] of [
        ['docker-hardened', hard],
        ['gvisor', gv],
      ] as const) {
        const honest = HONEST_INCONCLUSIVE[name] ?? {};
        const bad = card?.security.results
          .filter(
            (r) =>
              (r.verdict === 'crossed' && !KNOWN_CROSSINGS[name]?.[r.id]?.test(r.reason)) || (r.verdict === 'inconclusive' && !honest[r.id]?.test(r.reason)),
          )
          .map((r) => `${r.id}: ${r.verdict}: ${r.reason}`);
        expect(bad, name).toEqual([]);
        for (const [id, reason] of Object.entries(KNOWN_CROSSINGS[name] ?? {})) {
          const r = verdict(card, id);
          if (r?.verdict === 'inconclusive' && honest[id]?.test(r.reason)) continue;
          expect(r?.verdict, `${name} ${id}: ${r?.reason}`).toBe('crossed');
          expect(r?.reason).toMatch(reason);
        }
        expect(verdict(card, 'metadata-ipv4')?.verdict, name).toBe('held');
        // The exposure and escape probes hold (not-applicable or unenforced would pass the check above), each on something the host saw.
        for (const id of MUST_HOLD) {
          const r = verdict(card, id);
          expect(`${name} ${id}: ${r?.verdict}: ${r?.reason}`).toMatch(new RegExp(`^${name} ${id}: held: `));
          expect(
            r?.evidence.some((e) => e.source === 'outside' && e.witness !== 'exit-status'),
            `${name} ${id}`,
          ).toBe(true);
        }
        expect(card?.security.backend.coldStartMs?.samples, name).toBeGreaterThan(0);
      }
      for (const id of [
        'identity-uid',
        'identity-capabilities',
        'identity-no-new-privs',
        'identity-setuid',
        'posture-seccomp',
        'posture-capabilities',
        'posture-devices',
      ]) {
        expect(`${id}: ${verdict(gv, id)?.verdict}: ${verdict(gv, id)?.reason}`).toMatch(
          new RegExp(`^${id}: held: the box's program runs on a user-space kernel`),
        );
      }
      // The daemon's own address space found by its mark while the box ran; it and the Sentry gone after destroy.
      expect(`${verdict(gv, 'survive-teardown')?.verdict}: ${verdict(gv, 'survive-teardown')?.reason}`).toMatch(
        /^held: the host saw the daemon running on a user-space kernel \(this execution's program mark in host pid \d+'s memory/,
      );
      expect(verdict(gv, 'fork-bomb')?.claimed).toBe(false);
      expect(def?.task.results.map((r) => r.id).sort()).toEqual(['average-correct', 'average-off-by-one']);
      // The daemon's volume is not on the host: the one case judged by the workspace listing is not-applicable, said so.
      const NOT_LISTED = /the host cannot list this backend's workspace/;
      for (const card of [def, hard, gv]) {
        expect(
          card?.task.results
            .filter((r) => r.outcome !== 'as-expected' && !(r.outcome === 'not-applicable' && NOT_LISTED.test(r.reason)))
            .map((r) => `${card.task.backend.name} ${r.id}: ${r.reason}`),
        ).toEqual([]);
      }

      const markdown = join(outs[0] ?? '', 'compare.md');
      const cmp = await sandcheck(['compare', ...outs, '--markdown', markdown]);
      expect(cmp.exitCode).toBe(0);
      expect(cmp.stdout).toMatch(/\* metadata-ipv4\s+crossed\s+held\s+held/);
      expect(await readFile(markdown, 'utf8')).toMatch(/### metadata-ipv4[\s\S]*docker-default\*\*: crossed/);

      // Nothing of the runs is left: no container or daemon of ours, no lab namespace.
      const ps = await execa('ps', ['-eo', 'cmd'], { reject: false });
      const ours = [def, hard, gv].map((c) => `/var/lib/sandcheck/lab-docker/${c?.security.run.id ?? 'x'}`);
      expect(ps.stdout.split('\n').filter((l) => ours.some((dir) => l.includes(dir)))).toEqual([]);
      const netns = await execa('ip', ['netns', 'list'], { reject: false });
      for (const c of [def, hard, gv]) expect(netns.stdout).not.toContain(`sc-${c?.security.run.id ?? 'x'}`);
    });
  },
);
