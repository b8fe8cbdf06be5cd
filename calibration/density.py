"""Each study kernel's density on the study's baseline machine, beside what its paper reports.

    .venv/bin/python calibration/density.py                  # every kernel of density.toml (~5 min on 2 cores)
    .venv/bin/python calibration/density.py --only pcc,csalt [--refs 2M] [--warm 2M] [--json out.json]

A kernel with fewer instructions per memory reference, or more TLB misses per kilo-instruction,
than the paper's program inflates every translation speed-up whatever the core (issue #63).
For each kernel of ``density.toml`` (the workload specs each study's sweep.toml runs at its
baseline configuration) this runs xlat on that baseline machine and prints a markdown table:
instructions per reference, L1 DTLB MPKI and L2 TLB MPKI, each MPKI beside the paper's number
for the same program and the ratio xlat / paper, page walks per kilo-instruction (fewer than L2
TLB misses where an L3 TLB, tcat's POM-TLB, catches some), and the other per-program numbers the
papers state (walk cycles, page-table reads per walk, walk references per kilo-instruction), as
"xlat / paper".

The window: each study's warm-up (a kernel's own where sweep.toml gives it one, so that graph
kernels are past their initialization) is fast-forwarded (``skip``) but for its last ``--warm``
references, which are simulated unmeasured; then ``--refs`` references (at most the study's) are
measured. Where density.toml gives a ``measure`` (pcc, which has no warm-up; PageRank in
coalescing, whose study window starts in its sequential first pass) that many are measured
instead: the study's whole window. A kernel's ``skip`` is what its points fast-forward before
that (pcc: PageRank's first pass, BFS's parent reset). ``skip = false`` (tcat) simulates the
whole warm-up.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

# What each metric of density.toml is in xlat's statistics (docs/statistics.md), per 1000
# instructions where the name says pki.
LABELS = {
    "l1d_tlb_mpki": "L1 DTLB MPKI",
    "l2_tlb_mpki": "L2 TLB MPKI",
    "walk_cycles": "walk cycles",
    "walk_reads": "PT reads/walk",
    "walk_refs_pki": "walk refs PKI",
    "walk_dram_pki": "walk DRAM PKI",
}
# Besides the two MPKI columns, the metrics shown in the last column.
OTHER = ("walk_cycles", "walk_reads", "walk_refs_pki", "walk_dram_pki")


def count(value: str | int) -> int:
    """A reference count as the sweeps write them: 8M, 500K, 0 (decimal suffixes)."""
    s = str(value).strip()
    scale = {"K": 10**3, "M": 10**6, "G": 10**9}.get(s[-1:].upper(), 1)
    return int(float(s[:-1] if scale > 1 else s) * scale)


def short(n: int) -> str:
    return f"{n / 10**6:g}M" if n >= 10**6 else f"{n / 10**3:g}K" if n >= 10**3 else str(n)


def metrics(s: dict[str, float]) -> dict[str, float]:
    """The density numbers of one run's statistics."""
    ki = s["instructions"] / 1000
    walk_refs = sum(s.get(f"pte_served.{w}", 0) for w in ("l2", "llc", "dram"))
    return {
        "instructions_per_ref": s["instructions"] / s["refs"],
        "l1d_tlb_mpki": s["tlb.l1d.mpki"],
        "l2_tlb_mpki": s["tlb.l2.mpki"],
        # Translations that missed every TLB level (an L3 TLB too, where there is one: tcat's
        # POM-TLB) and walked; a 2D walk counts once.
        "walks_pki": s["walks"] / ki,
        "walk_cycles": s["walk_cycles_per_walk"],
        "walk_reads": s["walk_steps_per_walk"],
        "walk_refs_pki": walk_refs / ki,
        "walk_dram_pki": s.get("pte_served.dram", 0) / ki,
    }


def window(kernel: dict, study: dict, refs: int, warm: int) -> tuple[int, int, int]:
    """(skip, warm-up, refs): what the kernel's points skip, then the study's warm-up
    fast-forwarded but for its last ``warm``."""
    w = count(kernel.get("warmup", study["warmup"]))
    measure = kernel.get("measure", study.get("measure"))
    n = count(measure) if measure else min(count(study["refs"]), refs)
    first = count(kernel.get("skip", 0))
    if not study.get("skip", True):
        return first, w, n
    return first + w - min(w, warm), min(w, warm), n


def run(kernel: dict, study: dict, refs: int, warm: int) -> dict[str, float]:
    import xlat

    skip, warmup, n = window(kernel, study, refs, warm)
    config = study["config"]
    if config.endswith(".toml"):
        config = str(ROOT / config)
    keys = {**study.get("set", {}), **kernel.get("set", {})}
    r = xlat.simulate(config, workload=kernel["workload"], refs=n, warmup=warmup, skip=skip, prefault=True, **keys)
    return metrics(r.stats)


def fmt(x: float) -> str:
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def ratio(x: float, p: float) -> str:
    return f"{x / p:.2f}" if p else "—"


def row(kernel: dict, m: dict[str, float], win: tuple[int, int, int]) -> str:
    paper = {p["metric"]: p for p in kernel.get("paper", [])}

    def paper_cells(metric: str) -> list[str]:
        p = paper.get(metric)
        if not p:
            return ["—", "—"]
        approx = "≈" if p["kind"] == "approximate" else ""
        return [approx + fmt(p["value"]), ratio(m[metric], p["value"])]

    other = [f"{LABELS[k]} {fmt(m[k])} / {'≈' if paper[k]['kind'] == 'approximate' else ''}{fmt(paper[k]['value'])}" for k in OTHER if k in paper]
    cells = [
        kernel["study"],
        f"`{kernel['workload']}`",
        kernel["program"],
        "+".join(short(n) for n in win),
        f"{m['instructions_per_ref']:.2f}",
        fmt(m["l1d_tlb_mpki"]),
        *paper_cells("l1d_tlb_mpki"),
        fmt(m["l2_tlb_mpki"]),
        *paper_cells("l2_tlb_mpki"),
        fmt(m["walks_pki"]),
        "; ".join(other) or "—",
    ]
    return "| " + " | ".join(cells) + " |"


def table(rows: list[str]) -> str:
    cols = [
        "study",
        "kernel",
        "paper's program",
        "skip+warm-up+refs",
        "instr/ref",
        "L1 DTLB MPKI",
        "paper",
        "xlat/paper",
        "L2 TLB MPKI",
        "paper",
        "xlat/paper",
        "walks PKI",
        "other: xlat / paper",
    ]
    return "\n".join(["| " + " | ".join(cols) + " |", "|---|---|---|---|" + "---:|" * 8 + "---|", *rows])


def load(path: Path) -> tuple[dict, list[dict]]:
    spec = tomllib.loads(path.read_text())
    return spec["studies"], spec["kernels"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="comma-separated studies (default: all of density.toml)")
    ap.add_argument("--refs", default="2M", help="references measured per kernel, at most the study's (default 2M)")
    ap.add_argument("--warm", default="2M", help="references of the study's warm-up simulated before them, the rest skipped (default 2M)")
    ap.add_argument("--spec", type=Path, default=HERE / "density.toml", help="the kernels and the papers' numbers (default calibration/density.toml)")
    ap.add_argument("--json", type=Path, metavar="PATH", help="also write each kernel's numbers to PATH")
    args = ap.parse_args()
    studies, kernels = load(args.spec)
    only = args.only.split(",") if args.only else list(studies)
    unknown = [s for s in only if s not in studies]
    if unknown:
        ap.error(f"unknown study {unknown[0]!r} (known: {', '.join(studies)})")
    refs, warm = count(args.refs), count(args.warm)
    rows, out = [], []
    for k in kernels:
        if k["study"] not in only:
            continue
        study = studies[k["study"]]
        t = time.monotonic()
        m = run(k, study, refs, warm)
        win = window(k, study, refs, warm)
        print(f"{k['study']} {k['workload']}: {time.monotonic() - t:.0f} s", file=sys.stderr)
        rows.append(row(k, m, win))
        out.append({"study": k["study"], "workload": k["workload"], "window": win, **m})
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
