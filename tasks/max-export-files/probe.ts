import type { TaskCase } from '../../model/probe.js';

const name = (i: number): string => `out/part-${String(i).padStart(2, '0')}.txt`;

export const maxExportFiles: TaskCase = {
  kind: 'task',
  id: 'max-export-files',
  title: 'writes exactly the maximum number of export files',
  policyItem: 'exports.limits',
  payload: 'tasks/max-export-files',
  expected: 'accept',
  args: (ctx) => ({ files: ctx.policy.exports.maxFiles }),
  artifacts: (ctx) => Array.from({ length: ctx.policy.exports.maxFiles }, (_, i) => name(i)),
  predicate: (obs, ctx) => {
    const n = ctx.policy.exports.maxFiles;
    const bad = Array.from({ length: n }, (_, i) => i).filter((i) => {
      const got = obs.artifacts.find((a) => a.path === name(i))?.content;
      return !got || Buffer.from(got).toString('utf8') !== `part ${i} of ${n}\n`;
    });
    if (bad.length > 0) return { accepted: false, reason: `${bad.length} of ${n} export files missing or wrong (first: ${name(bad[0] ?? 0)})` };
    return { accepted: true, reason: `all ${n} export files present and correct` };
  },
};
