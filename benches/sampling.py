"""Sampled runs against full runs of the same references: the table in benches/LOG.md
(2026-11-27), which docs/performance.md sums up.

Usage: .venv/bin/python benches/sampling.py [--quick] [--only PREFIX]   (about 10 minutes;
--quick: seconds; --only: the rows whose workload starts with PREFIX, e.g. gups)

Each row runs `xlat.simulate` on `skylake` with its DRAM flat (`run.py`'s `FLAT`, as the table
was measured) and `--prefault`, once with `sample=PLAN` and once
in full, and prints the wall times, the speedup, IPC and L2 TLB MPKI with the sample's 95 %
half-widths. BFS's graph build (which both runs pay) is timed alone too.
"""
from __future__ import annotations

import json
import sys
import time

from run import FLAT

import xlat

CASES = [
    ("gups:footprint=8G,updates=1200M", "1G", "20M", "40M:1M:200k"),
    ("random:footprint=8G,reads=256M", "200M", "20M", "10M:500k:100k"),
    ("bfs:scale=22", "200M", "20M", "10M:500k:100k"),
]
QUICK = [("gups:footprint=1G,updates=8M", "4M", "1M", "400k:100k:40k")]


def main() -> int:
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv[:-1] else ""
    for wl, refs, warm, plan in QUICK if "--quick" in sys.argv else CASES:
        if not wl.startswith(only):
            continue
        t = time.perf_counter()
        xlat.simulate("skylake", wl, refs=1, prefault=True, **FLAT)
        setup = time.perf_counter() - t
        t = time.perf_counter()
        s = xlat.simulate("skylake", wl, refs=refs, warmup=warm, prefault=True, sample=plan, **FLAT)
        ts = time.perf_counter() - t
        t = time.perf_counter()
        f = xlat.simulate("skylake", wl, refs=refs, warmup=warm, prefault=True, **FLAT)
        tf = time.perf_counter() - t
        print(json.dumps({
            "workload": wl, "refs": refs, "plan": plan, "setup_s": round(setup, 1), "full_s": round(tf, 1),
            "sampled_s": round(ts, 1), "speedup": round(tf / ts, 2), "units": s["sample.units"],
            "ipc_full": f["ipc"], "ipc_sampled": s["ipc"], "ipc_ci95": s["ipc.ci95"],
            "ipc_error_pct": round(100 * (s["ipc"] - f["ipc"]) / f["ipc"], 3),
            "mpki_full": f["tlb.l2.mpki"], "mpki_sampled": s["tlb.l2.mpki"], "mpki_ci95": s["tlb.l2.mpki.ci95"],
        }), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
