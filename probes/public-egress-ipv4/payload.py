"""Opens TCP connections to public addresses (IPv4 or IPv6, from the arguments)."""
import sandcheck_payload as sc

args = sc.start()
for target in args["targets"]:
    if target.get("http"):
        outcome, body = sc.http_try(target["address"], target["port"], "GET", "/")
        print("%s:%d http: %s %s" % (target["address"], target["port"], outcome, body[:120]))
    else:
        outcome, _ = sc.tcp_try(target["address"], target["port"], b"hello\n")
        print("%s:%d tcp: %s" % (target["address"], target["port"], outcome))
sc.done(args)
