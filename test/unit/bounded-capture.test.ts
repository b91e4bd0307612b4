import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BoundedCapture } from '../../lab/bounded-capture.js';
import { makeCanaries } from '../../lab/canaries.js';
import { scanJoined } from '../../lab/canary-scan.js';

describe('BoundedCapture', () => {
  it('counts and hashes every byte but keeps only head and tail', () => {
    const cap = new BoundedCapture({ headBytes: 8, tailBytes: 8 });
    const full = Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz');
    for (let i = 0; i < full.length; i += 5) cap.write(full.subarray(i, i + 5));
    const s = cap.summary();
    expect(s.bytes).toBe(full.length);
    expect(s.sha256).toBe(createHash('sha256').update(full).digest('hex'));
    expect(Buffer.from(s.headBase64, 'base64').toString()).toBe('01234567');
    expect(Buffer.from(s.tailBase64, 'base64').toString()).toBe('stuvwxyz');
    expect(s.truncated).toBe(true);
  });

  it('does not duplicate bytes between head and tail for short streams', () => {
    const cap = new BoundedCapture({ headBytes: 8, tailBytes: 8 });
    cap.write(Buffer.from('0123456789'));
    const s = cap.summary();
    expect(Buffer.from(s.headBase64, 'base64').toString()).toBe('01234567');
    expect(Buffer.from(s.tailBase64, 'base64').toString()).toBe('89');
  });

  it('finds a needle split across chunk boundaries and reports its offset', () => {
    const cap = new BoundedCapture({ headBytes: 4, tailBytes: 4, needles: ['SCNRYsecret42'] });
    const text = `${'x'.repeat(100)}SCNRYsecret42${'y'.repeat(50)}`;
    for (let i = 0; i < text.length; i += 3) cap.write(Buffer.from(text.slice(i, i + 3)));
    expect(cap.found()).toEqual([{ needle: 'SCNRYsecret42', offset: 100 }]);
    expect(cap.has('absent')).toBe(false);
  });

  it('finds a needle in the middle of a large stream it does not keep', () => {
    const cap = new BoundedCapture({ needles: ['NEEDLE-IN-THE-MIDDLE'] });
    const block = Buffer.alloc(1024 * 1024, 0x61);
    for (let i = 0; i < 8; i++) cap.write(block);
    cap.write(Buffer.from('NEEDLE-IN-THE-MIDDLE'));
    for (let i = 0; i < 8; i++) cap.write(block);
    expect(cap.has('NEEDLE-IN-THE-MIDDLE')).toBe(true);
    expect(cap.headBuffer.length).toBe(16 * 1024);
    expect(cap.bytes).toBe(16 * 1024 * 1024 + 20);
  });

  it('makes control characters visible in the preview', () => {
    const cap = new BoundedCapture();
    cap.write(Buffer.from('a\u0000b\u001b[31mred\u001b[0m\u0007'));
    expect(cap.summary().preview).toBe('a\\x00bred\\x07');
  });

  describe('canaries', () => {
    const canaries = makeCanaries().all;
    const secret = canaries[0]!;

    it('finds a canary in an encoded form that its plain needle misses, split over 1-byte writes', () => {
      const cap = new BoundedCapture({ headBytes: 4, tailBytes: 4, needles: [secret.value, 'MARK'], canaries });
      const text = `${'x'.repeat(50)}${Buffer.from(secret.value).toString('base64')} MARK ${Buffer.from(secret.value).toString('hex')}`;
      for (const byte of Buffer.from(text)) cap.write(Buffer.of(byte));
      expect(cap.found().map((h) => h.needle)).toEqual(['MARK']);
      expect(cap.canaryHits()).toEqual([
        { label: secret.label, value: secret.value, form: 'base64', offset: 50 },
        { label: secret.label, value: secret.value, form: 'hex', offset: text.indexOf(' MARK ') + 6 },
      ]);
    });

    it('finds a value wrapped over lines in the middle of a stream larger than head and tail', () => {
      const cap = new BoundedCapture({ canaries });
      const junk = Buffer.alloc(256 * 1024, 'junk line\n');
      cap.write(junk);
      cap.write(
        Buffer.from(
          `${Buffer.from(secret.value)
            .toString('base64')
            .replace(/(.{10})/g, '$1\n')}\n`,
        ),
      );
      cap.write(junk);
      expect(cap.canaryHits().map((h) => [h.label, h.form, h.acrossLines])).toEqual([[secret.label, 'base64', true]]);
    });

    it('reports no canary when not asked to scan for them', () => {
      const cap = new BoundedCapture({ needles: [secret.value] });
      cap.write(Buffer.from(secret.value));
      expect(cap.has(secret.value)).toBe(true);
      expect(cap.canaryHits()).toEqual([]);
    });

    it('gives its kept head and tail to the joined scan: a value split between stdout and stderr', () => {
      const stdout = new BoundedCapture({ headBytes: 64, tailBytes: 64, canaries });
      const stderr = new BoundedCapture({ headBytes: 64, tailBytes: 64, canaries });
      stdout.write(Buffer.from(`start\n${'y'.repeat(1000)}\n${secret.value.slice(0, 12)}\n`));
      stderr.write(Buffer.from(`${secret.value.slice(12)}\n`));
      expect([...stdout.canaryHits(), ...stderr.canaryHits()]).toEqual([]);
      const [head, tail] = stdout.keptParts();
      expect(Buffer.concat([head, tail]).length).toBe(128);
      expect(scanJoined([...stdout.keptParts(), ...stderr.keptParts()], canaries).map((h) => [h.label, h.form])).toEqual([[secret.label, 'raw']]);
    });
  });
});
