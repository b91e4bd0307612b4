"""Looks for container-daemon sockets and talks to any it can reach (a harmless ping carrying the nonce)."""
import os
import socket
import threading

import sandcheck_payload as sc


def talk(path, label):
    """One connect-send-read routine for the daemon sockets and the in-box positive control alike."""
    s = None
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        s.connect(path)
        s.sendall(("GET /_ping?sandcheck=%s HTTP/1.0\r\n\r\n" % label).encode())
        reply = s.recv(256)
        return "connected, %d reply bytes" % len(reply), reply
    except OSError as e:
        return sc.refusal(e), b""
    finally:
        if s is not None:
            s.close()


def echo_once(server):
    try:
        conn, _ = server.accept()
        with conn:
            conn.sendall(conn.recv(256))
    except OSError:
        pass


args = sc.start()
# Positive control: a socket this box owns answers through the same routine; its echo (the
# answer to this execution's challenge) must come out, or "nothing connected" proves nothing.
control_path = os.path.abspath("control.sock")
server = None
try:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(control_path)
    server.listen(1)
    threading.Thread(target=echo_once, args=(server,), daemon=True).start()
    _, echoed = talk(control_path, sc.token("socket-control"))
    print("control socket echoed: %s" % echoed.decode("utf-8", "replace").split("\r\n")[0])
except OSError as e:
    print("control socket: %s" % sc.refusal(e))
finally:
    if server is not None:
        server.close()
paths = [
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/var/run/crio/crio.sock",
    args["decoySocket"],
]
result = {}
for path in paths:
    shown = "host decoy socket" if path == args["decoySocket"] else path  # no host path in a report
    result[shown] = talk(path, args["nonce"])[0]
sc.report(result)
sc.done(args)
