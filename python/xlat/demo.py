"""`xlat demo`: what an address-translation laboratory is for, in a few minutes.

Two memory-hungry workloads run on a Skylake-like core, on the same core with a perfect TLB
(every translation free: the ceiling any translation mechanism can reach), on the same core
with four times the page-walk-cache entries, and on Zen 3. The table shows how much of the
run time translation costs (1 - IPC / IPC with a perfect TLB), how many page-table reads a
walk makes, and where in the cache hierarchy those reads are served: the questions the seed
papers ask. Every number comes from the runs; nothing is filled in.
"""
from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core
from ._io import atomic_path, atomic_write_text

#: Workloads in order of preference; the demo takes the first two the engine has.
WORKLOADS = ("gups", "bfs", "random", "pagerank", "hashjoin")

#: References per run after warm-up (full, quick). The engine simulates a few million
#: references per second per core; these keep the full demo near a minute on two cores (under
#: three on a loaded machine) and the quick one near ten seconds.
REFS = {False: 20_000_000, True: 1_000_000}
WARMUP = {False: 4_000_000, True: 250_000}
SEED = 1


@dataclass(frozen=True)
class Machine:
    name: str          # row label
    preset: str
    sets: tuple[tuple[str, str], ...] = ()
    perfect_of: str | None = None   # this is the perfect-TLB twin of that machine
    reference: str | None = None    # perfect-TLB machine whose IPC bounds this one

    def command(self, workload: str, refs: int, warmup: int) -> str:
        sets = "".join(f" --set {k}={v}" for k, v in self.sets)
        return (f"xlat run --config {self.preset} --workload {workload} --refs {refs} "
                f"--warmup {warmup} --seed {SEED} --prefault{sets}")


MACHINES = (
    Machine("skylake", "skylake", reference="skylake, perfect TLB"),
    Machine("skylake, perfect TLB", "skylake", (("tlb.perfect", "true"),), perfect_of="skylake"),
    # The flattening paper's PWC sensitivity study (§7.1) sweeps the L3 PWC to 16 entries;
    # quadrupling every level shows how far bigger PWCs alone get.
    Machine("skylake, 4x PWC", "skylake",
            (("pwc.l4.entries", "16"), ("pwc.l3.entries", "16"), ("pwc.l2.entries", "96")),
            reference="skylake, perfect TLB"),
    Machine("zen3", "zen3", reference="zen3, perfect TLB"),
    Machine("zen3, perfect TLB", "zen3", (("tlb.perfect", "true"),), perfect_of="zen3"),
)


@dataclass
class Row:
    workload: str
    machine: Machine
    result: Any = None
    seconds: float = 0.0
    overhead: float | None = None
    stats: dict = field(default_factory=dict)


def _stat(stats: dict, name: str) -> float | None:
    v = stats.get(name)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def pte_shares(stats: dict) -> dict[str, float]:
    levels = ("l1", "l2", "llc", "dram")
    counts = {lv: _stat(stats, f"pte_served.{lv}") or 0.0 for lv in levels}
    total = sum(counts.values())
    return {lv: (c / total if total else 0.0) for lv, c in counts.items()}


def choose_workloads() -> list[str]:
    have = [w["name"] for w in _core.workloads()]
    chosen = [w for w in WORKLOADS if w in have]
    if len(chosen) < 2:
        chosen += [w for w in have if w not in chosen]
    if not chosen:
        raise _core.WorkloadError("the engine has no workloads to demonstrate")
    return chosen[:2]


def _has_key(key: str) -> bool:
    return any(row[0] == key for row in _core.config_keys())


class _Cancelled(Exception):
    pass


def run(quick: bool = False, out_dir: Path = Path("results/demo"), jobs: int | None = None,
        refs: int | None = None) -> int:
    from .api import simulate

    if refs is None:
        refs, warmup = REFS[quick], WARMUP[quick]
    else:
        warmup = refs // 4
    workloads = choose_workloads()
    machines = list(MACHINES)
    notes: list[str] = []
    if not _has_key("tlb.perfect"):
        machines = [m for m in machines if m.perfect_of is None]
        notes.append("This engine has no `tlb.perfect` key yet, so translation overhead "
                     "(which needs a perfect-TLB run) is not reported.")
    rows = [Row(w, m) for w in workloads for m in machines]
    jobs = jobs or min(4, os.cpu_count() or 1)
    # Several runs at once share the cores: each keeps to one host thread unless all fit twice.
    threads = 2 if 2 * jobs <= (os.cpu_count() or 1) else 1
    out_dir.mkdir(parents=True, exist_ok=True)

    print(f"xlat demo: {len(rows)} runs ({', '.join(workloads)} x {len(machines)} machines), "
          f"{refs:,} references each after {warmup:,} of warm-up, {jobs} at a time", file=sys.stderr)
    cancel = threading.Event()

    def one(row: Row) -> Row:
        def progress(done, total):
            # The engine calls back from this worker thread; Ctrl-C only reaches the main
            # thread, so the main thread sets `cancel` and the callback stops the engine.
            if cancel.is_set():
                raise _Cancelled()

        t0 = time.monotonic()
        row.result = simulate(row.machine.preset, row.workload, refs=refs, warmup=warmup, seed=SEED,
                              prefault=True, progress=progress, host_threads=threads, **dict(row.machine.sets))
        row.seconds = time.monotonic() - t0
        row.stats = row.result.stats
        return row

    t_start = time.monotonic()
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(one, r) for r in rows]
        for n, fut in enumerate(as_completed(futures), 1):
            r = fut.result()
            ipc = _stat(r.stats, "ipc")
            print(f"  [{n}/{len(rows)}] {r.workload} on {r.machine.name}: IPC {ipc:.3f} ({r.seconds:.1f} s)"
                  if ipc is not None else f"  [{n}/{len(rows)}] {r.workload} on {r.machine.name} ({r.seconds:.1f} s)",
                  file=sys.stderr)
    except BaseException:
        cancel.set()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    elapsed = time.monotonic() - t_start

    by_key = {(r.workload, r.machine.name): r for r in rows}
    for r in rows:
        ref = by_key.get((r.workload, r.machine.reference)) if r.machine.reference else None
        ipc, ipc_ref = _stat(r.stats, "ipc"), _stat(ref.stats, "ipc") if ref else None
        if ipc is not None and ipc_ref:
            r.overhead = 1.0 - ipc / ipc_ref

    table = summary_table(rows)
    facts = findings(rows, workloads)
    print()
    _print_plain(table)
    print()
    for f in facts:
        print(f"- {f}")
    if facts:
        print()
    fig = out_dir / "demo.png"
    figure_ok = write_figure(rows, workloads, fig)
    if not figure_ok:
        notes.append("matplotlib could not draw the figure; the table holds the same numbers.")
    write_report(out_dir / "report.md", rows, table, facts, workloads, refs, warmup, elapsed, notes,
                 fig if figure_ok else None)
    write_json(out_dir / "results.json", rows, refs, warmup)
    print(f"report: {out_dir / 'report.md'}  (figure {fig.name}, data results.json; {elapsed:.0f} s)")
    for note in notes:
        print(f"note: {note}")
    return 0


HEADER = ("workload", "machine", "IPC", "transl. overhead", "L2 TLB MPKI", "walks",
          "PTE reads/walk", "PTE reads: L1 / L2 / LLC / DRAM")


def summary_table(rows: list[Row]) -> list[tuple[str, ...]]:
    out = []
    for r in rows:
        s = r.stats
        ipc = _stat(s, "ipc")
        mpki = _stat(s, "tlb.l2.mpki")
        walks = _stat(s, "walks")
        per_walk = _stat(s, "walk_steps_per_walk")
        shares = pte_shares(s)
        perfect = r.machine.perfect_of is not None
        out.append((
            r.workload,
            r.machine.name,
            "-" if ipc is None else f"{ipc:.3f}",
            "(ceiling)" if perfect else ("-" if r.overhead is None else f"{100 * r.overhead:.1f}%"),
            "-" if mpki is None else f"{mpki:.2f}",
            "-" if walks is None else f"{walks:,.0f}",
            "-" if perfect or per_walk is None or not walks else f"{per_walk:.2f}",
            "-" if perfect or not walks else " / ".join(f"{100 * shares[lv]:.0f}%" for lv in ("l1", "l2", "llc", "dram")),
        ))
    return out


def _per_walk_by_level(stats: dict) -> dict[str, float]:
    per_walk = _stat(stats, "walk_steps_per_walk") or 0.0
    return {lv: per_walk * share for lv, share in pte_shares(stats).items()}


def findings(rows: list[Row], workloads: list[str]) -> list[str]:
    """Sentences computed from the runs (never written by hand): what the table says."""
    by_key = {(r.workload, r.machine.name): r for r in rows}
    out = []
    for w in workloads:
        base, pwc, zen = (by_key.get((w, m)) for m in ("skylake", "skylake, 4x PWC", "zen3"))
        if base is not None and base.overhead is not None:
            zen_part = f" and {100 * zen.overhead:.1f}% of zen3's" if zen is not None and zen.overhead is not None else ""
            out.append(f"{w}: address translation costs {100 * base.overhead:.1f}% of skylake's run time{zen_part} "
                       f"(1 - IPC / IPC with a perfect TLB).")
        if base is not None and pwc is not None and _stat(base.stats, "walks"):
            a, b = _per_walk_by_level(base.stats), _per_walk_by_level(pwc.stats)
            ra, rb = sum(a.values()), sum(b.values())
            ipc_a, ipc_b = _stat(base.stats, "ipc"), _stat(pwc.stats, "ipc")
            if ipc_a and ipc_b is not None:
                d_ipc = f"IPC changes by {100 * (ipc_b / ipc_a - 1):+.1f}%"
                removed = ra - rb
                if removed < 0.05:
                    out.append(f"{w}: 4x page-walk caches change almost nothing ({ra:.2f} -> {rb:.2f} PTE reads "
                               f"per walk; the upper levels already hit); {d_ipc}.")
                else:
                    dram_part = (a["dram"] - b["dram"]) / removed
                    kind = ("mostly cache hits" if dram_part < 0.25 else f"{100 * dram_part:.0f}% DRAM reads")
                    out.append(f"{w}: 4x page-walk caches cut PTE reads per walk from {ra:.2f} to {rb:.2f}; the "
                               f"reads they remove were {kind} (DRAM reads per walk {a['dram']:.2f} -> "
                               f"{b['dram']:.2f}), so {d_ipc}.")
        if zen is not None and _stat(zen.stats, "walks"):
            z = pte_shares(zen.stats)
            out.append(f"{w}: zen3's walker starts at L2 (walker.port = l2), so none of its PTE reads are L1D hits; "
                       f"{100 * z['dram']:.0f}% of them go to DRAM.")
    return out


def _print_plain(table: list[tuple[str, ...]]) -> None:
    from .cli import print_table

    print_table(table, header=HEADER)


def _markdown(table: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in table]
    return "\n".join(lines)


def write_figure(rows: list[Row], workloads: list[str], path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:  # noqa: BLE001 (the figure is optional: whatever stops matplotlib loading skips it)
        return False
    machines = []
    for r in rows:
        if r.machine.name not in machines:
            machines.append(r.machine.name)
    by_key = {(r.workload, r.machine.name): r for r in rows}
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    width = 0.8 / max(1, len(machines))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    ax = axes[0]
    # A perfect-TLB twin is drawn as an outline in its machine's colour: the ceiling that
    # machine could reach if translation were free.
    spec = {r.machine.name: r.machine for r in rows}
    bases = [m for m in machines if spec[m].perfect_of is None]
    for i, m in enumerate(machines):
        color = colors[bases.index(spec[m].perfect_of or m) % len(colors)]
        perfect = spec[m].perfect_of is not None
        vals = [(_stat(by_key[(w, m)].stats, "ipc") or 0.0) for w in workloads]
        ax.bar([j + (i - (len(machines) - 1) / 2) * width for j in range(len(workloads))], vals, width,
               label=m, color="white" if perfect else color, edgecolor=color, hatch="//" if perfect else None)
    ax.set_xticks(range(len(workloads)), workloads)
    ax.set_ylabel("IPC")
    ax.set_title("IPC (hatched: same machine with a perfect TLB)")
    ax.legend(fontsize=8)
    # Right: PTE reads per walk, split by where each read was served.
    ax = axes[1]
    real = [m for m in machines if spec[m].perfect_of is None]
    labels, bottoms = [], []
    levels = (("l1", "L1D"), ("l2", "L2"), ("llc", "LLC"), ("dram", "DRAM"))
    data = {lv: [] for lv, _ in levels}
    for w in workloads:
        for m in real:
            s = by_key[(w, m)].stats
            per_walk = _stat(s, "walk_steps_per_walk") or 0.0
            shares = pte_shares(s)
            labels.append(f"{w}\n{m}")
            for lv, _ in levels:
                data[lv].append(per_walk * shares[lv])
    bottoms = [0.0] * len(labels)
    for k, (lv, name) in enumerate(levels):
        ax.bar(range(len(labels)), data[lv], 0.6, bottom=bottoms, label=name, color=colors[k % len(colors)])
        bottoms = [b + d for b, d in zip(bottoms, data[lv])]
    ax.set_xticks(range(len(labels)), labels, fontsize=7)
    ax.set_ylabel("PTE reads per walk")
    ax.set_title("Where page-walk reads are served")
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return True


def write_report(path: Path, rows: list[Row], table, facts, workloads, refs, warmup, elapsed, notes,
                 fig: Path | None) -> None:
    version = _core.version()
    lines = [
        "# xlat demo",
        "",
        (f"xlat {version}; {len(rows)} simulations of {refs:,} memory references each (after "
         f"{warmup:,} references of warm-up, footprint mapped up front, seed {SEED}); {elapsed:.0f} s wall time."),
        "",
        ("**Translation overhead** is 1 - IPC / IPC with a perfect TLB on the same machine: the share of run "
         "time that address translation costs, and the most any translation mechanism could win back. "
         "**PTE reads/walk** counts page-table entries the walker read after the page-walk caches let it "
         "skip the upper levels; the last column says where in the cache hierarchy those reads were found "
         "(the PT-Baker thesis's key measurement: reads served from DRAM are what makes walks slow)."),
        "",
        _markdown(table),
        "",
    ]
    if facts:
        lines += ["What the numbers say (computed from the runs above):", ""] + [f"- {f}" for f in facts] + [""]
    if fig is not None:
        lines += [f"![IPC and where page-walk reads are served]({fig.name})", ""]
    lines += ["Reproduce any row:", "", "```sh"]
    for r in rows:
        lines.append(r.machine.command(r.workload, refs, warmup))
    lines += ["```", ""]
    if notes:
        lines += ["Notes:", ""] + [f"- {n}" for n in notes] + [""]
    lines += [
        "Workloads as run (every parameter):",
        "",
    ]
    seen = set()
    for r in rows:
        if r.workload in seen or r.result is None:
            continue
        seen.add(r.workload)
        params = ", ".join(f"{k}={v}" for k, v in r.result.workload.get("params", {}).items())
        lines.append(f"- `{r.workload}`: {params or '(no parameters)'}")
    lines.append("")
    atomic_write_text(path, "\n".join(lines))


def write_json(path: Path, rows: list[Row], refs: int, warmup: int) -> None:
    doc = {
        "xlat_version": _core.version(),
        "refs": refs,
        "warmup": warmup,
        "seed": SEED,
        "runs": [
            {"machine": r.machine.name, "overhead": r.overhead, **r.result.to_dict()}
            for r in rows
        ],
    }
    atomic_write_text(path, json.dumps(doc, indent=2, allow_nan=False) + "\n")
