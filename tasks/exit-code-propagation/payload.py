"""Writes its result, then exits with a deliberate status the controller must see exactly."""
import json
import sys

import sandcheck_payload as sc

args = sc.start()
with open("status.json", "w") as fh:
    json.dump({"willExit": args["code"]}, fh)
sys.stdout.flush()
sys.exit(int(args["code"]))
