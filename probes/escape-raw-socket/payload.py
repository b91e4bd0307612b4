"""Sends UDP datagrams with a forged source address to a lab decoy through raw sockets (CAP_NET_RAW).

Two ways: an IPv4 raw socket writing its own header (IPPROTO_RAW) and a packet socket writing a
whole frame on the loopback link. Each carries a source address and port the harness chose for this
execution (a documentation address no interface has), so the lab's packet witness can tell a forged
packet from anything else. One datagram each, a few bytes; every outcome is a challenge-bound step line.
"""
import socket
import struct

import sandcheck_payload as sc


def checksum(data):
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    total += total >> 16
    return ~total & 0xFFFF


def datagram(src, sport, dst, dport, payload):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    head = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0x5C5C, 0, 64, socket.IPPROTO_UDP, 0, socket.inet_aton(src), socket.inet_aton(dst))
    return head[:10] + struct.pack("!H", checksum(head)) + head[12:] + udp


args = sc.start()
dst, dport = args["target"], int(args["port"])
body = ("sandcheck forged %s" % args["nonce"]).encode()

try:
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    try:
        s.sendto(datagram(args["rawSrc"], int(args["rawPort"]), dst, dport, body), (dst, 0))
        sc.escape_step("raw-ip", "ok", "sent")
    finally:
        s.close()
except OSError as e:
    sc.escape_step("raw-ip", sc.errname(e))

try:
    p = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800))
    try:
        p.bind(("lo", 0))
        frame = b"\x00" * 12 + struct.pack("!H", 0x0800) + datagram(args["packetSrc"], int(args["packetPort"]), dst, dport, body)
        p.send(frame)
        sc.escape_step("packet", "ok", "sent on lo")
    finally:
        p.close()
except (OSError, AttributeError) as e:
    sc.escape_step("packet", sc.errname(e) if isinstance(e, OSError) else "no-af-packet")
# The positive control: one unforged datagram from this execution's control port. A forged one sent but never seen
# means the path stopped it only if the witness saw this one.
try:
    c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        c.bind(("0.0.0.0", int(args["controlPort"])))
        c.sendto(("sandcheck control %s" % args["nonce"]).encode(), (dst, dport))
        sc.escape_step("control", "ok", "sent")
    finally:
        c.close()
except OSError as e:
    sc.escape_step("control", sc.errname(e))
sc.done(args)
