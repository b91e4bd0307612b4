/** The sandbox CLIs (bwrap, runsc do, Codex, srt); see test/helpers/preset-suite.ts. */
import { describe, expect, it } from 'vitest';
import { describePresets, PRESET_FILES, presetCoverage } from '../helpers/preset-suite.js';

describe('preset files', () => {
  it('every shipped preset has expectations and is measured by exactly one preset file', () => {
    const { catalog, expected, files } = presetCoverage();
    expect(expected).toEqual(catalog);
    expect(files).toEqual(catalog);
  });
});

await describePresets(PRESET_FILES.clis);
