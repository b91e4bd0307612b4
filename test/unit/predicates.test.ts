import { describe, expect, it } from 'vitest';
import { PredicateError, compilePredicate, duplicateJsonKey } from '../../probes/_shared/task/predicates.js';
import { runGate } from '../../harness/task/run-gate.js';
import { averagePredicate, expectedMean } from '../../tasks/_shared/average-task.js';
import { chartPredicate, VISIBLE_SERIES } from '../../tasks/png-chart/task.js';
import { obsWith as obs, pngBytes } from '../helpers/task-fakes.js';

const stdoutObs = (text: string, exitCode = 0) => obs({}, { stdoutText: text, exitCode });

describe('completion predicates', () => {
  it("json-schema accepts a valid artifact and rejects an invalid one with ajv's reason", () => {
    const p = compilePredicate({
      type: 'json-schema',
      artifact: 'r.json',
      schema: { type: 'object', required: ['mean'], properties: { mean: { type: 'number' } } },
    });
    expect(p(obs({ 'r.json': '{"mean": 3}' })).accepted).toBe(true);
    expect(p(obs({ 'r.json': '{"mean": "3"}' })).reason).toMatch(/must be number/);
    expect(p(obs({})).reason).toMatch(/missing/);
    expect(p(obs({ 'r.json': 'not json' })).reason).toMatch(/not valid JSON/);
    expect(() => compilePredicate({ type: 'json-schema', artifact: 'r.json', schema: { type: 'nonsense' } })).toThrow(PredicateError);
  });

  it('exact compares a JSON field, a whole document, or raw text', () => {
    expect(compilePredicate({ type: 'exact', artifact: 'r.json', field: 'a.b', value: [1, 2] })(obs({ 'r.json': '{"a":{"b":[1,2]}}' })).accepted).toBe(true);
    expect(compilePredicate({ type: 'exact', artifact: 'r.json', value: { x: 1, y: 2 } })(obs({ 'r.json': '{"y":2,"x":1}' })).accepted).toBe(true);
    expect(compilePredicate({ type: 'exact', artifact: 'r.json', field: 'a', value: 1 })(obs({ 'r.json': '{"a":2}' })).reason).toBe(
      'r.json:a is 2, expected 1',
    );
    expect(compilePredicate({ type: 'exact', artifact: 'stdout', value: 'hi\n' })(stdoutObs('hi\n')).accepted).toBe(true);
    expect(compilePredicate({ type: 'exact', artifact: 'stdout', value: 'hi\n' })(stdoutObs('hi')).accepted).toBe(false);
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
    expect(compilePredicate({ type: 'exit-code', code: 3 })(stdoutObs('', 3)).accepted).toBe(true);
    expect(compilePredicate({ type: 'exit-code', code: 3 })(stdoutObs('', 0)).accepted).toBe(false);
  });

  it('all stops at the first rejection', () => {
    const p = compilePredicate({
      type: 'all',
      of: [
        { type: 'exit-code', code: 0 },
        { type: 'exact', artifact: 'x', value: 'y' },
      ],
    });
    expect(p(obs({ x: 'y' })).accepted).toBe(true);
    expect(p(obs({ x: 'z' })).accepted).toBe(false);
  });
});

describe('CSV goes through an RFC 4180 decoder (csv-parse)', () => {
  const csv = compilePredicate({ type: 'csv-shape', artifact: 'c.csv', rows: 2, columns: ['city', 'note'] });

  it("accepts Python csv.writer output with quoted commas, quotes and CRLF (the comma splitter rejected it: 'row 1 has 3 cells')", () => {
    const r = csv(obs({ 'c.csv': 'city,note\r\n"Paris, FR","said ""hi"""\r\nOslo,plain\r\n' }));
    expect(r.reason).toBe('c.csv has 2 rows × 2 columns as expected');
    expect(r.accepted).toBe(true);
  });

  it("a malformed CSV is a rejection with the decoder's reason, not a throw", () => {
    const r = csv(obs({ 'c.csv': 'city,note\n"Paris, FR,unterminated\n' }));
    expect(r.accepted).toBe(false);
    expect(r.reason).toMatch(/^c\.csv is not valid CSV: .*(Quote|quote)/);
  });
});

describe('PNG goes through a real decoder (pngjs, CRCs checked) plus a content check', () => {
  const png = compilePredicate({ type: 'png', artifact: 'chart.png', width: 20, height: 10 });
  const bars = (x: number, y: number): [number, number, number] => (10 - y <= (x % 7) + 1 ? [40, 90, 200] : [255, 255, 255]);

  it('accepts a well-formed two-colour image of the right size', () => {
    expect(png(obs({ 'chart.png': pngBytes({ width: 20, height: 10, pixel: bars }) }))).toMatchObject({
      accepted: true,
      reason: expect.stringMatching(/20×10 PNG with 2 distinct colours/),
    });
  });

  it("rejects an all-black image with bad CRCs with the decoder's reason (the size check accepted it)", () => {
    const r = png(obs({ 'chart.png': pngBytes({ width: 20, height: 10, pixel: () => [0, 0, 0], badCrc: true }) }));
    expect(r).toMatchObject({ accepted: false });
    expect(r.reason).toMatch(/^chart\.png: not a valid PNG: .*crc/i);
  });

  it('rejects an image whose every row has an invalid filter byte', () => {
    const r = png(obs({ 'chart.png': pngBytes({ width: 20, height: 10, pixel: bars, filter: 9 }) }));
    expect(r).toMatchObject({ accepted: false });
    expect(r.reason).toMatch(/^chart\.png: not a valid PNG: .*filter/i);
  });

  it('an empty header chunk is a rejection (it made the old predicate throw: a harness error)', () => {
    const r = png(obs({ 'chart.png': pngBytes({ width: 20, height: 10, pixel: bars, emptyHeader: true }) }));
    expect(r).toMatchObject({ accepted: false });
    expect(r.reason).toMatch(/^chart\.png: not a valid PNG/);
  });

  it('rejects a valid but blank image, and a wrong size', () => {
    expect(png(obs({ 'chart.png': pngBytes({ width: 20, height: 10, pixel: () => [255, 255, 255] }) })).reason).toBe(
      'chart.png: the image is blank (a single colour)',
    );
    expect(png(obs({ 'chart.png': pngBytes({ width: 21, height: 10, pixel: bars }) })).reason).toBe('chart.png: the image is 21×10, expected 20×10');
  });

  it('png-chart checks the bars against the series: the right chart passes, a chart of another series does not', () => {
    const chart = (series: readonly number[]) =>
      pngBytes({ width: 200, height: 100, pixel: (x, y) => (100 - y <= (series[Math.floor(x / 25)] ?? 0) && x % 25 !== 0 ? [40, 90, 200] : [255, 255, 255]) });
    expect(chartPredicate(obs({ 'chart.png': chart(VISIBLE_SERIES.values) })).accepted).toBe(true);
    const wrong = chartPredicate(obs({ 'chart.png': chart(VISIBLE_SERIES.previous) }));
    expect(wrong.accepted).toBe(false);
    expect(wrong.reason).toBe('bar 1 is 10 px tall, the series value is 12: not a chart of this series');
  });
});

describe('the average result has a closed shape', () => {
  it('rejects the right numbers with extra keys ("status": "partial", errors) — it was accepted', () => {
    const partial = averagePredicate(obs({ 'result.json': JSON.stringify({ mean: expectedMean(), rows: 12, status: 'partial', errors: ['row 7'] }) }));
    expect(partial.accepted).toBe(false);
    expect(partial.reason).toMatch(/does not match its schema: data must NOT have additional properties/);
    expect(averagePredicate(obs({ 'result.json': JSON.stringify({ mean: expectedMean(), rows: 12 }) })).accepted).toBe(true);
  });

  it('a stale result from the inputs is named as copied, whatever its bytes look like', () => {
    const r = averagePredicate(obs({ 'result.json': '{ "rows": 11, "mean": 29.5 }' }));
    expect(r.reason).toMatch(/^result.json is a stale result \(as in input\/previous-result.json/);
  });
});

describe('the run counts', () => {
  const base = obs({}).exec;
  it('passes exit 0 by itself, and the expected code of a case that expects a failure', () => {
    expect(runGate(base)).toBeUndefined();
    expect(runGate({ ...base, exitCode: 3 }, 3)).toBeUndefined();
  });

  it('names the exit status or the stopper', () => {
    expect(runGate({ ...base, exitCode: 1 })?.reason).toBe('the program ended with exit code 1, expected 0');
    expect(runGate({ ...base, exitCode: 0 }, 3)?.reason).toBe('the program ended with exit code 0, expected 3');
    expect(runGate({ ...base, exitCode: null, signal: 'SIGKILL', killedBy: 'harness-deadline' })?.reason).toMatch(
      /did not end by itself: killed by harness-deadline/,
    );
    expect(runGate({ ...base, backendReport: { ...base.backendReport, oomKilled: true } })?.reason).toMatch(/OOM killer/);
    expect(runGate({ ...base, exitCode: null, signal: 'SIGKILL', backendReport: { ...base.backendReport, timedOut: true } })?.reason).toMatch(
      /backend's wall clock/,
    );
    expect(runGate({ ...base, exitCode: null, startError: 'python3: not found' })?.reason).toMatch(/could not start/);
  });
});

describe('strict JSON for task results', () => {
  it('finds a key given twice in one object, at any depth, decoded; not across objects or in values', () => {
    expect(duplicateJsonKey('{"grandTotalCents":0,"grandTotalCents":265535}')).toBe('grandTotalCents');
    expect(duplicateJsonKey('{"a":{"b":1,"b":2}}')).toBe('b');
    expect(duplicateJsonKey('{"a":1,"\\u0061":2}')).toBe('a');
    expect(duplicateJsonKey('[{"a":1},{"a":2}]')).toBeUndefined();
    expect(duplicateJsonKey('{"a":"a","b":["a","a"],"c":{"a":1}}')).toBeUndefined();
    expect(duplicateJsonKey('{"k\\"":1,"k":2}')).toBeUndefined();
    expect(duplicateJsonKey('{"x":{"y":1},"y":2}')).toBeUndefined();
  });
});
