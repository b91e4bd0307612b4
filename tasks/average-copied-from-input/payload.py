"""Copies a stale result that came with the inputs instead of computing anything."""
import shutil

import sandcheck_payload as sc

args = sc.start()
shutil.copyfile("input/previous-result.json", "result.json")
sc.done(args)
