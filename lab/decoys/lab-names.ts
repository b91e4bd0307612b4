// The lab's ports and allowlist names, free of zod: the probe catalogue (`sandcheck list`) loads them.
export const CANARY_TCP_PORTS = [80, 443, 8080, 22] as const;
export const CATCH_ALL_UDP_PORTS = [9, 123] as const;

/**
 * Names the allowlist probes use: an allowlist that names hosts (srt's `allowedDomains`) lists them, and the lab's
 * resolver answers them. `control` is an honest allowed host; `metadata` and `loopback` are allowed names whose
 * answer an attacker changed (rebinding), `nat64` and `mapped` the same with only an AAAA record carrying
 * 169.254.169.254; `front` is an allowed name of the lab's fronting proxy. Any other name,
 * e.g. `DENIED_NAME_SUFFIX`, resolves to the default 192.0.2.10.
 */
export const ALLOWLIST_NAMES = {
  control: 'control.allowed.sandcheck.example',
  metadata: 'metadata.allowed.sandcheck.example',
  loopback: 'loopback.allowed.sandcheck.example',
  front: 'front.allowed.sandcheck.example',
  nat64: 'nat64.allowed.sandcheck.example',
  mapped: 'mapped.allowed.sandcheck.example',
} as const;
export const DENIED_NAME_SUFFIX = 'denied.sandcheck.example';
