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


def logging_simulate(config, workload, **kw):
    """The real engine, after an ERROR through Dask's worker logger (as a heartbeat that meets a
    closed scheduler logs one): a sweep's own workers must keep such noise off the terminal."""
    import logging

    import xlat

    logging.getLogger("distributed.worker").error("NOISE FROM A DASK WORKER")
    return xlat.simulate(config, workload, **kw)
