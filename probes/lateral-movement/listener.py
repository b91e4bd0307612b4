"""The other environment: listens on a TCP port on every address and hands its secret to anyone who connects."""
import select
import socket
import sys
import time

import sandcheck_payload as sc

args = __import__("json").loads(sys.argv[1])
port = int(args["port"])
servers = []
for family, host in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, port))
        s.listen(16)
        servers.append(s)
    except OSError as e:
        print("cannot listen on %s:%d: %s" % (host, port, e.strerror), flush=True)
if not servers:
    raise SystemExit(1)
addresses = []
try:
    addresses = sorted({a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)})
except OSError:
    pass
# The answer to this box's own challenge: a box that never ran the listener cannot print it.
print("SANDCHECK-READY %s %s port %d addresses %s" % (args["nonce"], sc.token("ready"), port, ",".join(addresses)), flush=True)
end = time.monotonic() + float(args["ceilingSeconds"])
while time.monotonic() < end:
    ready, _, _ = select.select(servers, [], [], 0.2)
    for s in ready:
        try:
            conn, _ = s.accept()
            conn.settimeout(0.5)
            conn.sendall(("%s\n" % args["secret"]).encode())
            # Read what the client sent before closing: closing on unread data sends a reset that loses the reply.
            conn.shutdown(socket.SHUT_WR)
            while conn.recv(256):
                pass
            conn.close()
        except OSError:
            pass
