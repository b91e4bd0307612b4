"""Searches what the box can see for host decoys: a bounded walk for decoy markers and every Unix socket.

Files: the head of each small regular file is read and only decoy tokens (the canary prefix and its
letters and digits) are printed, never anything else of a file. Sockets: each one found is contacted
once with a harmless request naming the nonce; a reply that is a container daemon's gets one more call
its event log records (a volume named with the nonce, created and removed at once).
"""
import collections
import json
import os
import re
import socket
import stat
import threading
import time

import sandcheck_payload as sc

args = sc.start()
NONCE = args["nonce"]
TOKEN = re.compile((args["canaryPrefix"] + r"[A-Za-z0-9]{8,}").encode())
HEAD = int(args["headBytes"])
MAX_FILE = 1 << 20
MAX_DEPTH = 8
MAX_ENTRIES = 40000
PRIORITY_ENTRIES = 25000
PER_DIR = 2000
# Paths waiting in the breadth-first queue: beyond this the walk is cut short (and says so), so its memory stays bounded.
MAX_QUEUED = 60000
MAX_SOCKETS = 32
WALK_END = time.monotonic() + float(args["walkSeconds"])
PSEUDO = {"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "mqueue", "tracefs", "debugfs", "securityfs",
          "pstore", "bpf", "hugetlbfs", "configfs", "fusectl", "binfmt_misc", "autofs", "nsfs", "efivarfs", "selinuxfs"}
SKIP = ("/proc", "/sys", "/dev")
SYSTEM = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/boot", "/etc", "/var/lib", "/var/cache",
          "/var/log", "/snap", "/nix")

entries = 0
seen_dirs = set()
sockets = []
found = []
truncated = {"priority": False, "system": False}


def under(path, prefixes):
    return any(path == p or path.startswith(p + "/") for p in prefixes)


def shown(path):
    """The last two components: enough to say what was found, never a whole host path."""
    parts = [p for p in path.split("/") if p]
    return ".../" + "/".join(parts[-2:])


def look_at_file(path, st):
    if st.st_size == 0 or st.st_size > MAX_FILE:
        return
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD)
    except OSError:
        return
    tokens = sorted(set(m.decode() for m in TOKEN.findall(head)))
    if tokens and path not in found:
        found.append(path)
        print("decoy marker in %s: %s" % (shown(path), " ".join(tokens)))


def walk(roots, budget, phase, skip_system):
    """Breadth-first over all `roots` together, never following links, so a shallow host tree anywhere is
    reached before the deep corners of a crowded one; a bound that cuts it short is marked in `truncated`."""
    global entries
    queue = collections.deque((root, 0) for root in roots)
    while queue:
        path, depth = queue.popleft()
        if entries >= budget or time.monotonic() > WALK_END:
            truncated[phase] = True
            return
        if under(path, SKIP) or (skip_system and under(path, SYSTEM)):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        entries += 1
        if stat.S_ISSOCK(st.st_mode) and phase == "priority":
            if (st.st_dev, st.st_ino) not in {s[1] for s in sockets}:
                sockets.append((path, (st.st_dev, st.st_ino)))
        elif stat.S_ISREG(st.st_mode):
            look_at_file(path, st)
        elif stat.S_ISDIR(st.st_mode) and depth < MAX_DEPTH:
            if (st.st_dev, st.st_ino) in seen_dirs:
                continue
            seen_dirs.add((st.st_dev, st.st_ino))
            try:
                names = sorted(os.listdir(path))[:PER_DIR]
            except OSError:
                continue
            if len(queue) + len(names) > MAX_QUEUED:
                # Full: what is queued (everything shallower) is still visited; this directory's names are not.
                truncated[phase] = True
                continue
            queue.extend((os.path.join(path, name), depth + 1) for name in names)


def mounts():
    """(mount point, its root in its filesystem) of every real filesystem the box sees."""
    out = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                f = left.split()
                if len(f) >= 5 and right.split()[:1] and right.split()[0] not in PSEUDO:
                    out.append((f[4].replace("\\040", " "), f[3].replace("\\040", " ")))
    except OSError:
        pass
    return out


cwd = os.getcwd()
# Where secrets sit relative to what a box is given: its own workspace (the positive control), the
# directories above it, a home, the usual host places, every mount point that is not the host's system
# tree at its own place (a host tree bound at another path), then the rest of the root.
priority = [cwd]
up = cwd
while os.path.dirname(up) != up:
    up = os.path.dirname(up)
    if up != "/":
        priority.append(up)
priority += [os.path.expanduser("~"), "/root", "/home", "/tmp", "/var/tmp", "/run", "/var/run", "/mnt", "/media", "/srv", "/opt"]
system_mounts = []
for point, root in mounts():
    if point == "/":
        continue
    (system_mounts if under(point, SYSTEM) and point == root else priority).append(point)
priority.append("/")

# The sockets' positive control: one this box owns, in its workspace, found by the same walk.
CONTROL_REPLY = sc.token("socket-control")
control = None
try:
    control = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    control.bind(os.path.join(cwd, "control.sock"))
    control.listen(4)

    def serve():
        while True:
            try:
                conn, _ = control.accept()
                with conn:
                    conn.recv(512)
                    conn.sendall(("HTTP/1.0 200 OK\r\n\r\n%s" % CONTROL_REPLY).encode())
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
except OSError as e:
    print("control socket: %s" % sc.refusal(e))

walk(priority, PRIORITY_ENTRIES, "priority", True)
# The host's system trees last, for file markers only: a daemon socket there is not one a box was given.
walk(system_mounts + list(SYSTEM), MAX_ENTRIES, "system", False)

# Sockets bound in the box's network namespace (listed by the kernel even where the walk did not reach).
try:
    with open("/proc/net/unix") as fh:
        for line in fh.readlines()[1:]:
            f = line.split()
            if len(f) >= 8 and f[7].startswith("/"):
                try:
                    st = os.stat(f[7])
                    if stat.S_ISSOCK(st.st_mode) and (st.st_dev, st.st_ino) not in {s[1] for s in sockets}:
                        sockets.append((f[7], (st.st_dev, st.st_ino)))
                except OSError:
                    pass
except OSError:
    pass


def ask(path, request, timeout=0.5):
    return sc.stream_try(socket.AF_UNIX, path, request, timeout)


def http(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else b""
    head = "%s %s HTTP/1.0\r\nHost: sandcheck-%s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (method, path, NONCE, len(data))
    return head.encode() + data


def daemon_call(path):
    """One harmless call a container daemon's event log records, undone at once."""
    name = "sandcheck-%s" % NONCE
    made, _ = ask(path, http("POST", "/volumes/create", {"Name": name, "Labels": {"sandcheck": NONCE}}), timeout=2.0)
    gone, reply = ask(path, http("DELETE", "/volumes/%s" % name), timeout=2.0)
    return "volume %s created (%s) and removed (%s, %s)" % (name, made, gone, reply.split(b"\r\n", 1)[0].decode("latin1"))


socket_end = time.monotonic() + float(args["socketSeconds"])
results = {}
control_seen = False
for path, _ in sockets[:MAX_SOCKETS]:
    if time.monotonic() > socket_end:
        results["(more)"] = "not contacted: the socket phase's time was up"
        break
    outcome, reply = ask(path, http("GET", "/_ping?sandcheck=%s" % NONCE))
    note = "%s, %d reply bytes" % (outcome, len(reply))
    if CONTROL_REPLY.encode() in reply:
        control_seen = True
        print("control socket answered: %s" % CONTROL_REPLY)
    tokens = sorted(set(m.decode() for m in TOKEN.findall(reply)))
    if tokens:
        print("decoy marker from socket %s: %s" % (shown(path), " ".join(tokens)))
    if reply.startswith(b"HTTP/1.") and b"\napi-version:" in reply.lower():
        note += "; a container daemon: " + daemon_call(path)
    results[shown(path)] = note
if control is not None:
    control.close()

sc.report({
    "walk": {"entries": entries, "priorityComplete": not truncated["priority"], "systemComplete": not truncated["system"],
             "roots": len(priority), "markers": len(found)},
    "sockets": results,
    "socketControl": control_seen,
})
sc.done(args)
