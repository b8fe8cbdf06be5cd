"""Preloaded by each local sweep worker process (`distributed`'s ``preload``): keeps Dask's
own logging in the worker to CRITICAL. A sweep reports every failed point itself, with its
error; what a worker would log on its own is noise after the sweep's closing line, as the
traceback of a heartbeat that meets the scheduler closed by Ctrl-C or SIGTERM. (The
cluster's ``silence_logs`` reaches only the nanny's logger in a worker process.)"""
from __future__ import annotations

import logging


def dask_setup(worker) -> None:  # (the preload protocol passes the worker)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
