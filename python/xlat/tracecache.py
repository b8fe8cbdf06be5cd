"""The trace cache: native copies of traces in slow containers (xz, gzip, ChampSim, lackey).

The first run on such a trace decodes it once into xlat's native format; every later run, sweep
point or study on the same bytes reads the copy (see ``xlat_workloads::trace::cache`` for the
keys and how a copy is never served stale or partial). The directory is ``$XLAT_CACHE_DIR``
(``off`` turns the cache off), else ``$XDG_CACHE_HOME/xlat/traces``, else
``~/.cache/xlat/traces``. ``xlat cache`` lists it, ``xlat cache --clear`` empties it.

The graph kernels keep their large graphs there too (scale 20 and up at the default degree;
``xlat_workloads::kernels::graph::cache``): built once, read by every later run on the same
graph.
"""
from __future__ import annotations

import os
from pathlib import Path

from . import _core

OFF = ("", "off", "0", "no", "none", "false")


def directory() -> Path | None:
    """Where the cache keeps its copies, or None when it is off."""
    env = os.environ.get("XLAT_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in OFF else Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.path.expanduser("~"), ".cache") if os.path.expanduser("~") != "~" else "")
    return Path(base) / "xlat" / "traces" if base else None


def configure() -> Path | None:
    """Point this process's engine at :func:`directory` (done when ``xlat`` is imported; call
    it again after changing ``XLAT_CACHE_DIR``)."""
    d = directory()
    _core.set_trace_cache(str(d) if d is not None else None)
    return d


def ensure(path: str, trace_format: str | None = None) -> tuple[dict, bool] | None:
    """The cached native copy of trace `path`, made now if there is none: ``(entry, made)``;
    None when the cache is off or the trace needs no copy (native, or not a regular file)."""
    return _core.cache_trace(str(path), trace_format)


def entries() -> list[dict]:
    """The cache's complete entries (``key, copy, source, format, source_bytes, refs, bytes,
    created``), oldest first."""
    d = directory()
    return _core.trace_cache_entries(str(d)) if d is not None else []


def graphs() -> list[dict]:
    """The large graphs the graph kernels keep beside the copies (built once, read by later runs
    on the same graph): ``name, bytes, created``."""
    d = directory()
    return [{"name": n, "bytes": b, "created": c} for n, b, c in _core.graph_cache_entries(str(d))] if d is not None else []


def clear() -> tuple[int, int]:
    """Remove every copy and graph (and leftover temporary file): ``(files, bytes)`` removed."""
    d = directory()
    return _core.trace_cache_clear(str(d)) if d is not None else (0, 0)
