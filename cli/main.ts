#!/usr/bin/env -S node --max-semi-space-size=1
import { packageVersion } from '../core/paths.js';

// `sandcheck list | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw err;
});

const argv = process.argv.slice(2);
// A bare `--version` is answered before the command line is built (commander and every command's flags): tools and
// CI logs ask it often. It prints what commander's own `--version` prints.
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-V')) process.stdout.write(`${packageVersion()}\n`);
else process.exitCode = await (await import('./program.js')).main(argv);
