import { describe, expect, it } from 'vitest';
import { capText, cleanForReport, visibleText } from '../../core/clean-text.js';

describe('report text cleaning', () => {
  it('strips ANSI sequences and makes XML-invalid characters visible', () => {
    expect(visibleText('\u001b[1;31mBOLD\u001b[0m x\u0000y\u000bz')).toBe('BOLD x\\x00y\\x0bz');
    expect(visibleText('lone \uD800 surrogate \uFFFE')).toBe('lone \\ud800 surrogate \\ufffe');
    expect(visibleText('tab\tnewline\nok')).toBe('tab\tnewline\nok');
  });

  it('caps long text keeping head and tail', () => {
    const capped = capText('a'.repeat(1000) + 'b'.repeat(1000), 200);
    expect(capped.length).toBeLessThanOrEqual(200);
    expect(capped.startsWith('aaa')).toBe(true);
    expect(capped.endsWith('bbb')).toBe(true);
    expect(capped).toContain('truncated');
  });

  it('never leaves a CDATA terminator intact', () => {
    expect(cleanForReport('x]]>y')).not.toContain(']]>');
  });
});
