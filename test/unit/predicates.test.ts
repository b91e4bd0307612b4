import { describe, expect, it } from 'vitest';
import type { Observation } from '../../harness/model/probe.js';
import { PredicateError, compilePredicate } from '../../harness/task/predicates.js';

function obs(files: Record<string, string>, stdout = '', exitCode = 0): Observation {
  const cap = (t: string) => ({ bytes: t.length, sha256: '', truncated: false, headBase64: Buffer.from(t).toString('base64'), tailBase64: '', preview: t });
  return {
    exec: {
      exitCode,
      signal: null,
      wallMs: 1,
      harnessDeadlineMs: 1,
      killedBy: 'none',
      backendReport: { timedOut: false, oomKilled: false, outputTruncated: false },
      stdout: cap(stdout),
      stderr: cap(''),
    },
    attempted: true,
    finished: true,
    canaryHits: [],
    artifacts: Object.entries(files).map(([path, c]) => ({ path, kind: 'file' as const, size: c.length, content: Buffer.from(c) })),
    leftovers: [],
    survivors: [],
    socketContacts: 0,
  };
}

describe('completion predicates', () => {
  it('json-schema accepts a valid artifact and rejects an invalid one with ajv\'s reason', () => {
    const p = compilePredicate({ type: 'json-schema', artifact: 'r.json', schema: { type: 'object', required: ['mean'], properties: { mean: { type: 'number' } } } });
    expect(p(obs({ 'r.json': '{"mean": 3}' })).accepted).toBe(true);
    expect(p(obs({ 'r.json': '{"mean": "3"}' })).reason).toMatch(/must be number/);
    expect(p(obs({})).reason).toMatch(/missing/);
    expect(p(obs({ 'r.json': 'not json' })).reason).toMatch(/not valid JSON/);
    expect(() => compilePredicate({ type: 'json-schema', artifact: 'r.json', schema: { type: 'nonsense' } })).toThrow(PredicateError);
  });

  it('exact compares a JSON field, a whole document, or raw text', () => {
    expect(compilePredicate({ type: 'exact', artifact: 'r.json', field: 'a.b', value: [1, 2] })(obs({ 'r.json': '{"a":{"b":[1,2]}}' })).accepted).toBe(true);
    expect(compilePredicate({ type: 'exact', artifact: 'r.json', value: { x: 1, y: 2 } })(obs({ 'r.json': '{"y":2,"x":1}' })).accepted).toBe(true);
    expect(compilePredicate({ type: 'exact', artifact: 'r.json', field: 'a', value: 1 })(obs({ 'r.json': '{"a":2}' })).reason).toBe('r.json:a is 2, expected 1');
    expect(compilePredicate({ type: 'exact', artifact: 'stdout', value: 'hi\n' })(obs({}, 'hi\n')).accepted).toBe(true);
    expect(compilePredicate({ type: 'exact', artifact: 'stdout', value: 'hi\n' })(obs({}, 'hi')).accepted).toBe(false);
  });

  it('tolerance, sha256, csv-shape and exit-code', () => {
    const tol = compilePredicate({ type: 'tolerance', artifact: 'r.json', field: 'v', expected: 1, tolerance: 0.01 });
    expect(tol(obs({ 'r.json': '{"v":1.005}' })).accepted).toBe(true);
    expect(tol(obs({ 'r.json': '{"v":1.1}' })).reason).toMatch(/≠ expected 1/);
    const sha = compilePredicate({ type: 'sha256', artifact: 'a', sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
    expect(sha(obs({ a: 'abc' })).accepted).toBe(true);
    expect(sha(obs({ a: 'abd' })).accepted).toBe(false);
    const csv = compilePredicate({ type: 'csv-shape', artifact: 'c.csv', rows: 2, columns: ['a', 'b'] });
    expect(csv(obs({ 'c.csv': 'a,b\n1,2\n3,4\n' })).accepted).toBe(true);
    expect(csv(obs({ 'c.csv': 'a,b\n1,2\n' })).reason).toMatch(/1 data rows, expected 2/);
    expect(csv(obs({ 'c.csv': 'a,b\n1,2\n3\n' })).reason).toMatch(/row 2 has 1 cells/);
    expect(compilePredicate({ type: 'exit-code', code: 3 })(obs({}, '', 3)).accepted).toBe(true);
    expect(compilePredicate({ type: 'exit-code', code: 3 })(obs({}, '', 0)).accepted).toBe(false);
  });

  it('all stops at the first rejection', () => {
    const p = compilePredicate({ type: 'all', of: [{ type: 'exit-code', code: 0 }, { type: 'exact', artifact: 'x', value: 'y' }] });
    expect(p(obs({ x: 'y' })).accepted).toBe(true);
    expect(p(obs({ x: 'z' })).accepted).toBe(false);
  });
});
