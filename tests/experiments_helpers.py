"""Simulate functions the experiment tests hand to sweep workers (module-level so that Dask
worker processes can import them by name)."""
from __future__ import annotations

import os
import time


def slow_simulate(config, workload, **kw):
    """The real engine, then a pause: a sweep slow enough to be killed midway. The pause does
    not touch the result, so the statistics are exactly those of ``xlat.simulate``."""
    import xlat

    result = xlat.simulate(config, workload, **kw)
    time.sleep(float(os.environ.get("XLAT_TEST_POINT_DELAY", "0.4")))
    return result
