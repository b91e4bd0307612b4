/**
 * Version of the adapter contract (semver). A module adapter may export `adapterApiVersion` to say
 * which version it was written against; sandcheck refuses one written for another major version.
 */
export const ADAPTER_API_VERSION = '1.1.0';
