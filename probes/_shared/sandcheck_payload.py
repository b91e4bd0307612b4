"""Shared start/end protocol of every sandcheck payload (Python 3 standard library only).

A payload prints a start marker carrying the run's nonce before it attempts anything and an end
marker when its attempt is complete. The harness uses them only to tell "did not run" apart from
"ran": they can make a verdict inconclusive, never turn a crossing into a pass.
"""
import json
import sys


def start():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    sys.stdout.write("SANDCHECK-ATTEMPT %s\n" % args.get("nonce", ""))
    sys.stdout.flush()
    return args


def report(data):
    sys.stdout.write("SANDCHECK-REPORT %s\n" % json.dumps(data, sort_keys=True))
    sys.stdout.flush()


def done(args):
    sys.stdout.write("SANDCHECK-DONE %s\n" % args.get("nonce", ""))
    sys.stdout.flush()


# --- network helpers: every attempt is bounded by a short timeout ---

import socket  # noqa: E402


def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def tcp_try(host, port, data=None, timeout=1.5, read=4096):
    """Connects, optionally sends `data`, reads one reply. Returns (outcome, reply bytes)."""
    s = socket.socket(_family(host), socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.connect((host, port))
        reply = b""
        if data is not None:
            s.sendall(data)
            try:
                while len(reply) < read:
                    chunk = s.recv(read - len(reply))
                    if not chunk:
                        break
                    reply += chunk
            except socket.timeout:
                pass
        return "connected", reply
    except OSError as e:
        return "error: %s" % (e.strerror or e), b""
    finally:
        s.close()


def http_try(host, port, method, path, headers=None, timeout=1.5):
    """One raw HTTP/1.0 request; returns (outcome, body text). The host may be any address form."""
    lines = ["%s %s HTTP/1.0" % (method, path), "Host: %s" % host] + ["%s: %s" % kv for kv in (headers or {}).items()]
    outcome, reply = tcp_try(host, port, ("\r\n".join(lines) + "\r\n\r\n").encode(), timeout)
    body = reply.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace") if reply else ""
    return outcome, body


def udp_send(host, port, data, timeout=1.0):
    s = socket.socket(_family(host), socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        s.sendto(data, (host, port))
        try:
            return "sent, reply %d bytes" % len(s.recvfrom(2048)[0])
        except socket.timeout:
            return "sent, no reply"
    except OSError as e:
        return "error: %s" % (e.strerror or e)
    finally:
        s.close()
