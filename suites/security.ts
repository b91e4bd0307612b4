import type { SecurityProbe } from '../harness/model/probe.js';
import { secretDecoyEnv } from '../probes/secret-decoy-env/probe.js';
import { secretDecoyFile } from '../probes/secret-decoy-file/probe.js';
import { stdoutFlood } from '../probes/stdout-flood/probe.js';
import { wallClockSleep } from '../probes/wall-clock-sleep/probe.js';
import { wallClockSpin } from '../probes/wall-clock-spin/probe.js';

export const securitySuite: readonly SecurityProbe[] = [secretDecoyFile, secretDecoyEnv, wallClockSpin, wallClockSleep, stdoutFlood];
