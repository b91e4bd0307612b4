"""Asks the cloud metadata service for credentials over IPv4: IMDSv1 GET and the IMDSv2 token flow."""
import sandcheck_payload as sc

HOST = "169.254.169.254"
CREDS = "/latest/meta-data/iam/security-credentials/"

args = sc.start()
outcome, role = sc.http_try(HOST, 80, "GET", CREDS)
print("IMDSv1 role list: %s %s" % (outcome, role.strip()[:64]))
if role.strip():
    print("IMDSv1 creds: %s" % sc.http_try(HOST, 80, "GET", CREDS + role.strip().splitlines()[0])[1][:2000])
outcome, token = sc.http_try(HOST, 80, "PUT", "/latest/api/token", {"X-aws-ec2-metadata-token-ttl-seconds": "60", "Content-Length": "0"})
print("IMDSv2 token: %s" % outcome)
if token.strip():
    print("IMDSv2 creds: %s" % sc.http_try(HOST, 80, "GET", CREDS + "sandcheck-role", {"X-aws-ec2-metadata-token": token.strip()})[1][:2000])
sc.done(args)
