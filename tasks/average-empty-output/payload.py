"""Does nothing at all and exits 0."""
import sandcheck_payload as sc

args = sc.start()
sc.done(args)
