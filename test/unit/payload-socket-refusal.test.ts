import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';

/**
 * A seccomp filter that refuses socket() itself (codex sandbox, srt) must come out of a payload as a refusal with
 * its errno, recorded like a refused connect, and the payload must still finish its attempt: a traceback at
 * socket() would leave the probe inconclusive for a reason that is the box's own network control acting.
 * socket.socket is replaced here by one that fails with EPERM, as such a filter makes it fail (addresses are loopback all the same).
 */
const SHARED = join(packageRoot(), 'probes', '_shared');
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const REFUSE_SOCKET = `
import errno, os, socket
def _refused(*a, **k):
    raise OSError(errno.EPERM, os.strerror(errno.EPERM))
socket.socket = _refused
`;

function python(script: string, cwd: string, args: string[] = []): string {
  return execFileSync('python3', ['-c', script, ...args], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1' },
    timeout: 30_000,
  });
}

describe('payloads under a filter that refuses socket()', () => {
  it('tcp_try, http_try, udp_send and stream_try record the refusal with its errno', () => {
    const out = python(
      `import sys; sys.path.insert(0, ${JSON.stringify(SHARED)})
import json, socket
import sandcheck_payload as sc
${REFUSE_SOCKET}
print(json.dumps({
  "tcp": sc.tcp_try("127.0.0.1", 80, b"x")[0],
  "tcp6": sc.tcp_try("::1", 80)[0],
  "http": sc.http_try("127.0.0.1", 80, "GET", "/")[0],
  "udp": sc.udp_send("127.0.0.1", 53, b"x"),
  "unix": sc.stream_try(socket.AF_UNIX, "/nonexistent/sock", b"x")[0],
}))`,
      tmpdir(),
    );
    const got = JSON.parse(out) as Record<string, string>;
    for (const outcome of Object.values(got)) expect(outcome).toBe('error: Operation not permitted (EPERM)');
  });

  it.each([
    ['abstract-socket', { nonce: 'n1', name: 'sandcheck-decoy-n1', canaryPrefix: 'SANDCHECK' }],
    ['daemon-socket', { nonce: 'n1', decoySocket: '/nonexistent/decoy.sock' }],
    ['agent-socket', { nonce: 'n1', canaryPrefix: 'SANDCHECK', walkSeconds: 0.2 }],
    ['host-search', { nonce: 'n1', canaryPrefix: 'SANDCHECK', headBytes: 64, walkSeconds: 0.2, socketSeconds: 0.2 }],
  ])('%s finishes its attempt and reports the refusal', (probe, args) => {
    const dir = mkdtempSync(join(tmpdir(), 'sandcheck-payload-'));
    dirs.push(dir);
    copyFileSync(join(packageRoot(), 'probes', probe, 'payload.py'), join(dir, 'payload.py'));
    copyFileSync(join(SHARED, 'sandcheck_payload.py'), join(dir, 'sandcheck_payload.py'));
    writeFileSync(join(dir, 'sandcheck-challenge'), 'challenge-for-the-test\n');
    writeFileSync(join(dir, 'sandcheck-control'), 'control-value\n');
    const out = python(
      `import runpy, sys
sys.path.insert(0, ${JSON.stringify(dir)})
${REFUSE_SOCKET}
sys.argv = [${JSON.stringify(join(dir, 'payload.py'))}, sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")`,
      dir,
      [JSON.stringify(args)],
    );
    expect(out).toMatch(/^SANDCHECK-ATTEMPT /m);
    expect(out).toMatch(/^SANDCHECK-DONE /m);
    expect(out).toContain('Operation not permitted (EPERM)');
  });
});
