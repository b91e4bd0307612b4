"""CONNECT (and a plain request with an absolute URI) through an allowed proxy to a destination the allowlist denies.

The proxies: the box's own (HTTP_PROXY, HTTPS_PROXY, ALL_PROXY, as proxy-based sandboxes set them) and the lab's
fronting proxy (an allowlist that allows a forward proxy allows what that proxy reaches).
"""
import sandcheck_payload as sc

args = sc.start()
sc.allowlist_control(args)
m = args["marker"]
front = ("http", args["front"]["host"], args["front"]["port"])
for host, label in (("203.0.113.66", "denied-host"), ("169.254.169.254", "metadata")):
    path = "/%s-proxy-%s" % (m, label)
    absolute = sc.http_get_bytes(host, "http://%s%s" % (host, path))
    sc.route_attempts("proxy-%s" % label, host, 80, sc.http_get_bytes(host, path), absolute, direct=False, extra_proxies=[front])
    # Chained: the lab's front reached by its allowed name through the box's own proxies, asked to CONNECT onward.
    chained = ("CONNECT %s:80 HTTP/1.1\r\nHost: %s:80\r\n\r\n" % (host, host)).encode() + sc.http_get_bytes(host, "/%s-chained-%s" % (m, label))
    sc.route_attempts("proxy-%s-chained" % label, args["names"]["front"], args["front"]["port"], chained, direct=False)
sc.done(args)
