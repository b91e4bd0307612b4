"""Plausible but wrong: every bar has the right height, but hangs from the top edge instead of standing on the baseline."""
import json
import struct
import zlib

import sandcheck_payload as sc

WIDTH, HEIGHT = 200, 100
SERIES = "values"

args = sc.start()
with open("input/series.json") as fh:
    BARS = json.load(fh)[SERIES]
rows = []
bar_w = WIDTH // len(BARS)
for y in range(HEIGHT):
    row = bytearray([0])  # filter: none
    for x in range(WIDTH):
        value = BARS[min(x // bar_w, len(BARS) - 1)]
        filled = y < value and x % bar_w != 0
        row += bytes((40, 90, 200) if filled else (255, 255, 255))
    rows.append(bytes(row))


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", WIDTH, HEIGHT, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b"")
with open("chart.png", "wb") as fh:
    fh.write(png)
sc.done(args)
