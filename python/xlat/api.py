"""`xlat.simulate` and its `Result`."""
from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core
from . import config as _config
from ._io import atomic_write_text, parse_count

__all__ = ["ArgumentError", "Result", "interval_ratios", "simulate"]


class ArgumentError(_core.XlatError, ValueError):
    """A bad argument to :func:`simulate` (``refs``, ``seed``, ``warmup``, ``host_threads``,
    ``prefault``, ``interval``, ``progress``); the message starts with the argument's name.
    Also a ``ValueError``, as Python's own bad-argument error."""

Progress = Callable[[int, "int | None"], None]


def _label(config: Any, n_overrides: int) -> str:
    """A short human name for a configuration: the preset or file stem, plus overrides."""
    if config is None:
        name = "defaults"
    elif isinstance(config, (str, os.PathLike)):
        text = os.fspath(config)
        name = os.path.splitext(os.path.basename(text))[0] if _config._looks_like_path(text) else text
    elif isinstance(config, Mapping) and isinstance(config.get("base"), str):
        name = config["base"] + "+dict"
    else:
        name = "dict"
    return name + (f"+{n_overrides}" if n_overrides else "")


def _undefined_as_nan(stats: Mapping[str, Any]) -> dict[str, Any]:
    """The engine's statistics with every undefined ratio as the one ``math.nan`` object, so
    that two runs' ``stats`` dicts compare equal when their numbers are identical (Python
    compares identical objects as equal before asking NaN)."""
    return {k: math.nan if isinstance(v, float) and math.isnan(v) else v for k, v in stats.items()}


def _json_safe(v: Any) -> Any:
    # JSON has no NaN/inf; an undefined ratio (e.g. per-walk figures with zero walks) is null.
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def interval_ratios(interval: Mapping[str, Any]) -> dict[str, Any]:
    """One interval of a run's statistics over time, with its headline ratios added.

    The engine reports, per interval, the change of every integer statistic; ratios do not add
    up over intervals, so it leaves them out. This returns a copy of ``interval`` with the
    ratios recomputed from that interval's own counts:

    - ``ipc`` = ``instructions`` / ``cycles``
    - ``tlb.l1d.mpki``, ``tlb.l2.mpki`` = ``tlb.<level>.misses`` * 1000 / ``instructions``
    - ``walk_cycles_per_walk`` = ``walk_cycles`` / (``walks`` + ``tlb.dirty_walks``)
    - ``cache.<c>.miss_rate`` = ``cache.<c>.misses`` / ``cache.<c>.accesses`` for every cache
      (and its ``data``/``pt`` parts) in the interval

    A ratio whose denominator is zero (or absent) in the interval, such as cycles per walk in
    an interval without walks, is left out rather than reported as 0. Applying the function
    twice gives the same dict.
    """
    out = dict(interval)

    def num(name: str) -> float:
        v = interval.get(name)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0

    def ratio(name: str, top: str, bottom: str, scale: float = 1.0) -> None:
        if top in interval and num(bottom) > 0:
            out[name] = scale * num(top) / num(bottom)

    ratio("ipc", "instructions", "cycles")
    for level in ("l1d", "l2"):
        ratio(f"tlb.{level}.mpki", f"tlb.{level}.misses", "instructions", 1000.0)
    if "walk_cycles" in interval and num("walks") + num("tlb.dirty_walks") > 0:
        out["walk_cycles_per_walk"] = num("walk_cycles") / (num("walks") + num("tlb.dirty_walks"))
    for name in list(interval):
        if name.startswith("cache.") and name.endswith(".accesses"):
            cache = name[: -len(".accesses")]
            ratio(f"{cache}.miss_rate", f"{cache}.misses", name)
    return out


@dataclass(frozen=True)
class Result:
    """The outcome of one simulation.

    Attributes:
        stats: every statistic the engine reported, by dotted name (the glossary in docs/statistics.md),
            in the engine's order.
        config: the fully resolved configuration (every engine key, typed: int, float, bool, str).
        workload: ``{"name": ..., "params": {...}}`` with every parameter resolved, as the
            engine ran it (for a trace, the trace's name and format).
        seed, refs, skip, warmup, warmup_instructions, prefault, trace, trace_format, interval,
            shootdowns: how the run was asked for (``interval``: instructions per interval of the statistics over time, None
            if off; ``shootdowns``: the shootdown trace injected, None if none).
        curves: one-pass miss-ratio curves (:class:`xlat.mrc.Curve`) of the structures
            ``simulate(curves=...)`` named; empty otherwise.
        series: the statistics over time, one dict per interval (empty without an interval):
            the change of every integer statistic in that interval plus the ratios of
            :func:`interval_ratios`. The intervals add up to the run's totals.
        config_name: a label (the preset or file name, ``+N`` when N overrides were applied).
        config_hash: 12 hex digits identifying the resolved configuration.
        xlat_version: the engine version that produced the numbers.
    """

    stats: dict[str, int | float]
    config: dict[str, Any]
    workload: dict[str, Any]
    seed: int = 1
    refs: int | None = None
    warmup: int = 0
    prefault: bool = False
    trace: list[str] | None = None
    trace_format: str | None = None
    interval: int | None = None
    shootdowns: str | None = None
    warmup_instructions: int | None = None
    skip: int = 0
    series: list[dict[str, int | float]] = field(default_factory=list)
    curves: list[Any] = field(default_factory=list)
    config_name: str = "dict"
    config_hash: str = ""
    xlat_version: str = field(default_factory=_core.version)

    def __getitem__(self, name: str) -> int | float:
        """``result["tlb.l2.mpki"]`` is ``result.stats["tlb.l2.mpki"]`` (an old name of a
        structure, such as ``nested_tlb.hits`` for ``tlb.nested.hits``, works too)."""
        if name not in self.stats:
            name = _core.canonical_name(name)
        return self.stats[name]

    def to_dict(self) -> dict[str, Any]:
        """The JSON document ``xlat run --json`` writes (plain Python types); ``series`` is
        there only for a run with an interval."""
        doc = {
            "xlat_version": self.xlat_version,
            "config_name": self.config_name,
            "config_hash": self.config_hash,
            "config": dict(self.config),
            "workload": {"name": self.workload.get("name"), "params": dict(self.workload.get("params", {}))},
            "run": {
                "seed": self.seed,
                "refs": self.refs,
                "warmup": self.warmup,
                "prefault": self.prefault,
                "trace": list(self.trace) if self.trace else None,
                "trace_format": self.trace_format,
                "interval": self.interval,
                # (Only when one was injected: documents of other runs stay as they were.)
                **({"shootdowns": self.shootdowns} if self.shootdowns else {}),
                **({"warmup_instructions": self.warmup_instructions} if self.warmup_instructions else {}),
                **({"skip": self.skip} if self.skip else {}),
            },
            "stats": {k: _json_safe(v) for k, v in self.stats.items()},
        }
        if self.interval or self.series:
            doc["series"] = [{k: _json_safe(v) for k, v in iv.items()} for iv in self.series]
        if self.curves:
            doc["curves"] = [c.to_dict() for c in self.curves]
        return doc

    def to_json(self, path: str | os.PathLike | None = None, indent: int | None = 2) -> str:
        """The result as JSON text; with ``path``, also write it there atomically."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False) + "\n"
        if path is not None:
            atomic_write_text(path, text)
        return text

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Result:
        """Rebuild a Result from :meth:`to_dict` output (or a ``--json`` file's content)."""
        run = doc.get("run", {})
        return cls(
            stats={k: (math.nan if v is None else v) for k, v in doc["stats"].items()},
            config=dict(doc["config"]),
            workload=dict(doc["workload"]),
            seed=run.get("seed", 1),
            refs=run.get("refs"),
            warmup=run.get("warmup", 0),
            prefault=run.get("prefault", False),
            trace=run.get("trace"),
            trace_format=run.get("trace_format"),
            interval=run.get("interval"),
            shootdowns=run.get("shootdowns"),
            warmup_instructions=run.get("warmup_instructions"),
            skip=run.get("skip", 0),
            # Ratios are recomputed from the counts (the same values, and present even in a
            # document that kept only the counts).
            series=[interval_ratios({k: v for k, v in iv.items() if v is not None}) for iv in doc.get("series") or []],
            curves=[_curve(c) for c in doc.get("curves") or []],
            config_name=doc.get("config_name", "dict"),
            config_hash=doc.get("config_hash", ""),
            xlat_version=doc.get("xlat_version", ""),
        )

    @classmethod
    def from_json(cls, path: str | os.PathLike) -> Result:
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f))

    def to_pandas(self, config: bool = False):
        """A one-row ``pandas.DataFrame``.

        Columns, in order: ``config_name``, ``config_hash``, ``workload`` (its name), ``seed``,
        ``warmup``, then ``workload.<param>`` for each workload parameter, then every statistic
        under its dotted name (``ipc``, ``tlb.l2.mpki``, ...). With ``config=True``, also
        ``config.<key>`` for every resolved config key (typed). Rows from many runs concatenate
        with ``pandas.concat`` into a results table keyed by (config_hash, workload, seed).
        """
        import pandas as pd

        row: dict[str, Any] = {
            "config_name": self.config_name,
            "config_hash": self.config_hash,
            "workload": self.workload.get("name"),
            "seed": self.seed,
            "warmup": self.warmup,
        }
        for k, v in self.workload.get("params", {}).items():
            row[f"workload.{k}"] = v
        row.update(self.stats)
        if config:
            for k, v in self.config.items():
                row[f"config.{k}"] = v
        return pd.DataFrame([row])

    def series_frame(self):
        """The statistics over time as a ``pandas.DataFrame``, one row per interval.

        Columns: ``interval`` (0, 1, ...), ``end_instructions`` (instructions from the end of
        warm-up to the end of the interval), then every entry of :attr:`series` (changes
        and derived ratios; a ratio left out of an interval is NaN). Empty for a run without
        an interval.
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Result.series_frame() needs pandas: pip install pandas (or use Result.series, a list of dicts)") from None

        rows, end = [], 0
        for i, iv in enumerate(self.series):
            end += int(iv.get("instructions", 0))
            rows.append({"interval": i, "end_instructions": end, **iv})
        return pd.DataFrame(rows, columns=None if rows else ["interval", "end_instructions"])

    def __repr__(self) -> str:
        s = self.stats
        parts = [f"{int(s['refs']):,} refs" if "refs" in s else None]
        for name, label, fmt in (
            ("ipc", "IPC", "{:.3f}"),
            ("tlb.l2.mpki", "L2 TLB MPKI", "{:.2f}"),
            ("walk_steps_per_walk", "PTE reads/walk", "{:.2f}"),
        ):
            v = s.get(name)
            if isinstance(v, (int, float)) and math.isfinite(v):
                parts.append(f"{label} {fmt.format(v)}")
        body = ", ".join(p for p in parts if p)
        return (
            f"<xlat.Result {self.workload.get('name')} on {self.config_name} "
            f"[{self.config_hash}] seed {self.seed}: {body}>"
        )


def _trace_list(trace: Any) -> list[str] | None:
    if trace is None:
        return None
    if isinstance(trace, (str, os.PathLike)):
        return [os.fspath(trace)]
    try:
        return [os.fspath(t) for t in trace] or None
    except TypeError:
        raise _core.TraceError(f"trace: expected a file name or a list of file names, got {trace!r}") from None


_U64_MAX = 2**64 - 1


def _seed(seed: Any) -> int:
    """A random seed: a whole number from 0 to 2^64 - 1."""
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise ArgumentError(f"seed: expected a whole number from 0 to 2^64-1 (a random seed), got {seed!r}")
    value = seed.__index__()
    if not 0 <= value <= _U64_MAX:
        raise ArgumentError(f"seed: {value} is outside 0 to 2^64-1 (a random seed)")
    return value


def _mix_spec(mix: Any) -> str | None:
    """A mix as the engine reads it: programs joined by commas."""
    if mix is None:
        return None
    if isinstance(mix, str):
        parts = [mix]
    elif isinstance(mix, (list, tuple)) and mix and all(isinstance(p, str) for p in mix):
        parts = list(mix)
    else:
        raise _core.WorkloadError(f"mix: expected 'prog@core,...' or a list of such programs, got {mix!r}")
    return ",".join(p.strip() for p in parts)


_NOTED_UNCHECKED: set[str] = set()


def _note_unchecked(traces: list[str] | None) -> None:
    """Say on stderr (once per file and process) that a native trace written before version 5
    carries no checksums: it reads as before, but a corrupt byte in it may go unnoticed."""
    for t in traces or []:
        got = None if t in _NOTED_UNCHECKED else _core.native_trace_version(t)
        if got is not None and not got[1]:
            _NOTED_UNCHECKED.add(t)
            print(f"xlat: note: {t}: native trace version {got[0]} carries no checksums, so corruption may go "
                  f"unnoticed (convert_trace rewrites it with them)", file=sys.stderr)


def simulate(
    config: Any = "skylake",
    workload: str | None = None,
    refs: int | str | None = None,
    seed: int = 1,
    warmup: int | str = 0,
    prefault: bool = False,
    trace: str | os.PathLike | Sequence[str | os.PathLike] | None = None,
    trace_format: str | None = None,
    progress: Progress | None = None,
    host_threads: int | None = None,
    interval: int | str | None = None,
    mix: str | Sequence[str] | None = None,
    shootdowns: str | os.PathLike | None = None,
    warmup_instructions: int | str | None = None,
    curves: Sequence[str] | None = None,
    curve_ways: int = 64,
    sample: str | Sequence[int | str] | None = None,
    skip: int | str = 0,
    **overrides: Any,
) -> Result:
    """Simulate one workload (or trace, or mix of programs) on one machine.

    Args:
        config: a preset name (``"skylake"``), a TOML path, a dict of keys (flat dotted or
            nested, may hold ``base``), or None for the engine defaults.
        workload: ``"name"`` or ``"name:key=value,..."`` (see ``xlat workloads``); omit it
            when simulating a ``trace``.
        refs: memory references to simulate after warm-up (int or ``"10M"``/``"1e6"``); None
            runs the workload or trace to its end.
        seed: seeds the workload and every randomized structure: same seed, same numbers.
        warmup: references simulated first whose statistics are discarded.
        skip: references read and dropped before the warm-up, at the workload's own speed
            (fast-forward: the OS calls among them are applied and their stores' dirty bits
            set, nothing else is simulated): to measure a later phase of a program, such as a
            hash join's probe after its build. ``refs`` and ``warmup`` count after it.
        warmup_instructions: or instead, instructions (all streams together) simulated first,
            as other simulators count warm-up (ChampSim's ``--warmup-instructions``); ``refs``
            still counts references after it. Not with ``warmup``.
        prefault: map the workload's whole footprint before the run (no demand faults).
        trace, trace_format: one or more trace files and their format (native, champsim,
            lackey); the format is guessed from the file when omitted.
        progress: called as ``progress(refs_done, refs_total_or_None)`` a few times a second.
        host_threads: host threads for the run (the machine's simulated threads are the
            workload's ``threads=N`` parameter): None lets the engine choose (two when this host
            has two cores and the run is one core natively or in one VM: translation on one,
            caches and timing on the other), 1 keeps it to one (for callers that already run
            several simulations at once). The statistics are the same either way.
        interval: statistics over time: every this many instructions (all cores together,
            counted from the end of warm-up; int or ``"1M"``), take the change of every
            statistic into ``Result.series``. None or 0: off. Such runs stay on one host
            thread; the totals are the same as without.
        mix: programs that run side by side, each in its own address space (its own VM when
            virtualized) on cores of its own: ``"bfs@0,gups:scale=22@1"`` or a list
            ``["bfs@0", "gups:scale=22@1"]``; ``@N`` or ``@N-M`` pins a program to cores (the
            lowest free ones when omitted), ``trace:PATH`` is a recorded program. Program ``i``
            runs with ``seed + i`` unless its spec sets ``seed=``. Besides the machine's
            totals, ``prog<N>.*`` statistics hold each program's. See ``weighted_speedup``.
        shootdowns: a shootdown trace (a text file, one ``instructions stream op [va [pages]]``
            record per line; see docs/workloads.md) whose page-table changes are injected into
            the workload, trace or mix when each stream reaches the instruction count.
        curves: translation structures to profile for one-pass miss-ratio curves
            (``"tlb.l1d"``, ``"tlb.l2"``, ``"pwc.l2"``, ``"pwc"`` for every page-walk-cache
            level): ``Result.curves`` then holds each one's misses at every associativity
            from 1 to ``curve_ways``, the sets as configured (:mod:`xlat.mrc`).
        sample: a sampled run: ``"PERIOD:WARM:UNIT"`` (counts such as ``"10M:1M:100k"``) or a
            tuple. Of every PERIOD references, the first PERIOD - WARM - UNIT are skipped, WARM
            simulated unmeasured and UNIT measured; ``refs`` and ``warmup`` place the stretch
            sampled (the warm-up is skipped). The statistics are the measured units' sums,
            with ``sample.units`` and the 95 % confidence half-widths ``ipc.ci95`` and
            ``tlb.l2.mpki.ci95`` (:mod:`xlat.sampling`). Off by default.
        **overrides: config keys applied last, as ``**{"tlb.l2.entries": 2048}`` or
            ``tlb__l2__entries=2048``.

    Raises ``xlat.ConfigError``, ``WorkloadError``, ``TraceError`` or ``SimulationError``
    (all ``xlat.XlatError``) with a one-line message.
    """
    if "threads" in overrides:
        raise ArgumentError("threads: the host threads of a run are host_threads=1|2; a workload's simulated threads "
                            "are its own parameter (\"bfs:threads=2\")")
    over = [(_config.override_key(k), v) for k, v in overrides.items()]
    resolved = _config.resolve(config, over)
    n_refs = None if refs is None else _count("refs", refs)
    n_warm = _count("warmup", warmup)
    n_skip = _count("skip", skip)
    n_warm_i = _count("warmup_instructions", warmup_instructions) if warmup_instructions is not None else 0
    if n_warm and n_warm_i:
        raise ArgumentError("give warmup (references) or warmup_instructions, not both")
    n_interval = _count("interval", interval) if interval is not None else 0
    seed = _seed(seed)
    traces = _trace_list(trace)
    threads = host_threads
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads not in (1, 2)):
        raise ArgumentError(f"host_threads: expected 1, 2 or None (let the engine choose), got {threads!r}")
    if not isinstance(prefault, bool):
        raise ArgumentError(f"prefault: expected True or False, got {prefault!r}")
    if progress is not None and not callable(progress):
        raise ArgumentError(f"progress: expected a function progress(done, total) or None, got {progress!r}")
    if workload is not None and not isinstance(workload, str):
        raise _core.WorkloadError(f"workload: expected 'name' or 'name:key=value,...' (see `xlat workloads`), got {workload!r}")
    if trace_format is not None and not isinstance(trace_format, str):
        raise _core.TraceError(f"trace_format: expected 'native', 'champsim' or 'lackey', got {trace_format!r}")
    mix_spec = _mix_spec(mix)
    if shootdowns is not None and not isinstance(shootdowns, (str, os.PathLike)):
        raise _core.TraceError(f"shootdowns: expected the path of a shootdown trace, got {shootdowns!r}")
    sd_path = None if shootdowns is None else os.fspath(shootdowns)
    if sum(x is not None and x != [] for x in (workload, traces, mix_spec)) > 1:
        raise _core.WorkloadError("give one of a workload, a trace and a mix, not several")
    if workload is None and not traces and mix_spec is None:
        raise _core.WorkloadError("give a workload (see `xlat workloads`), a trace or a mix")
    if curves is not None and (isinstance(curves, str) or not all(isinstance(c, str) for c in curves)):
        raise ArgumentError(f"curves: expected a list of structure names such as ['tlb.l2', 'pwc'], got {curves!r}")
    if isinstance(curve_ways, bool) or not isinstance(curve_ways, int) or not 1 <= curve_ways <= 65536:
        raise ArgumentError(f"curve_ways: expected an integer from 1 to 65536, got {curve_ways!r}")
    plan = None
    if sample is not None:
        from .sampling import parse_plan

        plan = parse_plan(sample)
        if n_interval or curves or mix_spec is not None or n_warm_i:
            raise ArgumentError("sample: not with interval, curves, a mix or warmup_instructions")
    _note_unchecked(traces)
    out = _core.simulate(
        list(resolved.items()),
        workload=workload,
        trace=traces,
        trace_format=trace_format,
        refs=n_refs,
        warmup=n_warm,
        seed=seed,
        prefault=prefault,
        progress=progress,
        threads=threads or 0,
        interval=n_interval,
        mix=mix_spec,
        shootdowns=sd_path,
        warmup_instructions=n_warm_i,
        curves=list(curves) if curves is not None else None,
        curve_ways=curve_ways,
        sample=plan,
        skip=n_skip,
    )
    stats = out["stats"]
    if plan is not None:
        from .sampling import estimate

        stats = estimate(out["sample"], plan)
    from .mrc import Curve

    return Result(
        stats=_undefined_as_nan(stats),
        config=_config.typed(resolved),
        workload=dict(out.get("workload") or {"name": workload, "params": {}}),
        seed=seed,
        refs=n_refs,
        warmup=n_warm,
        prefault=prefault,
        trace=traces,
        trace_format=trace_format,
        interval=n_interval or None,
        shootdowns=sd_path,
        warmup_instructions=n_warm_i or None,
        skip=n_skip,
        series=[interval_ratios(iv) for iv in out.get("series") or []],
        curves=[Curve.from_dict(c) for c in out.get("curves") or []],
        config_name=_label(config, len(over)),
        config_hash=_config.config_hash(resolved),
    )


def _curve(d: Mapping[str, Any]) -> Any:
    from .mrc import Curve

    return Curve.from_dict(d)


def _count(name: str, value: Any) -> int:
    try:
        return parse_count(value)
    except (ValueError, TypeError) as e:
        raise ArgumentError(f"{name}: {e}") from None
