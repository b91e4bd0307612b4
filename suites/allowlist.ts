import type { SecurityProbe } from '../model/probe.js';
import { allowlistDnsResolvers } from '../probes/allowlist-dns-resolvers/probe.js';
import { allowlistHostSni } from '../probes/allowlist-host-sni/probe.js';
import { allowlistNat64 } from '../probes/allowlist-nat64/probe.js';
import { allowlistProxyConnect } from '../probes/allowlist-proxy-connect/probe.js';
import { allowlistRebinding } from '../probes/allowlist-rebinding/probe.js';

/**
 * Bypasses of a network allowlist (issue #17). Opt-in: selected with `--only <id>` and not part of the default
 * security suite, whose whole-suite expectations (every network probe crossed on the control, held in an empty
 * namespace, the preset measurements) assume network off, where these are not applicable.
 */
export const allowlistSuite: readonly SecurityProbe[] = [allowlistRebinding, allowlistProxyConnect, allowlistHostSni, allowlistNat64, allowlistDnsResolvers];
