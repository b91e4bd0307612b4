"""Sends UDP datagrams to public addresses (NTP-like and discard ports)."""
import sandcheck_payload as sc

args = sc.start()
for target in args["targets"]:
    print("%s:%d udp: %s" % (target["address"], target["port"], sc.udp_send(target["address"], target["port"], ("sandcheck %s" % args["nonce"]).encode())))
sc.done(args)
