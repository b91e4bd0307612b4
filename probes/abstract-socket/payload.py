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
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect("\0" + name)
        s.sendall(("GET /?sandcheck=%s HTTP/1.0\r\n\r\n" % args["nonce"]).encode())
        reply = b""
        try:
            while len(reply) < 1024:
                chunk = s.recv(1024 - len(reply))
                if not chunk:
                    break
                reply += chunk
        except socket.timeout:
            pass
        return "connected, %d reply bytes" % len(reply), reply
    except OSError as e:
        return e.strerror or str(e), b""
    finally:
        s.close()


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
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    server.bind("\0" + control_name)
    server.listen(1)
    threading.Thread(target=serve, args=(server,), daemon=True).start()
    result["(in-box positive control)"], reply = talk(control_name)
    if CONTROL_REPLY in reply:
        print("control socket answered: %s" % CONTROL_REPLY.decode())
except OSError as e:
    result["(in-box positive control)"] = e.strerror or str(e)
finally:
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
