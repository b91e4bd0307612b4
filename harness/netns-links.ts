import { stat } from 'node:fs/promises';
import { execa } from 'execa';
import { z } from 'zod';

/** One interface of a network namespace as `ip -j -d link show` prints it (only the fields read here). */
const IpLink = z.object({
  ifname: z.string(),
  link_type: z.string().optional(),
  link_netnsid: z.number().optional(),
  linkinfo: z.object({ info_kind: z.string().optional() }).optional(),
});
const IpLinks = z.array(IpLink);
const IpNsIds = z.array(z.object({ nsid: z.number(), name: z.string().optional() }));

/**
 * Link kinds whose packets leave only through this namespace's own routes: a fallback tunnel device (sit0, tunl0 …,
 * present in every namespace once its module is loaded) can only carry traffic over the namespace's other links.
 */
const LOCAL_KINDS = new Set(['ipip', 'sit', 'ip6tnl', 'gre', 'gretap', 'ip6gre', 'ip6gretap', 'erspan', 'ip6erspan', 'vti', 'vti6']);

/** A namespace's links, each with where its traffic can go: nowhere beyond it, into the lab, or elsewhere. */
export interface NamespaceLinks {
  /** Links that lead nowhere but into the lab (or stay in the namespace). */
  contained: string[];
  /** Links that may lead elsewhere, each described (`eth0 (veth, other end in nsid 2, unnamed)`). */
  open: string[];
}

const nsExec = async (pid: number, args: string[]): Promise<string> =>
  (await execa('nsenter', [`--net=/proc/${pid}/ns/net`, '--', 'ip', '-j', ...args], { timeout: 5000, stdin: 'ignore' })).stdout;

/**
 * Reads, from the host, every link of the network namespace `pid` is in, and where each leads: a link whose other
 * end (`link-netnsid`) is in the lab's namespace is contained; so are `lo` and tunnel devices with no other end.
 * Anything else (a veth to another namespace, a tap a user-space stack reads, a physical device) is open. Throws where
 * the host cannot read it.
 */
export async function namespaceLinks(pid: number, labNetnsPath: string): Promise<NamespaceLinks> {
  const links = IpLinks.parse(JSON.parse(await nsExec(pid, ['-d', 'link', 'show'])));
  const ids = IpNsIds.parse(JSON.parse((await nsExec(pid, ['netns', 'list-id'])) || '[]'));
  const labIno = (await stat(labNetnsPath)).ino;
  // By inode, not by name: a second name for some namespace must not pass for the lab.
  const isLab = async (name: string | undefined): Promise<boolean> =>
    name !== undefined &&
    !name.includes('/') &&
    (await stat(`/run/netns/${name}`).then(
      (s) => s.ino === labIno,
      () => false,
    ));
  const out: NamespaceLinks = { contained: [], open: [] };
  for (const link of links) {
    const kind = link.linkinfo?.info_kind ?? link.link_type ?? 'unknown';
    if (link.link_netnsid !== undefined) {
      const other = ids.find((i) => i.nsid === link.link_netnsid)?.name;
      if (await isLab(other)) out.contained.push(`${link.ifname} (${kind}, other end in the lab ${other})`);
      else
        out.open.push(`${link.ifname} (${kind}, other end in nsid ${link.link_netnsid}, ${other === undefined ? 'unnamed' : `named ${other}`}, not the lab)`);
    } else if (link.link_type === 'loopback' || LOCAL_KINDS.has(kind)) out.contained.push(`${link.ifname} (${kind})`);
    else out.open.push(`${link.ifname} (${kind}, no other end in a namespace: it may carry traffic anywhere)`);
  }
  return out;
}
