"""Name rebinding past an allowlist: an allowed name whose answer now points at cloud metadata or loopback.

Connects by the name itself: directly (the box's own resolution) and through every proxy the box was given (the
proxy resolves it). Replies are reported as a status line and a size only.
"""
import sandcheck_payload as sc

args = sc.start()
sc.allowlist_control(args)
for kind in ("metadata", "loopback"):
    name = args["names"][kind]
    address, how = sc.resolve_a(name, args["resolver"])
    print("%s resolves to %s (%s)" % (name, address, how))
    path = "/latest/meta-data/iam/security-credentials/?%s-rebind-%s" % (args["marker"], kind)
    absolute = sc.http_get_bytes(name, "http://%s%s" % (name, path))
    # Directly to the address the name resolved to (the connection a by-name client makes), then by name through proxies.
    if address:
        outcome, reply = sc.tcp_try(address, 80, sc.http_get_bytes(name, path))
        print("rebind-%s direct %s -> %s:80: %s %s" % (kind, name, address, outcome, sc.status_of(reply)))
    sc.route_attempts("rebind-%s" % kind, name, 80, sc.http_get_bytes(name, path), absolute, direct=False)
sc.done(args)
