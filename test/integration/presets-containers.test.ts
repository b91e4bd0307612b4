/** The container and namespace presets (podman, podman on runsc, firejail, nspawn); see test/helpers/preset-suite.ts. */
import { describePresets, PRESET_FILES } from '../helpers/preset-suite.js';

await describePresets(PRESET_FILES.containers);
