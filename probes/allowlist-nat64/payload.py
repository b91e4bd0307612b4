"""Cloud metadata through the NAT64 forms of 169.254.169.254 (64:ff9b::/96 and 64:ff9b:1::/48), directly and
through every proxy the box was given; through proxies also the IPv4-mapped form (metadata-alt-forms tries it directly)
and allowed names whose only answer is one of those forms."""
import sandcheck_payload as sc

args = sc.start()
sc.allowlist_control(args)
m = args["marker"]
for form, direct in (("64:ff9b::a9fe:a9fe", True), ("64:ff9b:1::a9fe:a9fe", True), ("::ffff:169.254.169.254", False)):
    label = form.replace(":", "-").replace(".", "-").strip("-")
    path = "/latest/meta-data/iam/security-credentials/?%s-%s" % (m, label)
    absolute = sc.http_get_bytes("[%s]" % form, "http://[%s]%s" % (form, path))
    sc.route_attempts("nat64 %s" % form, form, 80, sc.http_get_bytes("[%s]" % form, path), absolute, direct=direct)
# Allowed names whose only record is an AAAA in those forms: through proxies, which resolve them.
for kind in ("nat64", "mapped"):
    name = args["names"][kind]
    path = "/latest/meta-data/iam/security-credentials/?%s-name-%s" % (m, kind)
    sc.route_attempts("name %s" % name, name, 80, sc.http_get_bytes(name, path), sc.http_get_bytes(name, "http://%s%s" % (name, path)), direct=False)
sc.done(args)
