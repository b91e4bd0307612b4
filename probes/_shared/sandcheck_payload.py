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
import signal
import sys
import time

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
    # The host asked to see this process (its cgroups) before the attack starts: released as soon as it has.
    wait = float(args.get("holdUntilSeen", 0) or 0)
    if wait > 0:
        hold(min(wait, 5.0))
    return args


def hold(seconds):
    """Holds still at most `seconds` so the host can look at this process from outside. A host that has looked
    (probe releaseWhenSeen) sends SIGURG, ignored by default: blocked here, it ends the wait early."""
    try:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGURG})
        signal.sigtimedwait({signal.SIGURG}, seconds)
    except (AttributeError, OSError):
        # A box that refuses the signal calls still holds the whole time.
        time.sleep(seconds)


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


def _exchange(s, data, read, half_close=False):
    """Sends `data` (if any) on a connected stream socket and reads until `read` bytes, the peer's end or the timeout.
    half_close: shut the sending side after `data` (a DNS/TCP server then answers and closes: no wait for the timeout)."""
    reply = b""
    if data:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
    try:
        while len(reply) < read:
            chunk = s.recv(read - len(reply))
            if not chunk:
                break
            reply += chunk
    except socket.timeout:
        pass
    return reply


def stream_try(family, address, data=None, timeout=1.5, read=4096, half_close=False):
    """Connects a stream socket, optionally sends `data`, reads one reply. Returns (outcome, reply bytes).

    socket() itself is inside the try: a seccomp filter that refuses the call (codex sandbox, srt) is a
    refusal recorded with its errno, like a refused connect, not a traceback that ends the attempt.
    """
    s = None
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(address)
        return "connected", (b"" if data is None else _exchange(s, data, read, half_close))
    except OSError as e:
        return "error: %s" % refusal(e), b""
    finally:
        if s is not None:
            s.close()


def tcp_try(host, port, data=None, timeout=1.5, read=4096, half_close=False):
    """Connects, optionally sends `data`, reads one reply. Returns (outcome, reply bytes)."""
    return stream_try(_family(host), (host, port), data, timeout, read, half_close)


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


# --- proxies and DNS by hand (the allowlist probes): every attempt bounded like the rest ---

import struct  # noqa: E402

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def proxies_from_env():
    """The proxies the box was given (srt and other proxy-based sandboxes set these): [(var, scheme, host, port, auth)],
    no repeats; auth is (user, password) from the URL or None (srt's proxies want the per-session one they were given)."""
    from urllib.parse import unquote, urlsplit

    seen, out = set(), []
    for var in PROXY_VARS:
        value = os.environ.get(var, "").strip()
        try:
            url = urlsplit(value if "://" in value else "http://" + value)
            scheme, host, port = url.scheme.lower().replace("socks5h", "socks5"), url.hostname, url.port
            auth = (unquote(url.username or ""), unquote(url.password or "")) if url.username is not None else None
        except ValueError:
            continue
        if not value or not host or port is None or scheme not in ("http", "socks5"):
            continue
        if (scheme, host, port) not in seen:
            seen.add((scheme, host, port))
            out.append((var, scheme, host, port, auth))
    return out


def proxy_auth_header(auth):
    if not auth:
        return ""
    import base64

    return "Proxy-Authorization: Basic %s\r\n" % base64.b64encode(("%s:%s" % auth).encode()).decode()


def with_proxy_auth(request, auth):
    """An HTTP request with the proxy's credentials added after its request line."""
    if not auth:
        return request
    line, _, rest = request.partition(b"\r\n")
    return line + b"\r\n" + proxy_auth_header(auth).encode() + rest


def tunnel_try(proxy, host, port, data, timeout=2.0, read=4096, half_close=False):
    """Through proxy (scheme, host, port, auth): CONNECT (http) or a SOCKS5 connect by name to host:port, then send data.

    Returns (outcome, reply bytes): the proxy's own answer to the CONNECT is part of the outcome.
    """
    scheme, phost, pport, auth = proxy
    s = None
    try:
        s = socket.socket(_family(phost), socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect((phost, pport))
        if scheme == "http":
            authority = "[%s]:%d" % (host, port) if ":" in host else "%s:%d" % (host, port)
            s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (authority, authority, proxy_auth_header(auth))).encode())
            head = b""
            while b"\r\n\r\n" not in head and len(head) < 4096:
                chunk = s.recv(4096)
                if not chunk:
                    break
                head += chunk
            status = head.split(b"\r\n", 1)[0].decode("latin-1", "replace")
            if " 200" not in status:
                return "proxy refused: %s" % (status[:80] or "no answer"), b""
            rest = head.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in head else b""
        else:
            s.sendall(b"\x05\x02\x00\x02" if auth else b"\x05\x01\x00")
            method = s.recv(2)
            if auth and method == b"\x05\x02":
                user, password = auth[0].encode(), auth[1].encode()
                s.sendall(b"\x01" + bytes([len(user)]) + user + bytes([len(password)]) + password)
                if s.recv(2) != b"\x01\x00":
                    return "proxy refused: socks5 authentication", b""
            elif method != b"\x05\x00":
                return "proxy refused: socks5 greeting %r" % method, b""
            name = host.encode()
            s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack("!H", port))
            answer = s.recv(262)
            if len(answer) < 2 or answer[1] != 0:
                return "proxy refused: socks5 reply %s" % (answer[1] if len(answer) > 1 else "none"), b""
            rest = b""
        return "tunnelled", rest + _exchange(s, data, read, half_close)
    except OSError as e:
        return "error: %s" % refusal(e), b""
    finally:
        if s is not None:
            s.close()


def dns_query(name, qtype=1, ident=0x5C5C):
    """A DNS query message for `name` (A by default), recursion desired."""
    header = struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0)
    question = b"".join(bytes([len(p)]) + p.encode() for p in name.split(".") if p) + b"\0" + struct.pack("!HH", qtype, 1)
    return header + question


def dns_tcp_frame(name):
    q = dns_query(name)
    return struct.pack("!H", len(q)) + q


def first_a_record(message):
    """The first A record of a DNS response (UDP message, no TCP length prefix), or None."""
    try:
        count = struct.unpack("!H", message[6:8])[0]
        i = 12
        while message[i] != 0:
            i += 1 + message[i]
        i += 5
        for _ in range(count):
            if message[i] & 0xC0 == 0xC0:
                i += 2
            else:
                while message[i] != 0:
                    i += 1 + message[i]
                i += 1
            rtype, _, _, length = struct.unpack("!HHIH", message[i:i + 10])
            i += 10
            if rtype == 1 and length == 4:
                return socket.inet_ntoa(message[i:i + 4])
            i += length
    except (IndexError, struct.error, OSError):
        pass
    return None


def resolve_a(name, resolver, timeout=1.0):
    """The box's own resolution of `name` (getaddrinfo); when that fails, one raw query to `resolver`. Returns (address or None, how)."""
    try:
        return socket.getaddrinfo(name, 80, socket.AF_INET, socket.SOCK_STREAM)[0][4][0], "getaddrinfo"
    except OSError as e:
        first = refusal(e)
    s = None
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.settimeout(timeout)
        s.sendto(dns_query(name), (resolver, 53))
        return first_a_record(s.recvfrom(2048)[0]), "getaddrinfo failed (%s); raw query to %s" % (first, resolver)
    except OSError as e:
        return None, "getaddrinfo failed (%s); raw query to %s: %s" % (first, resolver, refusal(e))
    finally:
        if s is not None:
            s.close()


def http_get_bytes(host_header, path):
    return ("GET %s HTTP/1.0\r\nHost: %s\r\nUser-Agent: sandcheck\r\n\r\n" % (path, host_header)).encode()


def status_of(reply):
    """What a reply was, without its content: the first line (HTTP) or its size."""
    if reply.startswith(b"HTTP/"):
        return "%s (%d bytes)" % (reply.split(b"\r\n", 1)[0].decode("latin-1", "replace")[:60], len(reply))
    return "%d bytes" % len(reply)


def route_attempts(label, host, port, data, absolute=None, direct=True, extra_proxies=(), half_close=False):
    """Sends `data` to host:port directly, then through every proxy (the box's own from its environment, then
    `extra_proxies` as (scheme, host, port)): a tunnel (CONNECT or SOCKS5), and for an HTTP proxy also `absolute`,
    a request with an absolute URI, sent to the proxy as it is."""
    if direct:
        outcome, reply = tcp_try(host, port, data, half_close=half_close)
        print("%s direct %s:%d: %s %s" % (label, host, port, outcome, status_of(reply)))
    proxies = proxies_from_env() + [("lab",) + tuple(p) + (None,) for p in extra_proxies]
    for var, scheme, phost, pport, auth in proxies:
        outcome, reply = tunnel_try((scheme, phost, pport, auth), host, port, data, half_close=half_close)
        print("%s via %s %s://%s:%d tunnel to %s:%d: %s %s" % (label, var, scheme, phost, pport, host, port, outcome, status_of(reply)))
        if scheme == "http" and absolute is not None:
            outcome, reply = tcp_try(phost, pport, with_proxy_auth(absolute, auth))
            print("%s via %s %s://%s:%d absolute URI: %s %s" % (label, var, scheme, phost, pport, outcome, status_of(reply)))


def wait_for_proxies(ceiling=5.0):
    """Waits (at most `ceiling` seconds) until every proxy the box was given accepts a connection: a sandbox may start
    the bridge to its proxy beside the program (srt does), and an attempt made before it listens shows nothing."""
    for var, _scheme, host, port, _auth in proxies_from_env():
        start = time.monotonic()
        while True:
            try:
                socket.create_connection((host, port), timeout=1).close()
                print("proxy %s %s:%d accepts after %d ms" % (var, host, port, (time.monotonic() - start) * 1000))
                break
            except OSError as e:
                if time.monotonic() - start >= ceiling:
                    print("proxy %s %s:%d still refuses after %d ms: %s" % (var, host, port, ceiling * 1000, e))
                    break
                time.sleep(0.05)


def allowlist_control(args):
    """The positive control of the allowlist probes: a marked request to the allowed destination, directly and through every proxy."""
    control = args.get("control")
    if not control:
        print("control: the allowlist names no destination a lab canary answers")
        return
    wait_for_proxies()
    host = control.get("name") or control["address"]
    path = "/%s-control" % args["marker"]
    route_attempts("control", control["address"], control["port"], http_get_bytes(host, path), direct=True)
    if control.get("name"):
        absolute = http_get_bytes(host, "http://%s:%d%s" % (host, control["port"], path))
        route_attempts("control-by-name", control["name"], control["port"], http_get_bytes(host, path), absolute, direct=False)


# ---------------------------------------------------------------- memory that is really resident

import mmap  # noqa: E402

_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def _resident_bytes():
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return -1


def resident_block(size):
    """An anonymous mapping of `size` bytes whose pages are resident. The kernel faults them in at once
    (MAP_POPULATE): a byte-by-byte fill takes seconds per GiB on a busy machine, past a 5 s wall limit.
    Where they did not become resident (no MAP_POPULATE, a runtime that ignores it) they are written,
    so a box cannot skip the allocation."""
    before = _resident_bytes()
    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _POPULATE)
    if not _POPULATE or before < 0 or _resident_bytes() - before < size // 2:
        block[:] = b"\x01" * size
    return block
