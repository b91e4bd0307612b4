"""Shared start/end protocol of every sandcheck payload (Python 3 standard library only).

Proof of execution: the harness leaves a fresh random challenge in the file `sandcheck-challenge`
beside the payload (never in argv or the environment). The payload answers with a value derived
from that challenge and from the sha256 of its own source and of this helper, first when it
starts its attempt and again when the attempt is complete. Only code that read the challenge
inside the box can answer; the harness uses the answers to tell "did not run" from "ran" and they
can make a verdict inconclusive, never turn a crossing into a pass.
"""
import hashlib
import json
import os
import sys

CHALLENGE_FILE = "sandcheck-challenge"
CONTROL_FILE = "sandcheck-control"
CONTROL_ENV = "SANDCHECK_POSITIVE_CONTROL"

_HERE = os.path.dirname(os.path.abspath(sys.argv[0] if sys.argv and sys.argv[0] else __file__))
_proofs = {}


def _sha256_file(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _load_proof_base():
    with open(os.path.join(_HERE, CHALLENGE_FILE), "rb") as fh:
        challenge = fh.read(256).strip().decode("ascii", "replace")
    own = _sha256_file(os.path.abspath(sys.argv[0]))
    helper = _sha256_file(os.path.abspath(__file__))
    return "%s:%s:%s" % (challenge, own, helper)


def token(kind):
    """The answer to this execution's challenge for one purpose (attempt, done, or a probe's own)."""
    if kind not in _proofs:
        base = _proofs.setdefault("", _load_proof_base())
        _proofs[kind] = hashlib.sha256(("%s:%s" % (base, kind)).encode()).hexdigest()[:32]
    return _proofs[kind]


def start():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    token("done")  # computed before the attack, which may chdir, exhaust memory or close files
    sys.stdout.write("SANDCHECK-ATTEMPT %s\n" % token("attempt"))
    sys.stdout.flush()
    return args


def control_path():
    """The in-box positive control file: readable by design, read the same way as the target."""
    return os.path.join(_HERE, CONTROL_FILE)


def report(data):
    sys.stdout.write("SANDCHECK-REPORT %s\n" % json.dumps(data, sort_keys=True))
    sys.stdout.flush()


def done(args):
    sys.stdout.write("SANDCHECK-DONE %s\n" % token("done"))
    sys.stdout.flush()


def escape_step(name, outcome, target=None):
    """One step of an escape attempt, signed with this execution's challenge (probes/_shared/escapes.ts reads it)."""
    line = {"step": name, "outcome": outcome}
    if target is not None:
        line["target"] = str(target)[:300]
    sys.stdout.write("SANDCHECK-ESCAPE %s %s\n" % (token("escape"), json.dumps(line, sort_keys=True)))
    sys.stdout.flush()


# --- network helpers: every attempt is bounded by a short timeout ---

import errno  # noqa: E402
import socket  # noqa: E402


def _family(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def errname(e):
    """An OSError's errno name (EACCES), or E<number> for one Python does not name."""
    return errno.errorcode.get(e.errno or 0, "E%s" % e.errno)


def refusal(e):
    """An OSError as a payload records it: the kernel's text and errno name ("Operation not permitted (EPERM)")."""
    name = errno.errorcode.get(e.errno) if isinstance(e.errno, int) else None
    text = e.strerror or str(e)
    return "%s (%s)" % (text, name) if name else text


def stream_try(family, address, data=None, timeout=1.5, read=4096):
    """Connects a stream socket, optionally sends `data`, reads one reply. Returns (outcome, reply bytes).

    socket() itself is inside the try: a seccomp filter that refuses the call (codex sandbox, srt) is a
    refusal recorded with its errno, like a refused connect, not a traceback that ends the attempt.
    """
    s = None
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(address)
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
        return "error: %s" % refusal(e), b""
    finally:
        if s is not None:
            s.close()


def tcp_try(host, port, data=None, timeout=1.5, read=4096):
    """Connects, optionally sends `data`, reads one reply. Returns (outcome, reply bytes)."""
    return stream_try(_family(host), (host, port), data, timeout, read)


def http_try(host, port, method, path, headers=None, timeout=1.5):
    """One raw HTTP/1.0 request; returns (outcome, body text). The host may be any address form."""
    lines = ["%s %s HTTP/1.0" % (method, path), "Host: %s" % host] + ["%s: %s" % kv for kv in (headers or {}).items()]
    outcome, reply = tcp_try(host, port, ("\r\n".join(lines) + "\r\n\r\n").encode(), timeout)
    body = reply.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace") if reply else ""
    return outcome, body


def udp_send(host, port, data, timeout=1.0):
    s = None
    try:
        s = socket.socket(_family(host), socket.SOCK_DGRAM)
        s.settimeout(timeout)
        s.sendto(data, (host, port))
        try:
            return "sent, reply %d bytes" % len(s.recvfrom(2048)[0])
        except socket.timeout:
            return "sent, no reply"
    except OSError as e:
        return "error: %s" % refusal(e)
    finally:
        if s is not None:
            s.close()
