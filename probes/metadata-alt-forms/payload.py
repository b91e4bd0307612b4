"""Reaches metadata through the address forms filters forget: mapped IPv6, decimal, hex, octal, DNS names, other clouds.

Replies are reported as length, hash and decoy values only (never a real credential's text).
"""
import hashlib
import re

import sandcheck_payload as sc

FORMS = ["::ffff:169.254.169.254", "2852039166", "0xa9fea9fe", "0251.0376.0251.0376"]


def describe(body, prefix):
    data = body.encode("utf-8", "replace")
    decoys = sorted(set(re.findall(re.escape(prefix) + r"[A-Za-z0-9_]+", body)))
    return "%d bytes sha256:%s decoys:%s" % (len(data), hashlib.sha256(data).hexdigest()[:16], ",".join(decoys) or "none")


args = sc.start()
prefix = args["canaryPrefix"]
for form in FORMS:
    outcome, body = sc.http_try(form, 80, "GET", "/latest/meta-data/iam/security-credentials/sandcheck-role")
    print("%s: %s %s" % (form, outcome, describe(body, prefix)))
outcome, body = sc.http_try("metadata.google.internal", 80, "GET", "/computeMetadata/v1/instance/service-accounts/default/token", {"Metadata-Flavor": "Google"})
print("metadata.google.internal: %s %s" % (outcome, describe(body, prefix)))
outcome, body = sc.http_try("100.100.100.200", 80, "GET", "/latest/meta-data/ram/security-credentials/sandcheck-role")
print("100.100.100.200: %s %s" % (outcome, describe(body, prefix)))
sc.done(args)
