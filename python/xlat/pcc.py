"""The PCC paper's two characterisations that need no machine: the Promotion Candidate
Cache's hardware cost (``xlat pcc-cost``) and the reuse distances of a workload's pages, with
the HUB / TLB-friendly / low-reuse classes and the Fig. 2 scatter (``xlat reuse``).

The arithmetic and the distances are computed in Rust (``xlat_core::mech::pcc::PccCost``,
``xlat_workloads::reuse``); this module names, tabulates and draws them.
"""
from __future__ import annotations

import math
import os
from collections.abc import Iterable
from typing import Any

from . import _core
from . import config as _config

#: The paper's class threshold: an L2 TLB of 1024 entries (spec 001 §10.1 item 9).
THRESHOLD = 1024
CLASSES = ("tlb-friendly", "hub", "low-reuse")

#: The paper's numbers for the default PCC (spec 001 §8.9), beside which ``cost_rows`` puts xlat's.
PAPER_COST = {
    "entry_bytes_2m": 6, "bytes_2m": 768, "entry_bytes_1g": 5, "bytes_1g": 40, "bytes": 808,
    "tlb_entries": 50, "tlb_gain": 0.05, "pages": 65536, "reach_bytes": 256 << 20,
}


def cost(config: Any = "haswell", overrides: Iterable[tuple[str, Any]] = (), va_bits: int = 61,
         tlb_entry_bytes: int = 16) -> dict:
    """The storage of the PCCs ``config`` describes (``pcc.entries``, ``pcc.entries_1g``,
    ``pcc.counter_bits``), beside an L2 TLB of ``tlb.l2.entries``. ``va_bits``: the paper's
    40- and 31-bit tags imply 61. The paper's design is ``pcc.entries_1g=8``."""
    pairs = list(_config.resolve(config, overrides).items())
    return dict(_core.pcc_cost(pairs, va_bits, tlb_entry_bytes))


def cost_rows(c: dict, paper: bool = True) -> list[tuple[str, str, str]]:
    """(what, xlat, paper) rows of a cost, the paper's column for the default PCC only."""
    def mb(b):
        return f"{b / (1 << 20):g} MB"
    rows = [
        ("2 MB PCC entry", f"{c['entry_bits_2m']} bits = {c['entry_bytes_2m']} B", "entry_bytes_2m", "B"),
        ("2 MB PCC", f"{c['entries']} x {c['entry_bytes_2m']} B = {c['bytes_2m']} B", "bytes_2m", "B"),
        ("1 GB PCC entry", f"{c['entry_bits_1g']} bits = {c['entry_bytes_1g']} B", "entry_bytes_1g", "B"),
        ("1 GB PCC", f"{c['entries_1g']} x {c['entry_bytes_1g']} B = {c['bytes_1g']} B", "bytes_1g", "B"),
        ("per core", f"{c['bytes']} B", "bytes", "B"),
        ("TLB entries it would buy", f"{c['tlb_entries']}", "tlb_entries", ""),
        (f"of a {c['l2_entries']}-entry L2 TLB", f"{100 * c['tlb_gain']:.1f} %", "tlb_gain", "%"),
        ("4 KB pages it can nominate", f"{c['pages']:,}", "pages", ""),
        ("reach of its candidates", mb(c["reach_bytes"]), "reach_bytes", "mb"),
    ]
    default = paper and c["entries"] == 128 and c["entries_1g"] == 8
    out = []
    for what, ours, key, unit in rows:
        p = PAPER_COST[key] if default else None
        if p is None:
            text = ""
        elif unit == "%":
            text = f"~{100 * p:g} %"
        elif unit == "mb":
            text = mb(p)
        else:
            text = f"{p:,}{' B' if unit == 'B' else ''}"
        out.append((what, ours, text))
    return out


def classify(d4k: float, d2m: float, threshold: float = THRESHOLD) -> str:
    """The paper's class of a page (NaN: used once, infinitely far)."""
    def near(d):
        return not math.isnan(d) and d < threshold
    return "tlb-friendly" if near(d4k) else "hub" if near(d2m) else "low-reuse"


def reuse(workload: str | None = None, trace: str | os.PathLike | list | None = None, refs: int = 0,
          seed: int = 1, distinct: bool = False, trace_format: str | None = None,
          threshold: float = THRESHOLD, skip: int = 0) -> dict:
    """Every 4 KB page's reuse: columns ``page, accesses, d4k, d2m, d1g, class`` (NaN: used once),
    over ``refs`` references after the first ``skip`` (left out as ``xlat run --skip`` leaves them)."""
    if trace is not None:
        trace = [str(t) for t in (trace if isinstance(trace, (list, tuple)) else [trace])]
    d = dict(_core.reuse(workload, trace, trace_format, refs or 0, seed, distinct, skip or 0))
    d["class"] = [classify(a, b, threshold) for a, b in zip(d["d4k"], d["d2m"])]
    return d


def summary(r: dict) -> dict:
    """Pages and references per class, and the 2 MB regions holding HUB pages."""
    pages = {k: 0 for k in CLASSES}
    refs = {k: 0 for k in CLASSES}
    hub_regions = set()
    for page, n, cls in zip(r["page"], r["accesses"], r["class"]):
        pages[cls] += 1
        refs[cls] += n
        if cls == "hub":
            hub_regions.add(page >> 9)
    return {"pages": pages, "references": refs, "hub_regions": len(hub_regions),
            "regions": len({p >> 9 for p in r["page"]})}


def summary_rows(s: dict) -> list[tuple[str, str, str, str]]:
    tp, tr = sum(s["pages"].values()) or 1, sum(s["references"].values()) or 1
    return [(k, f"{s['pages'][k]:,}", f"{100 * s['pages'][k] / tp:.1f} %", f"{100 * s['references'][k] / tr:.1f} %")
            for k in CLASSES]


def scatter(r: dict, path: str | os.PathLike, title: str = "", threshold: float = THRESHOLD):
    """The Fig. 2 scatter: one point per page, x its 4 KB reuse distance, y its 2 MB region's;
    pages used once (infinitely far) are drawn at the right or top edge."""
    from .report import new_figure, save_figure

    fig = new_figure(6.4, 4.4)
    ax = fig.add_subplot()
    finite = [v for col in ("d4k", "d2m") for v in r[col] if not math.isnan(v)]
    edge = max([threshold * 4, *finite]) * 2
    colours = {"tlb-friendly": "tab:green", "hub": "tab:blue", "low-reuse": "tab:red"}
    for cls in CLASSES:
        xs = [edge if math.isnan(x) else x for x, c in zip(r["d4k"], r["class"]) if c == cls]
        ys = [edge if math.isnan(y) else y for y, c in zip(r["d2m"], r["class"]) if c == cls]
        ax.scatter([x + 1 for x in xs], [y + 1 for y in ys], s=4, alpha=0.5, c=colours[cls], label=f"{cls} ({len(xs):,})",
                   rasterized=True, linewidths=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axvline(threshold, color="grey", lw=0.8, ls="--")
    ax.axhline(threshold, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("4 KB page reuse distance + 1 (used once: right edge)")
    ax.set_ylabel("its 2 MB region's reuse distance + 1")
    if title:
        ax.set_title(title)
    ax.legend(loc="upper left", markerscale=3, fontsize="small")
    return save_figure(fig, path)


def write_csv(r: dict, path: str | os.PathLike) -> None:
    """The per-page table as CSV (atomically)."""
    from pathlib import Path

    from ._io import atomic_path

    cols = ("page", "accesses", "d4k", "d2m", "d1g", "class")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write("va," + ",".join(cols[1:]) + "\n")
        for row in zip(*(r[c] for c in cols)):
            va = f"{row[0] << 12:#x}"
            f.write(va + "," + ",".join("" if isinstance(v, float) and math.isnan(v) else f"{v:g}" if isinstance(v, float) else str(v)
                                         for v in row[1:]) + "\n")
