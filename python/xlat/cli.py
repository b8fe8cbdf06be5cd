"""The `xlat` command line.

Every failure is one line on stderr, ``xlat: error: ...``, and exit status 2 (130 on Ctrl-C);
set ``XLAT_DEBUG=1`` to get the Python traceback of an unexpected error instead.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import _core
from . import config as _config
from ._io import atomic_outputs, atomic_path, check_image_output, check_output, check_output_directory, is_stream_target, parse_count
from ._signals import Terminated, interrupted_status, sigterm_as_interrupt

EXIT_ERROR = 2


class CliError(Exception):
    """A user error detected by the CLI itself (the engine raises XlatError subclasses)."""


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (usage is one ``--help`` away)."""

    def error(self, message: str):  # type: ignore[override]
        raise CliError(f"{message} (see '{self.prog} --help')")


# ---------------------------------------------------------------------------------------------
# argument types


def count_arg(text: str) -> int:
    try:
        return parse_count(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _at_least(low: float, kind: type):
    """An argparse type: a ``kind`` (int, or float: finite) >= low."""
    what = "an integer" if kind is int else "a number"

    def parse(text: str):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not {what}") from None
        if not math.isfinite(v):
            raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
        if v < low:
            raise argparse.ArgumentTypeError(f"{text.strip()} is below {low:g}")
        return v
    return parse


def number_at_least(low: float):
    """An argparse type: a finite number >= low."""
    return _at_least(low, float)


def out_path(text: str) -> str:
    """An argparse type: an output file's name (not empty: '' would write nothing, silently)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an output needs a file name, not ''")
    return text


def int_at_least(low: int):
    """An argparse type: an integer >= low."""
    return _at_least(low, int)


def seed_arg(text: str) -> int:
    try:
        value = int(text.strip().replace("_", ""))
    except ValueError:
        value = -1
    if not 0 <= value <= 2**64 - 1:
        raise argparse.ArgumentTypeError(f"'{text}' is not a random seed (a whole number from 0 to 2^64-1)")
    return value


def set_arg(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"'{text}' is not key=value (e.g. tlb.l2.entries=2048)")
    return key.strip(), value.strip()


def add_set_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set", dest="sets", metavar="KEY=VALUE", type=set_arg, action="append", default=[],
        help="override one config key (repeatable; applied after the preset, in order)",
    )


# ---------------------------------------------------------------------------------------------
# progress


class ProgressBar:
    """One progress line on stderr, on a terminal only, for work longer than a second:
    references done of the total, rate and time left, redrawn twice a second by a thread of
    its own (so it shows while a workload builds its input too, when the engine has nothing to
    report), erased when done. Also the place where Ctrl-C surfaces: the engine calls back a
    few times a second, and a pending KeyboardInterrupt is raised inside that callback."""

    DELAY = 1.0
    PERIOD = 0.5

    def __init__(self, desc: str, enabled: bool | None = None, unit: str = "references", out=None, idle: str | Any = "building the input"):
        self.desc = desc
        self.idle = idle  # what is said before the first report (all along, for work that makes none)
        self.out = out if out is not None else sys.stderr
        self.enabled = self.out.isatty() if enabled is None else enabled
        self.unit = unit
        self.start = time.monotonic()
        self.done, self.total = 0, None
        self.first = None  # (time, done) of the first report: the rate excludes input building
        self.shown = 0
        self._stop = threading.Event()
        self._thread = None
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="xlat-progress", daemon=True)
            self._thread.start()

    def __call__(self, done: int, total: int | None) -> None:
        if self.first is None:
            self.first = (time.monotonic(), done)
        self.done, self.total = done, total

    def line(self, now: float) -> str:
        """The progress line at time ``now`` (no terminal control characters)."""
        elapsed = now - self.start
        if self.first is None:
            idle = self.idle() if callable(self.idle) else self.idle
            return f"{self.desc}: {idle} ({_duration(elapsed)})"
        t0, d0 = self.first
        rate = (self.done - d0) / (now - t0) if now > t0 and self.done > d0 else 0.0
        text = f"{self.desc}: {human_count(self.done)}"
        if self.total:
            text += f" of {human_count(self.total)} {self.unit} ({self.done / self.total:.0%})"
        else:
            text += f" {self.unit}"
        if rate:
            text += f", {human_count(round(rate))}/s"
            if self.total and self.total > self.done:
                text += f", {_duration((self.total - self.done) / rate)} left"
        return text

    def _tick(self) -> None:
        if self._stop.wait(self.DELAY):
            return
        while not self._stop.is_set():
            width = max(20, shutil.get_terminal_size((80, 24)).columns - 1)
            text = self.line(time.monotonic())[:width]
            self._write("\r" + text.ljust(self.shown))
            self.shown = len(text)
            self._stop.wait(self.PERIOD)

    def _write(self, text: str) -> None:
        try:
            self.out.write(text)
            self.out.flush()
        except (OSError, ValueError):
            self._stop.set()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            if self.shown:
                self._write("\r" + " " * self.shown + "\r")
                self.shown = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _bytes_in(directory: Path) -> str:
    """What the files of a directory hold (an output being written into its temporary one)."""
    try:
        return human_bytes(sum(f.stat().st_size for f in Path(directory).iterdir() if f.is_file()))
    except OSError:
        return "?"


def _duration(seconds: float) -> str:
    """12 s, 3 min 5 s, 2 h 10 min."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"


# ---------------------------------------------------------------------------------------------
# formatting


def human_count(n: float) -> str:
    for unit, scale in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.3g}{unit}"
    return f"{n:g}"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n}"


def _num(stats: dict, name: str) -> float | None:
    v = stats.get(name)
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _fmt(v: float | None, spec: str = "{:,.0f}") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return spec.format(v)


def mpki(stats: dict, level: str) -> float | None:
    v = _num(stats, f"tlb.{level}.mpki")
    if v is None:
        m = _ratio(_num(stats, f"tlb.{level}.misses"), _num(stats, "instructions"))
        v = None if m is None else 1000 * m
    return v


def pte_served_shares(stats: dict) -> dict[str, float] | None:
    """Share of PTE reads served by each level (l1, l2, llc, dram), or None without walks."""
    levels = ("l1", "l2", "llc", "dram")
    counts = {lv: _num(stats, f"pte_served.{lv}") or 0.0 for lv in levels}
    total = sum(counts.values())
    if total == 0:
        return None
    return {lv: c / total for lv, c in counts.items()}


# Above this share of the cycles, page faults are what a run measures.
FAULT_SHARE_NOTE = 0.5


def steady_state_note(stats: dict, prefault: bool = False, warmup: int = 0) -> str | None:
    """A line for the summary when page faults dominate the cycles: the run measured demand
    paging, not translation in steady state (the usual surprise of a first run)."""
    cyc, fc, faults = _num(stats, "cycles"), _num(stats, "fault_cycles"), _num(stats, "faults")
    if not cyc or not fc or fc / cyc <= FAULT_SHARE_NOTE:
        return None
    hint = []
    if not prefault:
        hint.append("--prefault (map the footprint before the run)")
    if not warmup:
        hint.append("--warmup N (warm the TLBs and caches, then measure)")
    advice = f"; for steady state add {' and '.join(hint)}" if hint else ""
    return (f"note: page faults took {fc / cyc:.0%} of the cycles ({_fmt(faults)} faults): this run measures "
            f"demand paging{advice}")


def summary_rows(stats: dict) -> list[tuple[str, str]]:
    """The `xlat run` table: (label, value) pairs; rows whose statistics are absent are left out."""
    rows: list[tuple[str, str]] = []

    def add(label: str, value: str | None) -> None:
        if value is not None and value != "-":
            rows.append((label, value))

    ins, cyc = _num(stats, "instructions"), _num(stats, "cycles")
    add("references", _fmt(_num(stats, "refs")))
    add("instructions", _fmt(ins))
    add("cycles", _fmt(cyc))
    ipc = _num(stats, "ipc")
    add("IPC", _fmt(ipc if ipc is not None else _ratio(ins, cyc), "{:.3f}"))
    for level, label in (("l1d", "L1 DTLB"), ("l2", "L2 TLB")):
        m = _num(stats, f"tlb.{level}.misses")
        if m is not None:
            add(f"{label} misses (MPKI)", f"{m:,.0f} ({_fmt(mpki(stats, level), '{:.2f}')})")
    add("page walks", _fmt(_num(stats, "walks")))
    walks = _num(stats, "walks")
    # Every walk probes the page-walk caches: TLB misses', dirty-bit walks and retries.
    all_walks = (walks or 0.0) + (_num(stats, "tlb.dirty_walks") or 0.0) + (_num(stats, "walks.retries") or 0.0)
    per_walk = _num(stats, "walk_steps_per_walk")
    if per_walk is None:
        per_walk = _ratio(_num(stats, "walk_steps.miss"), walks)
    if walks:  # per-walk figures of a run without walks (a perfect TLB) mean nothing
        add("PTE reads per walk", _fmt(per_walk, "{:.2f}"))
        add("cycles per walk", _fmt(_num(stats, "walk_cycles_per_walk"), "{:.1f}"))
    pwc = [(lv, _num(stats, f"pwc.{lv}.hits")) for lv in ("l5", "l4", "l3", "l2")]
    pwc = [(lv, h) for lv, h in pwc if h is not None]
    if pwc and all_walks:
        add("PWC hits per walk", "  ".join(f"{lv.upper()} {h / all_walks:.2f}" for lv, h in pwc))
    if walks and _num(stats, "walk_steps.miss.guest") is not None:
        # Virtualized: a TLB miss's 2D walk reads guest and host (EPT) entries.
        g, h = _num(stats, "walk_steps.miss.guest") or 0.0, _num(stats, "walk_steps.miss.host") or 0.0
        add("PTE reads per walk: guest / host", f"{g / walks:.2f} / {h / walks:.2f}")
        nh, nm = _num(stats, "tlb.nested.hits") or 0.0, _num(stats, "tlb.nested.misses") or 0.0
        if nh + nm:
            add("nested TLB hits", f"{nh:,.0f} of {nh + nm:,.0f} ({100 * nh / (nh + nm):.1f}%)")
    shares = pte_served_shares(stats)
    if shares:
        add("PTE reads served by", "  ".join(f"{lv.upper()} {100 * s:.1f}%" for lv, s in shares.items()))
    for level, label in (("l1d", "L1D"), ("l2", "L2"), ("llc", "LLC")):
        r = _ratio(_num(stats, f"cache.{level}.misses"), _num(stats, f"cache.{level}.accesses"))
        if r is not None:
            add(f"{label} miss rate", f"{100 * r:.1f}%  ({_fmt(_num(stats, f'cache.{level}.misses'))} misses)")
    add("page faults", _fmt(_num(stats, "faults")))
    add("EPT violations", _fmt(_num(stats, "ept_violations")))
    vs = _num(stats, "vm_switches")
    if vs:
        add("VM switches", _fmt(vs))
    ptb = _num(stats, "pt_bytes")
    if ptb is not None:
        add("page-table memory", human_bytes(ptb))
    hptb = _num(stats, "host.pt_bytes")
    if hptb is not None:
        add("host (EPT) page-table memory", human_bytes(hptb))
    # Page sizes and physical memory: what the OS's page-size policy achieved, and how
    # fragmented memory was (at the start: the fragmentation scenario; at the end: after the run).
    cov = _num(stats, "huge_coverage")
    if cov is not None:
        moves = [(n, _num(stats, n)) for n in ("promotions", "demotions")]
        detail = ", ".join(f"{v:,.0f} {n}" for n, v in moves if v)
        # (Nothing mapped, as in a run of no references: no share to give.)
        add("huge-page coverage", _fmt(100 * cov, "{:.1f}%") + (f"  ({detail})" if detail else ""))
    hcov = _num(stats, "host.huge_coverage")
    if hcov is not None:
        add("host huge-page coverage", _fmt(100 * hcov, "{:.1f}%"))
    sd = _num(stats, "shootdowns")
    if sd:
        add("TLB shootdowns", f"{sd:,.0f}  ({_fmt(_num(stats, 'shootdown_cycles'))} cycles)")
    add("free 2 MB blocks", free_2m_summary(stats))
    return rows


def free_2m_summary(stats: dict) -> str | None:
    """'N at start (X% of free memory) -> M at end', or None without the statistics."""
    start, end = _num(stats, "phys.start.free_2m_blocks"), _num(stats, "phys.free_2m_blocks")
    if start is None or end is None:
        return None
    share = _ratio(start * (2 << 20), _num(stats, "phys.start.free_bytes"))
    text = f"{start:,.0f} at start"
    if share is not None:
        text += f" ({100 * share:.1f}% of free memory)"
    return text + f" -> {end:,.0f} at end"


def print_table(rows: Sequence[Sequence[Any]], header: Sequence[str] | None = None, out=None, indent: str = "") -> None:
    out = out or sys.stdout
    all_rows = [list(map(str, header))] if header else []
    all_rows += [list(map(str, r)) for r in rows]
    if not all_rows:
        return
    widths = [max(len(r[i]) for r in all_rows if i < len(r)) for i in range(max(len(r) for r in all_rows))]
    for n, r in enumerate(all_rows):
        cells = [c.ljust(widths[i]) if i < len(r) - 1 else c for i, c in enumerate(r)]
        print(indent + "  ".join(cells).rstrip(), file=out)
        if header and n == 0:
            print(indent + "  ".join("-" * w for w in widths), file=out)


# ---------------------------------------------------------------------------------------------
# commands


def cmd_run(args: argparse.Namespace) -> int:
    from .api import simulate

    if args.old_threads is not None:
        raise CliError("--threads is now --host-threads (host threads of the run); "
                       "the simulated threads are the workload's threads=N (-w bfs:threads=2)")
    traces = [t for part in (args.trace or []) for t in part.split(",") if t]
    given = [o for o, v in (("--workload", args.workload), ("--trace", traces), ("--mix", args.mix)) if v]
    if not given:
        raise CliError("give --workload NAME, --trace FILE or --mix 'PROG@CORE,...' (see 'xlat workloads')")
    if len(given) > 1:
        raise CliError(f"give one of --workload, --trace and --mix, not {' and '.join(given)}")
    if args.trace_format and not traces:
        raise CliError("--trace-format needs --trace")
    for t in traces:
        if not os.path.exists(t):
            raise CliError(f"trace file '{t}' does not exist")
    if args.shootdowns is not None and not os.path.isfile(args.shootdowns):
        raise CliError(f"shootdown trace '{args.shootdowns}' does not exist")
    # Resolve first so a bad config fails before anything else happens.
    _config.resolve(args.config, args.sets)

    if args.weighted_speedup and not args.mix:
        raise CliError("--weighted-speedup needs --mix")
    if args.warmup and args.warmup_instructions:
        raise CliError("give --warmup (references) or --warmup-instructions, not both")
    if args.weighted_speedup and args.shootdowns:
        raise CliError("--shootdowns names the mix's streams: it does not go with --weighted-speedup's runs alone")

    def run(progress) -> Any:
        return simulate(
            args.config, args.workload, refs=args.refs, seed=args.seed, warmup=args.warmup,
            prefault=args.prefault, trace=traces or None, trace_format=args.trace_format,
            progress=progress, host_threads=args.host_threads, interval=args.interval, mix=args.mix,
            shootdowns=args.shootdowns, warmup_instructions=args.warmup_instructions, sample=args.sample,
            skip=args.skip, **dict(args.sets),
        )

    if args.weighted_speedup:
        return _run_weighted_speedup(args)

    _cache_traces(traces, args.trace_format)
    desc = args.workload or ("mix" if args.mix else os.path.basename(traces[0]))
    if args.json:
        # Open the temporary output before the run: an unwritable destination fails now, not
        # after minutes of simulation, and Ctrl-C or an error leaves no partial file.
        with atomic_path(args.json) as tmp:
            with ProgressBar(desc) as bar:
                result = run(bar)
            result.to_json(tmp)
    else:
        with ProgressBar(desc) as bar:
            result = run(bar)
    if not args.quiet:
        print_result(result, all_stats=args.all_stats)
        if args.sample:
            st = result.stats
            print(f"sampled: {st['sample.units']} units of {human_count(st['sample.unit_refs'])} references "
                  f"(each after {human_count(st['sample.warm_refs'])} warming) every {human_count(st['sample.period'])}; "
                  f"IPC {st['ipc']:.4f} ± {st['ipc.ci95']:.4f} (95 %), L2 TLB MPKI {st['tlb.l2.mpki']:.2f} ± "
                  f"{st['tlb.l2.mpki.ci95']:.2f}; {human_count(st['sample.simulated_refs'])} references simulated, "
                  f"{human_count(st['sample.skipped_refs'])} skipped")
    # (The run counts OS calls in a stream, made or ignored, as references too; a sampled run covered what it
    # skipped and simulated, while its statistics are its units'.)
    if args.sample:
        done = result.stats["sample.skipped_refs"] + result.stats["sample.simulated_refs"]
    else:
        done = result.stats.get("refs", 0) + result.stats.get("os.calls", 0) + result.stats.get("os.ignored_calls", 0)
    if args.refs is not None and done < args.refs:
        # A window shorter than asked for is easy to miss in a table and skews comparisons.
        print(f"xlat: warning: the workload ended after {done:,} of the {args.refs:,} references "
              f"asked for (raise its size parameter; see 'xlat workloads')", file=sys.stderr)
    return 0


def _cache_traces(traces: Sequence[str], trace_format: str | None) -> None:
    """Decode traces in slow formats into the trace cache now (the run reads the copies), and
    say so when that took a while: the first run pays for the decoding, once."""
    from . import tracecache

    for t in traces:
        start = time.monotonic()
        got = tracecache.ensure(t, trace_format)
        if got is not None and got[1] and time.monotonic() - start >= 1.0:
            e = got[0]
            print(f"xlat: {t}: decoded once into the trace cache ({human_count(e['refs'])} references, "
                  f"{time.monotonic() - start:.1f} s); later runs read the native copy", file=sys.stderr)


def cmd_cache(args: argparse.Namespace) -> int:
    from . import tracecache

    if args.clear and args.add:
        # (Which first? Either order loses what the user meant by the other.)
        raise CliError("--clear and --add do not go together: clear first, then add")
    where = tracecache.directory()
    if where is None:
        print("the trace cache is off (XLAT_CACHE_DIR=off)")
        return 0
    if args.clear:
        files, size = tracecache.clear()
        print(f"removed {files} file{'s' if files != 1 else ''} ({human_bytes(size)}) from {where}")
        return 0
    for t in args.add or []:
        if not os.path.exists(t):
            raise CliError(f"trace file '{t}' does not exist")
        start = time.monotonic()
        got = tracecache.ensure(t, args.trace_format)
        if got is None:
            print(f"{t}: a native trace (or not a regular file): runs read it as it is")
        elif got[1]:
            print(f"{t}: decoded into the cache ({human_count(got[0]['refs'])} references, {time.monotonic() - start:.1f} s)")
        else:
            print(f"{t}: in the cache already")
    entries = tracecache.entries()
    total = sum(e["bytes"] for e in entries)
    print(f"trace cache {where}: {len(entries)} cop{'ies' if len(entries) != 1 else 'y'}, {human_bytes(total)}")
    rows = [(e["key"][:12], e["format"], human_count(e["refs"]), human_bytes(e["source_bytes"]), human_bytes(e["bytes"]),
             time.strftime("%Y-%m-%d %H:%M", time.localtime(e["created"])), e["source"]) for e in entries]
    if rows:
        print_table(rows, header=("key", "format", "refs", "source size", "copy size", "made", "made from"), indent="  ")
    graphs = tracecache.graphs()
    if graphs:
        print(f"and {len(graphs)} graph{'s' if len(graphs) != 1 else ''} of the graph kernels, {human_bytes(sum(g['bytes'] for g in graphs))}")
        print_table([(g["name"], human_bytes(g["bytes"]), time.strftime("%Y-%m-%d %H:%M", time.localtime(g["created"]))) for g in graphs],
                    header=("graph", "size", "made"), indent="  ")
    return 0


# Why a curve is approximate, by structure family (docs/performance.md).
_INEXACT = {
    "pwc.l": "an upper page-walk-cache level is filled only when the levels below miss",
    "cache": "write-backs, prefetches or victims reached it, or it is not LRU",
    "tlb.l": "its replacement is not LRU",
}


def cmd_mrc(args: argparse.Namespace) -> int:
    from .api import simulate

    traces = [t for part in (args.trace or []) for t in part.split(",") if t]
    if bool(args.workload) == bool(traces):
        raise CliError("give one of --workload and --trace")
    for t in traces:
        if not os.path.exists(t):
            raise CliError(f"trace file '{t}' does not exist")
    structures = [s for part in args.structure or ["tlb.l1d,tlb.l2,pwc"] for s in part.split(",") if s]
    if not structures:
        raise CliError("--structure names no structure (give e.g. -s tlb.l2,pwc)")
    _config.resolve(args.config, args.sets)
    # (Before the run: a destination that cannot be written fails now, not after it.)
    if args.json:
        check_output(args.json)
    if args.plot:
        check_image_output(args.plot)
    _cache_traces(traces, args.trace_format)
    desc = args.workload or os.path.basename(traces[0])
    out_json = atomic_path(args.json) if args.json else contextlib.nullcontext(None)
    with out_json as tmp, ProgressBar(desc) as bar:
        r = simulate(args.config, args.workload, refs=args.refs, seed=args.seed, warmup=args.warmup, prefault=args.prefault,
                     trace=traces or None, trace_format=args.trace_format, progress=bar, curves=structures,
                     curve_ways=args.max_ways, **dict(args.sets))
        if tmp is not None:
            r.to_json(tmp)
    instructions = r.stats.get("instructions") or 0
    print(f"miss-ratio curves of {desc} on {r.config_name} [config {r.config_hash}]: one run, "
          f"{human_count(r.stats.get('refs', 0))} references, {human_count(instructions)} instructions")
    for c in r.curves:
        geometry = " + ".join(f"{s} set{'s' if s != 1 else ''} x {w} ways" for s, w in c.arrays)
        print(f"\n{c.structure}: {geometry} as configured, {human_count(c.lookups)} lookups"
              + ("" if c.exact else " (approximate: " + _INEXACT.get(c.structure[:5], "its input depends on its size") + ")"))
        shown = sorted({w for w in range(1, c.max_ways + 1) if w & (w - 1) == 0} | {c.ways, c.max_ways} - {0})
        rows = [(f"{w}" + (" *" if w == c.ways else ""), f"{c.entries(w):,}", f"{c.misses(w):,}",
                 f"{c.misses(w) / c.lookups:.4f}" if c.lookups else "-",
                 f"{1000 * c.misses(w) / instructions:.3f}" if instructions else "-") for w in shown if w <= c.max_ways]
        print_table(rows, header=("ways", "entries", "misses", "miss ratio", "MPKI"), indent="  ")
    print("\n* = as configured; every associativity from 1 to", args.max_ways, "is in --json")
    if args.plot:
        from .mrc import plot

        plot(r.curves, args.plot, instructions or None, title=f"{desc} on {r.config_name}")
        print(f"figure written to {args.plot}")
    return 0


def _run_weighted_speedup(args: argparse.Namespace) -> int:
    """`xlat run --mix ... --weighted-speedup`: the mix, each program alone, and the sum."""
    from .mixes import run_mix

    if args.json or args.interval:
        raise CliError("--weighted-speedup prints a table; run without --json and --interval")
    if args.warmup_instructions:
        raise CliError("--weighted-speedup warms up by references: use --warmup, not --warmup-instructions")
    if args.skip:
        raise CliError("--weighted-speedup runs each program from its start: run without --skip")
    with ProgressBar("mix and each program alone") as bar:
        bar(0, None)
        m = run_mix(args.config, args.mix, refs=args.refs, seed=args.seed, warmup=args.warmup,
                    prefault=args.prefault, **dict(args.sets))
    if not args.quiet:
        print_result(m.shared)
        print()
        print("each program alone on the same machine, for the references it ran in the mix:")
        rows = [(name, cores, _fmt(s, "{:.3f}"), _fmt(a, "{:.3f}"), _fmt(r, "{:.3f}")) for name, cores, s, a, r in m.table()]
        print_table(rows, header=("program", "cores", "IPC mixed", "IPC alone", "mixed/alone"), indent="  ")
        print(f"\nweighted speedup {m.weighted_speedup:.3f} (of {len(m.programs)}: each program as fast as alone)")
    return 0


def print_result(result, all_stats: bool = False, out=None) -> None:
    out = out or sys.stdout
    wl = result.workload
    params = ", ".join(f"{k}={v}" for k, v in (wl.get("params") or {}).items())
    print(f"{wl.get('name')}" + (f" ({params})" if params else ""), file=out)
    print(f"on {result.config_name} [config {result.config_hash}], seed {result.seed}"
          + (f", warm-up {result.warmup:,} refs" if result.warmup else ""), file=out)
    print(file=out)
    if all_stats:
        # An undefined ratio (zero denominator) shows as '-', as in the summary.
        print_table([(k, "-" if isinstance(v, float) and math.isnan(v) else v) for k, v in result.stats.items()], out=out, indent="  ")
    else:
        print_table(summary_rows(result.stats), out=out, indent="  ")
        programs = program_rows(result)
        if programs and "prog0.instructions" not in result.stats:
            print(file=out)
            print("programs share cores, time-sliced as VMs: the statistics are the cores' (per core: --all-stats)", file=out)
        elif programs:
            print(file=out)
            print("each program (prog<N>.* statistics):", file=out)
            print_table(programs, header=("program", "cores", "IPC", "L2 TLB MPKI", "walks", "cycles/walk"), out=out, indent="  ")
    note = steady_state_note(result.stats, prefault=result.prefault, warmup=result.warmup)
    if note:
        print(file=out)
        print(note, file=out)
    if result.series:
        print(file=out)
        print(f"over time, every {result.interval:,} instructions (each interval's own figures):", file=out)
        print_table(series_rows(result.series), header=("interval", "instructions", "IPC", "L2 TLB MPKI", "walks"),
                    out=out, indent="  ")


def program_rows(result) -> list[tuple[str, ...]]:
    """The per-program table of a mix: what each program got, from its `prog<N>.` statistics."""
    if result.workload.get("name") != "mix":
        return []
    rows = []
    for key, spec in (result.workload.get("params") or {}).items():
        prog, cores = spec.rsplit("@", 1) if "@" in spec else (spec, "")
        st = {k[len(key) + 1:]: v for k, v in result.stats.items() if k.startswith(key + ".")}
        rows.append((f"{key} {prog.split(':')[0]}", cores, _fmt(_num(st, "ipc"), "{:.3f}"), _fmt(_num(st, "tlb.l2.mpki"), "{:.2f}"),
                     _fmt(_num(st, "walks")), _fmt(_num(st, "walk_cycles_per_walk"), "{:.1f}")))
    return rows


def series_rows(series: Sequence[dict]) -> list[tuple[str, ...]]:
    """The `xlat run --interval` table: a few figures of each interval ('-' where a ratio is
    undefined in it)."""
    return [
        (str(i), _fmt(_num(iv, "instructions")), _fmt(_num(iv, "ipc"), "{:.3f}"),
         _fmt(_num(iv, "tlb.l2.mpki"), "{:.2f}"), _fmt(_num(iv, "walks")))
        for i, iv in enumerate(series)
    ]


def cmd_configs(args: argparse.Namespace) -> int:
    found = _config.presets()
    if not found:
        raise CliError(f"no presets found (searched: {', '.join(map(str, _config.preset_dirs())) or 'nothing'})")
    rows = [(name, _config.description(path)) for name, path in found.items()]
    print_table(rows, header=("preset", "description"))
    if args.verbose:
        print()
        for name, path in found.items():
            print(f"{name}: {path}")
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    resolved = _config.resolve(args.preset, args.sets)
    schema = {row["key"]: row for row in _config.keys()}  # noqa: SIM118 (a function of the config module, not dict.keys)
    rows = []
    for k, v in resolved.items():
        info = schema.get(k, {})
        changed = "*" if info and info.get("default") != v else ""
        rows.append((k, v + changed, info.get("doc", "")))
    label = args.preset or "engine defaults"
    print(f"# {label} [config {_config.config_hash(resolved)}]; * = differs from the engine default")
    # The meanings wrapped to the terminal (100 columns when not one), continued under themselves.
    import textwrap

    key_w = max(len("key"), *(len(r[0]) for r in rows))
    val_w = min(24, max(len("value"), *(len(r[1]) for r in rows)))
    width = max(40, (shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100) - key_w - val_w - 5)
    lines = []
    for k, v, doc in rows:
        parts = textwrap.wrap(doc, width) or [""]
        lines.append((k, v, parts[0]))
        lines += [("", "", p) for p in parts[1:]]
    print_table(lines, header=("key", "value", "meaning"))
    return 0


def _wrapped(text: str, indent: str, out, hanging: str | None = None) -> None:
    """Print ``text`` wrapped to the terminal (at most 100 columns), each line after ``indent``
    (the lines after the first after ``hanging``, if given)."""
    import textwrap

    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 100))
    rest = indent if hanging is None else hanging
    for line in textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=rest):
        print(line, file=out)


def _print_entry(e: dict, out, name: str | None = None) -> None:
    """One glossary entry: its name (or pattern), kind, unit and section, then its meaning."""
    head = f"{name}  ({e['kind']}, {e['unit']}; {e['section']}: {e['pattern']})" if name else f"{e['pattern']}  ({e['kind']}, {e['unit']})"
    print(head, file=out)
    doc = e["doc"] + (f" Only with {e['only']}." if e["only"] else "")
    _wrapped(doc, "    ", out)


# The statistics behind each row of the `xlat run` summary, so `xlat explain "page walks"`
# explains a row by the statistics it shows.
SUMMARY_LABELS = {
    "references": ["refs"], "instructions": ["instructions"], "cycles": ["cycles"], "ipc": ["ipc"],
    "l1 dtlb misses (mpki)": ["tlb.l1d.misses", "tlb.l1d.mpki"], "l2 tlb misses (mpki)": ["tlb.l2.misses", "tlb.l2.mpki"],
    "page walks": ["walks", "tlb.dirty_walks", "walks.retries"], "pte reads per walk": ["walk_steps_per_walk"], "cycles per walk": ["walk_cycles_per_walk"],
    "pwc hits per walk": ["pwc.l4.hits"], "pte reads per walk: guest / host": ["walk_steps_per_walk.guest", "walk_steps_per_walk.host"],
    "nested tlb hits": ["tlb.nested.hits"], "pte reads served by": ["pte_served.l1"],
    "l1d miss rate": ["cache.l1d.miss_rate"], "l2 miss rate": ["cache.l2.miss_rate"], "llc miss rate": ["cache.llc.miss_rate"],
    "page faults": ["faults", "fault_cycles"], "ept violations": ["ept_violations"], "vm switches": ["vm_switches"],
    "page-table memory": ["pt_bytes"], "host (ept) page-table memory": ["host.pt_bytes"],
    "huge-page coverage": ["huge_coverage", "promotions", "demotions"], "host huge-page coverage": ["host.huge_coverage"],
    "tlb shootdowns": ["shootdowns", "shootdown_cycles"],
    "free 2 mb blocks": ["phys.start.free_2m_blocks", "phys.free_2m_blocks"],
}


def cmd_pcc_cost(args: argparse.Namespace) -> int:
    from . import pcc

    c = pcc.cost(args.config, args.sets + [("pcc.entries_1g", str(args.entries_1g))], args.va_bits, args.tlb_entry_bytes)
    if args.json:
        with atomic_path(args.json) as tmp:
            Path(tmp).write_text(json.dumps(c, indent=1) + "\n", encoding="utf-8")
    print(f"# a PCC of {c['entries']} + {c['entries_1g']} entries, {args.va_bits}-bit virtual addresses "
          f"({args.config}{' with --set' if args.sets else ''})")
    print_table(pcc.cost_rows(c), header=("", "xlat", "paper"))
    return 0


def cmd_reuse(args: argparse.Namespace) -> int:
    from . import pcc

    traces = [t for part in (args.trace or []) for t in part.split(",") if t]
    if bool(args.workload) == bool(traces):
        raise CliError("give one of --workload and --trace")
    if args.trace_format and not traces:
        raise CliError("--trace-format needs --trace")
    if args.refs == 0:
        # (The library's 0 means "every reference"; on the command line, as for run, mrc and
        # record, --refs 0 would mean none.)
        raise CliError("--refs 0 reads no references: omit --refs to read them all")
    if args.output:
        check_output_directory(args.output)
    with ProgressBar(args.workload or os.path.basename(traces[0]), idle="reading the references and their distances"):
        r = pcc.reuse(args.workload, traces or None, args.refs or 0, args.seed, args.distinct, args.trace_format, args.threshold,
                      skip=args.skip)
    s = pcc.summary(r)
    name = args.workload or ",".join(traces)
    kind = "stack (distinct pages)" if args.distinct else "references to other pages"
    print(f"# {name}: {len(r['page']):,} pages in {s['regions']:,} 2 MB regions; distance = {kind}, class threshold {args.threshold:g}")
    print_table(pcc.summary_rows(s), header=("class", "pages", "of pages", "of references"))
    print(f"HUB pages lie in {s['hub_regions']:,} 2 MB regions")
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        pcc.write_csv(r, out / "pages.csv")
        pcc.scatter(r, out / "reuse.png", title=name)
        print(f"wrote {out / 'pages.csv'} and {out / 'reuse.png'}")
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from . import glossary

    out = sys.stdout
    if args.names:
        names = []
        for n in args.names:
            # A row of the summary stands for the statistics it shows.
            names += SUMMARY_LABELS.get(n.strip().lower(), []) if glossary.lookup(n) is None else [n]
            if glossary.lookup(n) is None and n.strip().lower() not in SUMMARY_LABELS:
                names.append(n)
        found = [(n, glossary.lookup(n)) for n in names]
        unknown = [n for n, e in found if e is None]
        if unknown:
            listed = ", ".join(f"'{n}'" for n in unknown)
            raise CliError(f"no statistic named {listed} in the glossary (run 'xlat stats' for every statistic)")
        for i, (n, e) in enumerate(found):
            if i:
                print(file=out)
            _print_entry(e, out, name=None if n == e["pattern"] else n)
        return 0
    _wrapped("Every statistic xlat reports (docs/statistics.md). Bare names are machine totals; "
             "[core<N>.] marks those also reported per core in multi-core runs, [host.] those also "
             "reported for the hypervisor in a VM. Placeholders:", "", out)
    for p in glossary.placeholders():
        values = ", ".join(p["values"]) if p["values"] else "0, 1, 2, ..."
        _wrapped(f"<{p['name']}>: {values} -- {p['doc']}", "  ", out, hanging="      ")
    entries = glossary.entries()
    for title, intro in glossary.sections():
        print(f"\n== {title}", file=out)
        _wrapped(intro, "", out)
        for e in entries:
            if e["section"] == title:
                print(file=out)
                _print_entry(e, out)
    return 0


def cmd_workloads(args: argparse.Namespace) -> int:
    items = _core.workloads()
    for w in items:
        fp = w.get("footprint_bytes")
        head = f"{w['name']}  ({human_bytes(fp)})" if fp else w["name"]
        print(head)
        if w.get("description"):
            print(f"    {w['description']}")
        params = w.get("params") or []
        if params:
            print_table([(f"{p['name']}={p['default']}", p.get("doc", "")) for p in params], indent="      ")
        print()
    print("Use as --workload NAME or NAME:key=value,key=value")
    return 0


def _written(files: list[Path]) -> str:
    return ", ".join(str(f) for f in files) if files else "(no file)"


def cmd_record(args: argparse.Namespace) -> int:
    params = _core.workload_params(args.workload, args.seed)["params"]
    streams = int(params.get("threads", "1"))
    if streams > 1 and is_stream_target(args.output):
        raise CliError(f"{args.workload} records {streams} streams, one file each (stem.N.ext): "
                       f"give a file name, not the device or FIFO '{args.output}'")
    # A multi-threaded kernel writes one file per stream (stem.N.ext); all land together.
    with atomic_outputs(args.output) as (tmp, written), ProgressBar(args.workload, idle=lambda: f"recording, {_bytes_in(tmp.parent)} written"):
        n = _core.record(args.workload, str(tmp), args.refs, args.seed, args.format)
    print(f"wrote {n:,} references to {_written(written)}")
    return 0


def _unblock_fifo(fifo: str) -> None:
    """Open and close the FIFO for writing so a reader still waiting in open() sees EOF."""
    try:
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return  # no reader any more: nothing to unblock
    os.close(fd)


def _sample_maps(proc: subprocess.Popen, maps: dict[str, str], period_s: float = 0.02,
                 started=None, snapshot: dict | None = None) -> None:
    """Read /proc/PID/maps of the traced process every `period_s` until it exits, keeping
    every mapping seen (keyed by its range and file), so one that grew or went away early is
    still there for the regions of a prefaulted run (docs/workloads.md). valgrind runs the
    program in its own process, so its own mappings are listed too; the reader keeps only
    mappings the trace touches. Once `started()` says the trace's first references are
    written (the skip is over), the pages then resident go to `snapshot["resident"]`
    (`_resident_pages`)."""
    path = f"/proc/{proc.pid}/maps"
    while proc.poll() is None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return  # gone, or not Linux: the trace still works, prefaulting uses its pages
        for line in text.splitlines():
            fields = line.split()
            if len(fields) >= 5:
                maps.setdefault(f"{fields[0]} {' '.join(fields[5:])}", line)
        if snapshot is not None and "resident" not in snapshot and started is not None and started():
            snapshot["resident"] = _resident_pages(proc.pid, text)
        time.sleep(period_s)


def _resident_pages(pid: int, maps_text: str) -> list[tuple[int, int]]:
    """The pages of the mappings in `maps_text` that /proc/PID/pagemap shows present or
    swapped, as ascending [start, end) byte ranges: what the program had touched and kept.
    Inaccessible mappings (---p: valgrind's reservations) are left out; [] where pagemap
    cannot be read."""
    import struct

    runs: list[tuple[int, int]] = []
    try:
        with open(f"/proc/{pid}/pagemap", "rb") as pm:
            for line in maps_text.splitlines():
                fields = line.split()
                if len(fields) < 5 or fields[1].startswith("---"):
                    continue
                lo, hi = (int(x, 16) for x in fields[0].split("-"))
                for base in range(lo, hi, 1 << 30):  # 1 GB of pages (2 MB of entries) a read
                    top = min(hi, base + (1 << 30))
                    pm.seek((base >> 12) * 8)
                    data = pm.read(((top - base) >> 12) * 8)
                    for i, (entry,) in enumerate(struct.iter_unpack("<Q", data)):
                        if entry >> 62:  # present (bit 63) or swapped (bit 62)
                            va = base + (i << 12)
                            if runs and runs[-1][1] == va:
                                runs[-1] = (runs[-1][0], va + 4096)
                            else:
                                runs.append((va, va + 4096))
    except OSError:
        return []
    runs.sort()
    merged: list[tuple[int, int]] = []
    for a, b in runs:
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _elf_loads(path: str, shared: bool = False) -> list[tuple[int, int, int, int, int]]:
    """The PT_LOAD program headers of the ELF64 little-endian file `path` as (offset, vaddr,
    filesz, memsz, flags), or [] if it is not one (a script, another format); with `shared`,
    [] unless it is a shared object (ET_DYN)."""
    import struct

    try:
        with open(path, "rb") as f:
            head = f.read(64)
            if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
                return []
            if shared and struct.unpack_from("<H", head, 16)[0] != 3:  # ET_DYN
                return []
            phoff, = struct.unpack_from("<Q", head, 0x20)
            phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
            if phentsize < 56 or phnum > 4096:
                return []
            f.seek(phoff)
            table = f.read(phentsize * phnum)
    except OSError:
        return []
    out = []
    for i in range(len(table) // phentsize):
        p_type, p_flags, p_offset, p_vaddr, _paddr, p_filesz, p_memsz, _align = struct.unpack_from("<IIQQQQQQ", table, i * phentsize)
        if p_type == 1:  # PT_LOAD
            out.append((p_offset, p_vaddr, p_filesz, p_memsz, p_flags))
    return out


def _page_runs(path: str) -> list[tuple[int, int]] | None:
    """The pages an xlattrace file of runs lists (`--executed`: the code the program ran
    before the window; `--resident`: its pages resident when the window began, read at the
    window's first reference), as [start, end) byte ranges; None where it wrote none (lackey,
    or no window began)."""
    try:
        with open(path, encoding="ascii") as f:
            return [(int(a, 16), int(b, 16)) for a, b in (line.split() for line in f if line.strip())]
    except (OSError, ValueError):
        return None


def _maps_text(maps: dict[str, str], exe: str | None = None, launcher: str | None = None,
               resident: list[tuple[int, int]] | None = None, executed: list[tuple[int, int]] | None = None) -> str:
    """The sidecar: the mappings seen, then each mapped file's size (`# file-size BYTES PATH`),
    which the OS model needs for the page cache and FreeBSD's reservations, the loadable
    segments of the executable `exe` (`# elf-load OFFSET VADDR FILESZ MEMSZ FLAGS PATH`, hex),
    which `loader.max_page_size` relinks, and those of every shared object mapped executable
    (`# elf-lib`, the same fields), which `loader.library_base` places (docs/workloads.md).
    `launcher`: valgrind's own launcher, a position-independent executable the first samples
    see before it becomes the tool, which is not one of the program's objects. `resident`: the
    pages resident when the trace's window began (`# resident START END`, hex, [START, END)),
    what the program had touched before its first traced reference (or mapped: fault-around
    maps a faulting page's neighbours). `executed`: the code pages it had run before the window
    (`# executed START END`), which of a code mapping's resident pages it had touched."""
    lines = [f"{line}\n" for line in maps.values()]
    paths = sorted({" ".join(line.split()[5:]) for line in maps.values()})
    for path in paths:
        if path.startswith("/"):
            try:
                lines.append(f"# file-size {os.stat(path).st_size} {path}\n")
            except OSError:
                pass  # gone or unreadable: the reader takes the mapped extent
    if exe is not None and exe in paths:
        for off, vaddr, filesz, memsz, flags in _elf_loads(exe):
            lines.append(f"# elf-load {off:x} {vaddr:x} {filesz:x} {memsz:x} {flags:x} {exe}\n")
    # (Valgrind's tool is an executable, not a shared object: only the program's libraries,
    # and valgrind's preloaded ones, which the program runs too.)
    code = sorted({" ".join(line.split()[5:]) for line in maps.values() if "x" in line.split()[1]})
    for path in code:
        if path.startswith("/") and path not in (exe, launcher):
            for off, vaddr, filesz, memsz, flags in _elf_loads(path, shared=True):
                lines.append(f"# elf-lib {off:x} {vaddr:x} {filesz:x} {memsz:x} {flags:x} {path}\n")
    for a, b in resident or []:
        lines.append(f"# resident {a:x} {b:x}\n")
    for a, b in executed or []:
        lines.append(f"# executed {a:x} {b:x}\n")
    return "".join(lines)


def _count_references(valgrind: str, tracer, program: list[str], fetch: bool) -> int:
    """`xlat trace --count`: run the program to its end under xlattrace, writing nothing, and
    print how many references a trace of the whole run would hold (where to place a --skip)."""
    from . import valgrind as _valgrind

    if not tracer.fast:
        raise CliError(f"--count needs xlat's valgrind tool, which is not available: {tracer.why}")
    cmd = _valgrind.command(valgrind, tracer, os.devnull, program, (1 << 63) - 1, fetch)
    cmd.insert(2, "--count=yes")
    p = subprocess.run(cmd, check=False, stdin=sys.stdin, stderr=subprocess.PIPE, text=True, env=tracer.env())
    line = next((x for x in p.stderr.splitlines() if "xlattrace:" in x), None)
    if line is None:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        raise CliError(f"valgrind ended without a count: {last}")
    refs, instrs = (int(w) for w in line.split("xlattrace:")[1].replace("references,", "").replace("instructions", "").split())
    note = f" (program exited with status {p.returncode})" if p.returncode else ""
    print(f"xlat: {os.path.basename(program[0])} made {refs:,} references, {instrs:,} instructions{note}", file=sys.stderr)
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        raise CliError("give the program to trace after '--', e.g. xlat trace -o ls.xtr -- ls -l")
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        raise CliError("valgrind is not installed; xlat trace runs the program under valgrind "
                       "(install it with your package manager, e.g. apt-get install valgrind)")
    if shutil.which(program[0]) is None and not os.path.exists(program[0]):
        raise CliError(f"program '{program[0]}' not found")
    from . import valgrind as _valgrind

    tracer = _valgrind.tool(valgrind)
    if args.count:
        return _count_references(valgrind, tracer, program, fetch=not args.no_fetch)
    if args.output is None:
        raise CliError("give the trace's path with -o FILE (or --count to count the program's references)")
    windows = _trace_windows(args, tracer)
    if not tracer.fast:
        print(f"xlat: tracing with valgrind's lackey, about 1.4 M references a second: {tracer.why}", file=sys.stderr)
    skip = args.skip or 0
    fetch = not args.no_fetch
    with tempfile.TemporaryDirectory(prefix="xlat-trace-") as tmpdir, atomic_outputs(args.output) as (out, written):
        fifo = os.path.join(tmpdir, "trace.fifo")
        os.mkfifo(fifo, 0o600)
        executed, resident = os.path.join(tmpdir, "executed"), os.path.join(tmpdir, "resident")
        cmd = _valgrind.command(valgrind, tracer, fifo, program, skip, fetch, executed, resident,
                                windows=(windows, args.every, args.refs) if windows > 1 else None)
        proc = subprocess.Popen(cmd, stdin=sys.stdin, env=tracer.env())
        # valgrind opens the FIFO only if it starts the program; if it dies first, the
        # converter would wait in open() forever, so a watcher unblocks it when valgrind exits.
        watcher = threading.Thread(target=lambda: (proc.wait(), _unblock_fifo(fifo)), daemon=True)
        watcher.start()
        # The program's mappings, for --prefault (FILE.maps beside the trace; not for a device).
        maps: dict[str, str] = {}
        # (The pages resident when the window begins, for lackey, which cannot say: the
        # trace's first bytes on disk mark it, the converter writing them once its first
        # compressed blocks fill its buffer, some hundred thousand references into the window.
        # xlattrace reads them itself at the window's first reference.)
        snapshot: dict[str, list[tuple[int, int]]] = {}

        def started() -> bool:
            return out.is_file() and out.stat().st_size > 0

        sampler = threading.Thread(target=_sample_maps, args=(proc, maps, 0.02, started, None if tracer.fast else snapshot), daemon=True)
        sampler.start()
        try:
            # The trace describes what was traced, not the FIFO it came through.
            desc = shlex.join(program)
            with ProgressBar(os.path.basename(program[0]), idle=lambda: f"tracing under valgrind, {_bytes_in(out.parent)} written"):
                # (xlattrace leaves the skipped references out itself, counted as the reader counts.)
                if windows > 1:
                    outs = [window_path(out, k) for k in range(windows)]
                    n = _core.lackey_windows_to_native(fifo, [str(o) for o in outs], args.refs, desc, fetch=fetch)
                else:
                    outs = [out]
                    n = _core.lackey_to_native(fifo, str(out), desc, fetch=fetch, skip=0 if tracer.fast else skip, refs=args.refs)
        finally:
            if proc.poll() is None:
                # Stopped early (--refs reached, error or Ctrl-C): end the traced program.
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            watcher.join(timeout=5)
            sampler.join(timeout=5)
        if args.refs is None and proc.returncode not in (0, None) and n == 0:
            raise CliError(f"valgrind exited with status {proc.returncode} before producing a trace")
        if maps and not is_stream_target(args.output):
            exe = os.path.realpath(shutil.which(program[0]) or program[0])
            # (Debian's `valgrind` is a script that runs `valgrind.bin`.)
            launcher = os.path.realpath(valgrind) + ".bin" if valgrind else None
            for k, o in enumerate(outs):
                # (The tool names a window's files PATH.K when there are several.)
                ran, had = (f"{executed}.{k}", f"{resident}.{k}") if windows > 1 else (executed, resident)
                (o.parent / (o.name + ".maps")).write_text(
                    _maps_text(maps, exe, launcher, _page_runs(had) if tracer.fast else snapshot.get("resident"), _page_runs(ran)))
    note = f" (program exited with status {proc.returncode})" if args.refs is None and proc.returncode else ""
    many = f" in {windows} windows" if windows > 1 else ""
    # On stderr, prefixed: stdout is the traced program's alone (`xlat trace ... -- prog > out`).
    print(f"xlat: wrote {n:,} references{many} to {_written(written)}{note}", file=sys.stderr)
    return 0


def window_path(path: Path, k: int) -> Path:
    """Window ``k``'s file of a trace of several windows written to ``path``: ``clang.xtr`` ->
    ``clang.w0.xtr`` (``.wK`` before the last suffix; not ``.K``, a multi-stream trace's)."""
    path = Path(path)
    return path.with_name(f"{path.stem}.w{k}{path.suffix}" if path.suffix else f"{path.name}.w{k}")


def _trace_windows(args: argparse.Namespace, tracer) -> int:
    """`xlat trace --windows K`: K, its options checked (1 without it)."""
    if args.windows is None:
        if args.every is not None:
            raise CliError("--every is the distance between windows: give --windows K too")
        return 1
    if args.windows == 1:
        return 1
    if not tracer.fast:
        raise CliError(f"--windows needs xlat's valgrind tool, which is not available: {tracer.why}")
    if args.refs is None:
        raise CliError("--windows needs each window's length: give --refs N")
    if args.every is None:
        raise CliError("--windows needs the distance between windows' starts: give --every P")
    # (The tool's recording calls start 1,024 references before a window.)
    if args.every < args.refs + 2048:
        raise CliError(f"--every {args.every:,} is shorter than a window and the gap the tool needs: at least --refs + 2,048 "
                       f"({args.refs + 2048:,})")
    if is_stream_target(args.output):
        raise CliError(f"--windows writes a file per window: give a file name, not the device or FIFO '{args.output}'")
    return args.windows


def cmd_probe(args: argparse.Namespace) -> int:
    from . import host

    if args.compare:
        _config.resolve(args.compare, [])  # a bad preset fails before minutes of measuring
    for out in (args.json, args.emit_preset):
        if out:
            check_output(out)
    if args.plot or args.compare:
        check_image_output(args.plot or "probe.png")
    modes = ("4k",) if args.no_thp else ("4k", "thp")
    p = host.run_probe(quick=args.quick, modes=modes, reps=args.reps, per_octave=args.per_octave, max_pages=args.max_pages)
    for line in host.report_lines(p):
        print(line)
    if args.json:
        import json

        with atomic_path(args.json) as tmp:
            tmp.write_text(json.dumps(host.to_json(p), indent=1))
        print(f"wrote {args.json}")
    if args.emit_preset:
        name = Path(args.emit_preset).stem
        with atomic_path(args.emit_preset) as tmp:
            tmp.write_text(host.preset_text(p, name))
        print(f"wrote {args.emit_preset} (use it as: xlat run --config {args.emit_preset} ...)")
    if args.compare:
        c4 = p.curve("4k")
        step = max(1, p.params["per_octave"] // 2)
        xs = c4.pages[::step]
        ys = host.simulate_curve(args.compare, xs, quick=args.quick)
        print(f"  simulated on {args.compare} (4 KB pages): "
              + ", ".join(f"{x:,}: {y:.1f}" for x, y in zip(xs, ys)) + " ns")
        out = args.plot or "probe.png"
        host.plot(p, out, sim=(args.compare, xs, ys))
        print(f"wrote {out}")
    elif args.plot:
        host.plot(p, args.plot)
        print(f"wrote {args.plot}")
    return 0


def cmd_bake(args: argparse.Namespace) -> int:
    if args.bench:
        from . import host

        kernels = [k for k in args.kernels.split(",") if k]
        modes = [m for m in args.modes.split(",") if m]
        rows = host.bench(kernels, modes, args.rounds, quick=args.quick, sleep_us=args.sleep_us)
        print(f"PT-Baker A/B benchmark: {args.rounds} rounds alternated, main thread pinned, helper on another core of its LLC, "
              f"sleeping {args.sleep_us} us per pass"
              + (" (--quick sizes: not a measurement)" if args.quick else ""))
        print_table([(r["kernel"], r["mode"], f"{r['median_s']:.3f}", f"{r['min_s']:.3f}-{r['max_s']:.3f}",
                      f"{r['ratio']:.3f}", f"{r['ratio_min']:.3f}-{r['ratio_max']:.3f}", r["verdict"]) for r in rows],
                    header=("kernel", "baker", "median s", "range s", "time ratio", "ratio range", "verdict"))
        return 0
    if args.costs:
        for name, ns in _core.bake_call_costs(args.costs):
            print(f"  {name:30s} {ns:8.1f} ns per page")
        return 0
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        raise CliError("give the program to run after '--', e.g. xlat bake -- ./my_program ARGS (or --costs N)")
    if shutil.which(program[0]) is None and not os.path.exists(program[0]):
        raise CliError(f"program '{program[0]}' not found")
    proc = subprocess.Popen(program)
    try:
        daemon = _core.bake_daemon(proc.pid, args.regions, args.min_mb << 20, args.refresh_ms, args.sleep_us, args.cpu)
    except Exception:
        if proc.poll() is not None:
            # The program was over before the daemon could look at it: nothing to keep warm.
            status = proc.returncode
            if not args.quiet:
                print("xlat bake: the program ended before the daemon attached", file=sys.stderr)
            return status if status >= 0 else 128 - status
        proc.terminate()
        proc.wait()
        raise
    try:
        status = proc.wait()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait()
        stats = daemon.stop()
    if not args.quiet and stats is not None:
        regions = ", ".join(human_bytes(n) for _, n in stats["regions"]) or "none large enough"
        print(f"xlat bake: {stats['passes']:,} passes, {stats['pages']:,} page-table entries walked in "
              f"{stats['seconds']:.1f} s; regions last seen: {regions}", file=sys.stderr)
    return status if status >= 0 else 128 - status


def cmd_demo(args: argparse.Namespace) -> int:
    from . import demo

    return demo.run(quick=args.quick, out_dir=Path(args.out), jobs=args.jobs, refs=args.refs)


# ---------------------------------------------------------------------------------------------
# parser


def build_parser() -> Parser:
    p = Parser(prog="xlat", description="xlat: an address-translation laboratory.",
               epilog="Run 'xlat COMMAND --help' for a command's options.")
    p.add_argument("--version", action="version", version=f"xlat {_core.version()}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    r = sub.add_parser("run", help="simulate one workload or trace on one machine",
                       description="Simulate one workload or trace on one machine and print a summary.")
    r.add_argument("--config", "-c", default="skylake", metavar="PRESET_OR_PATH",
                   help="preset name (see 'xlat configs') or TOML file (default: skylake)")
    r.add_argument("--workload", "-w", metavar="NAME[:key=value,...]",
                   help="workload kernel and parameters (see 'xlat workloads')")
    r.add_argument("--trace", action="append", metavar="FILE[,FILE2...]",
                   help="simulate trace file(s) instead of a kernel; one file per core")
    r.add_argument("--trace-format", choices=("native", "champsim", "lackey", "champsim+fetch", "lackey+fetch"),
                   help="format of the trace files (default: from the file); +fetch also simulates the "
                        "instruction fetches")
    r.add_argument("--mix", metavar="PROG@CORE,...",
                   help="programs side by side, each in its own address space on its own cores: "
                        "'bfs@0,gups:scale=22@1,trace:run.xtr@2' (@N-M: several cores; no @: the lowest free)")
    r.add_argument("--weighted-speedup", action="store_true",
                   help="with --mix: also run each program alone on the same machine and print the "
                        "weighted speedup (sum of IPC mixed / IPC alone)")
    r.add_argument("--shootdowns", metavar="FILE",
                   help="inject a shootdown trace: page-table changes at instruction counts, one "
                        "'instructions stream op [va [pages]]' record per line (docs/workloads.md)")
    r.add_argument("--refs", "-n", type=count_arg, metavar="N",
                   help="references to simulate after warm-up: 1000000, 1e6, 10M (default: all)")
    r.add_argument("--warmup-instructions", type=count_arg, default=None, metavar="N",
                   help="or warm up for N instructions (all threads together), as ChampSim counts it")
    r.add_argument("--warmup", type=count_arg, default=0, metavar="N",
                   help="references simulated first, then excluded from the statistics")
    r.add_argument("--skip", type=count_arg, default=0, metavar="N",
                   help="fast-forward: references read and dropped before the warm-up (their OS calls "
                        "applied, nothing else simulated), to measure a later phase of a program")
    add_set_option(r)
    r.add_argument("--seed", type=seed_arg, default=1, help="random seed (default 1); same seed, same numbers")
    r.add_argument("--prefault", action="store_true",
                   help="map the whole footprint before the run (a ChampSim or lackey trace: the pages it "
                        "touches, read once beforehand)")
    r.add_argument("--host-threads", type=int, choices=(1, 2), default=None,
                   help="host threads (default: two when the run can use them; same statistics either way); "
                        "the simulated threads are the workload's threads=N")
    r.add_argument("--threads", dest="old_threads", help=argparse.SUPPRESS)
    r.add_argument("--interval", type=count_arg, default=None, metavar="N",
                   help="statistics over time: also show what changed in every N instructions "
                        "after warm-up (1M, 1e6; runs on one host thread)")
    r.add_argument("--sample", metavar="PERIOD:WARM:UNIT",
                   help="a sampled run: of every PERIOD references skip all but WARM (simulated, not measured) "
                        "and UNIT (measured); statistics from the units with 95 %% confidence intervals (10M:500k:200k)")
    r.add_argument("--json", type=out_path, metavar="PATH",
                   help="also write {xlat_version, config, workload, run, stats[, series]} as JSON (atomically)")
    r.add_argument("--all-stats", action="store_true", help="print every statistic instead of the summary")
    r.add_argument("--quiet", "-q", action="store_true", help="print nothing on success")
    r.set_defaults(func=cmd_run)

    c = sub.add_parser("configs", help="list machine presets", description="List the machine presets.")
    c.add_argument("--verbose", "-v", action="store_true", help="also show where each preset file is")
    c.set_defaults(func=cmd_configs)

    cfg = sub.add_parser("config", help="inspect a configuration", description="Inspect a configuration.")
    csub = cfg.add_subparsers(dest="config_command", metavar="SUBCOMMAND", parser_class=Parser)
    csub.required = True
    show = csub.add_parser("show", help="every key of a preset, resolved, with its meaning",
                           description="Show every config key of a preset (or the engine defaults) "
                                       "after base chains and --set overrides, with its meaning.")
    show.add_argument("preset", nargs="?", metavar="PRESET_OR_PATH", help="preset or TOML file (default: engine defaults)")
    add_set_option(show)
    show.set_defaults(func=cmd_config_show)

    st = sub.add_parser("stats", aliases=["explain"], help="what each statistic counts (the glossary; also 'xlat explain STAT')",
                        description="Print what the named statistics count (names such as core0.walks or "
                                    "cache.llc.pt.misses are matched against the glossary's patterns), or "
                                    "the whole glossary, by section, without names.")
    st.add_argument("names", nargs="*", metavar="NAME", help="statistic names (default: every statistic)")
    st.set_defaults(func=cmd_stats)

    w = sub.add_parser("workloads", help="list workload kernels and their parameters",
                       description="List the workload kernels with their parameters and footprints.")
    w.set_defaults(func=cmd_workloads)

    rec = sub.add_parser("record", help="record a workload's references to a trace file",
                         description="Run a workload kernel and record its references in xlat's trace format.")
    rec.add_argument("--workload", "-w", required=True, metavar="NAME[:key=value,...]")
    rec.add_argument("--output", "-o", required=True, metavar="FILE")
    rec.add_argument("--refs", "-n", type=count_arg, metavar="N", help="stop after N references")
    rec.add_argument("--seed", type=seed_arg, default=1, help="random seed of the workload (default 1)")
    rec.add_argument("--format", choices=("native", "champsim"), default="native",
                     help="native (default: xlat's, with the regions) or champsim (input_instr records, "
                          "for ChampSim; FILE.xz or FILE.gz compresses)")
    rec.set_defaults(func=cmd_record)

    pc = sub.add_parser("pcc-cost", help="the Promotion Candidate Cache's storage, beside the paper's",
                        description="The storage of a PCC (pcc.entries, counter bits, tags from --va-bits) "
                                    "and what it would buy as TLB entries: the PCC paper's 768 / 40 / 808 B.")
    pc.add_argument("--config", "-c", default="haswell", metavar="PRESET_OR_PATH", help="machine (default haswell)")
    add_set_option(pc)
    pc.add_argument("--entries-1g", type=int, default=8, metavar="N", help="1 GB PCC entries (default 8, the paper's)")
    pc.add_argument("--va-bits", type=int, default=61, metavar="N",
                    help="virtual-address bits the tags cover (default 61: the paper's 40-bit 2 MB tags)")
    pc.add_argument("--tlb-entry-bytes", type=int_at_least(1), default=16, metavar="B", help="bytes of a TLB entry (default 16)")
    pc.add_argument("--json", type=out_path, metavar="PATH", help="also write the numbers as JSON")
    pc.set_defaults(func=cmd_pcc_cost)

    ru = sub.add_parser("reuse", help="reuse distances of a workload's pages: HUB, TLB-friendly, low reuse (PCC Fig. 2)",
                        description="For every 4 KB page of a workload or trace: how far apart its uses are, and "
                                    "its 2 MB and 1 GB regions' (smoothed as the PCC paper's artifact does); the "
                                    "paper's classes, and with --output the per-page table and the Fig. 2 scatter.")
    ru.add_argument("--workload", "-w", metavar="NAME[:key=value,...]")
    ru.add_argument("--trace", "-t", action="append", metavar="FILE[,FILE...]")
    ru.add_argument("--trace-format", choices=("native", "champsim", "lackey"), default=None)
    ru.add_argument("--refs", "-n", type=count_arg, metavar="N", help="data references to read (default: all; --distinct needs it)")
    ru.add_argument("--skip", type=count_arg, default=0, metavar="N",
                    help="leave out the first N references, as 'xlat run --skip' does (a program's set-up)")
    ru.add_argument("--seed", type=seed_arg, default=1, help="random seed of the workload (default 1)")
    ru.add_argument("--distinct", action="store_true", help="stack distance: distinct other pages in between")
    ru.add_argument("--threshold", type=number_at_least(0), default=1024, help="class threshold (default 1024, the paper's)")
    ru.add_argument("--output", "-o", metavar="DIR", help="write DIR/pages.csv and DIR/reuse.png")
    ru.set_defaults(func=cmd_reuse)

    mr = sub.add_parser("mrc", help="miss-ratio curves of TLBs and page-walk caches, every associativity from one run",
                        description="Profile translation structures in one run with Mattson's stack algorithm: "
                                    "each one's misses at every associativity (the sets as configured), exactly "
                                    "what separate runs would count (docs/performance.md).")
    mr.add_argument("--config", "-c", default="skylake", metavar="PRESET_OR_PATH", help="preset or TOML file (default: skylake)")
    mr.add_argument("--workload", "-w", metavar="NAME[:key=value,...]")
    mr.add_argument("--trace", action="append", metavar="FILE[,FILE2...]")
    mr.add_argument("--trace-format", choices=("native", "champsim", "lackey", "champsim+fetch", "lackey+fetch"))
    mr.add_argument("--structure", "-s", action="append", metavar="NAME[,NAME...]",
                    help="tlb.l1d, tlb.l1i, tlb.l2, tlb.l2i, pwc.l2 .. pwc.l5 (pwc: every level), cache.l1d, cache.l1i, "
                         "cache.l2, cache.llc (default tlb.l1d,tlb.l2,pwc)")
    mr.add_argument("--max-ways", type=int_at_least(1), default=64, metavar="W", help="the curve's deepest associativity (default 64)")
    mr.add_argument("--refs", "-n", type=count_arg, metavar="N", help="references after warm-up (default: all)")
    mr.add_argument("--warmup", type=count_arg, default=0, metavar="N", help="references simulated first, not counted")
    add_set_option(mr)
    mr.add_argument("--seed", type=seed_arg, default=1, help="random seed (default 1)")
    mr.add_argument("--prefault", action="store_true", help="map the whole footprint before the run")
    mr.add_argument("--plot", type=out_path, metavar="PNG", help="one panel per structure: MPKI against entries")
    mr.add_argument("--json", type=out_path, metavar="PATH", help="also write the run and its curves as JSON")
    mr.set_defaults(func=cmd_mrc)

    ca = sub.add_parser("cache", help="the trace cache: native copies of slow traces and the graph kernels' large graphs (list, --add, --clear)",
                        description="Traces in slow formats (xz or gzip, ChampSim, lackey) are decoded once into "
                                    "native copies here; later runs on the same bytes read the copy. The directory is "
                                    "$XLAT_CACHE_DIR (off: no cache), else ~/.cache/xlat/traces.")
    ca.add_argument("--add", action="append", metavar="FILE", help="decode a trace into the cache now")
    ca.add_argument("--trace-format", choices=("champsim", "lackey", "champsim+fetch", "lackey+fetch"), default=None,
                    help="--add: read it as this format (default: from the file)")
    ca.add_argument("--clear", action="store_true", help="remove every copy")
    ca.set_defaults(func=cmd_cache)

    t = sub.add_parser("trace", help="trace a Linux program under valgrind into a trace file",
                       description="Run PROGRAM under valgrind and convert its memory trace on the fly into "
                                   "xlat's trace format (valgrind's lackey format, written by xlat's own valgrind tool, "
                                   "built on first use, or by lackey where it cannot be built).",
                       usage="xlat trace -o FILE [--refs N] [--skip N] [--windows K --every P] [--no-fetch] -- PROGRAM [ARGS...]\n"
                             "       xlat trace --count [--no-fetch] -- PROGRAM [ARGS...]")
    t.add_argument("--output", "-o", metavar="FILE")
    t.add_argument("--count", action="store_true",
                   help="run the program to its end and print how many references (and instructions) a trace of it "
                        "would hold, writing no trace: where to place --skip")
    t.add_argument("--refs", "-n", type=count_arg, metavar="N", help="stop after N references")
    t.add_argument("--skip", type=count_arg, metavar="N",
                   help="leave out the first N references (the program's start-up; xlat's valgrind tool counts them without writing them)")
    t.add_argument("--windows", type=int_at_least(1), metavar="K",
                   help="trace K windows of --refs N references in one run, the first after --skip, each --every P "
                        "references after the one before: FILE.w0 .. FILE.w(K-1), each with its sidecar (a systematic "
                        "sample of a long program)")
    t.add_argument("--every", type=count_arg, metavar="P", help="with --windows: the references from one window's start to the next's")
    t.add_argument("--no-fetch", action="store_true",
                   help="leave out instruction fetches (by default each instruction is a fetch of its address, "
                        "for the ITLB and L1I)")
    t.add_argument("program", nargs=argparse.REMAINDER, metavar="PROGRAM ARGS")
    t.set_defaults(func=cmd_trace)

    pr = sub.add_parser("probe", help="measure this machine's TLBs (Linux x86-64)",
                        description="Time a random pointer chase, one access per page, over 8..65,536 pages with 4 KB "
                                    "pages and with transparent huge pages, and a control chase of the same lines in 1/64 "
                                    "the pages; find the L1 and L2 DTLB reach and the walk plateaus in what the TLBs add; "
                                    "report the hypervisor, counters and physical contiguity (docs/host.md).")
    pr.add_argument("--quick", action="store_true", help="a rough run in under a second (8..4,096 pages)")
    pr.add_argument("--reps", type=int_at_least(1), default=None, metavar="N", help="full sweeps (default 3; the spread is over them)")
    pr.add_argument("--per-octave", type=int_at_least(1), default=None, metavar="N", help="page counts per doubling (default 4)")
    pr.add_argument("--max-pages", type=int_at_least(8), default=None, metavar="N", help="largest chase (default 65,536 pages)")
    pr.add_argument("--no-thp", action="store_true", help="only the 4 KB curve")
    pr.add_argument("--emit-preset", metavar="NAME.toml", help="write a machine preset from the measurement")
    pr.add_argument("--compare", metavar="PRESET", help="run the same chase in the simulator on PRESET and plot both")
    pr.add_argument("--plot", metavar="PNG", help="write the figure here (default probe.png with --compare)")
    pr.add_argument("--json", type=out_path, metavar="PATH", help="write every measurement as JSON")
    pr.set_defaults(func=cmd_probe)

    b = sub.add_parser("bake", help="keep a program's page tables warm from outside (PT-Baker, Linux)",
                       description="Run PROGRAM and, from a helper thread of this process, keep the page tables of "
                                   "its largest anonymous mappings warm by reading /proc/PID/pagemap (the kernel walks "
                                   "them; the program is only read, never changed). Exits with the program's status. "
                                   "--costs N measures which call walks page tables cheapest (docs/host.md).",
                       usage="xlat bake [options] -- PROGRAM [ARGS...]  |  xlat bake --costs PAGES  |  xlat bake --bench [--rounds N]")
    b.add_argument("--regions", type=int_at_least(1), default=1, metavar="N", help="largest anonymous mappings to keep warm (default 1)")
    b.add_argument("--min-mb", type=int_at_least(0), default=8, metavar="MB", help="ignore mappings smaller than this (default 8)")
    b.add_argument("--refresh-ms", type=int_at_least(1), default=200, metavar="MS", help="re-read /proc/PID/maps this often (default 200)")
    b.add_argument("--sleep-us", type=int_at_least(0), default=0, metavar="US", help="sleep after each pass (default 0)")
    b.add_argument("--cpu", type=int_at_least(0), default=None, metavar="N", help="pin the daemon thread to this CPU")
    b.add_argument("--costs", type=int_at_least(1), default=None, metavar="PAGES", help="measure ns per page of mincore and pagemap reads, then exit")
    b.add_argument("--bench", action="store_true", help="the A/B benchmark: native kernels with and without each baker mode")
    b.add_argument("--kernels", default="gups,bfs,hashjoin", help="--bench kernels (default gups,bfs,hashjoin)")
    b.add_argument("--modes", default="load,prefetch,mincore", help="--bench baker modes (default load,prefetch,mincore)")
    b.add_argument("--rounds", type=int_at_least(1), default=5, metavar="N", help="--bench rounds (default 5)")
    b.add_argument("--quick", action="store_true", help="--bench with tiny sizes (exercises the path; measures nothing)")
    b.add_argument("--quiet", "-q", action="store_true", help="no summary line")
    b.add_argument("program", nargs=argparse.REMAINDER, metavar="PROGRAM ARGS")
    b.set_defaults(func=cmd_bake)

    d = sub.add_parser("demo", help="what xlat is for, in a few minutes",
                       description="Compare a Skylake-like machine with a perfect TLB, bigger page-walk "
                                   "caches and Zen 3 on two workloads; print a table and write a report.")
    d.add_argument("--quick", action="store_true", help="smaller runs (under 30 s)")
    d.add_argument("--out", default="results/demo", metavar="DIR", help="report directory (default results/demo)")
    d.add_argument("--refs", "-n", type=count_arg, metavar="N",
                   help="references per run (default 20M, or 1M with --quick; warm-up is a quarter of it)")
    d.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="simulations in parallel (default: CPU count, at most 4)")
    d.set_defaults(func=cmd_demo)

    from . import experiments

    experiments.register(sub)
    return p


def _one_line(msg: str) -> str:
    return " ".join(str(msg).split()) or "unknown error"


def _fail(msg: str, status: int = EXIT_ERROR) -> int:
    # stderr closed or broken (EPIPE, "I/O operation on closed file"): nothing left to tell.
    with contextlib.suppress(OSError, ValueError):
        print(f"xlat: error: {_one_line(msg)}", file=sys.stderr)
    return status


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `xlat` script: returns (and exits with) the status."""
    status = _main(argv)
    sys.exit(status)


def _protect_inputs(args: argparse.Namespace) -> None:
    """Every file the command reads, for the output writers to refuse (``_io.protect``): its
    config, traces, shootdown trace, sweep spec, and a traced program and its arguments."""
    from . import _io

    names: list[str] = []
    for attr in ("config", "shootdowns", "spec"):
        v = getattr(args, attr, None)
        if isinstance(v, str):
            names.append(v)
    for part in getattr(args, "trace", None) or []:
        if isinstance(part, str):
            names += [t for t in part.split(",") if t]
    names += [a for a in getattr(args, "program", None) or [] if isinstance(a, str)]
    _io.protect(*names)


def _main(argv: Sequence[str] | None) -> int:
    debug = bool(os.environ.get("XLAT_DEBUG"))
    try:
        with sigterm_as_interrupt():
            args = build_parser().parse_args(argv)
            _protect_inputs(args)
            return int(args.func(args) or 0)
    except KeyboardInterrupt as e:
        print("xlat: terminated" if isinstance(e, Terminated) else "xlat: interrupted", file=sys.stderr)
        return interrupted_status(e)
    except (CliError, _core.XlatError, argparse.ArgumentTypeError) as e:
        return _fail(str(e))
    except BrokenPipeError:
        # Output piped into `head`: stop quietly, and keep Python from complaining at exit.
        try:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (stays open until exit)
        except OSError:
            pass
        return 0
    except OSError as e:
        name = getattr(e, "filename", None)
        return _fail(f"{name}: {e.strerror or e}" if name else str(e.strerror or e))
    except (ValueError, TypeError) as e:
        if debug:
            raise
        return _fail(str(e))
    except SystemExit:
        raise
    except Exception as e:  # never a traceback for a user; XLAT_DEBUG=1 shows it
        if debug:
            raise
        return _fail(f"internal error: {type(e).__name__}: {e} (rerun with XLAT_DEBUG=1 for a traceback)")


if __name__ == "__main__":
    main()
