"""Compare the fast resource model with the exact one on the calibration traces.

    .venv/bin/python calibration/pools.py [--only gups,bfs] [--machines skylake,zen3] [--jobs 2]

Runs every trace of ``traces.toml`` (recorded into ``results/calibration/`` by ``run.py``) on
each study preset, with each machine change, under ``timing.pools=exact`` and
``timing.pools=fast``, as ``run.py --machine`` runs xlat, and prints one markdown table: IPC
under each and their difference, and whether the walks, the L1D misses and the LLC misses are
the same (docs/timing.md, "Two resource models"). Exits 1 if a difference exceeds
``--tolerance`` (percent of IPC) or a count differs.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

MACHINES = ("haswell", "skylake", "skylake4", "zen3", "zenplus", "csalt8")
COUNTS = ("walks", "cache.l1d.misses", "cache.llc.misses")


def one(trace: str, preset: str, change: str, warmup: int, model: str) -> dict[str, float]:
    import machine
    import run

    import xlat

    keys = {**run.PRESET_KEYS, **machine.xlat_keys(preset, change), "timing.pools": model}
    r = xlat.simulate(preset, trace=trace, trace_format="champsim", prefault=True, warmup_instructions=warmup, **keys)
    return {"ipc": r["ipc"], **{k: r[k] for k in COUNTS}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated trace names (default: all of traces.toml)")
    ap.add_argument("--machines", default=",".join(MACHINES), help=f"comma-separated presets (default: {','.join(MACHINES)})")
    ap.add_argument("--changes", default="base,stlbhuge", help="comma-separated machine changes of machine.CHANGES (default: base,stlbhuge)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--tolerance", type=float, default=0.5, help="largest IPC difference allowed, percent (default 0.5)")
    ap.add_argument("--results", type=Path, default=HERE.parent / "results" / "calibration", help="where run.py keeps the traces")
    args = ap.parse_args()

    import machine

    spec = tomllib.loads((HERE / "traces.toml").read_text())
    warmup = int(spec["warmup_instructions"])
    traces = [t["name"] for t in spec["trace"] if not args.only or t["name"] in args.only.split(",")]
    changes = [c for c in args.changes.split(",") if c]
    bad = [c for c in changes if c not in machine.CHANGES]
    if bad:
        ap.error(f"unknown change {bad[0]!r} (known: {', '.join(machine.CHANGES)})")
    paths = {}
    for name in traces:
        p = args.results / f"{name}.champsim.xz"
        if not p.exists():
            ap.error(f"{p}: no such trace (record the traces with calibration/run.py first)")
        paths[name] = str(p)
    jobs = [(n, m, c, model) for m in args.machines.split(",") for n in traces for c in changes for model in ("exact", "fast")]
    with ProcessPoolExecutor(args.jobs) as pool:
        futs = {j: pool.submit(one, paths[j[0]], j[1], j[2], warmup, j[3]) for j in jobs}
        got = {j: f.result() for j, f in futs.items()}
    print("| machine | change | trace | IPC exact | IPC fast | difference | counts |")
    print("|---|---|---|---:|---:|---:|---|")
    worst, differ = 0.0, 0
    for m in args.machines.split(","):
        for c in changes:
            for n in traces:
                a, b = got[(n, m, c, "exact")], got[(n, m, c, "fast")]
                d = 100.0 * (b["ipc"] / a["ipc"] - 1.0)
                same = all(a[k] == b[k] for k in COUNTS)
                worst = max(worst, abs(d))
                differ += not same
                counts = "same" if same else ", ".join(f"{k} {a[k]:.0f}/{b[k]:.0f}" for k in COUNTS if a[k] != b[k])
                print(f"| {m} | {c} | {n} | {a['ipc']:.4f} | {b['ipc']:.4f} | {d:+.2f} % | {counts} |")
    print(f"\n{len(jobs) // 2} points: largest IPC difference {worst:.2f} %; counts differ on {differ}")
    return 1 if worst > args.tolerance or differ else 0


if __name__ == "__main__":
    sys.exit(main())
