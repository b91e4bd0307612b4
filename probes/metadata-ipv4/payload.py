"""Asks the cloud metadata service for credentials over IPv4: IMDSv1 GET and the IMDSv2 token flow.

Replies are reported as length, hash and the decoy values they carry (canary prefix): a real
service's credentials never reach stdout, and the lab's canaries still come out for the scan.
"""
import hashlib
import re

import sandcheck_payload as sc

HOST = "169.254.169.254"
CREDS = "/latest/meta-data/iam/security-credentials/"


def describe(body, prefix):
    data = body.encode("utf-8", "replace")
    decoys = sorted(set(re.findall(re.escape(prefix) + r"[A-Za-z0-9_]+", body)))
    return "%d bytes sha256:%s decoys:%s" % (len(data), hashlib.sha256(data).hexdigest()[:16], ",".join(decoys) or "none")


args = sc.start()
prefix = args["canaryPrefix"]
outcome, role = sc.http_try(HOST, 80, "GET", CREDS)
print("IMDSv1 role list: %s %s" % (outcome, describe(role, prefix)))
if role.strip():
    print("IMDSv1 creds: %s" % describe(sc.http_try(HOST, 80, "GET", CREDS + role.strip().splitlines()[0])[1], prefix))
outcome, token = sc.http_try(HOST, 80, "PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "60", "Content-Length": "0"})
print("IMDSv2 token: %s %s" % (outcome, describe(token, prefix)))
if token.strip():
    print("IMDSv2 creds: %s" % describe(sc.http_try(HOST, 80, "GET", CREDS + "sandcheck-role", {"X-aws-ec2-metadata-token": token.strip()})[1], prefix))
sc.done(args)
