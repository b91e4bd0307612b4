import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseSize, screenshot } from '../reports/matrix-screenshot.js';

/**
 * A matrix.html (or report.html) as a PNG in headless chromium: `tsx scripts/matrix-screenshot.ts OUT/matrix.html shot.png
 * [--size 1400x1000]`. `sandcheck matrix --png FILE` does the same as part of making the matrix; the code is in
 * reports/matrix-screenshot.ts.
 */
export { dumpDom, findChromium, screenshot } from '../reports/matrix-screenshot.js';

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [html, png, flag, value] = process.argv.slice(2);
  if (!html || !png || (flag !== undefined && flag !== '--size')) {
    process.stderr.write('usage: tsx scripts/matrix-screenshot.ts OUT/matrix.html shot.png [--size 1400x1000]\n');
    process.exit(3);
  }
  const shot = await screenshot(html, png, parseSize(value));
  process.stdout.write(`wrote ${png} (${shot.bytes} bytes)\n`);
}
