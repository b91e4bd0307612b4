"""Sends an ICMP echo request (raw socket, or the unprivileged ping socket when that is all there is)."""
import socket
import struct

import sandcheck_payload as sc


def checksum(data):
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    total = (total >> 16) + (total & 0xFFFF)
    return ~(total + (total >> 16)) & 0xFFFF


args = sc.start()
host = args["address"]
packet = struct.pack("!BBHHH", 8, 0, 0, 0x5C5C, 1) + b"sandcheck-ping-" + args["nonce"].encode()
packet = packet[:2] + struct.pack("!H", checksum(packet + b"\0" * (len(packet) % 2))) + packet[4:]
result = "not sent"
for kind in (socket.SOCK_RAW, socket.SOCK_DGRAM):
    try:
        s = socket.socket(socket.AF_INET, kind, socket.IPPROTO_ICMP)
        s.settimeout(1.0)
        s.sendto(packet, (host, 0))
        try:
            s.recvfrom(1024)
            result = "echo sent (%s), reply received" % ("raw" if kind == socket.SOCK_RAW else "ping socket")
        except socket.timeout:
            result = "echo sent, no reply"
        s.close()
        break
    except OSError as e:
        result = "error: %s" % (e.strerror or e)
print("ping %s: %s" % (host, result))
sc.done(args)
