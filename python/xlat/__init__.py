"""xlat: an address-translation laboratory.

>>> import xlat
>>> r = xlat.simulate("skylake", "gups", refs="1M", tlb__l2__entries=2048)
>>> r.stats["tlb.l2.mpki"], r.to_pandas()

See ``xlat.simulate`` and ``xlat.Result`` (``xlat.run_mix`` for mixes of programs and their
weighted speedup); presets and config files are handled by
``xlat.config``; the command line is ``xlat --help``.
"""
from . import _core, mrc, tracecache
from ._core import ConfigError, SimulationError, TraceError, WorkloadError, XlatError
from .api import ArgumentError, Result, simulate
from .config import presets
from .mixes import MixResult, run_mix, weighted_speedup

__version__ = _core.version()
tracecache.configure()


def resolve_config(config=None, **overrides):
    """The fully resolved configuration (every key, typed) of a preset, path or dict."""
    from . import config as _config

    over = [(_config.override_key(k), v) for k, v in overrides.items()]
    return _config.typed(_config.resolve(config, over))


def workloads():
    """The workload kernels: list of ``{name, description, params, footprint_bytes}``."""
    return _core.workloads()


__all__ = [
    "ArgumentError",
    "ConfigError",
    "MixResult",
    "Result",
    "SimulationError",
    "TraceError",
    "WorkloadError",
    "XlatError",
    "__version__",
    "mrc",
    "presets",
    "resolve_config",
    "run_mix",
    "simulate",
    "weighted_speedup",
    "workloads",
]
