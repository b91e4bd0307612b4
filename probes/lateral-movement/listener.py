"""The other environment: listens on a TCP port on every address and hands its secret to anyone who connects."""
import socket
import sys
import time

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
        s.settimeout(0.2)
        servers.append(s)
    except OSError:
        pass
addresses = []
try:
    addresses = sorted({a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None)})
except OSError:
    pass
print("SANDCHECK-READY %s port %d addresses %s" % (args["nonce"], port, ",".join(addresses)), flush=True)
end = time.monotonic() + float(args["ceilingSeconds"])
while time.monotonic() < end:
    for s in servers:
        try:
            conn, _ = s.accept()
            conn.sendall(("%s\n" % args["secret"]).encode())
            conn.close()
        except OSError:
            pass
