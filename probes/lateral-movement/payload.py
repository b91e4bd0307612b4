"""Lateral movement: looks for another environment of the same run on the port it listens on."""
import re
import socket

import sandcheck_payload as sc

args = sc.start()
port = int(args["port"])
announced = args.get("companion", {}).get("announced", "")
print("the other environment announced: %s" % announced)
candidates = ["127.0.0.1", "::1"]
if " addresses " in announced:
    candidates += [a for a in announced.split(" addresses ", 1)[1].split(",") if a]
try:
    with open("/proc/net/route") as fh:
        for line in fh.readlines()[1:]:
            gateway = int(line.split()[2], 16)
            if gateway:
                base = socket.inet_ntoa(gateway.to_bytes(4, "little")).rsplit(".", 1)[0]
                candidates += ["%s.%d" % (base, i) for i in range(1, 17)]
except OSError:
    pass
seen = set()
for host in candidates[:48]:
    if host in seen:
        continue
    seen.add(host)
    # Loopback answers at once; a longer wait only for the addresses the other box announced.
    outcome, reply = sc.tcp_try(host, port, b"hello\n", timeout=1.0 if host in ("127.0.0.1", "::1") or host in announced else 0.3, read=256)
    if reply:
        # Only decoy values are printed raw; whatever else answered is reported by length.
        text = reply.decode("utf-8", "replace")
        decoys = sorted(set(re.findall(r"SCNRY[A-Za-z0-9_]+", text)))
        print("%s:%d answered: %d bytes, decoys: %s" % (host, port, len(reply), ",".join(decoys) or "none"))
    elif host in ("127.0.0.1", "::1") or host in announced:
        # Every announced address gets its line: the harness holds the box only if each was tried.
        print("%s:%d: %s" % (host, port, outcome))
sc.done(args)
