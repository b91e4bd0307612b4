"""Connects to an abstract Unix socket of the host's network namespace (a containerd-shim-style name).

Abstract names have no file and no permissions: any process of the network namespace that knows (or lists,
in /proc/net/unix) the name can connect. Positive control: an abstract socket this box binds itself,
reached through the same routine.
"""
import re
import socket
import threading

import sandcheck_payload as sc

args = sc.start()
TOKEN = re.compile((args["canaryPrefix"] + r"[A-Za-z0-9]{8,}").encode())
CONTROL_REPLY = sc.token("socket-control").encode()


def talk(name):
    outcome, reply = sc.stream_try(socket.AF_UNIX, "\0" + name, ("GET /?sandcheck=%s HTTP/1.0\r\n\r\n" % args["nonce"]).encode(), 1.0, 1024)
    return ("connected, %d reply bytes" % len(reply) if outcome == "connected" else outcome), reply


def serve(server):
    try:
        conn, _ = server.accept()
        with conn:
            conn.recv(256)
            conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n" + CONTROL_REPLY)
    except OSError:
        pass


result = {}
control_name = "sandcheck-control-%s" % args["nonce"]
server = None
try:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind("\0" + control_name)
    server.listen(1)
    threading.Thread(target=serve, args=(server,), daemon=True).start()
    result["(in-box positive control)"], reply = talk(control_name)
    if CONTROL_REPLY in reply:
        print("control socket answered: %s" % CONTROL_REPLY.decode())
except OSError as e:
    result["(in-box positive control)"] = sc.refusal(e)
finally:
    if server is not None:
        server.close()
try:
    with open("/proc/net/unix") as fh:
        result["abstract names listed"] = sum(1 for line in fh if line.split()[-1:] and line.split()[-1].startswith("@"))
except OSError as e:
    result["abstract names listed"] = e.strerror or str(e)
outcome, reply = talk(args["name"])
result["host abstract decoy"] = outcome
tokens = sorted(set(m.decode() for m in TOKEN.findall(reply)))
if tokens:
    print("the abstract socket answered: %s" % " ".join(tokens))
sc.report(result)
sc.done(args)
