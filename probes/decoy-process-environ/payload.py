"""Reads the environment and command line of a host decoy process; prints only decoy-prefixed values."""
import sandcheck_payload as sc

args = sc.start()
pid = int(args["pid"])
prefix = args["canaryPrefix"].encode()
result = {}
# "self" first: the in-box positive control sits in this program's own environment and must come
# out through the same reads and prints as the decoy's.
for who, target in (("self", "self"), ("decoy", str(pid))):
    for name in ("environ", "cmdline"):
        try:
            with open("/proc/%s/%s" % (target, name), "rb") as fh:
                data = fh.read(256 * 1024)
            result["%s %s" % (who, name)] = "read %d bytes" % len(data)
            for entry in data.split(b"\0"):
                if prefix in entry:
                    print("%s of %s: %s" % (name, who, entry.decode("utf-8", "replace")))
        except OSError as e:
            result["%s %s" % (who, name)] = str(e.strerror)
sc.report(result)
sc.done(args)
