/** Every container and volume the backend creates carries these labels (the probe image: sandcheck.image). */
export const LABEL_RUN = 'sandcheck.run';
export const LABEL_ENV = 'sandcheck.env';
export const LABEL_PROFILE = 'sandcheck.profile';
/** `<pid>/<start time>/<boot id>` of the harness process: a sweep removes only what a dead owner left. */
export const LABEL_OWNER = 'sandcheck.owner';
/** Box processes carry it in their environment (not a secret): a second witness at destroy. */
export const ENV_MARKER = 'SANDCHECK_ENV';
