import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { packageRoot } from '../../core/paths.js';

/**
 * srt starts the in-box bridge to its proxy (socat on localhost:3128) in the background beside the program: on a busy
 * machine the allowlist payload's positive control could dial it before it listened, be refused, and leave the probe
 * inconclusive (the CI of 2d80c98). The allowlist control now waits, bounded, until every given proxy accepts.
 */
const SHARED = join(packageRoot(), 'probes', '_shared');

function python(script: string, env: Record<string, string> = {}): string {
  return execFileSync('/usr/bin/python3', ['-c', `import sys; sys.path.insert(0, ${JSON.stringify(SHARED)})\n${script}`], {
    cwd: tmpdir(),
    encoding: 'utf8',
    env: { PATH: '/usr/bin:/bin', PYTHONDONTWRITEBYTECODE: '1', ...env },
    timeout: 30_000,
  });
}

const LATE_LISTENER = `
import os, socket, threading, time
import sandcheck_payload as sc
probe = socket.socket(); probe.bind(("127.0.0.1", 0)); port = probe.getsockname()[1]; probe.close()
os.environ["HTTP_PROXY"] = "http://localhost:%d" % port
def listen_late():
    time.sleep(0.4)
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", port)); s.listen(8)
    threading.Event().wait(5)
threading.Thread(target=listen_late, daemon=True).start()
start = time.monotonic()
sc.wait_for_proxies(CEILING)
print("waited %d" % ((time.monotonic() - start) * 1000))
`;

describe('the allowlist control waits for a proxy bridge that starts late', () => {
  it('dials only once the proxy accepts, and says after how long', () => {
    const out = python(LATE_LISTENER.replace('CEILING', '5.0'));
    const accepted = /proxy HTTP_PROXY localhost:\d+ accepts after (\d+) ms/.exec(out);
    expect(accepted, out).not.toBeNull();
    expect(Number(accepted?.[1])).toBeGreaterThanOrEqual(350);
  });

  it('gives up at its ceiling and says so, so the control then fails visibly', () => {
    const out = python(LATE_LISTENER.replace('CEILING', '0.1'));
    expect(out).toMatch(/proxy HTTP_PROXY localhost:\d+ still refuses after 100 ms/);
    expect(Number(/waited (\d+)/.exec(out)?.[1])).toBeLessThan(1_500);
  });

  it('without proxies returns at once', () => {
    expect(python('import sandcheck_payload as sc\nsc.wait_for_proxies()\nprint("ok")')).toBe('ok\n');
  });
});
