import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chown, lstat, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCards, sandcheck, tempOut } from '../helpers/cli.js';

/**
 * The bad-input corpus: what a user hands sandcheck (policy, backend config, task cases, waivers, --out) is never
 * misread, never turned against them, and never echoed. Each row asserts the exit code, that the message names the
 * problem without printing the file's content, that nothing was written outside --out, and that a refused command
 * created nothing.
 */

const CANARY = `SANDCHECK-DECOY-${randomBytes(8).toString('hex')}`;
/** Looks like /etc/shadow, holds only a canary: what a symlink to a secret would feed sandcheck. */
const SECRET = `root:$y$j9T$${CANARY}:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n`;

let root: string;
let secret: string;
const mounts: string[] = [];

beforeAll(async () => {
  root = await tempOut();
  secret = join(root, 'shadow');
  await writeFile(secret, SECRET, { mode: 0o600 });
});

afterAll(() => {
  for (const m of mounts) execFileSync('umount', ['-l', m]);
});

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(
    () => true,
    () => false,
  );
}

/** A fresh folder for one row, and the --out inside it that a refused command must not create. */
async function row(name: string): Promise<{ dir: string; out: string }> {
  const dir = join(root, name);
  await mkdir(dir);
  return { dir, out: join(dir, 'out') };
}

function refused(r: { exitCode?: number | undefined; all?: string | undefined }, mentions: RegExp): void {
  expect(r.exitCode, r.all).toBe(3);
  expect(r.all).toMatch(mentions);
  expect(r.all).not.toContain(CANARY);
  expect(r.all).not.toContain('daemon:*');
  // One message, no stack trace.
  expect(r.all).not.toMatch(/\n\s+at /);
}

/** Every kind of bad file at one place of the command line. */
async function badFiles(dir: string): Promise<{ kind: string; path: string; mentions: RegExp }[]> {
  const link = join(dir, 'link.yaml');
  await symlink(secret, link);
  const fifo = join(dir, 'fifo.yaml');
  execFileSync('mkfifo', [fifo]);
  const huge = join(dir, 'huge.yaml');
  await writeFile(huge, `a: "${'x'.repeat(2 * 1024 * 1024)}"\n`);
  const binary = join(dir, 'binary.yaml');
  await writeFile(binary, Buffer.from([0x61, 0x3a, 0x20, 0x00, 0xff, 0xfe, 0x0a]));
  const json = join(dir, 'secret.json');
  await writeFile(json, SECRET);
  const sub = join(dir, 'adir.yaml');
  await mkdir(sub);
  return [
    { kind: 'a symlink to a secret', path: link, mentions: /link\.yaml/ },
    { kind: 'a FIFO', path: fifo, mentions: /fifo\.yaml: is a FIFO|fifo\.yaml.*FIFO/ },
    { kind: 'a device', path: '/dev/zero', mentions: /\/dev\/zero.*character device/ },
    { kind: 'a directory', path: sub, mentions: /adir\.yaml.*directory/ },
    { kind: 'huge', path: huge, mentions: /huge\.yaml.*limit is 1048576/ },
    { kind: 'binary', path: binary, mentions: /binary\.yaml.*(binary|UTF-8)/ },
    { kind: 'not JSON, the secret behind a .json name', path: json, mentions: /secret\.json: not valid JSON/ },
    { kind: 'missing', path: join(dir, 'missing.yaml'), mentions: /missing\.yaml/ },
  ];
}

describe('the bad-input corpus', () => {
  it('a policy, backend config or waiver file that is a symlink to a secret, a FIFO, a device, a directory, huge, binary or missing: exit 3, named, never echoed, nothing created', async () => {
    const { dir, out } = await row('files');
    const files = await badFiles(dir);
    for (const f of files) {
      for (const [flag, args] of [
        ['--policy', ['run', '--backend', 'process', '--only', 'identity-uid', '--policy', f.path, '--out', out]],
        ['--backend-config', ['run', '--backend', 'process', '--only', 'identity-uid', '--policy', 'ci', '--backend-config', f.path, '--out', out]],
        ['--backend-config (default backend)', ['run', '--only', 'identity-uid', '--policy', 'ci', '--backend-config', f.path, '--out', out]],
        ['--waivers', ['run', '--backend', 'process', '--only', 'identity-uid', '--policy', 'ci', '--waivers', f.path, '--out', out]],
      ] as const) {
        const r = await sandcheck(args);
        expect.soft(r.exitCode, `${flag} ${f.kind}: ${r.all}`).toBe(3);
        expect.soft(r.all, `${flag} ${f.kind}`).toMatch(f.mentions);
        expect.soft(r.all, `${flag} ${f.kind}`).not.toContain(CANARY);
        expect.soft(await exists(out), `${flag} ${f.kind} created --out`).toBe(false);
      }
    }
  }, 240_000);

  it('a task case folder: a case file that is a symlink to a secret, paths with .., absolute paths, a symlink inside that leads out: exit 3 before anything runs, nothing put in a box, nothing echoed', async () => {
    const { dir, out } = await row('tasks');
    const outside = join(dir, 'outside.py');
    await writeFile(outside, `print("${CANARY}")\n`);
    const cases: { name: string; files: Record<string, string>; links?: Record<string, string>; mentions: RegExp }[] = [
      { name: 'case file is a symlink to a secret', files: {}, links: { 'evil.yaml': secret }, mentions: /evil\.yaml: leads out of the case folder/ },
      { name: 'programFile ../', files: { 'c.yaml': caseYaml('programFile: ../outside.py') }, mentions: /programFile: expected a path without "\.\."/ },
      { name: 'programFile absolute', files: { 'c.yaml': caseYaml(`programFile: ${outside}`) }, mentions: /programFile: expected a relative path/ },
      {
        name: 'inputs file ../',
        files: { 'c.yaml': caseYaml('program: "print(1)"', '  - {path: in.txt, file: ../outside.py}') },
        mentions: /inputs\.0\.file: expected a path without "\.\."/,
      },
      {
        name: 'inputs path ../../../etc',
        files: { 'c.yaml': caseYaml('program: "print(1)"', '  - {path: ../../../etc/x, content: hi}') },
        mentions: /inputs\.0\.path: expected a path without "\.\."/,
      },
      {
        name: 'artifact path absolute',
        files: { 'c.yaml': `${caseYaml('program: "print(1)"')}artifacts: [/etc/passwd]\n` },
        mentions: /artifacts\.0: expected a relative path/,
      },
      {
        name: 'programFile a symlink that leads out',
        files: { 'c.yaml': caseYaml('programFile: p.py') },
        links: { 'p.py': outside },
        mentions: /programFile p\.py: leads out of the case folder/,
      },
      {
        name: 'inputs file a symlink to a secret',
        files: { 'c.yaml': caseYaml('program: "print(1)"', '  - {path: in.txt, file: data.csv}') },
        links: { 'data.csv': secret },
        mentions: /file data\.csv: leads out of the case folder/,
      },
      { name: 'a case file that is the secret itself', files: { 'c.yaml': SECRET }, mentions: /c\.yaml: \(root\): 2 unknown keys that are not names/ },
    ];
    for (const c of cases) {
      const folder = join(dir, c.name.replace(/[^a-z0-9]+/gi, '-'));
      await mkdir(folder);
      for (const [name, text] of Object.entries(c.files)) await writeFile(join(folder, name), text);
      for (const [name, target] of Object.entries(c.links ?? {})) await symlink(target, join(folder, name));
      const r = await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--tasks', folder, '--out', out]);
      expect.soft(r.exitCode, `${c.name}: ${r.all}`).toBe(3);
      expect.soft(r.all, c.name).toMatch(c.mentions);
      expect.soft(r.all, c.name).not.toContain(CANARY);
      expect.soft(await exists(out), `${c.name} created --out`).toBe(false);
    }
  }, 120_000);

  it('--out through a symlink at any level, over a report that is a symlink or not the caller’s, or into a full disk: exit 3 before anything runs, nothing written through the link', async () => {
    const { dir } = await row('out');
    const victim = join(dir, 'victim');
    await mkdir(victim);
    await symlink(victim, join(dir, 'link'));
    for (const out of [join(dir, 'link'), join(dir, 'link', 'sub'), join(dir, 'link', 'a', 'b')]) {
      const r = await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', out]);
      refused(r, /is a symlink: reports are never written through one/);
    }
    expect(await readdir(victim)).toEqual([]);

    const planted = join(dir, 'planted');
    await mkdir(planted);
    const target = join(dir, 'target.txt');
    await writeFile(target, 'keep me\n');
    await symlink(target, join(planted, 'security.json'));
    refused(await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', planted]), /security\.json is a symlink/);
    expect(await readFile(target, 'utf8')).toBe('keep me\n');

    const foreign = join(dir, 'foreign');
    await mkdir(foreign);
    await writeFile(join(foreign, 'task.json'), '{}\n');
    await chown(join(foreign, 'task.json'), 65534, 65534);
    refused(await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', foreign]), /task\.json belongs to uid 65534/);
    expect(await readFile(join(foreign, 'task.json'), 'utf8')).toBe('{}\n');

    const full = join(dir, 'full');
    await mkdir(full);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'sandcheck-test-full', full]);
    mounts.push(full);
    refused(
      await sandcheck(['run', '--backend', 'process', '--policy', 'ci', '--only', 'identity-uid', '--out', join(full, 'out')]),
      /has 1 MB free, and this run can write up to \d+ MB/,
    );
    expect(await readdir(full)).toEqual([]);
  }, 120_000);

  it('a refused --backend-config (too large) or a refused merge creates no --out', async () => {
    const { dir, out } = await row('refusals');
    const big = join(dir, 'big.yaml');
    await writeFile(big, `# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    refused(
      await sandcheck(['run', '--backend', 'bwrap', '--policy', 'ci', '--only', 'identity-uid', '--backend-config', big, '--out', out]),
      /big\.yaml.*limit is 1048576/,
    );
    expect(await exists(out)).toBe(false);
    const notShard = join(dir, 'not-a-shard');
    await mkdir(notShard);
    const merged = await sandcheck(['merge', notShard, notShard, '--out', out]);
    expect(merged.exitCode, merged.all).toBe(3);
    expect(await exists(out)).toBe(false);
  }, 60_000);

  it('--backend-config without --backend reaches the default backend: a weakened file crosses, an unknown key is refused, and the card records the options bwrap applied', async () => {
    const { dir } = await row('default-backend');
    const share = join(dir, 'share.yaml');
    await writeFile(share, 'shareNetwork: true\n');
    const out = join(dir, 'out-share');
    const r = await sandcheck(['run', '--policy', 'ci', '--backend-config', share, '--only', 'metadata-ipv4', '--out', out]);
    expect(r.exitCode, r.all).toBe(1);
    const cards = await readCards(out);
    expect(cards.security.results.find((x) => x.id === 'metadata-ipv4')?.verdict).toBe('crossed');
    const record = cards.security.environment?.backendConfig;
    expect(record).toMatchObject({ file: 'share.yaml', checkedBy: 'sandcheck', options: expect.objectContaining({ shareNetwork: true, seccomp: true }) });
    expect(record).not.toHaveProperty('content');

    const pids = join(dir, 'pids.yaml');
    await writeFile(pids, 'limits: {pids: false}\n');
    const p = await sandcheck(['run', '--policy', 'ci', '--backend-config', pids, '--only', 'fork-bomb', '--out', join(dir, 'out-pids')]);
    expect(p.exitCode, p.all).toBe(1);
    expect((await readCards(join(dir, 'out-pids'))).security.results[0]?.verdict).not.toBe('held');

    const unknown = join(dir, 'unknown.yaml');
    await writeFile(unknown, 'shareNetwork: false\nsharenetwork: true\n');
    const u = await sandcheck(['run', '--policy', 'ci', '--backend-config', unknown, '--only', 'identity-uid', '--out', join(dir, 'out-unknown')]);
    refused(u, /unknown key "sharenetwork"/);
    expect(await exists(join(dir, 'out-unknown'))).toBe(false);

    const list = join(dir, 'list.yaml');
    await writeFile(list, '- shareNetwork: true\n');
    refused(
      await sandcheck([
        'run',
        '--backend',
        'docker-hardened',
        '--policy',
        'ci',
        '--backend-config',
        list,
        '--only',
        'identity-uid',
        '--out',
        join(dir, 'out-list'),
      ]),
      /expected a mapping of options/,
    );
    refused(
      await sandcheck([
        'run',
        '--backend',
        'process',
        '--policy',
        'ci',
        '--backend-config',
        share,
        '--only',
        'identity-uid',
        '--out',
        join(dir, 'out-process'),
      ]),
      /the process control takes no --backend-config options/,
    );
    expect((await stat(dir)).isDirectory()).toBe(true);
  }, 180_000);
});

function caseYaml(program: string, inputs?: string): string {
  return [
    'id: bad-case',
    'title: a case that reaches out',
    'expected: accept',
    program,
    ...(inputs ? ['inputs:', inputs] : []),
    'predicate: {type: exit-code, code: 0}',
    '',
  ].join('\n');
}
