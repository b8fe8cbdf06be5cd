"""Compare the fast resource model with the exact one on the calibration traces.

    .venv/bin/python calibration/pools.py [--only gups,bfs] [--machines skylake,zen3] [--jobs 2]
    .venv/bin/python calibration/pools.py --study pcc [--every 2]

Runs every trace of ``traces.toml`` (recorded into ``results/calibration/`` by ``run.py``) on
each study preset, with each machine change, under ``timing.pools=exact`` and
``timing.pools=fast``, as ``run.py --machine`` runs xlat, and prints one markdown table: IPC
under each and their difference, and whether the walks, the L1D misses and the LLC misses are
the same (docs/timing.md, "Two resource models"). With ``--study NAME`` the points are the
study's ``--quick`` points instead (every one, or every ``--every``-th), each run as the study
runs it. Exits 1 if a difference exceeds ``--tolerance`` (percent of IPC) or a count differs.
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


def study_point(config: dict, workload: str, options: dict, meta: dict, model: str) -> dict[str, float]:
    from xlat import sweep

    row = sweep.run_task({**config, "timing.pools": model}, workload, options, meta, threads=1)
    if row["status"] != "ok":
        raise RuntimeError(f"{meta['point_id']}: {row['error']}")
    # (More than one hardware context: they run in the order of their clocks, so the timing
    # orders their accesses, and counts of what they share follow.)
    return {"ipc": row["stat.ipc"], "contexts": 1 + ("stat.core1.refs" in row), **{k: row.get(f"stat.{k}", 0) for k in COUNTS}}


def compare_study(name: str, every: int, jobs: int, tolerance: float) -> int:
    from xlat import sweep

    spec = sweep.load_spec(HERE.parent / "studies" / name / "sweep.toml", quick=True)
    tasks = [t for t in sweep.prepare(spec) if t.config is not None][::every]
    with ProcessPoolExecutor(jobs) as pool:
        futs = {(t.point_id, m): pool.submit(study_point, t.config, t.point.workload_spec, t.point.options(), t.meta, m) for t in tasks for m in ("exact", "fast")}
        got = {k: f.result() for k, f in futs.items()}
    print(f"| point ({name} --quick) | IPC exact | IPC fast | difference | counts |")
    print("|---|---:|---:|---:|---|")
    worst, differ, single, multi = 0.0, 0, [], []
    for t in tasks:
        a, b = got[(t.point_id, "exact")], got[(t.point_id, "fast")]
        d = 100.0 * (b["ipc"] / a["ipc"] - 1.0) if a["ipc"] else 0.0
        same = all(a[k] == b[k] for k in COUNTS)
        (multi if a["contexts"] > 1 else single).append(abs(d))
        differ += not same and a["contexts"] == 1
        counts = "same" if same else ", ".join(f"{k} {a[k]:.0f}/{b[k]:.0f}" for k in COUNTS if a[k] != b[k])
        label = f"{t.meta['config_label']} {t.point.workload_spec}" + (" (several contexts)" if a["contexts"] > 1 else "")
        print(f"| {label} | {a['ipc']:.4f} | {b['ipc']:.4f} | {d:+.2f} % | {counts} |")
    for what, ds in (("one context", single), ("several contexts", multi)):
        if ds:
            within = sum(d <= tolerance for d in ds)
            print(f"\n{what}: {len(ds)} points, {within} within {tolerance} %, largest IPC difference {max(ds):.2f} %")
    print(f"counts differ on {differ} of the one-context points")
    worst = max(single, default=0.0)
    return 1 if worst > tolerance or differ else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated trace names (default: all of traces.toml)")
    ap.add_argument("--machines", default=",".join(MACHINES), help=f"comma-separated presets (default: {','.join(MACHINES)})")
    ap.add_argument("--changes", default="base,stlbhuge", help="comma-separated machine changes of machine.CHANGES (default: base,stlbhuge)")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="runs at once (default 2)")
    ap.add_argument("--tolerance", type=float, default=0.5, help="largest IPC difference allowed, percent (default 0.5)")
    ap.add_argument("--results", type=Path, default=HERE.parent / "results" / "calibration", help="where run.py keeps the traces")
    ap.add_argument("--study", metavar="NAME", help="compare on the study's --quick points instead of the calibration traces")
    ap.add_argument("--every", type=int, default=1, metavar="K", help="with --study: every K-th point (default: all)")
    args = ap.parse_args()
    if args.study:
        if not (HERE.parent / "studies" / args.study / "sweep.toml").exists():
            ap.error(f"--study {args.study}: no studies/{args.study}/sweep.toml")
        return compare_study(args.study, max(1, args.every), args.jobs, args.tolerance)

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
