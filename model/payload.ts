/** The payloads' interpreter, as the kernel names its executable (never by the process's own name). No zod here: `sandcheck list` loads it. */
export const PAYLOAD_INTERPRETER = /^python3(\.\d+)*$/;
