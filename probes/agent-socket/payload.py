"""Looks for the user's SSH agent socket where such sockets live and asks it for its identities.

Candidates: the host user's agent path (what a leaked SSH_AUTH_SOCK names), $SSH_AUTH_SOCK, the places
agents put their sockets (/tmp/ssh-*/agent.*, /run/user/*/..., Docker Desktop's
/run/host-services/ssh-auth.sock) and a bounded breadth-first walk of /tmp, /run, /var/tmp and the box's
mount points for agent-named sockets (a host /tmp bound at another path). Each gets an extension request
naming the nonce (agents answer FAILURE) and a request for identities; only decoy tokens of the answers are
printed. The report says whether the walk covered its whole scope, so a cut-short walk is never read as "none".
"""
import collections
import glob
import os
import re
import socket
import stat
import struct
import threading
import time

import sandcheck_payload as sc

args = sc.start()
NONCE = args["nonce"]
TOKEN = re.compile((args["canaryPrefix"] + r"[A-Za-z0-9]{8,}").encode())
AGENT_NAME = re.compile(r"^(agent\.\d+|.*ssh.*auth.*\.sock|S\.gpg-agent\.ssh|openssh_agent|ssh-agent\.sock)$")
END = time.monotonic() + float(args["walkSeconds"])
PSEUDO = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "tracefs", "debugfs", "securityfs", "bpf", "nsfs"}
SYSTEM = ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/boot", "/proc", "/sys", "/dev")


def s_(b):
    return struct.pack(">I", len(b)) + b


def message(kind, body=b""):
    return struct.pack(">IB", 1 + len(body), kind) + body


def read_message(s):
    head = b""
    while len(head) < 4:
        chunk = s.recv(4 - len(head))
        if not chunk:
            return b""
        head += chunk
    (n,) = struct.unpack(">I", head)
    body = b""
    while len(body) < min(n, 65536):
        chunk = s.recv(min(n, 65536) - len(body))
        if not chunk:
            break
        body += chunk
    return body


def ask_agent(path):
    """One routine for every candidate and the positive control alike: extension (nonce), then identities."""
    s = None
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(1.0)
        s.connect(path)
        s.sendall(message(27, s_(("sandcheck-%s@sandcheck.invalid" % NONCE).encode())))
        read_message(s)
        s.sendall(message(11))
        reply = read_message(s)
        return "connected, identities answer %d bytes" % len(reply), reply
    except OSError as e:
        return sc.refusal(e), b""
    finally:
        if s is not None:
            s.close()


def serve_control(server, comment):
    """The positive control: a tiny agent this box owns, holding one identity named with the control value."""
    try:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(1.0)
            for _ in range(2):
                body = read_message(conn)
                if not body:
                    return
                if body[:1] == b"\x0b":
                    blob = s_(b"ssh-ed25519") + s_(b"\x00" * 32)
                    conn.sendall(message(12, struct.pack(">I", 1) + s_(blob) + s_(comment)))
                else:
                    conn.sendall(message(5))
    except OSError:
        pass


with open(sc.control_path(), "rb") as fh:
    control_value = fh.read(256).strip()
control_path = os.path.abspath("agent-control.sock")
# A box whose seccomp filter refuses socket() gets no control agent: asking it then records the refusal.
server = None
try:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(control_path)
    server.listen(1)
    threading.Thread(target=serve_control, args=(server, control_value), daemon=True).start()
except OSError as e:
    print("control agent: %s" % sc.refusal(e))

candidates = [control_path]
if args.get("hostAgentSocket"):
    candidates.append(args["hostAgentSocket"])
if os.environ.get("SSH_AUTH_SOCK"):
    candidates.append(os.environ["SSH_AUTH_SOCK"])
for pattern in ("/tmp/ssh-*/agent.*", "/run/user/*/keyring/ssh", "/run/user/*/gnupg/S.gpg-agent.ssh", "/run/user/*/openssh_agent",
                "/run/host-services/ssh-auth.sock", "/ssh-agent", "/tmp/*/ssh-*/agent.*"):
    candidates += sorted(glob.glob(pattern))[:8]

# A host /tmp or /run bound at another path: walk the mount points that are not system trees.
roots = []
try:
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            left, _, right = line.partition(" - ")
            f = left.split()
            point = f[4] if len(f) >= 5 else "/"
            if right.split()[:1] and right.split()[0] not in PSEUDO and point != "/" and not any(point == p or point.startswith(p + "/") for p in SYSTEM):
                roots.append(point)
except OSError:
    pass
MAX_ENTRIES = 20000
PER_DIR = 4000
# Paths waiting in the queue: past this no more names are queued (the walk is then incomplete): bounded memory.
MAX_QUEUED = 30000
entries = 0
complete = True
# Breadth-first over all roots together: a crowded mount cannot use up the budget before a shallow /tmp.
queue = collections.deque((root, 0) for root in ["/tmp", "/run", "/var/tmp"] + roots)
seen_dirs = set()
while queue:
    if entries >= MAX_ENTRIES or time.monotonic() > END:
        complete = False
        break
    path, depth = queue.popleft()
    try:
        st = os.lstat(path)
    except OSError:
        continue
    entries += 1
    if stat.S_ISSOCK(st.st_mode) and AGENT_NAME.match(os.path.basename(path)):
        candidates.append(path)
    elif stat.S_ISDIR(st.st_mode) and depth < 4 and (st.st_dev, st.st_ino) not in seen_dirs:
        seen_dirs.add((st.st_dev, st.st_ino))
        try:
            names = sorted(os.listdir(path))
        except OSError:
            continue
        if len(queue) + min(len(names), PER_DIR) > MAX_QUEUED:
            # Full: what is queued (everything shallower) is still visited; this directory's names are not.
            complete = False
            continue
        if len(names) > PER_DIR:
            complete = False
        queue.extend((os.path.join(path, n), depth + 1) for n in names[:PER_DIR])

unique = []
seen = set()
for path in candidates:
    try:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
    except OSError:
        key = path
    if key not in seen:
        seen.add(key)
        unique.append(path)
MAX_ASKED = 24
results = {}
# The host user's agent at its host path: whether the box sees it there, and what asking it gave.
host_path = args.get("hostAgentSocket") or ""
host_seen = "not asked"
host_inode = None
for path in unique[:MAX_ASKED]:
    outcome, reply = ask_agent(path)
    if host_path and path == host_path:
        try:
            st = os.stat(path)
            host_seen = ("socket there, " if stat.S_ISSOCK(st.st_mode) else "not a socket there, ") + outcome
            # The harness compares it with the decoy's own inode: a refusal counts only at the decoy itself.
            host_inode = st.st_ino
        except OSError as e:
            host_seen = "not there: " + sc.refusal(e)
    tokens = sorted(set(m.decode() for m in TOKEN.findall(reply)))
    name = "(in-box positive control)" if path == control_path else ".../" + "/".join(path.split("/")[-2:])
    if tokens:
        print("agent %s holds identities named: %s" % (name, " ".join(tokens)))
    results[name] = outcome
if server is not None:
    server.close()
sc.report({"agents": results, "hostPath": host_seen, "hostPathInode": host_inode, "walk": {"entries": entries, "complete": complete and len(unique) <= MAX_ASKED}})
sc.done(args)
