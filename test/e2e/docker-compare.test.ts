import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { SecurityScorecard } from '../../harness/model/scorecard.js';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

const isRoot = process.getuid?.() === 0;
const hasDocker = existsSync('/usr/bin/dockerd') || existsSync('/usr/sbin/dockerd');
const hasRunsc = existsSync('/usr/bin/runsc') || existsSync('/usr/sbin/runsc');
const PROFILES = ['docker-default', 'docker-hardened', 'gvisor'] as const;


describe.skipIf(!isRoot || !hasDocker || !hasRunsc)('the whole suite against docker-default, docker-hardened and gvisor (a private dockerd in each run\'s lab)', () => {
  it('runs everything on each profile; the comparison shows where they differ, with evidence', { timeout: 600_000 }, async () => {
    const outs: string[] = [];
    for (const profile of PROFILES) {
      const out = await tempOut();
      outs.push(out);
      const res = await sandcheck(['run', '--backend', profile, '--policy', 'ci', '--concurrency', '2', '--out', out]);
      expect([0, 1], `${profile}: ${res.all?.slice(-2000)}`).toContain(res.exitCode);
    }
    const [def, hard, gv] = await Promise.all(outs.map(readCards));
    const verdict = (c: { security: SecurityScorecard } | undefined, id: string) => c?.security.results.find((r) => r.id === id);

    // docker-default: its bridge reaches the lab's metadata decoy (the decoy log is the evidence).
    const meta = verdict(def, 'metadata-ipv4');
    expect(meta?.verdict).toBe('crossed');
    expect(meta?.evidence.some((e) => e.witness === 'decoy:metadata')).toBe(true);
    expect(verdict(def, 'identity-uid')?.verdict).toBe('crossed');

    // The hardened profiles hold everything they claim, and say why for what they cannot enforce.
    for (const [name, card] of [['docker-hardened', hard], ['gvisor', gv]] as const) {
      const bad = card?.security.results.filter((r) => r.verdict === 'crossed' || r.verdict === 'inconclusive').map((r) => `${r.id}: ${r.verdict}: ${r.reason}`);
      expect(bad, name).toEqual([]);
      expect(verdict(card, 'metadata-ipv4')?.verdict, name).toBe('held');
      expect(card?.security.backend.coldStartMs?.samples, name).toBeGreaterThan(0);
    }
    expect(verdict(gv, 'fork-bomb')?.verdict).toBe('not-applicable');
    expect(verdict(gv, 'fork-bomb')?.reason).toMatch(/pids/);
    for (const card of [def, hard, gv]) {
      expect(card?.task.results.filter((r) => r.outcome !== 'as-expected').map((r) => `${card.task.backend.name} ${r.id}: ${r.reason}`)).toEqual([]);
    }

    const markdown = join(outs[0] ?? '', 'compare.md');
    const cmp = await sandcheck(['compare', ...outs, '--markdown', markdown]);
    expect(cmp.exitCode).toBe(0);
    expect(cmp.stdout).toMatch(/\* metadata-ipv4\s+crossed\s+held\s+held/);
    expect(await readFile(markdown, 'utf8')).toMatch(/### metadata-ipv4[\s\S]*docker-default\*\*: crossed/);

    // Nothing of the runs is left: no container or daemon of ours, no lab namespace.
    const ps = await execa('ps', ['-eo', 'cmd'], { reject: false });
    expect(ps.stdout.split('\n').filter((l) => l.includes('/var/lib/sandcheck/lab-docker/r'))).toEqual([]);
    const netns = await execa('ip', ['netns', 'list'], { reject: false });
    for (const c of [def, hard, gv]) expect(netns.stdout).not.toContain(`sc-${c?.security.run.id ?? 'x'}`);
  });
});
