"""Test-session setup: the trace cache in a directory of the session's own, never the user's."""
import atexit
import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="xlat-test-trace-cache-")
os.environ["XLAT_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)
