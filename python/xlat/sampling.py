"""Sampled long runs: the estimate and its confidence interval from the measured units.

``simulate(..., sample="10M:1M:100k")`` simulates, of every 10 M references, the last 1.1 M
(1 M to warm the TLBs, caches and page-walk caches up again, 100 k measured) and skips the
rest (``crates/xlat-core/src/machine/sample.rs``). Each measured unit's counts come back apart; the
run's statistics are their sums with the usual ratios, and a ratio's 95 % confidence interval
is the ratio estimator's over the units (the units are a systematic sample of the stream).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ._io import parse_count

# Two-sided 95 % quantiles of Student's t by degrees of freedom (1..30); 1.96 beyond.
_T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def t95(df: int) -> float:
    return _T95[df - 1] if 1 <= df <= len(_T95) else 1.96


def parse_plan(sample: str | Sequence[int | str]) -> tuple[int, int, int]:
    """``"PERIOD:WARM:UNIT"`` or a 3-sequence of counts, checked: 0 < UNIT, WARM + UNIT <= PERIOD."""
    from .api import ArgumentError

    parts = sample.split(":") if isinstance(sample, str) else list(sample)
    try:
        if len(parts) != 3:
            raise ValueError("expected PERIOD:WARM:UNIT, e.g. 10M:1M:100k")
        period, warm, unit = (parse_count(p) for p in parts)
    except (ValueError, TypeError) as e:
        raise ArgumentError(f"sample: {e}") from None
    if unit <= 0 or warm + unit > period:
        raise ArgumentError(f"sample: {period}:{warm}:{unit} needs 0 < UNIT and WARM + UNIT <= PERIOD")
    return period, warm, unit


def ratio_ci(tops: Sequence[float], bottoms: Sequence[float], scale: float = 1.0) -> tuple[float, float]:
    """The ratio Σtop/Σbottom (times `scale`) and its 95 % confidence half-width over the units
    (ratio estimator, linearized; NaN with fewer than two units)."""
    n = len(tops)
    total = sum(bottoms)
    if n == 0 or total <= 0:
        return math.nan, math.nan
    r = sum(tops) / total
    if n < 2:
        return scale * r, math.nan
    mean_bottom = total / n
    resid = sum((t - r * b) ** 2 for t, b in zip(tops, bottoms)) / (n - 1)
    return scale * r, scale * t95(n - 1) * math.sqrt(resid / n) / mean_bottom


def estimate(sampled: Mapping[str, Any], plan: tuple[int, int, int]) -> dict[str, Any]:
    """The run's statistics from the units: sums of the counts (a level, the glossary's kind
    for a state such as ``pt_bytes``, its value at the end), the headline
    ratios, and ``sample.*`` and the confidence half-widths."""
    from .api import interval_ratios

    units = list(sampled["units"])
    if not units:
        from ._core import SimulationError

        raise SimulationError(f"sample: the workload ended before a first measured unit ({sampled['skipped']:,} references "
                              f"skipped, {sampled['simulated']:,} simulated): give it more references, or a shorter period")
    total: dict[str, Any] = {}
    for u in units:
        for k, v in u.items():
            if isinstance(v, int) and not isinstance(v, bool):
                total[k] = total.get(k, 0) + v
    # A level (memory in use, free blocks: a state, not a count of events) is its value at the
    # end, not a sum of changes.
    from . import glossary

    for k, v in (sampled.get("last") or {}).items():
        e = glossary.lookup(k)
        if e is not None and e["kind"] == "level":
            total[k] = v
    out = interval_ratios(total)
    col = lambda name: [float(u.get(name, 0)) for u in units]
    instr = col("instructions")
    ipc, ipc_ci = ratio_ci(instr, col("cycles"))
    mpki, mpki_ci = ratio_ci(col("tlb.l2.misses"), instr, 1000.0)
    out.update({
        "sample.units": len(units),
        "sample.period": plan[0], "sample.warm_refs": plan[1], "sample.unit_refs": plan[2],
        "sample.skipped_refs": int(sampled["skipped"]), "sample.simulated_refs": int(sampled["simulated"]),
        "ipc.ci95": ipc_ci, "ipc.ci95_rel": ipc_ci / ipc if ipc else math.nan,
        "tlb.l2.mpki.ci95": mpki_ci,
    })
    if not math.isnan(ipc):
        out["ipc"] = ipc
    if not math.isnan(mpki):
        out["tlb.l2.mpki"] = mpki
    return out
