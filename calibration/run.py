"""Run xlat and a locally built ChampSim on the same traces, and tabulate both.

    .venv/bin/python calibration/run.py --champsim DIR [--only gups,chase] [--jobs 2]
    .venv/bin/python calibration/run.py              # xlat only, against champsim.json
    .venv/bin/python calibration/run.py --machine skylake [--champsim DIR]

DIR holds ChampSim binaries built from its public source with the configurations in
``calibration/champsim/`` (``champsim_base``, ``champsim_stlb4``, ``champsim_pwc4``,
``champsim_page2m``; see README.md). This script only runs them: it records each trace of
``traces.toml`` with ``xlat record --format champsim`` (or ``xlat trace`` for a real program)
into ``results/calibration/``, runs every machine change in both simulators over the same
instructions, stores ChampSim's numbers in ``calibration/champsim.json`` (the data the table's
ChampSim columns come from) and prints the side-by-side table of docs/timing.md.

Without ``--champsim`` the ChampSim columns come from ``champsim.json``, so anyone can rerun
the xlat side.

With ``--machine PRESET`` the machine is one of xlat's presets instead of ``xlat.toml``:
``machine.py`` writes ChampSim configurations as alike to it as the two can be into
``results/calibration/PRESET/`` (``champsim_PRESET_CHANGE.json``; the binaries of those names are
built from them as README.md says), the changes are those of ``machine.CHANGES`` (a huge STLB
too, as near a perfect TLB as ChampSim goes), and ChampSim's numbers are kept in
``champsim-PRESET.json``. xlat runs the preset with ChampSim's walk behaviours and what reading
a ChampSim trace needs (``core.lookahead=8``, ChampSim's shuffled physical pages).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
XLAT = [str(Path(sys.executable).parent / "xlat")]

# The machine changes: xlat's --set keys for each ChampSim configuration (calibration/champsim/).
CHANGES: dict[str, dict[str, str]] = {
    "base": {},
    # STLB 128 -> 512 sets of 12 ways.
    "stlb4": {"tlb.l2.entries": "6144"},
    # PSCL4/3/2 ways x4: 1x16, 2x16, 4x32.
    "pwc4": {"pwc.l4.entries": "16", "pwc.l4.ways": "16", "pwc.l3.entries": "32", "pwc.l3.ways": "16", "pwc.l2.entries": "128", "pwc.l2.ways": "32"},
    # Every page 2 MB (ChampSim: page_size 2 MB, three levels, every touched 2 MB mapped). xlat
    # maps each region's aligned 2 MB stretches with 2 MB pages, the regions (the trace's
    # pages, --prefault) rounded out to 2 MB so that every touched 2 MB is one.
    "page2m": {"os.page_policy": "ideal", "loader.trace_region_kb": "2048"},
}

# ChampSim's walk behaviours, which xlat reproduces for this comparison only (docs/timing.md):
# the "xlat+cs" columns run with them.
CHAMPSIM_WALKS = {
    "champsim.pscl_reread": "true",
    "champsim.private_pte_lines": "true",
    "champsim.first_touch_cycles": "200",
    "champsim.no_dirty_bits": "true",
}

LINE = {
    "ipc": re.compile(r"CPU 0 cumulative IPC: ([\d.]+) instructions: (\d+) cycles: (\d+)"),
    "stlb": re.compile(r"cpu0_STLB TOTAL\s+ACCESS:\s+(\d+) HIT:\s+(\d+) MISS:\s+(\d+)"),
    "stlb_lat": re.compile(r"cpu0_STLB AVERAGE MISS LATENCY: ([\d.]+) cycles"),
    "ptw_reads": re.compile(r"cpu0_L1D TRANSLATION\s+ACCESS:\s+(\d+)"),
    "llc_lat": re.compile(r"LLC AVERAGE MISS LATENCY: ([\d.]+) cycles"),
}


def parse_champsim(text: str) -> dict[str, float]:
    """ChampSim's region-of-interest numbers from its standard output."""
    out: dict[str, float] = {}
    m = LINE["ipc"].search(text)
    if not m:
        raise ValueError("no 'CPU 0 cumulative IPC' line: did ChampSim finish?")
    out["ipc"], out["instructions"], out["cycles"] = float(m[1]), int(m[2]), int(m[3])
    m = LINE["stlb"].search(text)
    out["walks"] = int(m[3]) if m else 0
    m = LINE["stlb_lat"].search(text)
    out["walk_latency"] = float(m[1]) if m else 0.0
    m = LINE["ptw_reads"].search(text)
    out["pte_reads_per_walk"] = int(m[1]) / out["walks"] if m and out["walks"] else 0.0
    # From the LLC's miss to its fill: what ChampSim's DRAM took, with its queues.
    m = LINE["llc_lat"].search(text)
    out["llc_miss_latency"] = float(m[1]) if m else 0.0
    return out


def record(t: dict, traces: Path) -> Path:
    path = traces / f"{t['name']}.champsim.xz"
    if path.exists():
        return path
    if "synthetic" in t:
        import synth

        synth.write(t["synthetic"], path)
        return path
    if "workload" in t:
        cmd = [*XLAT, "record", "-w", t["workload"], "-o", str(path), "--refs", str(t["refs"]), "--format", "champsim"]
    else:
        # A real program: traced under valgrind, then written as ChampSim records.
        native = traces / f"{t['name']}.xtr"
        if not native.exists():
            subprocess.run(
                ["setarch", "-R", *XLAT, "trace", "-o", str(native), "--refs", str(t["refs"]), "--", *t["program"]], check=True, stdout=subprocess.DEVNULL
            )
        from xlat import _core

        _core.convert_trace([str(native)], None, str(path), None, None, "champsim")
        return path
    subprocess.run(cmd, check=True, cwd=ROOT)
    return path


# On a preset (--machine): what the calibration machine sets for reading a ChampSim trace.
PRESET_KEYS = {"core.lookahead": "8", "phys.frame_order": "shuffled:1"}


def xlat_run(
    trace: Path, change: str, warmup: int, champsim_walks: bool = False, extra: dict[str, str] | None = None, preset: str | None = None
) -> dict[str, float]:
    import xlat

    if preset:
        import machine

        base, changed = preset, {**PRESET_KEYS, **machine.xlat_keys(preset, change)}
    else:
        base, changed = str(HERE / "xlat.toml"), CHANGES[change]
    # (With a preset's banked DRAM, ChampSim's write drains too: its controller's behaviour.)
    champsim = {**CHAMPSIM_WALKS, **(machine.champsim_drains(preset) if preset else {})} if champsim_walks else {}
    keys = {**changed, **champsim, **(extra or {})}
    r = xlat.simulate(base, trace=str(trace), trace_format="champsim", prefault=True, warmup_instructions=warmup, **keys)
    walks = r["walks"]
    return {
        "ipc": r["ipc"],
        "instructions": r["instructions"],
        "cycles": r["cycles"],
        "refs": r["refs"],
        "walks": walks,
        # As ChampSim's STLB miss latency, from the STLB's miss to its fill: its walker takes
        # every request at once (it never checks its mshr_size), so that is the walk itself,
        # xlat's from when it has a walker, without the wait for one.
        "walk_latency": r["walk_cycles_per_walk"] if walks else 0.0,
        "pte_reads_per_walk": r["walk_steps_per_walk"] if walks else 0.0,
    }


def champsim_run(binaries: Path, trace: Path, change: str, warmup: int, instructions: int, outdir: Path, prefix: str, sha: str) -> dict[str, float]:
    # (The output is named by the configuration and the trace's recording too, so that one of
    # another is never reused.)
    out = outdir / f"{trace.name.split('.')[0]}.{change}.{sha}.out"
    if not out.exists():
        exe = binaries / f"{prefix}_{change}"
        p = subprocess.run([str(exe), "--hide-heartbeat", "-w", str(warmup), "-i", str(instructions), str(trace)], capture_output=True, text=True, check=False)
        if p.returncode != 0:
            why = p.stderr.strip()[-300:] or (f"killed by signal {-p.returncode}" if p.returncode < 0 else f"exit status {p.returncode}")
            raise RuntimeError(f"{exe.name} failed on {trace.name}: {why}")
        tmp = out.with_suffix(".tmp")
        tmp.write_text(p.stdout)
        tmp.replace(out)
    return parse_champsim(out.read_text())


def config_sha(path: Path) -> str:
    """A file (the ChampSim configuration a binary is built from, a recorded trace) as a short
    digest."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()[:16]


def pending(traces: dict[str, str], shas: dict[str, str], champ: dict, rerun: bool = False) -> list[tuple[str, str]]:
    """The (trace, change) runs ChampSim still has to make: those whose stored numbers are
    missing or came from another configuration or another recording of the trace (``traces``:
    name -> the trace's digest), all of them with ``rerun``."""

    def kept(n: str, ch: str) -> bool:
        run = champ.get(n, {}).get(ch, {})
        return run.get("config_sha") == shas[ch] and run.get("trace_sha") == traces[n]

    return [(n, ch) for n in traces for ch in shas if rerun or not kept(n, ch)]


def save(store: Path, champ: dict) -> None:
    tmp = store.with_suffix(".tmp")
    tmp.write_text(json.dumps(champ, indent=1, sort_keys=True) + "\n")
    tmp.replace(store)


def champsim_dram(llc_miss_cycles: float, preset: str | None = None) -> dict[str, str]:
    """xlat's keys for a flat DRAM as slow as ChampSim's was on average: its LLC miss latency
    (from the LLC's miss to its fill, so the controller's queues, refreshes and read/write
    turnarounds included) less the LLC's latency, which xlat adds itself; no bandwidth limit
    and no banks or write drains, as the queues and drains are in the number already."""
    import xlat

    k = xlat.resolve_config(preset or str(HERE / "xlat.toml"))
    cycles = llc_miss_cycles - k["cache.llc.latency"]
    return {"dram.latency_ns": f"{cycles / k['core.freq_ghz']:.2f}", "dram.bandwidth_gbps": "0", "dram.banks": "0", "dram.write_batch": "0"}


def pct(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.1f} %" if b else "—"


SIMS = ("champsim", "xlat+cs", "xlat")


def row(name: str, sims: dict[str, dict[str, dict[str, float]]], changes: tuple[str, ...] = ("page2m", "stlb4", "pwc4")) -> str:
    """One trace's line of the table (see :func:`table`); "—" where a simulator has no run."""
    base = {k: sims[k].get("base") for k in SIMS}
    # The same references in both: xlat's count, scaled to each run's instructions.
    refs = {k: base["xlat"]["refs"] * base[k]["instructions"] / base["xlat"]["instructions"] for k in SIMS if base[k]}

    def cell(fmt) -> str:
        return " / ".join(fmt(k) if base[k] else "—" for k in SIMS)

    cells = [
        cell(lambda k: f"{base[k]['ipc']:.3f}"),
        cell(lambda k: f"{base[k]['cycles'] / refs[k]:.1f}"),
        cell(lambda k: f"{base[k]['walk_latency']:.0f}"),
        cell(lambda k: f"{base[k]['pte_reads_per_walk']:.2f}"),
        *(cell(lambda k, ch=ch: pct(sims[k][ch]["ipc"], base[k]["ipc"]) if ch in sims[k] else "—") for ch in changes),
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


NAMES = {"page2m": "2 MB pages", "stlb4": "STLB x4", "pwc4": "PWC x4", "stlbhuge": "STLB 64 K", "ptp": "PTP", "mshr4": "MSHRs x4"}


def table(rows: dict[str, dict[str, dict[str, dict[str, float]]]], changes: tuple[str, ...] = ("page2m", "stlb4", "pwc4")) -> str:
    """Markdown: per trace, the base machine's IPC, cycles per reference, walk latency (STLB miss
    to fill) and entries read per walk, then each change's speed-up, in ChampSim / xlat with
    ChampSim's walk behaviours / xlat."""
    cols = ["IPC", "cycles/ref", "walk latency", "reads/walk", *(NAMES[c] for c in changes)]
    lines = ["| trace | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    lines += [row(name, sims, changes) for name, sims in rows.items() if "base" in sims.get("xlat", {}) and "base" in sims.get("xlat+cs", {})]
    return "\n".join(lines)


def fit(rows: dict[str, dict[str, dict[str, dict[str, float]]]], changes: tuple[str, ...]) -> str:
    """Markdown: per trace, ChampSim's IPC beside xlat+cs's, both walk latencies, and each
    change's gain in ChampSim / xlat+cs / xlat with the larger speed-up over the smaller (xlat+cs
    against ChampSim; "xlat more" where xlat+cs gains more); then how well the preset fits, as
    issue #63 counts it: IPC within 15 %, and the (trace, change) pairs where either simulator
    gains more than 2 % whose speed-ups are within 1.2 times of each other."""
    cols = ["ChampSim IPC", "xlat+cs IPC", "walk: ChampSim / xlat+cs", *(f"{NAMES[c]}: ChampSim / xlat+cs / xlat" for c in changes), "speed-ups apart"]
    lines = ["| trace | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    ipc_in = ipc_n = pair_in = pair_n = 0
    ratios = []
    for name, sims in rows.items():
        cs, xc, xl = (sims.get(k, {}) for k in ("champsim", "xlat+cs", "xlat"))
        if "base" not in cs or "base" not in xc:
            continue
        ratio = xc["base"]["ipc"] / cs["base"]["ipc"]
        ratios.append(ratio)
        ipc_n += 1
        ipc_in += abs(ratio - 1) <= 0.15
        cells = [f"{cs['base']['ipc']:.3f}", f"{xc['base']['ipc']:.3f} ({100 * (ratio - 1):+.0f} %)", f"{cs['base']['walk_latency']:.0f} / {xc['base']['walk_latency']:.0f}"]
        apart = []
        for ch in changes:
            if ch not in cs or ch not in xc:
                cells.append("—")
                continue
            a, b = cs[ch]["ipc"] / cs["base"]["ipc"], xc[ch]["ipc"] / xc["base"]["ipc"]
            c = xl[ch]["ipc"] / xl["base"]["ipc"] if ch in xl and "base" in xl else None
            cells.append(" / ".join(f"{100 * (g - 1):+.0f} %" for g in (a, b, c) if g is not None))
            if max(a, b) > 1.02:
                pair_n += 1
                pair_in += max(a, b) / min(a, b) <= 1.2
            apart.append(f"{max(a, b) / min(a, b):.2f}x" + (" (xlat more)" if b > a else ""))
        cells.append(", ".join(apart) or "—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if ipc_n:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        lines.append("")
        lines.append(
            f"IPC within 15 % on {ipc_in} of {ipc_n} traces (geometric mean of xlat+cs over ChampSim {geo:.3f}); "
            f"speed-ups within 1.2x on {pair_in} of {pair_n} (trace, change) pairs where either gains more than 2 %"
            + (f" ({100 * pair_in / pair_n:.0f} %)." if pair_n else ".")
        )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--champsim", type=Path, metavar="DIR", help="directory of the ChampSim binaries (champsim_base, ...)")
    ap.add_argument("--only", help="comma-separated trace names (default: all of traces.toml)")
    ap.add_argument(
        "--machine",
        metavar="PRESET",
        help="calibrate one of xlat's presets (skylake, csalt8, ...) instead of xlat.toml: writes its "
        "ChampSim configurations to RESULTS/PRESET/ and keeps ChampSim's numbers in champsim-PRESET.json",
    )
    ap.add_argument("--changes", help="comma-separated machine changes (default: all)")
    ap.add_argument("--rerun", action="store_true", help="run ChampSim again where the store already holds its numbers for the same configuration")
    ap.add_argument("--jobs", "-j", type=int, default=2, help="ChampSim runs at once (default 2)")
    ap.add_argument("--results", type=Path, default=ROOT / "results" / "calibration", help="traces and ChampSim outputs")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an xlat config key for both xlat columns, over calibration/xlat.toml (repeatable; to test a cause, e.g. --set dram.latency_ns=82)",
    )
    ap.add_argument(
        "--champsim-dram",
        action="store_true",
        help="give xlat, per trace and change, the DRAM latency ChampSim measured (its LLC miss "
        "latency, queues included, less the LLC's own), flat and without a bandwidth limit: "
        "compares everything but the DRAM model",
    )
    args = ap.parse_args()
    extra = {}
    for kv in args.set:
        key, eq, value = kv.partition("=")
        if not eq or not key:
            ap.error(f"--set {kv!r}: expected KEY=VALUE")
        extra[key] = value

    spec = tomllib.loads((HERE / "traces.toml").read_text())
    warmup = int(spec["warmup_instructions"])
    traces = [t for t in spec["trace"] if not args.only or t["name"] in args.only.split(",")]
    args.results.mkdir(parents=True, exist_ok=True)
    preset, prefix, known = None, "champsim", tuple(CHANGES)
    store, outdir = HERE / "champsim.json", args.results
    if args.machine:
        import machine

        import xlat

        try:
            xlat.resolve_config(args.machine)
        except xlat.ConfigError as e:
            ap.error(f"--machine {args.machine}: {e}")
        preset, known = args.machine, machine.CHANGES
        name = Path(preset).stem
        prefix = f"champsim_{name}"
        store, outdir = HERE / f"champsim-{name}.json", args.results / name
        configs = machine.write_configs(preset, outdir)
    changes = [c for c in (args.changes or ",".join(known)).split(",") if c]
    unknown = [c for c in changes if c not in known]
    if unknown:
        ap.error(f"unknown change {unknown[0]!r} (known: {', '.join(known)})")
    if preset and args.champsim:
        # (Only the binaries of the changes asked for.)
        missing = [p for p in configs if p.stem.rsplit("_", 1)[1] in changes and not (args.champsim / p.stem).exists()]
        if missing:
            print(f"ChampSim binaries missing in {args.champsim}; build each from ChampSim's source:", file=sys.stderr)
            for p in missing:
                # (The PTP change's replacement policy is this repository's own module.)
                modules = f" --replacement-dir {HERE / 'champsim' / 'replacement'}" if p.stem.endswith("_ptp") else ""
                print(f"  ./config.sh{modules} {p} && make", file=sys.stderr)
            return 2
    champ: dict = json.loads(store.read_text()) if store.exists() else {}

    def keys(name: str, ch: str) -> dict[str, str]:
        if not args.champsim_dram:
            return extra
        measured = champ.get(name, {}).get(ch, {}).get("llc_miss_latency")
        if not measured:
            sys.exit(f"--champsim-dram: no LLC miss latency of ChampSim's for {name} {ch} in {store} (run with --champsim DIR)")
        return {**extra, **champsim_dram(measured, preset)}

    rows: dict = {}
    paths = {t["name"]: record(t, args.results) for t in traces}
    for t in traces:
        name = t["name"]
        rows[name] = {
            "xlat": {ch: xlat_run(paths[name], ch, warmup, extra=keys(name, ch), preset=preset) for ch in changes},
            "xlat+cs": {ch: xlat_run(paths[name], ch, warmup, champsim_walks=True, extra=keys(name, ch), preset=preset) for ch in changes},
            "champsim": champ.get(name, {}),
        }
        print(f"xlat: {name} done", file=sys.stderr)
    (outdir / "xlat.json").write_text(json.dumps({n: {k: r[k] for k in ("xlat", "xlat+cs")} for n, r in rows.items()}, indent=1))
    shas = {ch: config_sha(outdir / f"{prefix}_{ch}.json" if preset else HERE / "champsim" / f"{ch}.json") for ch in changes}
    digests = {t["name"]: config_sha(paths[t["name"]]) for t in traces}
    if not args.champsim:
        # The table compares xlat as it is now with what the store holds: say so when a stored
        # run is of another ChampSim configuration (the preset changed since) or recording.
        stale = pending(digests, shas, champ)
        if stale:
            print(
                f"ChampSim: {len(stale)} of {len(traces) * len(changes)} runs in {store.name} are missing or from another configuration or trace recording"
                f" (first: {stale[0][0]} {stale[0][1]}); their columns are not of this machine: run with --champsim DIR",
                file=sys.stderr,
            )
    if args.champsim:
        # A run whose numbers the store holds for the same ChampSim configuration is not run
        # again, and each finished run is stored at once: the store is committed, so an
        # interrupted calibration goes on where it stopped, on any machine.
        jobs = pending(digests, shas, champ, args.rerun)
        if len(jobs) < len(traces) * len(changes):
            print(f"ChampSim: {len(traces) * len(changes) - len(jobs)} runs kept from {store.name} (same configuration and trace; --rerun runs them again)", file=sys.stderr)
        with ThreadPoolExecutor(args.jobs) as pool:
            futs = {
                job: pool.submit(champsim_run, args.champsim, paths[job[0]], job[1], warmup, int(rows[job[0]]["xlat"]["base"]["instructions"]), outdir, prefix, f"{shas[job[1]]}-{digests[job[0]]}")
                for job in jobs
            }
            for (name, ch), f in futs.items():
                try:
                    champ.setdefault(name, {})[ch] = {**f.result(), "config_sha": shas[ch], "trace_sha": digests[name]}
                except RuntimeError as e:
                    # (One line, and the other runs go on: the table shows what ran.)
                    print(f"ChampSim: {name} {ch}: {e}", file=sys.stderr)
                    continue
                rows[name]["champsim"] = champ[name]
                save(store, champ)
                print(f"ChampSim: {name} {ch} done", file=sys.stderr)
    print(table(rows, tuple(c for c in changes if c != "base")))
    if preset:
        print()
        print(fit(rows, tuple(c for c in changes if c != "base")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
