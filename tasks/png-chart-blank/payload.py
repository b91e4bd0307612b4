"""Plausible but wrong: a valid 200×100 PNG, all white (the plotting step silently drew nothing)."""
import struct
import zlib

import sandcheck_payload as sc

WIDTH, HEIGHT = 200, 100

args = sc.start()
raw = b"".join(b"\x00" + b"\xff" * (WIDTH * 3) for _ in range(HEIGHT))


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
with open("chart.png", "wb") as fh:
    fh.write(png)
print("chart.png written (200x100)")
sc.done(args)
