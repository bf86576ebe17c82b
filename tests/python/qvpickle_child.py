"""qvpickle_child.py — what test_pyext_pickle.py runs in a spawned process:
unpickle datasets there and return their rows, fingerprints and the time
pickle.loads took. Imports only quiver (not datasets), as a DataLoader
worker would."""
import pickle
import time

from qvpaths import import_quiver

import_quiver()


def load(blob):
    t = time.perf_counter()
    ds = pickle.loads(blob)
    dt = time.perf_counter() - t
    return {"rows": ds[:], "len": len(ds), "fingerprint": ds.fingerprint, "seconds": dt}
