import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';
import { CLI, readCards, tempOut } from '../helpers/cli.js';

/**
 * The `sandcheck` command lines of examples/ci/, exactly as the workflows write them (read from the files, so a change
 * there is tested here), run in a project laid out as the workflows assume: sandbox-policy.yaml, sandbox.yaml and
 * .sandcheck/waivers.yaml. The head's sandbox.yaml is weakened (the box shares the host network): the gate must fail.
 */

const EXAMPLES = join(packageRoot(), 'examples', 'ci');

function strings(node: unknown): string[] {
  if (typeof node === 'string') return [node];
  if (Array.isArray(node)) return node.flatMap(strings);
  if (node !== null && typeof node === 'object') return Object.values(node).flatMap(strings);
  return [];
}

/** Splits a shell word list (double and single quotes, backslash-newline); enough for the workflows' lines. */
function words(text: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const m of text.replace(/\\\n/g, ' ').matchAll(re)) out.push(m[1] ?? m[2] ?? m[3] ?? '');
  return out;
}

/** Every `npx sandcheck …` of a workflow file: its arguments, up to a `||` or the end of the command. */
async function sandcheckLines(file: string): Promise<string[][]> {
  const doc: unknown = parse(await readFile(join(EXAMPLES, file), 'utf8'));
  const lines: string[][] = [];
  for (const script of strings(doc)) {
    for (const chunk of script.split(/\n(?=\S)/)) {
      const at = chunk.indexOf('npx sandcheck ');
      if (at < 0) continue;
      const args = words(chunk.slice(at + 'npx sandcheck '.length).split('||')[0] ?? '');
      lines.push(args);
    }
  }
  return lines;
}

describe('the CI examples as written', () => {
  it('the GitHub Actions and GitLab command lines, run on a weakened head: the run fails, and the gate fails against the base', async () => {
    const github = await sandcheckLines('github-actions.yml');
    const gitlab = await sandcheckLines('gitlab-ci.yml');
    const runs = [...github, ...gitlab].filter((a) => a[0] === 'run');
    const compares = [...github, ...gitlab].filter((a) => a[0] === 'compare');
    // Each workflow runs the suite on the head and on the base, and gates the two.
    expect(github.filter((a) => a[0] === 'run').length).toBe(2);
    expect(gitlab.filter((a) => a[0] === 'run').length).toBe(3);
    expect(compares.length).toBe(2);

    const project = await tempOut();
    const base = join(project, 'base-checkout');
    await mkdir(join(project, '.sandcheck'), { recursive: true });
    await mkdir(base);
    await copyFile(join(EXAMPLES, 'waivers.yaml'), join(project, '.sandcheck', 'waivers.yaml'));
    for (const dir of [project, base]) await writeFile(join(dir, 'sandbox-policy.yaml'), 'extends: ci\n');
    await writeFile(join(base, 'sandbox.yaml'), '# the hardened defaults\n{}\n');
    await writeFile(join(project, 'sandbox.yaml'), '# a policy change that lets the box share the host network\nshareNetwork: true\n');

    const at = (args: readonly string[]): string[] => args.map((a) => a.replaceAll('/tmp/base', base));
    const seen = new Map<string, number>();
    for (const args of runs.map(at)) {
      const key = args.join(' ');
      if (seen.has(key)) continue;
      const r = await execa(process.execPath, [CLI, ...args], { cwd: project, reject: false, all: true, env: { CI: 'true', GITHUB_STEP_SUMMARY: '' } });
      seen.set(key, r.exitCode ?? -1);
      const out = args[args.indexOf('--out') + 1] ?? '';
      if (out.endsWith('head')) {
        expect(r.exitCode, `${key}\n${r.all}`).toBe(1);
        const cards = await readCards(join(project, out));
        expect(cards.security.results.find((x) => x.id === 'metadata-ipv4')?.verdict, key).toBe('crossed');
        expect(cards.security.environment?.backendConfig?.options).toMatchObject({ shareNetwork: true });
      } else {
        expect(r.exitCode, `${key}\n${r.all}`).toBeLessThanOrEqual(2);
        expect(
          (await readCards(join(project, out))).security.results.filter((x) => x.verdict === 'crossed').map((x) => x.id),
          key,
        ).toEqual([]);
      }
    }
    for (const args of compares.map(at)) {
      const r = await execa(process.execPath, [CLI, ...args], { cwd: project, reject: false, all: true, env: { CI: 'true', GITHUB_STEP_SUMMARY: '' } });
      expect(r.exitCode, `${args.join(' ')}\n${r.all}`).toBe(1);
      expect(r.all).toMatch(/metadata-ipv4/);
    }
  }, 600_000);
});
