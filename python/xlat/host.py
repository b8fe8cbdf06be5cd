"""Real-hardware tools: `xlat probe` (this machine's TLBs, measured; as a preset; against the
simulator) and the Python face of the PT-Baker runtime (`bake`).

The measurements and the knee finder are Rust (``crates/xlat-host``); this module runs them,
names the knees, writes presets and figures. See docs/host.md.
"""
from __future__ import annotations

import contextlib
import ctypes
import math
import platform
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core
from ._io import atomic_path

HostError = _core.HostError

# Full run: 8..65,536 pages, 4 per octave, 3 sweeps (about 10-20 s per page size mode here).
FULL = {"min_pages": 8, "max_pages": 65536, "per_octave": 4, "reps": 3, "accesses": 1_000_000}
# --quick: enough to exercise every path in about a second, not to measure the L2 DTLB.
QUICK = {"min_pages": 8, "max_pages": 4096, "per_octave": 2, "reps": 2, "accesses": 20_000}


@dataclass
class Curve:
    mode: str  # "4k" or "thp"
    pages: list[int]
    ns: list[list[float]]  # ns[rep][i]
    huge_bytes: int | None
    bytes: int
    misses: list[list[float]] | None = None  # misses[rep][i]: dTLB-load-misses per access (counters)
    control: list[list[float]] | None = None  # control[rep][i]: the control chase (as many nodes in ~1/64 the pages)
    steps: list[dict] = field(default_factory=list)  # of the median curve
    rep_steps: list[list[dict]] = field(default_factory=list)  # of each sweep

    @property
    def median(self) -> list[float]:
        return [statistics.median(col) for col in zip(*self.ns)]

    @property
    def median_control(self) -> list[float] | None:
        return [statistics.median(col) for col in zip(*self.control)] if self.control else None

    @property
    def median_misses(self) -> list[float] | None:
        return [statistics.median(col) for col in zip(*self.misses)] if self.misses else None

    @property
    def low(self) -> list[float]:
        return [min(col) for col in zip(*self.ns)]

    @property
    def high(self) -> list[float]:
        return [max(col) for col in zip(*self.ns)]


@dataclass
class Probe:
    machine: dict[str, Any]
    curves: list[Curve]
    params: dict[str, int]
    contiguity: dict[str, Any] | None
    contiguity_note: str | None
    seconds: float
    prefetch: dict[str, Any] | None = None  # the prefetch-triggers-walk test
    smt: dict[str, Any] | None = None  # the SMT thread-tag test, where there is a sibling
    smt_note: str | None = None  # why it did not run

    def curve(self, mode: str) -> Curve | None:
        return next((c for c in self.curves if c.mode == mode), None)


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def cpu_ghz() -> float | None:
    """The clock /proc/cpuinfo reports (a guest sees the host's nominal clock)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                return float(line.split(":", 1)[1]) / 1000
    return None


def run_probe(quick: bool = False, modes: Sequence[str] = ("4k", "thp"), **overrides: int) -> Probe:
    """Measure the chase curves and find their steps."""
    params = dict(QUICK if quick else FULL)
    params.update({k: v for k, v in overrides.items() if v is not None})
    t0 = time.monotonic()
    raw = _core.probe_measure(params["min_pages"], params["max_pages"], params["per_octave"], params["reps"],
                              params["accesses"], list(modes))
    curves = []
    for d in raw:
        c = Curve(d["mode"], d["pages"], d["ns"], d["huge_bytes"], d["bytes"], d["misses"], d["control"])
        xs = [float(p) for p in c.pages]
        c.steps = _core.probe_steps(xs, c.median, c.median_control)
        c.rep_steps = [_core.probe_steps(xs, row, ctl) for row, ctl in zip(c.ns, c.control or [None] * len(c.ns))]
        curves.append(c)
    contig, note = None, None
    try:
        contig = _core.contiguity(min(params["max_pages"], 16384), "4k")
    except HostError as e:
        note = str(e)
    # Do prefetches walk? A chase of 512 pages (past the L1 DTLB, within the L2 DTLB of every
    # CPU the probe has met), 8,192 other pages (past every L2 DTLB) to prefetch or load.
    pw = _core.probe_prefetch_walks(512, 8192, 7 if quick else 31)
    # Do SMT siblings share TLB entries? The thesis's array: L1 + L2 DTLB reach (2,112 pages on
    # Zen 3), from this machine's knees where both were found.
    c4 = next((c for c in curves if c.mode == "4k"), None)
    lv = levels(c4.steps) if c4 else {"l1": None, "l2": None}
    smt_pages = int(lv["l1"]["fits"] + lv["l2"]["fits"]) if lv["l1"] and lv["l2"] else 2112
    smt, smt_note = None, None
    try:
        smt = _core.probe_smt_share(smt_pages, 3 if quick else 15)
    except HostError as e:
        smt_note = str(e)
    return Probe(_core.machine(), curves, params, contig, note, time.monotonic() - t0, pw, smt, smt_note)


def counter_reach(pages: Sequence[int], misses: Sequence[float], level: float = 0.5) -> tuple[int, int] | None:
    """Where a counted miss curve first reaches `level` misses per access: the last size below
    it and the first at or above it (None if it never does, or starts there)."""
    for i, m in enumerate(misses):
        if m >= level:
            return (pages[i - 1], pages[i]) if i > 0 else None
    return None


def levels(steps: Sequence[dict]) -> dict[str, Any]:
    """Names the steps of a 4 KB curve: the first is the L1 DTLB's reach, the second the L2
    DTLB's, later ones are where the walks' own page-table lines leave a cache level."""
    return {"l1": steps[0] if steps else None, "l2": steps[1] if len(steps) > 1 else None, "walk": list(steps[2:])}


def l1_entries(step: dict) -> int:
    """A fully associative L1 DTLB of E entries holds E pages, less one or two the probe itself
    needs (its stack, the clock's page): the smallest multiple of 8 that holds the pages that
    fit, if that many did overflow it (61 fit, 64 do not: 64), else the largest below."""
    e = max(8, math.ceil(step["fits"] / 8) * 8)
    return e if e <= step["overflows"] else max(8, int(step["fits"]) // 8 * 8)


def l2_geometry(step: dict) -> tuple[int, int]:
    """(entries, ways) of an L2 DTLB from its step: the size nearest (in octaves) to where the
    chase's TLB cost is half-way up the step (`reach`), of the sizes L2 TLBs come in (2^k or
    3 x 2^k: 1,024, 1,536, 2,048, 3,072, 4,096), with 12 or 16 ways so that the sets are a power
    of two. A set-associative TLB's half-way point lies near its size, before it where sets
    overflow early (Zen 1's 1,536 entries: 1,300-1,340 pages) and after it where its misses come
    on over an octave (Zen 4's 3,072 in a KVM guest: 3,020-3,240)."""
    reach = max(step["reach"], 16.0)
    sizes = [m * 2**k for k in range(3, 24) for m in (2, 3)]
    best = min(sizes, key=lambda e: abs(math.log2(e / reach)))
    return (best, 12) if best % 3 == 0 else (best, 16)


def _spread(rep_steps: list[list[dict]], index: int) -> str:
    vals = [r[index]["fits"] for r in rep_steps if len(r) > index]
    if not vals:
        return "not found in any single run"
    missing = len(rep_steps) - len(vals)
    text = f"{min(vals):,.0f}-{max(vals):,.0f} over {len(vals)} runs" if min(vals) != max(vals) else f"{vals[0]:,.0f} in each of {len(vals)} runs"
    return text + (f", not found in {missing}" if missing else "")


def plateau(c: Curve, step: dict, upto: dict | None) -> float:
    """The level just past a step: the median of the (up to) three points after its top, not
    past the next knee (a gentle cache ramp may follow, which is not the step's cost)."""
    ys = c.median
    end = min(step["top"] + 3, upto["knee"] + 1 if upto else len(ys))
    return statistics.median(ys[step["top"]:max(end, step["top"] + 1)])


def _verdict(value: bool | None, yes: str, no: str) -> str:
    """A timing test's verdict in words: True, False, or None (the times could not tell)."""
    return {True: yes, False: no, None: "inconclusive (rerun on a quieter machine)"}[value]


def report_lines(p: Probe) -> list[str]:
    m = p.machine
    out = [(f"xlat probe on {cpu_model()}, CPU {m['cpu']}: random pointer chase, one access per page, "
            f"{p.params['min_pages']:,}..{p.params['max_pages']:,} pages, {p.params['reps']} runs ({p.seconds:.2f} s)")]
    hv = m["hypervisor"]
    out.append(f"  hypervisor: {'yes, ' + (m['hypervisor_vendor'] or 'unknown vendor') if hv else 'none'}"
               + (" (TLB misses walk 2D: guest and host tables)" if hv else ""))
    out.append("  perf counters: " + ("available: dTLB-load-misses counted beside the timing" if m["perf_unavailable"] is None
                                      else f"none ({m['perf_unavailable']}): timing only"))
    if p.smt is not None:
        f = p.smt
        verdict = _verdict(f["shared"], "the siblings share TLB entries (an SMT PT-Baker helper can warm the main thread's TLB)",
                           "TLB entries are not shared between siblings (tagged by thread or split): an SMT helper cannot warm the main thread's TLB")
        out.append(f"  SMT thread-tag test (CPUs {f['cpu']} and {f['sibling']}): {verdict}: a {f['pages']:,}-page chase costs "
                   f"{f['alone_ns']:.1f} ns per access alone, {f['control_ns']:.1f} with its sibling chasing 8 pages, "
                   f"{f['same_ns']:.1f} with it chasing the same pages, {f['other_ns']:.1f} with it chasing as many others "
                   f"(median of {f['rounds']} rounds)")
    elif not m["smt_siblings"]:
        out.append("  SMT: none on this CPU; the SMT thread-tag test does not apply")
    else:
        out.append(f"  SMT thread-tag test: not run: {p.smt_note}")
    c4 = p.curve("4k")
    if c4 is not None:
        lv = levels(c4.steps)
        base = c4.median[0]
        out.append(f"  4 KB pages: {base:.2f} ns per access while everything fits")
        mc = c4.median_control
        if mc:
            out.append(f"    control chase (as many lines in ~1/64 the pages): {mc[0]:.2f} -> {mc[-1]:.1f} ns, the data caches' share; "
                       "knees are found in what the chase costs beyond it")
        if lv["l1"]:
            s = lv["l1"]
            out.append(f"    L1 DTLB reach: {s['fits']:,.0f} pages fit, {s['overflows']:,.0f} do not, half-way at {s['reach']:,.0f} "
                       f"({_spread(c4.rep_steps, 0)}); then {plateau(c4, s, lv['l2']):.2f} ns")
        else:
            out.append("    L1 DTLB reach: no step found (noisy machine? try more --reps)")
        if lv["l2"]:
            s = lv["l2"]
            out.append(f"    L2 DTLB reach: {s['fits']:,.0f} pages fit, {s['overflows']:,.0f} do not, half-way at {s['reach']:,.0f} "
                       f"({_spread(c4.rep_steps, 1)}); walks then cost {plateau(c4, s, (lv['walk'] or [None])[0]):.1f} ns per access")
        else:
            out.append(f"    L2 DTLB reach: no second step up to {c4.pages[-1]:,} pages")
        for s in lv["walk"]:
            out.append(f"    walk plateau step: past {s['fits']:,.0f} pages, {s['before']:.1f} -> {s['after']:.1f} ns "
                       "(the walks' page-table lines leave a cache level)")
        mm = c4.median_misses
        if mm is not None:
            r = counter_reach(c4.pages, mm)
            where = (f"half the accesses miss past {r[0]:,} pages (by {r[1]:,})" if r
                     else f"fewer than half the accesses miss up to {c4.pages[-1]:,} pages")
            out.append(f"    counted dTLB-load-misses per access: {mm[0]:.2f} at {c4.pages[0]:,} pages, {mm[-1]:.2f} at "
                       f"{c4.pages[-1]:,}; {where} (the generic event counts L1 DTLB misses on AMD, misses that walk on Intel)")
    ct = p.curve("thp")
    if ct is not None:
        got = ct.huge_bytes
        if got == 0:
            out.append("  THP: the kernel backed the buffer with 4 KB pages (THP disabled?); the THP curve repeats the 4 KB one")
        else:
            cover = f"{got / ct.bytes:.0%} of the buffer in 2 MB pages" if got is not None else "huge-page coverage unknown"
            first = ct.steps[0]["fits"] if ct.steps else None
            line = f"  THP ({cover}): first step at {first:,.0f} pages" if first else f"  THP ({cover}): no step"
            l1 = levels(c4.steps)["l1"] if c4 else None
            if first and l1 and first <= 2 * l1["fits"]:
                line += (": 2 MB pages did not extend the L1 DTLB reach"
                         + (", as when the host backs guest memory with 4 KB pages (the TLB then holds 4 KB pieces)" if hv else ""))
            out.append(line)
    if p.prefetch is not None:
        f = p.prefetch
        verdict = _verdict(f["walks"], "software prefetches start page walks (a prefetching PT-Baker helper works here)",
                           "software prefetches that miss the TLB are dropped (a PT-Baker helper must load)")
        out.append(f"  prefetch-triggers-walk: {verdict}: a {f['chase_pages']}-page chase from the L2 DTLB costs "
                   f"{f['own_lines_ns']:.1f} ns per access after prefetching {f['other_pages']:,} lines of its own pages, "
                   f"{f['prefetch_ns']:.1f} ns after prefetching one line of {f['other_pages']:,} other pages, "
                   f"{f['load_ns']:.1f} ns after loading them (median of {f['rounds']} rounds)")
    if p.contiguity is not None:
        c = p.contiguity
        out.append(f"  physical contiguity of a {c['pages']:,}-page 4 KB buffer: {c['adjacent']:.0%} of neighbours adjacent, "
                   f"{c['groups4']:.0%} of aligned 16 KB groups contiguous (coalescible), longest run {c['longest_run']:,} pages")
    else:
        out.append(f"  physical contiguity: not measured: {p.contiguity_note}")
    return out


def to_json(p: Probe) -> dict[str, Any]:
    return {"machine": p.machine, "cpu_model": cpu_model(), "params": p.params, "seconds": p.seconds,
            "contiguity": p.contiguity, "contiguity_note": p.contiguity_note, "prefetch_walks": p.prefetch,
            "smt_share": p.smt, "smt_note": p.smt_note,
            "curves": [{"mode": c.mode, "pages": c.pages, "ns": c.ns, "median": c.median, "control": c.control,
                        "median_control": c.median_control, "misses": c.misses, "huge_bytes": c.huge_bytes,
                        "steps": c.steps, "rep_steps": c.rep_steps} for c in p.curves]}


def preset_text(p: Probe, name: str) -> str:
    """A preset from the measurement: the nearest shipped preset as base, with the measured
    TLB geometry and L2 TLB latency, and the measured curve as comments."""
    c4 = p.curve("4k")
    if c4 is None:
        raise HostError("--emit-preset needs the 4 KB curve")
    lv = levels(c4.steps)
    amd = "AMD" in cpu_model().upper()
    base = "zen3" if amd else "skylake"
    from .config import resolve

    # The clock from the chase itself: while everything fits, an access costs the L1D load-to-use
    # latency, which the base preset gives in cycles (a guest's /proc/cpuinfo shows the nominal
    # clock, not the boost clock the core runs at).
    l1d_cycles = int(resolve(base, [])["cache.l1d.latency"])
    ghz = l1d_cycles / c4.median[0] if c4.median[0] > 0 else cpu_ghz()
    lines = [f"# Measured by `xlat probe --emit-preset` on {cpu_model()}"
             + (" (a virtual machine)" if p.machine["hypervisor"] else "") + f", {time.strftime('%Y-%m-%d')}.",
             f"# Keys not set here are {base}'s.",
             f'description = "measured ({name}): {cpu_model()}'
             + (f", L1 DTLB {l1_entries(lv['l1'])} entries" if lv["l1"] else "")
             + (f", L2 DTLB {l2_geometry(lv['l2'])[0]}" if lv["l2"] else "") + '"',
             f'base = "{base}"', ""]
    if ghz:
        lines += ["[core]", (f"# {base}'s L1D latency ({l1d_cycles} cycles) over the measured {c4.median[0]:.2f} ns per access "
                  f"while everything fits (/proc/cpuinfo says {cpu_ghz() or 0:.2f} GHz)."), f"freq_ghz = {ghz:.2f}", ""]
    if lv["l1"]:
        e1 = l1_entries(lv["l1"])
        lines += ["[tlb.l1d]", (f"# {lv['l1']['fits']:.0f} pages fit, {lv['l1']['overflows']:.0f} do not: the smallest multiple "
                                "of 8 entries that holds them; modelled fully associative."),
                  f"entries = {e1}", f"ways = {e1}", ""]
    if lv["l2"]:
        e2, ways = l2_geometry(lv["l2"])
        lines += ["[tlb.l2]", (f"# {lv['l2']['fits']:.0f} pages fit, {lv['l2']['overflows']:.0f} do not, half-way up the step at "
                               f"{lv['l2']['reach']:.0f}: the 2^k or 3 x 2^k entries nearest it, {ways} ways, "
                               "power-of-two sets."),
                  f"entries = {e2}", f"ways = {ways}"]
        if lv["l1"] and ghz:
            extra = plateau(c4, lv["l1"], lv["l2"]) - c4.median[0]
            lines += ["# An L1 DTLB miss that hits the L2 DTLB adds this (the step after the first knee).",
                      f"latency = {max(1, round(extra * ghz))}"]
        lines.append("")
    lines.append("# The measured curves: pages, then median, min and max ns per access, and the control chase's median.")
    for c in p.curves:
        lines.append(f"# {c.mode}:")
        for x, m, lo, hi, k in zip(c.pages, c.median, c.low, c.high, c.median_control or [math.nan] * len(c.pages)):
            lines.append(f"#   {x:>6} {m:8.2f} {lo:8.2f} {hi:8.2f} {k:8.2f}")
    return "\n".join(lines) + "\n"


def simulate_curve(config: str, pages: Sequence[int], page_policy: str = "never", quick: bool = False) -> list[float]:
    """The same chase in the simulator: ns per access at each page count. The chase is replayed
    from a trace of the measured one (same line offsets, same order: ``_core.probe_trace``),
    prefaulted, warmed over two cycles."""
    import tempfile

    from .api import simulate
    from .config import resolve

    ghz = float(resolve(config, [])["core.freq_ghz"])
    out = []
    with tempfile.TemporaryDirectory(prefix="xlat-probe-") as tmp:
        for n in pages:
            refs = max(4 * n, 5_000 if quick else 50_000)
            warm = 2 * n + 1000
            path = str(Path(tmp) / f"chase{n}.xtr")
            _core.probe_trace(path, n, refs + warm)
            r = simulate(config, trace=path, refs=refs, warmup=warm, prefault=True, host_threads=1, os__page_policy=page_policy)
            out.append(r.stats["cycles"] / r.stats["refs"] / ghz)
    return out


def plot(p: Probe, path: str | Path, sim: tuple[str, list[int], list[float]] | None = None) -> None:
    """Measured curves (median, min-max band), knees, and the simulated curve, in one figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 4.8))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for c, color in zip(p.curves, ("C0", "C1")):
        ax.plot(c.pages, c.median, marker=".", color=color, label=f"measured, {c.mode.upper()} pages")
        ax.fill_between(c.pages, c.low, c.high, color=color, alpha=0.25, linewidth=0)
        if c.median_control:
            ax.plot(c.pages, c.median_control, linestyle="--", color=color, linewidth=1,
                    label=f"control (same lines, 1/64 the pages), {c.mode.upper()}")
    c4 = p.curve("4k")
    if c4 is not None:
        for s in c4.steps[:2]:
            ax.axvline(s["fits"], color="grey", linestyle=":", linewidth=1)
    if sim is not None:
        name, xs, ys = sim
        ax.plot(xs, ys, marker="x", color="C3", label=f"simulated, {name}, 4K pages")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("pages in the chase (one access per page)")
    ax.set_ylabel("ns per access")
    ax.set_title(f"{cpu_model()}: pointer chase" + (" (KVM guest)" if p.machine["hypervisor"] else ""), fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})


@contextlib.contextmanager
def bake(regions: Sequence[Any], mode: str = "load", stride: int = 32768, nops: int = 0, sleep_us: int = 0,
         placement: str = "llc", timer_slack_ns: int = 1) -> Iterator[Any]:
    """Runs the PT-Baker helper while the ``with`` body runs::

        data = numpy.zeros(1 << 27)
        with xlat.host.bake([data]) as baker:
            work(data)
        baker.stats  # {passes, touches, minor_faults, cpu, seconds}

    A region is an object with the buffer protocol (numpy array, bytearray, mmap: it is kept
    alive until the helper stops) or an ``(address, length)`` pair the caller keeps mapped.
    ``mode``: load, prefetch or mincore; ``placement``: llc, sibling, none or a CPU number.
    """
    pairs, keep = [], []
    for r in regions:
        if isinstance(r, tuple):
            pairs.append((int(r[0]), int(r[1])))
            continue
        mv = memoryview(r)
        if mv.readonly:
            raise HostError("bake needs a writable buffer or an (address, length) pair")
        keep.append(mv)
        addr = ctypes.addressof(ctypes.c_char.from_buffer(mv.cast("B")))
        pairs.append((addr, mv.nbytes))
    handle = _core.bake_start(pairs, mode, stride, nops, sleep_us, placement, timer_slack_ns)

    class _Baker:
        stats: dict | None = None
        cpu = handle.cpu()

        @staticmethod
        def passes() -> int:
            return handle.passes()

    b = _Baker()
    try:
        yield b
    finally:
        b.stats = handle.stop()
        del keep


def bench(kernels: Sequence[str] = ("gups", "bfs", "hashjoin"), modes: Sequence[str] = ("load", "prefetch", "mincore"),
          rounds: int = 5, quick: bool = False, placement: str = "llc", sleep_us: int = 0) -> list[dict[str, Any]]:
    """The A/B benchmark: per kernel and mode, the median seconds, and the ratio to no baker
    paired by round (its median, min and max) with a verdict that claims a gain only when
    every round gained."""
    rows = []
    for k in kernels:
        times = _core.bake_bench(k, list(modes), rounds, quick, placement, sleep_us)
        base = times[0]
        rows.append({"kernel": k, "mode": "none", "median_s": statistics.median(base), "min_s": min(base), "max_s": max(base),
                     "ratio": 1.0, "ratio_min": 1.0, "ratio_max": 1.0, "verdict": "baseline"})
        for mode, ts in zip(modes, times[1:]):
            ratios = [t / b for t, b in zip(ts, base)]
            lo, hi = min(ratios), max(ratios)
            verdict = "gain" if hi < 1.0 else "slower" if lo > 1.0 else "no gain"
            rows.append({"kernel": k, "mode": mode, "median_s": statistics.median(ts), "min_s": min(ts), "max_s": max(ts),
                         "ratio": statistics.median(ratios), "ratio_min": lo, "ratio_max": hi, "verdict": verdict})
    return rows
