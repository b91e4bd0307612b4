import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { FakeBackend } from '../../backends/fake/fake-backend.js';
import type { SecurityResult } from '../../model/scorecard.js';
import { securityScorecard, taskScorecard } from '../../harness/scorecard-builder.js';
import { withThreatMapping } from '../../reports/threat-mapping.js';
import { validateScorecard } from '../../reports/validate.js';
import { writeScorecards } from '../../reports/write-cards.js';
import { FAST_POLICY } from '../helpers/fake-run.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** The published schemas compiled the way a reader of the cards would: the reference answer. */
function publishedValidator(kind: 'security' | 'task'): (doc: unknown) => boolean {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allErrors: true });
  formats.default(ajv);
  const schema = JSON.parse(readFileSync(join(import.meta.dirname, '..', '..', 'reports', 'schema', `${kind}-scorecard.schema.json`), 'utf8')) as object;
  const validate = ajv.compile(schema);
  return (doc) => validate(doc);
}

/** Every object and every string leaf of a JSON document, as paths. */
function places(doc: Json, at: (string | number)[] = []): { objects: (string | number)[][]; strings: (string | number)[][] } {
  const out = { objects: [] as (string | number)[][], strings: [] as (string | number)[][] };
  if (typeof doc === 'string') out.strings.push(at);
  if (doc === null || typeof doc !== 'object') return out;
  if (!Array.isArray(doc)) out.objects.push(at);
  for (const [k, v] of Object.entries(doc)) {
    const inner = places(v, [...at, Array.isArray(doc) ? Number(k) : k]);
    out.objects.push(...inner.objects);
    out.strings.push(...inner.strings);
  }
  return out;
}

function changedAt(doc: Json, at: (string | number)[], change: (node: Json) => Json): Json {
  const copy = structuredClone(doc);
  if (at.length === 0) return change(copy);
  let node: Json = copy;
  for (const key of at.slice(0, -1)) node = (node as Record<string, Json>)[key] as Json;
  const last = at[at.length - 1] as string;
  (node as Record<string, Json>)[last] = change((node as Record<string, Json>)[last] as Json);
  return copy;
}

const result = (id: string): SecurityResult => ({
  id,
  title: id,
  category: 'files',
  policyItem: 'files.hostPaths',
  severity: 'high',
  verdict: 'held',
  reason: 'r',
  remediation: 'm',
  evidence: [{ source: 'outside', witness: 'canary-scan', detail: 'no canary in the workspace' }],
  durationMs: 1,
});

describe('scorecard validation: zod first, the published schema for anything zod does not take as it is', () => {
  const meta = { runId: 'rvalid0001', startedAt: new Date(0), finishedAt: new Date(1), interrupted: false };
  const cards = {
    security: JSON.parse(
      JSON.stringify(withThreatMapping(securityScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, [result('secret-decoy-file')]))),
    ) as Json,
    task: JSON.parse(JSON.stringify(taskScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, []))) as Json,
  };

  for (const kind of ['security', 'task'] as const) {
    it(`${kind}: the answer is the published schema's for the card, an unknown key in every object, every key left out and a number in every string`, () => {
      const reference = publishedValidator(kind);
      const card = cards[kind];
      expect(reference(card)).toBe(true);
      expect(validateScorecard(kind, card)).toEqual({ valid: true, errors: '' });
      const { objects, strings } = places(card);
      // The walk has reached the nested objects (policy, summary, results, evidence), not only the top.
      expect(objects.length).toBeGreaterThan(kind === 'security' ? 15 : 10);
      const variants = [
        ...objects.map((at) => ({
          what: `unknown key at ${at.join('.') || '(top)'}`,
          doc: changedAt(card, at, (o) => ({ ...(o as Record<string, Json>), zzUnknown: 1 })),
        })),
        ...strings.map((at) => ({ what: `number at ${at.join('.')}`, doc: changedAt(card, at, () => 7) })),
      ];
      // A key left out: zod may fill it in (policy.resources.wallToleranceMs has a default), the published schema requires it.
      const withoutKeys = objects.flatMap((at) =>
        Object.keys(at.reduce<Json>((node, key) => (node as Record<string, Json>)[key] as Json, card) as Record<string, Json>).map((key) => ({
          what: `${[...at, key].join('.')} left out`,
          doc: changedAt(card, at, (o) => Object.fromEntries(Object.entries(o as Record<string, Json>).filter(([k]) => k !== key))),
        })),
      );
      expect(withoutKeys.map((v) => v.what)).toContain('policy.resources.wallToleranceMs left out');
      const disagreements = [...variants, ...withoutKeys].filter((v) => validateScorecard(kind, v.doc).valid !== reference(v.doc)).map((v) => v.what);
      expect(disagreements).toEqual([]);
      // Every variant is invalid, and the errors are the published schema's (Ajv's), not zod's.
      for (const v of variants) expect(validateScorecard(kind, v.doc).valid, v.what).toBe(false);
      expect(validateScorecard(kind, variants[0]?.doc).errors).toContain('additionalProperties');
    });
  }
});

describe('the harness peak memory a run writes into its cards', () => {
  const meta = { runId: 'rpeak00001', startedAt: new Date(0), finishedAt: new Date(1), interrupted: false };
  const build = () => ({
    security: securityScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, [result('secret-decoy-file')]),
    task: taskScorecard(new FakeBackend(() => ({})), FAST_POLICY, meta, []),
  });

  it("is the process's peak as of the JSON write for the run's own cards, and left as built for a merge or a recovery", async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-peak-'));
    try {
      const cards = build();
      for (const card of [cards.security, cards.task]) card.run.harness.maxRssBytes = 1;
      const before = process.resourceUsage().maxRSS * 1024;
      await writeScorecards(dir, cards, { harnessPeakUntilWritten: true });
      for (const name of ['security.json', 'task.json']) {
        const written = JSON.parse(await readFile(join(dir, name), 'utf8')) as { run: { harness: { maxRssBytes: number } } };
        expect(written.run.harness.maxRssBytes, name).toBeGreaterThanOrEqual(before);
        expect(written.run.harness.maxRssBytes, name).toBeLessThanOrEqual(process.resourceUsage().maxRSS * 1024);
      }
      const asBuilt = build();
      for (const card of [asBuilt.security, asBuilt.task]) card.run.harness.maxRssBytes = 1;
      await writeScorecards(dir, asBuilt);
      for (const name of ['security.json', 'task.json']) {
        expect((JSON.parse(await readFile(join(dir, name), 'utf8')) as { run: { harness: { maxRssBytes: number } } }).run.harness.maxRssBytes, name).toBe(1);
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
