import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BoundedCapture } from '../../lab/bounded-capture.js';

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
});
