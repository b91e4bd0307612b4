"""A connection to an allowed destination that names a denied one: Host header and TLS SNI (domain fronting).

Sent to the lab's fronting proxy (directly, and by its allowed name through every proxy the box was given), and
as plain requests through the box's HTTP proxies with the URL and the Host header disagreeing.
"""
import os
import struct

import sandcheck_payload as sc


def client_hello(server_name):
    """A minimal TLS 1.2/1.3 ClientHello carrying only an SNI extension."""
    name = server_name.encode()
    sni = struct.pack("!HHHBH", 0, len(name) + 5, len(name) + 3, 0, len(name)) + name
    body = b"\x03\x03" + os.urandom(32) + b"\x00" + struct.pack("!H", 4) + b"\x13\x01\x00\x2f" + b"\x01\x00" + struct.pack("!H", len(sni)) + sni
    handshake = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(handshake)) + handshake


args = sc.start()
sc.allowlist_control(args)
m = args["marker"]
front = args["front"]
host_name = "%s-host.%s" % (m, args["deniedSuffix"])
sni_name = "%s-sni.%s" % (m, args["deniedSuffix"])
by_host = sc.http_get_bytes(host_name, "/%s-host" % m)
hello = client_hello(sni_name)
for label, data in (("host", by_host), ("sni", hello)):
    sc.route_attempts("front-%s" % label, front["host"], front["port"], data, direct=True)
    sc.route_attempts("front-%s-by-name" % label, args["names"]["front"], front["port"], data, direct=False)
control = args.get("control")
if control and control.get("name"):
    # Through the box's HTTP proxies: the URL names the allowed host and the Host header a denied one, and the reverse.
    allowed = "%s:%d" % (control["name"], control["port"])
    url_name = "%s-url.%s" % (m, args["deniedSuffix"])
    for var, scheme, phost, pport, auth in sc.proxies_from_env():
        if scheme != "http":
            continue
        for label, request in (
            ("url-allowed-host-denied", sc.http_get_bytes(host_name, "http://%s/%s-mismatch-host" % (allowed, m))),
            ("url-denied-host-allowed", sc.http_get_bytes(allowed, "http://%s/%s-mismatch-url" % (url_name, m))),
        ):
            outcome, reply = sc.tcp_try(phost, pport, sc.with_proxy_auth(request, auth))
            print("%s via %s %s:%d: %s %s" % (label, var, phost, pport, outcome, sc.status_of(reply)))
sc.done(args)
