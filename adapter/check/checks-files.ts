import { createHash } from 'node:crypto';
import { fail, pass, passInPart, skip, type CheckOutcome } from './model.js';
import { describeRun, type CheckSession } from './session.js';

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Every byte value, several times over, in an order that is not just 0..255. */
export function allByteValues(): Buffer {
  const out = Buffer.alloc(256 * 64);
  for (let i = 0; i < out.length; i++) out[i] = (i * 7 + (i >> 8)) & 0xff;
  return out;
}

const HASH_FILE = `
import hashlib, sys
data = open(sys.argv[1], 'rb').read()
print('len=%d sha=%s' % (len(data), hashlib.sha256(data).hexdigest()))
`;

export async function binaryRoundtrip(s: CheckSession): Promise<CheckOutcome> {
  const data = allByteValues();
  return s.withEnv(async (env) => {
    await env.putFiles([{ path: 'bin/all-bytes.bin', content: data }]);
    const r = await s.run(env, { source: HASH_FILE, args: ['bin/all-bytes.bin'] });
    const want = `len=${data.length} sha=${sha256(data)}`;
    if (!r.stdout.text().includes(want))
      return fail(`the program did not read the bytes that were put in (wanted "${want}"; got "${r.stdout.text().trim().slice(0, 200)}"; ${describeRun(r)})`);
    const [got] = await env.getFiles(['bin/all-bytes.bin'], { maxBytesPerFile: 1024 * 1024 });
    if (!got || got.kind !== 'file' || !got.content)
      return fail(`getFiles returned ${got ? `kind ${got.kind}${got.content ? '' : ' without content'}` : 'nothing'}`);
    if (!Buffer.from(got.content).equals(data))
      return fail(`getFiles returned ${got.content.byteLength} bytes with sha256 ${sha256(got.content)}, not the ${data.length} bytes put in`);
    return pass(`${data.length} bytes (every byte value 64 times) in, read by the program and out unchanged`);
  });
}

export async function emptyFile(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    await env.putFiles([{ path: 'empty.txt', content: new Uint8Array() }]);
    const r = await s.run(env, { source: HASH_FILE, args: ['empty.txt'] });
    if (!r.stdout.text().includes('len=0 ')) return fail(`the program did not find an empty file: ${r.stdout.text().trim().slice(0, 200)} (${describeRun(r)})`);
    const [got] = await env.getFiles(['empty.txt'], { maxBytesPerFile: 1024 });
    if (!got || got.kind !== 'file' || got.size !== 0 || (got.content?.byteLength ?? 0) !== 0)
      return fail(`getFiles returned ${JSON.stringify({ kind: got?.kind, size: got?.size })}`);
    return pass('an empty file went in, the program saw 0 bytes, getFiles returned an empty regular file');
  });
}

const WRITE_NESTED = `
import os, sys
src = open('a/b/c/deep.txt').read()
os.makedirs('out/x/y', exist_ok=True)
open('out/x/y/result.txt', 'w').write(src.upper())
print('ok')
`;

// The reading half alone, for a box that writes no results: the program prints what it read, then tries the write.
const READ_NESTED = `
import os, sys
src = open('a/b/c/deep.txt').read()
print('read=' + src.upper().strip(), flush=True)
try:
    os.makedirs('out/x/y', exist_ok=True)
    open('out/x/y/result.txt', 'w').write(src.upper())
    print('write=done')
except OSError as e:
    print('write=refused (%s)' % e.strerror)
`;

async function nestedReadOnly(s: CheckSession, why: string): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: READ_NESTED, files: [{ path: 'a/b/c/deep.txt', content: Buffer.from('nested input\n') }] });
    const out = r.stdout.text();
    if (!out.includes('read=NESTED INPUT')) return fail(`the program could not read a/b/c/deep.txt (${describeRun(r)})`);
    const [got] = await env.getFiles(['out/x/y/result.txt'], { maxBytesPerFile: 1024 });
    if (got?.kind !== 'missing') {
      return fail(
        `the backend declares that the box writes no results (${why}), yet getFiles("out/x/y/result.txt") returned ${got ? got.kind : 'nothing'}: drop the declaration (results: none) so the writing half is checked`,
      );
    }
    const inside = /write=\S+( \([^)]*\))?/.exec(out)?.[0] ?? 'write=not attempted';
    return passInPart(
      `a/b/c/deep.txt was readable by the program (its stdout shows the content); out/x/y/result.txt did not come out (the program said: ${inside})`,
      `writing half: the backend declares that the box writes no results: ${why}`,
    );
  });
}

export async function nested(s: CheckSession): Promise<CheckOutcome> {
  const noResults = s.noWrittenResults();
  if (noResults !== undefined) return nestedReadOnly(s, noResults);
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: WRITE_NESTED, files: [{ path: 'a/b/c/deep.txt', content: Buffer.from('nested input\n') }] });
    if (r.result?.exitCode !== 0) return fail(`the program could not read a/b/c/deep.txt or write out/x/y/result.txt (${describeRun(r)})`);
    const [got] = await env.getFiles(['out/x/y/result.txt'], { maxBytesPerFile: 1024 });
    const text = got?.content ? Buffer.from(got.content).toString('utf8') : undefined;
    if (text !== 'NESTED INPUT\n') return fail(`getFiles("out/x/y/result.txt") returned ${got ? `${got.kind}: ${JSON.stringify(text)}` : 'nothing'}`);
    return pass('a/b/c/deep.txt was readable by the program; out/x/y/result.txt, written by it, came out');
  });
}

const MODES = `
import os, stat
print('tool=%o' % stat.S_IMODE(os.stat('tool.sh').st_mode), 'x=%s' % os.access('tool.sh', os.X_OK))
print('private=%o' % stat.S_IMODE(os.stat('private.txt').st_mode))
`;

export async function modes(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    const r = await s.run(env, {
      source: MODES,
      files: [
        { path: 'tool.sh', content: Buffer.from('#!/bin/sh\necho tool\n'), mode: 0o755 },
        { path: 'private.txt', content: Buffer.from('p\n'), mode: 0o600 },
      ],
    });
    const out = r.stdout.text();
    if (!out.includes('tool=755') || !out.includes('x=True')) return fail(`tool.sh put with mode 0755 is seen as: ${out.trim() || describeRun(r)}`);
    if (!out.includes('private=600')) return fail(`private.txt put with mode 0600 is seen as: ${out.trim()}`);
    return pass('modes 0755 (executable) and 0600 arrived as put');
  });
}

const CHANGE_READ_ONLY = `
import os
MARK = b'changed by the box\\n'
def attempt(name, fn):
    try:
        fn()
        print('%s: done' % name)
    except OSError as e:
        print('%s: refused (%s)' % (name, e.strerror))
def write():
    with open('ro/input.txt', 'ab') as fh: fh.write(MARK)
def chmod_write():
    os.chmod('ro/input.txt', 0o666); write()
def unlink_recreate():
    os.unlink('ro/input.txt')
    with open('ro/input.txt', 'wb') as fh: fh.write(MARK)
def rename_over():
    with open('ro/other.txt', 'wb') as fh: fh.write(MARK)
    os.replace('ro/other.txt', 'ro/input.txt')
for name, fn in [('write', write), ('chmod+write', chmod_write), ('unlink+recreate', unlink_recreate), ('rename over', rename_over)]:
    attempt(name, fn)
`;

export async function readOnly(s: CheckSession): Promise<CheckOutcome> {
  const original = Buffer.from('read-only input: the program must not change these bytes\n');
  return s.withEnv(async (env) => {
    const r = await s.run(env, { source: CHANGE_READ_ONLY, files: [{ path: 'ro/input.txt', content: original, readOnly: true }] });
    const inside = r.stdout.text().trim().replace(/\n/g, '; ');
    if (r.result === undefined || !inside.includes('rename over'))
      return skip(`the program did not get through its attempts, nothing to judge (${describeRun(r)})`);
    const [got] = await env.getFiles(['ro/input.txt'], { maxBytesPerFile: 1024 });
    if (!got || got.kind !== 'file' || !got.content)
      return fail(`after the attempts getFiles returned ${got ? got.kind : 'nothing'} for ro/input.txt (the program said: ${inside})`);
    if (!Buffer.from(got.content).equals(original))
      return fail(
        `the read-only input changed: getFiles returned ${JSON.stringify(Buffer.from(got.content).toString('utf8').slice(0, 80))} (the program said: ${inside})`,
      );
    return pass(`ro/input.txt is unchanged as getFiles returns it (the program said: ${inside})`);
  });
}

export async function missing(s: CheckSession): Promise<CheckOutcome> {
  return s.withEnv(async (env) => {
    let got;
    try {
      got = await env.getFiles(['no/such/file.txt'], { maxBytesPerFile: 1024 });
    } catch (err) {
      return fail(`getFiles threw for a missing path: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (got.length !== 1 || got[0]?.kind !== 'missing')
      return fail(`getFiles returned ${JSON.stringify(got.map((g) => ({ path: g.path, kind: g.kind })))} for a missing path`);
    return pass('a missing path is reported with kind "missing"');
  });
}
