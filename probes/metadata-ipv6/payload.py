"""Asks the AWS metadata service over its IPv6 address (fd00:ec2::254)."""
import sandcheck_payload as sc

args = sc.start()
outcome, body = sc.http_try("fd00:ec2::254", 80, "GET", "/latest/meta-data/iam/security-credentials/sandcheck-role")
print("IPv6 metadata: %s %s" % (outcome, body[:2000]))
sc.done(args)
