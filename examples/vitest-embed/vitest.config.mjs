import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    root: import.meta.dirname,
    include: ['*.test.mjs'],
    // Probes time themselves; the suite is one long beforeAll.
    testTimeout: 60_000,
    hookTimeout: 30 * 60_000,
  },
});
