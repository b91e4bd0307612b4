"""Tries to load a kernel module (CAP_SYS_MODULE): a harmless invalid image, a few bytes that are not ELF.

init_module on garbage can never load anything: a kernel that lets the call past its permission
check rejects the image (ENOEXEC, EINVAL, EKEYREJECTED, ...), one that does not says EPERM. Which of
the two it said is the whole result, reported as a challenge-bound step line; nothing on the host
changes either way. The payload then holds still briefly so the host can read its capabilities.
"""
import errno
import sys

import sandcheck_payload as sc

IMAGE = b"sandcheck: not a module\x00" * 2


args = sc.start()
try:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
except (ImportError, OSError, AttributeError) as e:
    sc.escape_step("setup", "no-ctypes", type(e).__name__)
    sc.done(args)
    sys.exit(0)
NR_INIT_MODULE = {"x86_64": 175, "aarch64": 105}
import platform  # noqa: E402

nr = NR_INIT_MODULE.get(platform.machine())
if nr is None:
    sc.escape_step("setup", "unknown-arch", platform.machine())
else:
    buf = ctypes.create_string_buffer(IMAGE, len(IMAGE))
    rc = libc.syscall(ctypes.c_long(nr), buf, ctypes.c_ulong(len(IMAGE)), ctypes.c_char_p(b""))
    sc.escape_step("init_module", "ok" if rc == 0 else errno.errorcode.get(ctypes.get_errno(), "E?"), "%d garbage bytes" % len(IMAGE))
# Holds still (capped) until the host sampler has seen the program itself, whatever the machine load.
sc.hold(min(float(args.get("holdSeconds", 2)), 10.0))
sc.done(args)
