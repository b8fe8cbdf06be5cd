"""Sweeps: a grid of simulations described by a small TOML file, run on Dask, stored so that
an interrupted or repeated sweep only runs what is missing.

The spec format is documented in docs/experiments.md; in short::

    name = "pwc-sweep"
    refs = "2M"                  # run options; a list is a grid axis
    seeds = [1, 2]
    [[configs]]
    preset = "skylake"
    set = { "pwc.l2.entries" = [24, 64] }     # lists expand as a grid
    [[workloads]]
    name = "gups"
    params = { footprint = ["1G", "8G"] }

Each point of the grid is identified by ``point_id``: a hash of the resolved configuration's
hash, the workload name and parameters, the seed, the run options and the xlat version. A
sweep skips every point whose id already has a successful row in the store; failed points are
tried again. Configurations are resolved on the client before anything is submitted, so the
id never depends on a worker, and a configuration the engine rejects fails only its own
points.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core
from . import config as _config
from . import results as _results


class SpecError(_core.XlatError):
    """A sweep spec is malformed: unknown key, wrong type, empty grid."""


class SweepError(_core.XlatError):
    """A sweep could not run (no cluster, missing optional dependency, ...)."""


# -- values ---------------------------------------------------------------------------------

def parse_count(value: Any, what: str = "count") -> int:
    """A reference count as ``xlat run`` takes it: an integer, ``1e6`` or ``"2M"``.

    Counts of references are decimal (M = 10^6), unlike byte sizes in workload parameters
    ("1G" bytes is 2^30), which the workload parses itself.
    """
    from ._io import parse_count as _parse

    try:
        return _parse(value)
    except (ValueError, TypeError) as e:
        raise SpecError(f"{what}: {e}") from None


def _canonical(value: Any) -> Any:
    """JSON-stable form of a spec value (tuples to lists, numpy scalars to Python)."""
    if isinstance(value, Mapping):
        return {str(k): _canonical(v) for k, v in sorted(value.items())}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


def _json(value: Any) -> str:
    return json.dumps(_canonical(value), sort_keys=True, separators=(",", ":"))


def _value_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# -- the grid -------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConfigChoice:
    """One machine of the grid: a preset (or file, or engine defaults) plus overrides."""

    base: str | None                       # preset name or absolute TOML path; None: defaults
    overrides: tuple[tuple[str, Any], ...]  # applied in order after the base
    label: str

    def describe(self) -> dict:
        return {"base": self.base, "set": [[k, v] for k, v in self.overrides]}


@dataclass(frozen=True)
class Point:
    """One simulation of a sweep."""

    config: ConfigChoice
    workload: str
    params: tuple[tuple[str, Any], ...]    # sorted by name
    seed: int
    refs: int | None
    warmup: int
    prefault: bool
    interval: int = 0                      # statistics over time (instructions); 0: off
    shootdowns: str | None = None          # a shootdown trace to inject (its absolute path)
    curves: tuple[str, ...] = ()           # structures profiled for miss-ratio curves (xlat mrc)
    curve_ways: int = 0                    # ... up to this many ways
    skip: int = 0                          # references fast-forwarded before the warm-up

    @property
    def workload_spec(self) -> str:
        """The workload as ``xlat.simulate`` takes it: ``name:key=value,key=value`` (a mix:
        its programs, ``bfs@0,gups@1``, which ``simulate`` takes as ``mix=``)."""
        if self.workload == "mix":
            return dict(self.params)["programs"]
        if self.workload == "trace":
            return dict(self.params)["path"]
        if not self.params:
            return self.workload
        return self.workload + ":" + ",".join(f"{k}={_value_text(v)}" for k, v in self.params)

    def options(self) -> dict:
        # `interval` only when set: the ids of points without one stay what they were.
        opts = {"refs": self.refs, "warmup": self.warmup, "prefault": self.prefault}
        if self.interval:
            opts["interval"] = self.interval
        if self.shootdowns:
            opts["shootdowns"] = self.shootdowns
        if self.curves:
            opts["curves"] = list(self.curves)
            opts["curve_ways"] = self.curve_ways
        if self.skip:
            opts["skip"] = self.skip
        return opts


@dataclass
class Spec:
    """A parsed sweep spec: its name, its points in grid order and cluster settings."""

    name: str
    points: list[Point]
    source: Path | None = None
    slurm: dict = field(default_factory=dict)
    quick: bool = False
    description: str = ""


_TOP_KEYS = {"name", "description", "configs", "workloads", "mixes", "mix", "traces", "seeds", "seed", "refs", "warmup",
             "prefault", "interval", "shootdowns", "skip", "quick", "slurm"}
_RUN_KEYS = ("refs", "warmup", "prefault", "interval", "shootdowns", "skip")
_CONFIG_KEYS = {"preset", "label", "set", "zip", "workloads", "curves", "curve_ways", *_RUN_KEYS}
_WORKLOAD_KEYS = {"name", "params", "zip", "configs", *_RUN_KEYS, "seeds", "seed"}
_MIX_KEYS = {"label", "programs", "configs", *_RUN_KEYS, "seeds", "seed"}
_TRACE_KEYS = {"label", "path", "format", "configs", "set", *_RUN_KEYS, "seeds", "seed"}


def load_spec(spec: str | os.PathLike | Mapping, quick: bool = False, quick_overlay: Mapping | None = None,
              traces: Sequence[Mapping] | None = None) -> Spec:
    """Parse a spec file (or an already-parsed mapping) into its grid of points.

    ``quick`` applies the spec's ``[quick]`` table over the top-level keys; ``quick_overlay``
    (a study's ``quick.toml``) does the same from outside the file. ``traces`` are more
    ``[[traces]]`` tables (a study's prepared traces), added to the spec's.
    """
    source: Path | None = None
    if isinstance(spec, Mapping):
        doc = dict(spec)
        base_dir = Path.cwd()
    else:
        source = Path(spec)
        doc = _config.read_toml(source, "sweep spec", SpecError)
        base_dir = source.resolve().parent
    where = f"sweep spec '{source}'" if source else "sweep spec"

    if traces is not None:
        doc["traces"] = list(doc.get("traces") or []) + list(traces)
    if "mix" in doc:
        # (`[[mix]]` reads as well as `[[mixes]]`.)
        if "mixes" in doc:
            raise SpecError(f"{where}: give [[mixes]] or [[mix]], not both")
        doc["mixes"] = doc.pop("mix")
    unknown = sorted(set(doc) - _TOP_KEYS)
    if unknown:
        raise SpecError(f"{where}: unknown key '{unknown[0]}' (known: {', '.join(sorted(_TOP_KEYS))})")
    quick_table = doc.pop("quick", None)
    full_workloads = doc.get("workloads")
    full_mixes = doc.get("mixes")
    if quick:
        for overlay in (quick_table, quick_overlay):
            if overlay is None:
                continue
            if not isinstance(overlay, Mapping):
                raise SpecError(f"{where}: 'quick' must be a table of top-level keys")
            bad = sorted(set(overlay) - (_TOP_KEYS - {"quick", "name"}))
            if bad:
                raise SpecError(f"{where}: unknown key '{bad[0]}' in the quick overrides")
            if "seeds" in overlay or "seed" in overlay:
                doc.pop("seeds", None)
                doc.pop("seed", None)
            doc.update(overlay)

    name = doc.get("name") or (source.stem if source else None)
    if not isinstance(name, str) or not name:
        raise SpecError(f"{where}: 'name' must be a non-empty string")
    slurm = doc.get("slurm", {})
    if not isinstance(slurm, Mapping):
        raise SpecError(f"{where}: 'slurm' must be a table of dask_jobqueue.SLURMCluster arguments")

    configs = _parse_configs(doc.get("configs"), base_dir, where)
    if doc.get("workloads") is None and (doc.get("mixes") is not None or doc.get("traces") is not None):
        workloads = []
    else:
        workloads = _parse_workloads(doc.get("workloads"), where)
    workloads += _parse_mixes(doc.get("mixes"), where)
    workloads += _parse_traces(doc.get("traces"), base_dir, where)
    top_seeds = _seeds(doc, where)
    top_run = {k: _axis(doc.get(k), f"{where}: '{k}'") for k in _RUN_KEYS}
    if quick:
        # --quick makes every point small: the quick table's run options replace those a
        # config sets (a workload's own still apply, as the quick workloads list them).
        quick_run = {k for o in (quick_table, quick_overlay) if isinstance(o, Mapping) for k in o if k in _RUN_KEYS}
        for c in configs:
            for k in quick_run:
                c["run"].pop(k, None)
    # A config's workload filter names workloads of the spec (of its full or its quick list:
    # a name the quick list leaves out just selects nothing there).
    names = {wl["name"] for wl in workloads}
    if full_workloads is not None and full_workloads is not doc.get("workloads"):
        names |= {wl["name"] for wl in _parse_workloads(full_workloads, where)}
    if full_mixes is not None:
        names.add("mix")
    # (`trace` is always a name a filter may use: a study's traces come from its prepare.py,
    # which has none to give where the machine cannot trace, or before it has traced.)
    names.add("trace")
    # (A workload's `configs` names a config by its label, with or without its grid's values.)
    labels = {c["choice"].label for c in configs} | {c["name"] for c in configs}
    for wl in workloads:
        bad = [x for x in (wl.get("configs") or []) if x not in labels]
        if bad:
            raise SpecError(f"{wl['what']}: config '{bad[0]}' is not a label of the spec's configs ({', '.join(sorted(labels))})")
    for c in configs:
        unknown = [n for n in (c["workloads"] or []) if n not in names]
        if unknown:
            raise SpecError(f"{c['what']}: workload '{unknown[0]}' is not in the spec's workloads "
                            f"({', '.join(sorted(names))})")

    points: list[Point] = []
    seen: set = set()
    for c in configs:
        for wl in workloads:
            cfg = c["choice"]
            if c["workloads"] is not None and wl["name"] not in c["workloads"]:
                continue
            if wl.get("configs") is not None and cfg.label not in wl["configs"] and c["name"] not in wl["configs"]:
                continue
            if wl.get("set"):
                # (A trace's own keys, after the config's: the same machine, run as the trace asks.)
                cfg = ConfigChoice(cfg.base, cfg.overrides + wl["set"], cfg.label)
            # Run options: the workload's own, else the config's, else the top level's.
            run = {k: wl["run"][k] if k in wl["run"] else c["run"][k] if k in c["run"] else top_run[k]
                   for k in _RUN_KEYS}
            seeds = wl["seeds"] if wl["seeds"] is not None else top_seeds
            for refs, warmup, prefault, interval, shootdowns, skip in itertools.product(*(run[k] for k in _RUN_KEYS)):
                *opts, n_skip = _run_options(refs, warmup, prefault, interval, skip, where)
                opts.append(_shootdowns(shootdowns, base_dir, where))
                for seed in seeds:
                    p = Point(cfg, wl["name"], wl["params"], seed, *opts, *c.get("curves", ((), 0)), skip=n_skip)
                    if p not in seen:  # a value listed twice is one point
                        seen.add(p)
                        points.append(p)
    if not points:
        raise SpecError(f"{where}: the grid is empty")
    desc = doc.get("description", "")
    if not isinstance(desc, str):
        raise SpecError(f"{where}: 'description' must be a string")
    return Spec(name=name, points=points, source=source, slurm=dict(slurm), quick=quick, description=desc.strip())


def _axis(value: Any, what: str) -> list:
    """A grid axis: a list is its values, anything else one value (None: the default)."""
    if isinstance(value, list):
        if not value:
            raise SpecError(f"{what}: an empty list makes the grid empty")
        return value
    if isinstance(value, Mapping):
        raise SpecError(f"{what}: expected a value or a list of values, not a table")
    return [value]


def _seeds(doc: Mapping, where: str) -> list[int] | None:
    if "seeds" in doc and "seed" in doc:
        raise SpecError(f"{where}: give 'seeds' or 'seed', not both")
    raw = doc.get("seeds", doc.get("seed"))
    if raw is None:
        return [1]
    vals = _axis(raw, f"{where}: 'seeds'")
    for s in vals:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise SpecError(f"{where}: seed {s!r} is not a non-negative integer")
    return vals


def _shootdowns(path: Any, base_dir: Path, where: str) -> str | None:
    """A shootdown trace's path, relative to the spec's folder; it must exist."""
    if path is None:
        return None
    if not isinstance(path, str) or not path:
        raise SpecError(f"{where}: 'shootdowns' must be the path of a shootdown trace, not {path!r}")
    p = Path(path)
    p = p if p.is_absolute() else (base_dir / p).resolve()
    if not p.is_file():
        raise SpecError(f"{where}: shootdown trace '{path}' does not exist (looked for {p})")
    return str(p)


def _file_digest(path: str) -> str:
    """16 hex digits of a file's SHA-256 (a missing file: its path, so the point still has an id)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]
    except OSError:
        return "missing:" + path


def _run_options(refs: Any, warmup: Any, prefault: Any, interval: Any, skip: Any,
                 where: str) -> tuple[int | None, int, bool, int, int]:
    r = None if refs is None else parse_count(refs, f"{where}: 'refs'")
    w = 0 if warmup is None else parse_count(warmup, f"{where}: 'warmup'")
    if prefault is None:
        prefault = False
    if not isinstance(prefault, bool):
        raise SpecError(f"{where}: 'prefault' must be true or false, not {prefault!r}")
    i = 0 if interval is None else parse_count(interval, f"{where}: 'interval'")
    k = 0 if skip is None else parse_count(skip, f"{where}: 'skip'")
    return r, w, prefault, i, k


def _grid(table: Any, zipped: Any, what: str) -> list[tuple[tuple[str, Any], ...]]:
    """Cartesian product of ``table``'s list values, crossed with ``zipped``'s lists taken in
    lockstep. Each combination keeps the keys in the order written."""
    table = table or {}
    zipped = zipped or {}
    if not isinstance(table, Mapping) or not isinstance(zipped, Mapping):
        raise SpecError(f"{what}: expected a table of key = value or key = [values]")
    # TOML reads an unquoted `pwc.l2.entries = [...]` as nested tables: flatten them back.
    table, zipped = _flat(table), _flat(zipped)
    both = sorted(set(table) & set(zipped))
    if both:
        raise SpecError(f"{what}: '{both[0]}' is in both 'set'/'params' and 'zip'")
    axes = [[(k, x) for x in _axis(v, f"{what}: '{k}'")] for k, v in table.items()]
    if zipped:
        lengths = {k: len(v) if isinstance(v, list) else None for k, v in zipped.items()}
        if any(n is None for n in lengths.values()) or len(set(lengths.values())) != 1:
            raise SpecError(f"{what}: every 'zip' value must be a list, all of one length ({lengths})")
        n = next(iter(lengths.values()))
        if n == 0:
            raise SpecError(f"{what}: 'zip' lists are empty")
        axes.append([tuple((k, zipped[k][i]) for k in zipped) for i in range(n)])
    out = []
    for combo in itertools.product(*axes):
        flat: list[tuple[str, Any]] = []
        for item in combo:
            if item and isinstance(item[0], tuple):
                flat += list(item)
            else:
                flat.append(item)
        out.append(tuple(flat))
    return out or [()]


def _flat(table: Mapping, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in table.items():
        if isinstance(v, Mapping):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _parse_configs(raw: Any, base_dir: Path, where: str) -> list[dict]:
    """Each machine of the grid as {"choice": ConfigChoice, "workloads": names or None (all),
    "run": the config's own run options, "what": where it is in the spec}."""
    if raw is None:
        raise SpecError(f"{where}: no 'configs' (e.g. configs = [\"skylake\"])")
    entries = raw if isinstance(raw, list) else [raw]
    if not entries:
        raise SpecError(f"{where}: 'configs' is empty")
    out: list[dict] = []
    for i, e in enumerate(entries):
        what = f"{where}: configs[{i}]"
        if isinstance(e, str):
            e = {"preset": e}
        if not isinstance(e, Mapping):
            raise SpecError(f"{what}: expected a preset name or a table")
        _known_keys(e, _CONFIG_KEYS, what)
        base = e.get("preset")
        if base is not None:
            if not isinstance(base, str) or not base:
                raise SpecError(f"{what}: 'preset' must be a preset name or a TOML path")
            if base.endswith(".toml") or "/" in base or os.sep in base:
                # Paths are relative to the spec, so a study runs from any directory.
                p = Path(base).expanduser()
                base = str(p if p.is_absolute() else (base_dir / p).resolve())
            # A misspelt preset is a mistake in the spec, not a machine the engine rejects:
            # stop before anything runs.
        
            try:
                _config.find(base)
            except _core.XlatError as err:
                raise SpecError(f"{what}: {err}") from None
        label = e.get("label")
        if label is not None and not isinstance(label, str):
            raise SpecError(f"{what}: 'label' must be a string")
        only = e.get("workloads")
        if only is not None:
            if isinstance(only, str):
                only = [only]
            if not isinstance(only, list) or not only or not all(isinstance(n, str) and n for n in only):
                raise SpecError(f"{what}: 'workloads' must be a non-empty list of workload names")
        run = {k: _axis(e[k], f"{what}: '{k}'") for k in _RUN_KEYS if k in e}
        curves = e.get("curves", [])
        if isinstance(curves, str):
            curves = [curves]
        if not isinstance(curves, list) or not all(isinstance(n, str) and n for n in curves):
            raise SpecError(f"{what}: 'curves' must be a list of structure names (e.g. [\"pwc.l2\"], see xlat mrc)")
        if "curve_ways" in e and not curves:
            raise SpecError(f"{what}: 'curve_ways' without 'curves'")
        curve_ways = e.get("curve_ways", 64) if curves else 0
        if curves and (isinstance(curve_ways, bool) or not isinstance(curve_ways, int) or not 0 < curve_ways <= 65536):
            raise SpecError(f"{what}: 'curve_ways' must be an integer from 1 to 65536")
        grid = _grid(e.get("set"), e.get("zip"), f"{what}: 'set'")
        # With a label of its own, a config names only the overrides that vary in its grid.
        varying = {k for k, v in [*_flat(e.get("set") or {}).items(), *_flat(e.get("zip") or {}).items()]
                   if isinstance(v, list) and len(v) > 1}
        base_label = label or (Path(base).stem if base else "defaults")
        for overrides in grid:
            shown = [(k, v) for k, v in overrides if (k in varying or not label)]
            text = " ".join(f"{k}={_value_text(v)}" for k, v in shown)
            out.append({"choice": ConfigChoice(base, overrides, f"{base_label} {text}".strip()),
                        "workloads": only, "run": run, "what": what, "name": base_label,
                        "curves": (tuple(curves), curve_ways)})
    return out


def _parse_workloads(raw: Any, where: str) -> list[dict]:
    if raw is None:
        raise SpecError(f"{where}: no 'workloads' (e.g. [[workloads]] name = \"gups\")")
    entries = raw if isinstance(raw, list) else [raw]
    if not entries:
        raise SpecError(f"{where}: 'workloads' is empty")
    out = []
    for i, e in enumerate(entries):
        what = f"{where}: workloads[{i}]"
        if isinstance(e, str):
            e = _workload_from_text(e, what)
        if not isinstance(e, Mapping):
            raise SpecError(f"{what}: expected a workload name or a table")
        _known_keys(e, _WORKLOAD_KEYS, what)
        name = e.get("name")
        if not isinstance(name, str) or not name or ":" in name:
            raise SpecError(f"{what}: 'name' must be a workload name such as \"gups\"")
        run = {k: _axis(e[k], f"{what}: '{k}'") for k in _RUN_KEYS if k in e}
        seeds = _seeds(e, what) if ("seeds" in e or "seed" in e) else None
        only = _config_labels(e.get("configs"), what)
        for params in _grid(e.get("params"), e.get("zip"), f"{what}: 'params'"):
            _check_kernel(name, [k for k, _ in params], what)
            out.append({"name": name, "params": tuple(sorted(params)), "run": run, "seeds": seeds, "configs": only,
                        "what": what})
    return out


def _config_labels(only: Any, what: str) -> list[str] | None:
    """A workload's or mix's ``configs``: the labels of the configs it runs on (None: all)."""
    if only is not None and (not isinstance(only, list) or not only or not all(isinstance(x, str) for x in only)):
        raise SpecError(f"{what}: 'configs' must be a non-empty list of config labels")
    return only


def _known_keys(table: Mapping, known: set, what: str) -> None:
    """A spec table uses only the keys it may have (else one error naming the first other)."""
    unknown = sorted(set(table) - known)
    if unknown:
        raise SpecError(f"{what}: unknown key '{unknown[0]}' (known: {', '.join(sorted(known))})")


def _parse_traces(raw: Any, base_dir: Path, where: str) -> list[dict]:
    """``[[traces]]`` tables: ``path`` (a trace file, relative to the spec's folder; its
    ``.maps`` sidecar comes along), an optional ``label`` (default: the file's name without
    its extension), ``format`` (as ``xlat run --trace-format``), ``set`` (config keys set on
    every config the trace runs on, after the config's own: how to run a trace, such as
    ``loader.fast_forward``, which a kernel has no use for), run options, seeds and
    ``configs``. Each is a point whose workload is ``trace``, identified by the content of
    the trace and its sidecar, not by where they lie."""
    out = []
    for what, e in _tables(raw, "traces", _TRACE_KEYS, where, 'path = "prog.xtr"'):
        path = e.get("path")
        if not isinstance(path, str) or not path:
            raise SpecError(f"{what}: 'path' must be the path of a trace file")
        full = Path(path) if os.path.isabs(path) else base_dir / path
        if not full.is_file():
            raise SpecError(f"{what}: trace '{path}' does not exist (looked for {full})")
        label = e.get("label", full.name.split(".")[0])
        if not isinstance(label, str) or not label:
            raise SpecError(f"{what}: 'label' must be a non-empty string")
        fmt = e.get("format")
        if fmt is not None and (not isinstance(fmt, str) or not fmt):
            raise SpecError(f"{what}: 'format' must be a trace format such as \"lackey\"")
        params = [("label", label), ("path", str(full.resolve()))] + ([("format", fmt)] if fmt else [])
        src = _point_source("trace", tuple(sorted(params)), e, what)
        extra = e.get("set") or {}
        if not isinstance(extra, Mapping):
            raise SpecError(f"{what}: 'set' must be a table of config keys, such as {{ \"loader.fast_forward\" = \"resident\" }}")
        src["set"] = tuple(_flat(extra).items())
        out.append(src)
    return out


def _tables(raw: Any, kind: str, keys: set, where: str, example: str) -> list[tuple[str, Mapping]]:
    """The tables of a spec's ``[[kind]]`` list (one table reads as a list of one), each with
    the text naming it in errors; each must be a table of known keys."""
    if raw is None:
        return []
    out = []
    for i, e in enumerate(raw if isinstance(raw, list) else [raw]):
        what = f"{where}: {kind}[{i}]"
        if not isinstance(e, Mapping):
            raise SpecError(f"{what}: expected a table with {example}")
        _known_keys(e, keys, what)
        out.append((what, e))
    return out


def _point_source(name: str, params: tuple, e: Mapping, what: str) -> dict:
    """A mix's or trace's entry of the grid: its run options, seeds and configs from `e`."""
    run = {k: _axis(e[k], f"{what}: '{k}'") for k in _RUN_KEYS if k in e}
    seeds = _seeds(e, what) if ("seeds" in e or "seed" in e) else None
    return {"name": name, "params": params, "run": run, "seeds": seeds, "configs": _config_labels(e.get("configs"), what),
            "what": what}


def _parse_mixes(raw: Any, where: str) -> list[dict]:
    """``[[mixes]]`` tables: ``programs`` (a mix spec, or a list of programs ``"bfs@0"``), an
    optional ``label``, run options and ``configs`` (the labels of the configs it runs on;
    default: every config). Each is a point whose workload is ``mix``."""
    out = []
    for what, e in _tables(raw, "mixes", _MIX_KEYS, where, 'programs = ["bfs@0", "gups@1"]'):
        progs = e.get("programs")
        if isinstance(progs, list) and progs and all(isinstance(p, str) for p in progs):
            text = ",".join(p.strip() for p in progs)
        elif isinstance(progs, str) and progs.strip():
            text = progs.strip()
        else:
            raise SpecError(f"{what}: 'programs' must be a list of programs such as [\"bfs@0\", \"gups:footprint=1G@1\"]")
        try:
            parsed = _core.mix_programs(text)
        except _core.XlatError as err:
            raise SpecError(f"{what}: {err}") from None
        for spec, _cores in parsed:
            if not spec.startswith("trace:"):
                wl = _workload_from_text(spec, what)
                _check_kernel(wl["name"], list(wl["params"]), what)
        label = e.get("label", text)
        if not isinstance(label, str) or not label:
            raise SpecError(f"{what}: 'label' must be a non-empty string")
        out.append(_point_source("mix", (("label", label), ("programs", text)), e, what))
    return out


def _check_kernel(name: str, params: list[str], what: str) -> None:
    """A misspelt kernel or parameter fails when the spec is read, not at its first point."""
    kernels = {k["name"]: [p["name"] for p in k["params"]] for k in _core.workloads()}
    if name not in kernels:
        raise SpecError(f"{what}: unknown workload '{name}' (kernels: {', '.join(sorted(kernels))})")
    bad = [p for p in params if p not in kernels[name]]
    if bad:
        raise SpecError(f"{what}: workload {name} has no parameter '{bad[0]}' (allowed: {', '.join(kernels[name])})")


def _workload_from_text(text: str, what: str) -> dict:
    """``"gups:footprint=1G,seed_table=2"`` to a workload table (values stay text)."""
    name, _, rest = text.partition(":")
    params = {}
    for item in filter(None, (s.strip() for s in rest.split(","))):
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise SpecError(f"{what}: '{item}' is not key=value")
        params[k.strip()] = v.strip()
    return {"name": name.strip(), "params": params}


# -- identity -------------------------------------------------------------------------------

def xlat_version() -> str:
    return _core.version()


_BUILD: str | None = None


def engine_build() -> str:
    """A fingerprint of the engine binary (12 hex digits of its SHA-256).

    The version number changes only at releases, while a development tree rebuilds the engine
    all the time: rows record the build that computed them, so that a sweep can tell points
    stored by another build (``rerun_stale``) and a heterogeneous cluster shows up.
    """
    global _BUILD
    if _BUILD is None:
        h = hashlib.sha256()
        try:
            with open(_core.__file__, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            _BUILD = h.hexdigest()[:12]
        except (OSError, AttributeError, TypeError):
            _BUILD = "unknown"
    return _BUILD


def point_id(config_hash: str, point: Point, version: str) -> str:
    """The resume key: everything that determines a point's result, hashed."""
    key = {
        "config_hash": config_hash,
        "workload": point.workload,
        "params": [[k, _value_text(v)] for k, v in point.params],
        "seed": point.seed,
        **point.options(),
        "xlat_version": version,
    }
    if point.shootdowns:
        # (The trace's content, not where this checkout keeps it, identifies the point.)
        key["shootdowns"] = _file_digest(point.shootdowns)
    if point.workload == "trace":
        path = dict(point.params)["path"]
        side = path + ".maps"
        key["params"] = [[k, v] for k, v in key["params"] if k != "path"]
        key["trace"] = [_file_digest(path), _file_digest(side) if os.path.exists(side) else None]
    return hashlib.sha256(_json(key).encode()).hexdigest()[:20]


@dataclass
class Task:
    """A point ready to run: its resolved config and the row fields known before running."""

    point: Point
    point_id: str
    config: dict | None          # resolved config (text values); None if it did not resolve
    error: str | None            # why the config did not resolve
    meta: dict


def _resolver() -> Callable[[str | None, Sequence[tuple[str, Any]]], dict]:

    return lambda base, overrides: _config.resolve(base, list(overrides))


def prepare(spec: Spec, resolve: Callable | None = None, version: str | None = None) -> list[Task]:
    """Resolve every point's configuration and compute its id and the row's known fields."""

    resolve = resolve or _resolver()
    version = version or xlat_version()
    # Resolved once per machine: (resolved, error, config hash, typed values).
    cache: dict[ConfigChoice, tuple] = {}
    tasks = []
    for p in spec.points:
        if p.config not in cache:
            try:
                resolved = resolve(p.config.base, p.config.overrides)
                cache[p.config] = (resolved, None, _config.config_hash(resolved), _typed(resolved))
            except Exception as e:  # noqa: BLE001 - any resolution failure fails these points only
                # Not a machine the engine accepts: identify it by what was asked for instead.
                chash = "unresolved-" + hashlib.sha256(_json(p.config.describe()).encode()).hexdigest()[:12]
                cache[p.config] = (None, one_line(e), chash, {})
        resolved, err, chash, typed = cache[p.config]
        pid = point_id(chash, p, version)
        meta = {
            "point_id": pid,
            "sweep": spec.name,
            "config_label": p.config.label,
            "config_base": p.config.base,
            "config_hash": chash,
            "config": _json(resolved) if resolved is not None else None,
            "overrides": _json([[k, v] for k, v in p.config.overrides]),
            "workload": p.workload,
            "params": _json({k: v for k, v in p.params}),
            "seed": p.seed,
            "refs": p.refs,
            "warmup": p.warmup,
            "prefault": p.prefault,
            **({"skip": p.skip} if p.skip else {}),
            # Only in stores that use it (0 = off), like the series column of the row.
            **({"interval": p.interval} if p.interval else {}),
            **({"shootdowns": os.path.basename(p.shootdowns)} if p.shootdowns else {}),
            "xlat_version": version,
            **{f"set.{k}": _canonical(v) for k, v in p.config.overrides},
            **{f"param.{k}": _canonical(v) for k, v in p.params},
            **{f"cfg.{k}": v for k, v in typed.items()},
        }
        tasks.append(Task(p, pid, resolved, err, meta))
    return tasks


def _typed(resolved: Mapping[str, str]) -> dict:

    try:
        return _config.typed(resolved)
    except Exception:  # noqa: BLE001 - the schema call is a nicety for columns, not identity
        return dict(resolved)


# -- running one point (on a worker) ---------------------------------------------------------

def one_line(e: BaseException) -> str:
    """An exception as one line: ``Type: first line of the message``, at most 500 chars."""
    lines = [s for s in str(e).strip().splitlines() if s.strip()]
    msg = lines[0].strip() if lines else ""
    name = type(e).__name__
    text = f"{name}: {msg}" if msg else name
    return text if len(text) <= 500 else text[:497] + "..."


def _default_simulate(config, workload, **kw):
    import xlat

    sim = getattr(xlat, "simulate", None)
    if sim is None:
        raise SweepError("this build of xlat has no simulate()")
    return sim(config, workload, **kw)


def flatten_stats(stats: Mapping, prefix: str = "stat.") -> dict:
    """Statistics as ``stat.<name>`` columns; nested tables flatten with dots and anything
    that is not a number (a histogram as a list) is kept as JSON text."""
    out = {}
    for k, v in stats.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten_stats(v, key + "."))
        elif isinstance(v, bool):
            out[key] = int(v)
        elif isinstance(v, (int, float)):
            out[key] = v
        elif hasattr(v, "item") and not isinstance(v, (list, tuple, str)):
            out[key] = v.item()
        else:
            out[key] = _json(v)
    return out


def run_task(config: dict, workload: str, options: dict, meta: dict, simulate: Callable | None = None,
             threads: int | None = None) -> dict:
    """Run one point and return its row. Never raises for a simulation error: the row says
    ``status = "error"`` with the error's one line, so the sweep goes on. ``threads`` goes to
    the engine's ``simulate`` (as ``host_threads``, not to a custom one): host threads per
    simulation."""
    sim = simulate or _default_simulate
    if simulate is None and threads is not None:
        options = {**options, "host_threads": threads}
    t0 = time.perf_counter()
    row = dict(meta)
    try:
        if meta.get("workload") == "mix":
            res = sim(config, None, seed=meta["seed"], mix=workload, **options)
        elif meta.get("workload") == "trace":
            fmt = meta.get("param.format")
            res = sim(config, None, seed=meta["seed"], trace=workload, **({"trace_format": fmt} if fmt else {}), **options)
        else:
            res = sim(config, workload, seed=meta["seed"], **options)
        stats = res.stats if hasattr(res, "stats") else res["stats"]
        wl = res.workload if hasattr(res, "workload") else res.get("workload")
        row.update(flatten_stats(stats))
        series = res.series if hasattr(res, "series") else res.get("series")
        if series:
            row["series"] = _results.series_text(series)
        curves = res.curves if hasattr(res, "curves") else res.get("curves")
        if curves:
            # (JSON text, as the series: read it with xlat.results.curves_of.)
            row["curves"] = _json([c.to_dict() if hasattr(c, "to_dict") else c for c in curves])
        row["workload_resolved"] = _json(wl) if wl is not None else None
        row["status"], row["error"] = "ok", None
    except Exception as e:  # noqa: BLE001 - recorded, not raised: one point must not stop a sweep
        row["status"], row["error"] = "error", one_line(e)
    row["wall_s"] = time.perf_counter() - t0
    row["finished_at"] = time.time()
    row["host"] = socket.gethostname()
    row["engine_build"] = engine_build()  # the worker's own build: it computed the numbers
    return row


def _error_row(task: Task, error: str, wall: float = 0.0) -> dict:
    row = dict(task.meta)
    row.update(status="error", error=error, wall_s=wall, finished_at=time.time(), host=socket.gethostname(),
               engine_build=engine_build())
    return row


# -- clusters -------------------------------------------------------------------------------

def threads_per_run(workers: int) -> int:
    """Host threads each simulation may use when ``workers`` run at once on this host: two
    (the engine's most) only when every worker can have two cores, so that sweeps do not
    oversubscribe the machine."""
    return 2 if 2 * workers <= default_workers() else 1


def default_workers() -> int:
    """Every core this process may use, one single-threaded worker process each: the engine is
    CPU-bound and releases the GIL, so more threads per worker buys nothing."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@contextmanager
def _cluster(scheduler: str | None, workers: int | None, slurm: bool, slurm_options: Mapping,
             npoints: int) -> Iterator:
    """A dask.distributed Client on the chosen cluster, and the host threads each simulation
    may use (None: the engine chooses, as on a remote or SLURM worker, which knows its own
    cores); closes what it started."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise SweepError("dask.distributed is not installed: pip install 'dask[distributed]'") from None
    import logging

    if scheduler and slurm:
        raise SweepError("give --scheduler or --slurm, not both")
    if scheduler:
        try:
            client = Client(scheduler, timeout="20s")
        except (OSError, TimeoutError) as e:
            raise SweepError(f"cannot reach the Dask scheduler at {scheduler}: {one_line(e)}") from None
        try:
            yield client, None
        finally:
            client.close()
        return
    if slurm:
        try:
            from dask_jobqueue import SLURMCluster
        except ImportError:
            raise SweepError("SLURM sweeps need dask-jobqueue: pip install 'xlat[slurm]'") from None
        try:
            cluster = SLURMCluster(**slurm_cluster_options(slurm_options))
        except Exception as e:  # noqa: BLE001 - bad [slurm] options surface here as assorted types
            raise SweepError(f"could not set up the SLURM cluster: {one_line(e)}") from None
        n = workers or min(npoints, 16)
        cluster.scale(n=n)
        client = Client(cluster)
        try:
            yield client, None
        finally:
            client.close()
            cluster.close()
        return
    n = workers or default_workers()
    n = max(1, min(n, npoints))  # idle workers only cost start-up time
    # Dask's own logs stay quiet up to CRITICAL, here and in the workers (`_dask_worker`): a
    # sweep reports each failed point itself, with its error.
    with _sigint_ignored_by_children():
        try:
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.CRITICAL, preload=["xlat._dask_worker"])
        except Exception as e:  # noqa: BLE001 - Dask raises assorted types; the user needs one line
            raise SweepError(f"could not start a local Dask cluster of {n} workers: {one_line(e)}") from None
    client = Client(cluster)
    try:
        yield client, threads_per_run(n)
    finally:
        client.close()
        cluster.close()


@contextmanager
def _sigint_ignored_by_children():
    """Start worker processes with Ctrl-C ignored: the terminal sends SIGINT to the whole
    process group, and the workers would die printing tracebacks while this process stores
    what finished and shuts them down in order. An ignored signal stays ignored across exec,
    and Python then installs no KeyboardInterrupt handler of its own."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def slurm_cluster_options(options: Mapping) -> dict:
    """SLURMCluster arguments: the spec's ``[slurm]`` table over dask's ``jobqueue.slurm``
    configuration, with one single-threaded worker per job unless either says otherwise."""
    import dask

    out = dict(options)
    for key, default in (("cores", 1), ("processes", 1), ("memory", "4GiB")):
        if key not in out and dask.config.get(f"jobqueue.slurm.{key}", None) is None:
            out[key] = default
    return out


# -- the sweep ------------------------------------------------------------------------------

@dataclass
class SweepResult:
    """What :func:`run` did. ``df`` holds this spec's points (each once, in grid order)."""

    name: str
    store: Path
    total: int
    reused: int
    ran: int
    failed: int
    df: Any
    interrupted: bool = False
    #: Points whose workload ended before their window did (fewer references than asked).
    short: int = 0

    @property
    def ok(self) -> bool:
        return self.failed == 0 and not self.interrupted


def run(spec: str | os.PathLike | Mapping | Spec, name: str | None = None, scheduler: str | None = None,
        workers: int | None = None, *, slurm: bool = False, root: str | os.PathLike | None = None,
        quick: bool = False, progress: bool | None = True, client: Any = None, rerun_stale: bool = False,
        simulate: Callable | None = None, resolve: Callable | None = None, log: Any = None) -> SweepResult:
    """Run a sweep: expand the spec, reuse finished points, run the rest on Dask, store rows.

    - ``spec``: a path to a SPEC.toml, a mapping with the same keys, or a :class:`Spec`.
    - ``name``: the results store (default: the spec's ``name``); rows go to ``root/NAME``.
    - ``scheduler``: address of a running Dask scheduler; else ``slurm=True`` for a
      dask-jobqueue SLURM cluster; else a LocalCluster of ``workers`` single-threaded worker
      processes (default: every core).
    - ``client``: an existing ``dask.distributed.Client`` to use instead (not closed).
    - ``rerun_stale``: also run points whose stored row came from another build of the engine
      (same version number: a development tree); by default they are reused, with a warning.
    - ``simulate``: replaces ``xlat.simulate`` (same signature); it must be importable by the
      workers, i.e. a module-level function.

    Failed points are recorded with their error and do not stop the sweep; check
    ``result.failed``. Ctrl-C stops the sweep with every finished point stored
    (``result.interrupted``); run it again to resume.
    """
    if not isinstance(spec, Spec):
        spec = load_spec(spec, quick=quick)
    name = _results.check_name(name or spec.name)
    log = log if log is not None else sys.stderr
    store = _results.Store(name, root)
    tasks = prepare(spec, resolve=resolve)
    # One task per id: two grid cells that resolve to the same machine are one point.
    unique: dict[str, Task] = {}
    for t in tasks:
        unique.setdefault(t.point_id, t)
    # One sweep at a time per store: a second one waits here, then finds the points stored.
    with store.lock(log):
        store.remove_stale_temporaries()
        done = store.done_ids()
        current = store.done_ids(engine_build())
        stale = sum(1 for pid in unique if pid in done and pid not in current)
        if rerun_stale:
            done = current
        elif stale:
            _say(log, f"{name}: warning: {stale} stored points were computed by another build of xlat "
                      f"{xlat_version()}; reusing them (rerun them with --rerun-stale)")
        reused = sum(1 for pid in unique if pid in done)
        bad_config = [t for pid, t in unique.items() if pid not in done and t.config is None]
        pending = [t for pid, t in unique.items() if pid not in done and t.config is not None]

        total = len(unique)
        failed = 0
        interrupted = False
        if bad_config:
            store.write([_error_row(t, t.error or "config did not resolve") for t in bad_config])
            failed += len(bad_config)
        _say(log, f"{name}: {total} points, {reused} reused from {store.path}"
                  + (f", {len(bad_config)} with configs the engine rejects" if bad_config else "")
                  + (f", {len(pending)} to run" if pending else ", nothing to run"))

        if pending:
            try:
                if client is not None:
                    failed += _run_pending(client, pending, store, simulate, progress, name, None)
                else:
                    with _cluster(scheduler, workers, slurm, spec.slurm, len(pending)) as (c, threads):
                        failed += _run_pending(c, pending, store, simulate, progress, name, threads)
            except KeyboardInterrupt:
                interrupted = True
        if not interrupted and len(store.partitions()) > 1:
            store.compact()

    df = _rows_for(store, [t.point_id for t in tasks])
    failed = int((df["status"] != "ok").sum()) if len(df) else failed
    ran = len(pending) + len(bad_config)
    short = short_points(df)
    if len(short):
        # A window shorter than asked for is easy to miss in a table and skews comparisons.
        examples = ", ".join(f"{r.workload} on {r.config_label}" for r in short.head(3).itertuples())
        _say(log, f"{name}: warning: {len(short)} of {total} points measured fewer references than asked "
                  f"(their workloads ended early: {examples}{', ...' if len(short) > 3 else ''}); "
                  f"raise the workloads' size parameters")
    return SweepResult(name, store.path, total, reused, ran, failed, df, interrupted, len(short))


def short_points(df):
    """The finished rows whose workload ended before ``refs`` references were measured."""
    if not len(df) or "stat.refs" not in df or "refs" not in df:
        return df.iloc[0:0]
    asked = df["refs"].astype("float")
    ok = (df["status"] == "ok") & asked.notna()
    # (A stream's OS calls, made or ignored, count towards `refs` as it runs; `stat.refs`
    # counts memory references only.)
    measured = df["stat.refs"].astype("float")
    for calls in ("stat.os.calls", "stat.os.ignored_calls"):
        if calls in df:
            measured = measured + df[calls].astype("float").fillna(0)
    return df[ok & (measured < asked)]


def _rows_for(store: _results.Store, ids: Sequence[str]):
    """This spec's rows in grid order (a store may hold other specs' points too)."""
    df = store.load(warn=False)
    if not len(df):
        return df
    order = {pid: i for i, pid in enumerate(dict.fromkeys(ids))}
    df = df[df["point_id"].isin(order)]
    return df.sort_values("point_id", key=lambda s: s.map(order), kind="stable").reset_index(drop=True)


def _run_pending(client, pending: list[Task], store: _results.Store, simulate, progress, name,
                 threads: int | None) -> int:
    from dask.distributed import as_completed

    bar = _progress(len(pending), name, progress)
    futures = {}
    try:
        # Submitted in grid order; the scheduler starts them roughly in that order.
        for t in pending:
            f = client.submit(run_task, t.config, t.point.workload_spec, t.point.options(), t.meta,
                              simulate, threads, key=f"xlat-{t.point_id}-{os.urandom(4).hex()}", pure=False)
            futures[f] = t
        if bar is not None:
            bar.set_postfix_str(f"running={min(len(pending), _threads(client))} failed=0", refresh=False)
        failed = 0
        finished = 0
        ac = as_completed(list(futures))
        for batch in ac.batches():
            rows = []
            for f in batch:
                t = futures.pop(f)
                row = None
                if f.status == "finished":
                    try:
                        row = f.result()
                    except Exception as e:  # noqa: BLE001 - e.g. a result that did not deserialize
                        row = _error_row(t, one_line(e))
                if row is None:
                    row = _error_row(t, _future_error(f))
                rows.append(row)
                failed += row["status"] != "ok"
                f.release()
            # Stored before the progress moves: what the bar counts as done is on disk.
            store.write(rows)
            finished += len(rows)
            if bar is not None:
                remaining = len(pending) - finished
                threads = _threads(client)
                bar.set_postfix_str(f"running={min(remaining, threads)} failed={failed}", refresh=False)
                bar.update(len(rows))
        return failed
    finally:
        if futures:
            client.cancel(list(futures))
        if bar is not None:
            bar.close()


def _future_error(f) -> str:
    try:
        e = f.exception(timeout=5)
    except Exception as ex:  # noqa: BLE001
        e = ex
    if type(e).__name__ == "KilledWorker":
        return "KilledWorker: the worker running this point died (crash or out of memory)"
    return one_line(e) if e is not None else f"task ended as {f.status}"


def _threads(client) -> int:
    try:
        return max(1, sum(client.nthreads().values()))
    except Exception:  # noqa: BLE001 - only a display figure
        return 1


def _progress(total: int, name: str, enabled: bool | None):
    if enabled is False:
        return None
    from tqdm import tqdm

    return tqdm(total=total, desc=name, unit="pt", file=sys.stderr, dynamic_ncols=True,
                smoothing=0.1, mininterval=0.5, disable=None if enabled is None else False,
                postfix="running=? failed=0")


def _say(log, text: str) -> None:
    if log:
        print(text, file=log, flush=True)


def summary(result: SweepResult) -> str:
    """The closing line of a sweep."""
    if result.interrupted:
        return (f"{result.name}: interrupted; finished points are stored in {result.store} "
                f"and a rerun resumes from them")
    if result.failed:
        return (f"{result.name}: {result.failed} of {result.total} points failed "
                f"(see: xlat results {result.name} --failed)")
    short = f"; {result.short} measured short (see the warning above)" if result.short else ""
    return f"{result.name}: all {result.total} points ok ({result.reused} reused){short}, results in {result.store}"
