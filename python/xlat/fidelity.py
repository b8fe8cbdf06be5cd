"""One paper-vs-xlat table for every study (``xlat study fidelity``).

Each study's report compares its paper's numbers with xlat's (:func:`xlat.report.paper_vs_xlat`)
and writes the rows beside ``report.md`` as ``paper_vs_xlat.csv``. This module re-renders every
study that has results in the store, so the rows follow the current ``paper.toml`` and report
script, and gathers them into ``results/fidelity.md`` (and ``fidelity.csv``): per study, how
many numbers xlat reproduces within :data:`xlat.report.WITHIN`, and how many of the rest have a
cause shown by a run, a cause argued, or none; and how many of each paper's conclusions
(``[[conclusions]]``: which scheme wins, the sign of an effect) hold on xlat's numbers.
"""
from __future__ import annotations

import os
from pathlib import Path

from . import conclusions as _conclusions
from . import report as _report
from . import results as _results
from . import study as _study
from ._io import atomic_write_text

#: Written under the results root.
TABLE_FILE = "fidelity.md"
ROWS_FILE = "fidelity.csv"
CONCLUSIONS_FILE = "fidelity-conclusions.csv"

_HEADERS = {"no value": "no xlat value", "within": f"within {_report.WITHIN:.0%}",
            "shown": "outside, cause shown by a run", "argued": "outside, cause argued", "unexplained": "unexplained"}


def studies() -> list[str]:
    """The studies that state paper numbers."""
    return [n for n in _study.available() if _study.load(n).paper]


def gather(root: str | os.PathLike | None = None, quick: bool = False, names: list[str] | None = None):
    """Re-render each study's report from its stored points and return ``(rows, not_run,
    failed, conclusions)``: every paper number of the studies that have results (a frame with a
    ``study`` column), the names of those that have none, ``{name: why}`` for those whose report
    could not be rendered from them (the others' rows are still gathered), and every checked
    conclusion of the studies gathered (a frame with a ``study`` column)."""
    import pandas as pd

    frames, concl, not_run, failed = [], [], [], {}
    for name in names if names is not None else studies():
        store = _results.Store(name, root)
        if not store.partitions():
            not_run.append(name)
            continue
        try:
            path = _study.render_from_store(name, quick=quick, root=root)
        except _study.NoResultsError:
            not_run.append(name)
            continue
        except _study.StudyError as e:
            failed[name] = str(e)
            continue
        rows = pd.read_csv(path.parent / _study.COMPARISON_FILE, keep_default_na=False, na_values=[""])
        frames.append(rows.assign(study=name))
        c = pd.read_csv(path.parent / _study.CONCLUSIONS_FILE, keep_default_na=False, na_values=[""])
        concl.append(c.assign(study=name))
    cols = ["study", *_report.COMPARISON_COLUMNS, "quick"]
    rows = pd.concat(frames, ignore_index=True)[cols] if frames else pd.DataFrame(columns=cols)
    ccols = ["study", *_conclusions.COLUMNS]
    concl = pd.concat(concl, ignore_index=True)[ccols] if concl else pd.DataFrame(columns=ccols)
    return rows, not_run, failed, concl


def out_of_scope(names) -> dict[str, list[dict]]:
    """Each study's ``[[out_of_scope]]`` entries: the paper's numbers it does not compare."""
    return {n: _study.load(n).out_of_scope for n in names}


def summary(rows, left_out: dict[str, list[dict]] | None = None, conclusions=None):
    """Per study and in total: paper numbers, how many have each verdict, how many of the
    paper's numbers the study leaves out (``left_out``, from :func:`out_of_scope`), and its
    conclusions and how many xlat reproduces (``conclusions``, from :func:`gather`)."""
    import pandas as pd

    left_out = left_out or {}
    if conclusions is None:
        conclusions = pd.DataFrame(columns=["study", *_conclusions.COLUMNS])
    out = []
    for name, g in [*rows.groupby("study", sort=True), ("all", rows)]:
        counts = {v: int((g["verdict"] == v).sum()) for v in _report.VERDICTS}
        n_out = sum(map(len, left_out.values())) if name == "all" else len(left_out.get(name, []))
        c = conclusions if name == "all" else conclusions[conclusions["study"] == name]
        out.append({"study": name, "paper numbers": len(g), "with an xlat value": len(g) - counts["no value"],
                    **{_HEADERS[v]: counts[v] for v in _report.VERDICTS if v != "no value"},
                    "left out (reason given)": n_out, "conclusions": len(c),
                    "reproduced": int((c["verdict"] == "reproduced").sum())})
    return pd.DataFrame(out)


def markdown(rows, not_run: list[str], quick: bool = False, left_out: dict[str, list[dict]] | None = None,
             failed: dict[str, str] | None = None, conclusions=None) -> str:
    """The fidelity table and every number and conclusion behind it, as Markdown; ``left_out``
    and ``conclusions`` as for :func:`summary`, ``failed`` as :func:`gather` gives it."""
    from . import _core

    total = len(rows)
    within = int((rows["verdict"] == "within").sum())
    lines = [f"# Paper vs xlat, every study{' (quick)' if quick else ''}", "",
             f"xlat {_core.version()} · from each study's stored points, its `paper.toml` and its report script "
             "(`xlat study fidelity`)." + (" Quick runs: indicative only." if quick else ""), ""]
    if total:
        lines += [(f"**{within} of {total} paper numbers within {_report.WITHIN:.0%}** ({within / total:.0%}); ratios "
                  "compared as gains (their distance from 1), a value inside a stated range or bound counts as within. "
                  "A number outside has its cause *shown* when the study's README demonstrates it with a run "
                  "(`shown_by` in `paper.toml`), *argued* when it only states one."), ""]
    if conclusions is not None and len(conclusions):
        n = int((conclusions["verdict"] == "reproduced").sum())
        lines += [(f"**{n} of {len(conclusions)} of the papers' conclusions reproduced**: which scheme wins, the "
                   "sign of an effect, the order of the schemes, each a check over a study's paper numbers "
                   "(`[[conclusions]]` in `paper.toml`) that holds on the paper's values, evaluated on xlat's."), ""]
    lines += [_report.markdown_table(summary(rows, left_out, conclusions)), ""]
    if not_run:
        lines += [f"Not run (no stored points): {', '.join(not_run)}.", ""]
    for name, why in (failed or {}).items():
        lines += [f"Not counted: {name}'s report could not be rendered from its stored points ({why}).", ""]
    for name, g in rows.groupby("study", sort=True):
        table = [[r["what"], r["source"], r["paper_text"], r["xlat"],
                  None if _report._nan(r["rel_diff"]) else f"{r['rel_diff'] * 100:+.1f}%", r["verdict"],
                  r["cause"] if r["verdict"] in ("shown", "argued") else ""]
                 for r in g.to_dict("records")]
        lines += [f"## {name}", "", _report.markdown_table(
            table, columns=["what", "source", "paper", "xlat", "relative", "verdict", "cause"],
            align=["left", "left", "right", "right", "right", "left", "left"]), ""]
        lines += _report.out_of_scope_lines((left_out or {}).get(name, []))
        if conclusions is not None:
            lines += _conclusions.markdown(conclusions[conclusions["study"] == name], level=3)
    return "\n".join(lines)


def write(root: str | os.PathLike | None = None, quick: bool = False) -> tuple[Path, object, list[str], dict[str, str]]:
    """Gather every study and write ``fidelity.md``, ``fidelity.csv`` and
    ``fidelity-conclusions.csv`` under the results root;
    returns the table's path, the summary frame, the studies not run and those whose report
    failed (``{name: why}``)."""
    rows, not_run, failed, concl = gather(root, quick)
    left_out = out_of_scope(sorted(set(rows["study"])))
    base = Path(root) if root is not None else _results.default_root()
    base.mkdir(parents=True, exist_ok=True)
    atomic_write_text(base / ROWS_FILE, rows.to_csv(index=False))
    atomic_write_text(base / CONCLUSIONS_FILE, concl.to_csv(index=False))
    path = base / TABLE_FILE
    atomic_write_text(path, markdown(rows, not_run, quick, left_out, failed, concl))
    return path, summary(rows, left_out, concl), not_run, failed
