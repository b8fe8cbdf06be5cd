"""The statistics glossary: what every statistic counts, as the engine declares it.

>>> from xlat import glossary
>>> glossary.lookup("core1.tlb.l2.misses")["doc"]
'L2 TLB lookups that found no entry: each starts a page walk.'

Names are matched against patterns such as ``[core<N>.]tlb.l2.misses`` or
``cache.<cache>.<kind>.misses`` (see ``placeholders()``); ``docs/statistics.md`` is the same
glossary as a document, and ``xlat stats`` prints it.
"""
from __future__ import annotations

from . import _core

FIELDS = ("pattern", "section", "kind", "unit", "doc", "only")


def entries() -> list[dict[str, str]]:
    """Every entry, in document order: dicts with ``pattern``, ``section``, ``kind`` (counter,
    ratio or float), ``unit``, ``doc`` and ``only`` (the configurations that emit it; empty when
    every run does)."""
    return [dict(zip(FIELDS, row)) for row in _core.stat_glossary()]


def sections() -> list[tuple[str, str]]:
    """The sections in document order: (title, introduction)."""
    return list(_core.stat_sections())


def placeholders() -> list[dict]:
    """The placeholders of patterns: ``name``, ``values`` (empty: any number), ``doc``."""
    return [{"name": n, "values": list(v), "doc": d} for n, v, d in _core.stat_placeholders()]


def _forms(pattern: str) -> list[str]:
    """A pattern with and without its optional ``[...]`` prefix."""
    if pattern.startswith("["):
        opt, _, rest = pattern[1:].partition("]")
        return [pattern, opt + rest, rest]
    return [pattern]


def lookup(name: str) -> dict[str, str] | None:
    """The entry describing statistic ``name`` (``core0.walks``, ``host.pt_bytes``, or a pattern
    as the glossary writes it), or None if the glossary has none."""
    pattern = _core.stat_lookup(name)
    for e in entries():
        if e["pattern"] == pattern or (pattern is None and name in _forms(e["pattern"])):
            return e
    return None
