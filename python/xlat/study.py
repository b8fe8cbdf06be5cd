"""Studies: a sweep spec plus a report script, run with ``xlat study NAME [--quick]``.

A study is a directory ``studies/NAME/`` holding:

- ``sweep.toml``: the sweep spec (its ``name`` is ignored: results go to ``results/NAME``);
  a ``[quick]`` table and/or a ``quick.toml`` beside it override top-level keys for ``--quick``;
- ``report.py``: defines ``render(df, out_dir, quick)``, which draws figures into ``out_dir``
  and returns the report body as Markdown, or ``(markdown, values)`` where ``values`` maps
  paper-number ids to xlat numbers it computed itself;
- ``paper.toml`` (``[[numbers]]``) or ``paper.csv``: the published numbers, each with the
  recipe for xlat's counterpart (see ``xlat.report.load_paper``);
- optionally ``prepare.py``: defines ``traces(out_dir, quick)``, which makes the traces the study
  runs (tracing programs on this machine, say, into ``out_dir``, reusing what is there) and
  returns their ``[[traces]]`` tables (``xlat.sweep``), added to the spec's. It runs in a
  thread beside the points that need no trace, which the whole sweep then reuses.

The report is written to ``results/NAME/report.md`` (figures beside it), atomically, with the
paper-vs-xlat table first. A point that failed is listed in the report, and the command then
exits non-zero, but the report is still written from the points that succeeded.
"""
from __future__ import annotations

import importlib.util
import inspect
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import _core
from . import conclusions as _conclusions
from . import config as _config
from . import report as _report
from . import results as _results
from . import sweep as _sweep
from ._io import atomic_write_text

#: Environment variable naming extra study directories (os.pathsep-separated), searched first.
STUDIES_ENV = "XLAT_STUDIES"

_REPO_STUDIES = Path(__file__).resolve().parent.parent.parent / "studies"

#: The paper-vs-xlat rows a report was rendered with, as CSV beside its ``report.md``.
COMPARISON_FILE = "paper_vs_xlat.csv"
#: The paper's conclusions as that report checked them, beside it too.
CONCLUSIONS_FILE = "conclusions.csv"


class StudyError(_core.XlatError):
    """A study is missing or malformed, or its report script failed."""


class NoResultsError(StudyError):
    """The store holds no point of the study's current spec (nothing to render)."""


def study_dirs() -> list[Path]:
    """Where studies are looked up: ``$XLAT_STUDIES``, ``./studies``, then the source tree's
    ``studies/`` (a development install imports the package from ``<repo>/python``)."""
    dirs = [Path(p) for p in os.environ.get(STUDIES_ENV, "").split(os.pathsep) if p]
    dirs += [Path.cwd() / "studies", _REPO_STUDIES]
    out, seen = [], set()
    for d in dirs:
        r = d.resolve()
        if r not in seen and r.is_dir():
            seen.add(r)
            out.append(r)
    return out


def find(name: str) -> Path:
    """A study directory by name, or by path (anything containing a '/')."""
    if "/" in name or os.sep in name or name in (".", ".."):
        p = Path(name)
        if (p / "sweep.toml").is_file():
            return p.resolve()
        raise StudyError(f"'{name}' is not a study directory (no sweep.toml)")
    for d in study_dirs():
        if (d / name / "sweep.toml").is_file():
            return d / name
    known = available()
    raise StudyError(f"unknown study '{name}' (available: {', '.join(known) if known else 'none found'})")


def available() -> list[str]:
    names: set[str] = set()
    for d in study_dirs():
        names.update(p.parent.name for p in d.glob("*/sweep.toml"))
    return sorted(names)


@dataclass
class Study:
    name: str
    dir: Path
    render: Callable
    paper: list[dict]
    paper_file: Path | None
    prepare: Callable | None = None
    #: The paper's numbers the study does not compare, with the reason (``[[out_of_scope]]``).
    out_of_scope: list[dict] = field(default_factory=list)
    #: What the paper concludes from its numbers, as checks over them (``[[conclusions]]``).
    conclusions: list[dict] = field(default_factory=list)

    def spec(self, quick: bool, out_dir: Path | None = None, *, traced: bool = True, make: bool = True) -> _sweep.Spec:
        """The study's sweep; with a ``prepare.py``, its traces (made in ``out_dir``) too, or
        with ``traced=False`` only the points that need none (nothing is traced), or with
        ``make=False`` the points of the traces already made (nothing is traced: a report
        rendered from the store, which must not start a tracing of many minutes)."""
        overlay = None
        qfile = self.dir / "quick.toml"
        if quick and qfile.is_file():
            overlay = _config.read_toml(qfile, "quick overlay", StudyError)
        traces = None
        if self.prepare is not None and not traced:
            traces = []
        elif self.prepare is not None and not make and "make" not in inspect.signature(self.prepare).parameters:
            traces = []  # (A prepare.py that cannot be asked not to trace is not called.)
        elif self.prepare is not None:
            out = Path(out_dir) if out_dir is not None else _results.Store(self.name).path
            try:
                # (Even none: configs may still name the traces as workloads.)
                traces = list((self.prepare(out, quick) if make else self.prepare(out, quick, make=False)) or [])
            except _core.XlatError:
                raise
            except Exception as e:  # noqa: BLE001 - the script's failure, in one line
                raise StudyError(f"study '{self.name}': prepare.py failed: {_sweep.one_line(e)}") from None
        spec = _sweep.load_spec(self.dir / "sweep.toml", quick=quick, quick_overlay=overlay, traces=traces)
        spec.name = self.name
        return spec


def load(name: str) -> Study:
    """Find a study and import its report script."""
    d = find(name)
    study_name = d.name
    script = d / "report.py"
    if not script.is_file():
        raise StudyError(f"study '{study_name}' has no report.py")
    mod_name = f"xlat_study_{study_name.replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(mod_name, script)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:  # noqa: BLE001 - a broken script is the study's error, in one line
        raise StudyError(f"{script}: {_sweep.one_line(e)}") from None
    render = getattr(module, "render", None)
    if not callable(render):
        raise StudyError(f"{script} defines no render(df, out_dir, quick)")
    paper_file = next((p for p in (d / "paper.toml", d / "paper.csv") if p.is_file()), None)
    paper = _report.load_paper(paper_file) if paper_file else []
    out_of_scope = _report.load_out_of_scope(paper_file) if paper_file else []
    conclusions = _conclusions.load(paper_file, paper) if paper_file else []
    prepare = None
    if (d / "prepare.py").is_file():
        prep = importlib.util.spec_from_file_location(f"{mod_name}_prepare", d / "prepare.py")
        pmod = importlib.util.module_from_spec(prep)
        try:
            prep.loader.exec_module(pmod)
        except Exception as e:  # noqa: BLE001 - as for report.py
            raise StudyError(f"{d / 'prepare.py'}: {_sweep.one_line(e)}") from None
        prepare = getattr(pmod, "traces", None)
        if not callable(prepare):
            raise StudyError(f"{d / 'prepare.py'} defines no traces(out_dir, quick)")
    return Study(study_name, d, render, paper, paper_file, prepare, out_of_scope, conclusions)


@dataclass
class StudyResult:
    sweep: _sweep.SweepResult
    report: Path


def run(name: str, quick: bool = False, scheduler: str | None = None, workers: int | None = None, *,
        slurm: bool = False, root: str | os.PathLike | None = None, progress: bool | None = True,
        client: Any = None, rerun_stale: bool = False, simulate: Callable | None = None,
        log: Any = None) -> StudyResult:
    """Run a study's sweep (reusing finished points) and write ``results/NAME/report.md``."""
    study = load(name)
    store = _results.Store(study.name, root).path

    def sweep(spec: _sweep.Spec) -> _sweep.SweepResult:
        res = _sweep.run(spec, scheduler=scheduler, workers=workers, slurm=slurm, root=root, progress=progress,
                         client=client, rerun_stale=rerun_stale, simulate=simulate, log=log)
        if res.interrupted:
            raise KeyboardInterrupt
        return res

    if study.prepare is None:
        spec = study.spec(quick, store)
    else:
        # The traces are made while the points that need none run: valgrind traces a program
        # on one core, and a long tracing would otherwise leave the others idle. Those points
        # are then reused from the store by the whole sweep.
        with ThreadPoolExecutor(max_workers=1) as pool:
            traced = pool.submit(study.spec, quick, store)
            early = study.spec(quick, store, traced=False)
            if _sweep.prepare(early):
                sweep(early)
            spec = traced.result()
    res = sweep(spec)
    path = render(study, res.df, res.store, quick, description=spec.description)
    return StudyResult(res, path)


def render(study: Study, df, out_dir: Path, quick: bool, description: str = "") -> Path:
    """Write the study's report from a results frame; returns the report's path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ok = df[df["status"] == "ok"] if len(df) else df
    if not len(ok):
        # Nothing to draw; the report still says what failed, which is what one needs next.
        out = "No point succeeded: see the failed points below.\n"
    else:
        try:
            out = study.render(ok, out_dir, quick)
        except _core.XlatError as e:
            raise StudyError(f"study '{study.name}': report.py: {e}") from None
        except Exception as e:  # noqa: BLE001 - the traceback is the script's, the line is ours
            raise StudyError(f"study '{study.name}': report.py failed: {_sweep.one_line(e)}") from None
    values: dict = {}
    if isinstance(out, tuple):
        body, values = out
    else:
        body = out
    if not isinstance(body, str):
        raise StudyError(f"study '{study.name}': render() must return Markdown text or (text, values)")

    lines = [f"# Study: {study.name}{' (quick)' if quick else ''}", ""]
    if description:
        lines += [description, ""]
    n_ok = len(ok)
    lines.append(f"xlat {_core.version()} · {len(df)} points, {n_ok} ok, {len(df) - n_ok} failed"
                 + (" · quick mode: small runs, numbers are indicative only" if quick else ""))
    lines.append("")
    if study.paper:
        comp = _report.paper_vs_xlat(study.paper, ok, values)
        lines += ["## Paper vs xlat", "", f"Published numbers from `{study.paper_file.name}`.", "",
                  _report.paper_table(comp), "", _report.fidelity_line(comp), ""]
        lines += _report.causes(comp)
        lines += _report.out_of_scope_lines(study.out_of_scope)
        concl = _conclusions.evaluate(study.conclusions, comp)
        lines += _conclusions.markdown(concl)
        # (Beside the report, for `xlat study fidelity` and for anyone's own tables.)
        comp.assign(quick=quick).to_csv(out_dir / COMPARISON_FILE, index=False)
        concl.assign(quick=quick).to_csv(out_dir / CONCLUSIONS_FILE, index=False)
    lines += [body.rstrip(), ""]
    if len(df) - n_ok:
        bad = df[df["status"] != "ok"]
        lines += ["## Failed points", "",
                  _report.markdown_table(bad, ["config_label", "workload", "params", "seed", "error"]), ""]
    path = out_dir / "report.md"
    atomic_write_text(path, "\n".join(lines))
    return path


def render_from_store(name: str, quick: bool = False, root: str | os.PathLike | None = None) -> Path:
    """Re-render a study's report from what its store holds for the current spec, without
    running anything (points not in the store are simply absent)."""
    study = load(name)
    spec = study.spec(quick, _results.Store(study.name, root).path, make=False)
    store = _results.Store(study.name, root)
    tasks = _sweep.prepare(spec)
    df = _sweep._rows_for(store, [t.point_id for t in tasks])
    if not len(df):
        raise NoResultsError(f"no results for study '{study.name}' under {store.root}: run 'xlat study {study.name}' first")
    return render(study, df, store.path, quick, description=spec.description)
