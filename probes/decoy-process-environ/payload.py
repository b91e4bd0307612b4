"""Reads the environment and command line of a host decoy process; prints only decoy-prefixed values."""
import sandcheck_payload as sc

args = sc.start()
pid = int(args["pid"])
prefix = args["canaryPrefix"].encode()
result = {}
for name in ("environ", "cmdline"):
    try:
        with open("/proc/%d/%s" % (pid, name), "rb") as fh:
            data = fh.read(256 * 1024)
        result[name] = "read %d bytes" % len(data)
        for entry in data.split(b"\0"):
            if prefix in entry:
                print("%s of decoy: %s" % (name, entry.decode("utf-8", "replace")))
    except OSError as e:
        result[name] = str(e.strerror)
sc.report(result)
sc.done(args)
