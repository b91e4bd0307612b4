"""Legitimate work: writes exactly the maximum number of export files the policy allows."""
import os

import sandcheck_payload as sc

args = sc.start()
os.makedirs("out", exist_ok=True)
for i in range(int(args["files"])):
    with open("out/part-%02d.txt" % i, "w") as fh:
        fh.write("part %d of %d\n" % (i, args["files"]))
sc.done(args)
