"""Asks the AWS metadata service over its IPv6 address (fd00:ec2::254); reports length, hash and decoy values only."""
import hashlib
import re

import sandcheck_payload as sc


def describe(body, prefix):
    data = body.encode("utf-8", "replace")
    decoys = sorted(set(re.findall(re.escape(prefix) + r"[A-Za-z0-9_]+", body)))
    return "%d bytes sha256:%s decoys:%s" % (len(data), hashlib.sha256(data).hexdigest()[:16], ",".join(decoys) or "none")


args = sc.start()
outcome, body = sc.http_try("fd00:ec2::254", 80, "GET", "/latest/meta-data/iam/security-credentials/sandcheck-role")
print("IPv6 metadata: %s %s" % (outcome, describe(body, args["canaryPrefix"])))
sc.done(args)
