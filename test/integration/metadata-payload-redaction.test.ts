import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { afterAll, describe, expect, it } from 'vitest';

const isRoot = process.getuid?.() === 0;
const REPO = resolve(import.meta.dirname, '../..');

// Shapes of a real cloud's answer (AWS's documented example pair), next to a decoy value the scan must still see.
const REAL_KEY = 'AKIAIOSFODNN7EXAMPLE';
const REAL_SECRET = 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY';
const REAL_IMDS_TOKEN = 'AQAEAFakeImdsV2TokenForTheTest==';
const DECOY = 'SCNRYTOKENredactiontest0001';

const SERVER = String.raw`
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def reply(self, body):
        data = body.encode(); self.send_response(200); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def do_PUT(self): self.reply(sys.argv[3])
    def do_GET(self):
        if self.path.endswith("/security-credentials/"): self.reply("real-role\n")
        else: self.reply(json.dumps({"AccessKeyId": sys.argv[1], "SecretAccessKey": sys.argv[2], "Token": sys.argv[4]}))
s = http.server.HTTPServer(("169.254.169.254", 80), H)
print("ready", flush=True)
s.serve_forever()
`;

const dirs: string[] = [];
afterAll(async () => {
  await Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true })));
});

describe.skipIf(!isRoot)('metadata payloads never print a real credential (needs root: the test makes its own network namespace)', () => {
  it('metadata-ipv4 reports length, hash and decoy values of what a metadata service answered', { timeout: 40_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandcheck-redaction-'));
    dirs.push(dir);
    await writeFile(join(dir, 'server.py'), SERVER);
    // The payload as a box gets it: beside its helper and its challenge file.
    await copyFile(join(REPO, 'probes/metadata-ipv4/payload.py'), join(dir, 'payload.py'));
    await copyFile(join(REPO, 'probes/_shared/sandcheck_payload.py'), join(dir, 'sandcheck_payload.py'));
    await writeFile(join(dir, 'sandcheck-challenge'), 'redaction-test-challenge\n');
    // A namespace this test creates (unshare -n): 169.254.169.254 exists only inside it, on its own lo.
    const script = [
      'set -e',
      'ip link set lo up',
      'ip addr add 169.254.169.254/32 dev lo',
      `python3 ${join(dir, 'server.py')} ${REAL_KEY} ${REAL_SECRET} ${REAL_IMDS_TOKEN} ${DECOY} > ${join(dir, 'server.out')} 2>&1 < /dev/null &`,
      // The server is this script's own child: stopped by its pid whatever happens next.
      'SERVER=$!',
      "trap 'kill $SERVER 2>/dev/null' EXIT",
      `for i in $(seq 50); do grep -q ready ${join(dir, 'server.out')} && break; sleep 0.1; done`,
      `cd ${dir}`,
      `python3 payload.py '{"nonce":"0011","canaryPrefix":"SCNRY"}'`,
    ].join('\n');
    const r = await execa('unshare', ['--net', 'sh', '-c', script], { reject: false, timeout: 30_000, cwd: dir, forceKillAfterDelay: 1000 });
    expect(r.stdout, r.stderr).toContain('IMDSv1 creds:');
    expect(r.stdout).toContain(DECOY);
    for (const real of [REAL_KEY, REAL_SECRET, REAL_IMDS_TOKEN, 'real-role']) expect(r.stdout).not.toContain(real);
    expect(r.stdout).toMatch(/IMDSv1 creds: \d+ bytes sha256:[0-9a-f]{16} decoys:SCNRYTOKEN/);
  });
});
