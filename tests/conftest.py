"""Test-session setup: the trace cache in a directory of the session's own, never the user's;
Ctrl-C deliverable."""
import atexit
import os
import shutil
import signal
import tempfile

import pytest

_CACHE = tempfile.mkdtemp(prefix="xlat-test-trace-cache-")
os.environ["XLAT_CACHE_DIR"] = _CACHE
atexit.register(shutil.rmtree, _CACHE, True)

# A shell without job control starts a background command (`make test &`) with SIGINT ignored,
# and every process started from it inherits that: the tests that Ctrl-C stops a run would see
# their SIGINT ignored, by xlat and by the test process alike. Python's own handler is put back
# (children then start with the default, as from a terminal).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The quick tier (`make test-quick`, `-m "not slow"`) leaves out the modules that run whole
# studies (a few minutes each) and the property tests that draw many random cases; `make test`
# runs everything.
SLOW_MODULES = ("test_fuzz.py", "test_config_limits.py")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: left out of the quick tier (make test-quick)")


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if name.startswith("test_study_") or name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
