"""Pieces of study reports: Markdown tables, paper-vs-xlat comparisons and figures.

Everything here works on the results frame of ``xlat.results.load`` / ``xlat.sweep.run``
(one row per point; ``stat.*``, ``param.*``, ``set.*`` and ``cfg.*`` columns). Figures are
drawn with matplotlib's Agg canvas directly, never through pyplot's global state, so they
render the same with or without a display and from any thread.

Selectors (``where=``) name columns loosely so that paper files stay readable: a key is tried
as a column, then as ``param.KEY``, ``set.KEY``, ``cfg.KEY`` and ``stat.KEY``; ``config``
means ``config_label``. A value may be a list (any of them matches). Metrics likewise may be
written without their ``stat.`` prefix.
"""
from __future__ import annotations

import csv
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _core
from . import config as _config

_ALIASES = {"config": "config_label", "label": "config_label"}
_PREFIXES = ("", "param.", "set.", "cfg.", "stat.")
AGGREGATES = ("mean", "median", "min", "max", "sum", "first", "count")


class ReportError(_core.XlatError):
    """A report cannot be built: a selector matches nothing, a paper file is malformed."""


# -- selecting ------------------------------------------------------------------------------

def column(df, key: str) -> str:
    """The column a loose key names (see module doc)."""
    key = _ALIASES.get(key, key)
    for k in dict.fromkeys((key, _core.canonical_name(key))):
        for prefix in _PREFIXES:
            if prefix + k in df.columns:
                return prefix + k
    raise ReportError(f"no column '{key}' (nor param./set./cfg./stat.{key}) in the results")


def _matches(series, value):
    values = value if isinstance(value, (list, tuple, set)) else [value]
    mask = None
    for v in values:
        m = series == v
        # TOML says 64 where a parameter column may hold "64" (or the reverse): also compare
        # text forms, with booleans spelled as in TOML.
        text = _text(v)
        m = m | (series.map(_text) == text)
        mask = m if mask is None else (mask | m)
    return mask.fillna(False).astype(bool)


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
        if isinstance(v, bool):
            return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def select(df, where: Mapping[str, Any] | None = None, ok_only: bool = True):
    """Rows matching every ``key = value`` of ``where`` (and, by default, only successful ones)."""
    out = df
    if ok_only and "status" in out.columns:
        out = out[out["status"] == "ok"]
    for key, value in (where or {}).items():
        out = out[_matches(out[column(out, key)], value)]
    return out


def value(df, metric: str, where: Mapping[str, Any] | None = None, agg: str = "mean") -> float:
    """One number: ``agg`` of ``metric`` over the rows ``where`` selects (typically seeds)."""
    if agg not in AGGREGATES:
        raise ReportError(f"unknown aggregate '{agg}' (use one of {', '.join(AGGREGATES)})")
    rows = select(df, where)
    if not len(rows):
        raise ReportError(f"no successful point matches {_where_text(where)}")
    s = rows[column(rows, metric)].astype(float)
    if agg == "first":
        return float(s.iloc[0])
    if agg == "count":
        return float(s.count())
    return float(getattr(s, agg)())


def _where_text(where: Mapping[str, Any] | None) -> str:
    if not where:
        return "(all points)"
    return ", ".join(f"{k}={v}" for k, v in where.items())


# -- formatting -----------------------------------------------------------------------------

def fmt_number(v: Any, digits: int = 4) -> str:
    """Numbers with ``digits`` significant digits, thousands separated; text as is."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "true" if v else "false"
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "—"
        if math.isinf(v):
            return "∞" if v > 0 else "-∞"
        if v == 0:
            return "0"
        mag = math.floor(math.log10(abs(v)))
        if mag >= 7 or mag < -3:
            return f"{v:.{digits - 1}e}"
        if v.is_integer() and mag >= digits - 1:
            return f"{int(v):,}"
        return f"{v:,.{max(0, digits - 1 - mag)}f}"
    return str(v)


def markdown_table(data, columns: Sequence[str] | None = None, headers: Sequence[str] | None = None,
                   digits: int = 4, align: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table from a DataFrame or a list of dicts/sequences.

    Numbers get ``digits`` significant digits and are right-aligned; ``|`` in text is escaped.
    """
    rows, cols = _rows_and_columns(data, columns)
    headers = list(headers) if headers is not None else [str(c) for c in cols]
    if len(headers) != len(cols):
        raise ReportError(f"{len(headers)} headers for {len(cols)} columns")
    cells = [[_cell(r[i] if i < len(r) else None, digits) for i in range(len(cols))] for r in rows]
    if align is None:
        align = ["right" if rows and all(_is_number(r[i]) for r in rows if i < len(r) and r[i] is not None) and
                 any(r[i] is not None for r in rows if i < len(r)) else "left" for i in range(len(cols))]
    sep = ["---:" if a == "right" else ":---:" if a == "center" else "---" for a in align]
    lines = ["| " + " | ".join(_escape(h) for h in headers) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(c) + " |" for c in cells]
    return "\n".join(lines) + "\n"


def _rows_and_columns(data, columns):
    if hasattr(data, "to_dict") and hasattr(data, "columns"):
        cols = list(columns) if columns is not None else [str(c) for c in data.columns]
        missing = [c for c in cols if c not in data.columns]
        if missing:
            raise ReportError(f"no column '{missing[0]}' in the table")
        rows = [list(r) for r in data[cols].itertuples(index=False, name=None)]
        return rows, cols
    data = list(data)
    if data and isinstance(data[0], Mapping):
        cols = list(columns) if columns is not None else list(dict.fromkeys(k for r in data for k in r))
        return [[r.get(c) for c in cols] for r in data], cols
    if columns is None:
        raise ReportError("columns are needed for a table of sequences")
    return [list(r) for r in data], list(columns)


def _is_number(v) -> bool:
    if isinstance(v, bool):
        return False
    if hasattr(v, "item") and not isinstance(v, (str, bytes)):
        v = v.item()
    return isinstance(v, (int, float))


def _cell(v, digits) -> str:
    try:
        import pandas as pd

        if v is not None and not isinstance(v, (list, tuple, dict)) and pd.isna(v):
            return "—"
    except (TypeError, ValueError, ImportError):
        pass
    return _escape(fmt_number(v, digits))


def _escape(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


# -- templates ------------------------------------------------------------------------------

# (A section whose opening tag ends its line is a block: the line break after its closing tag goes
# with it.)
_SECTION = re.compile(r"\{\{([#^])([\w.-]+)\}\}(\n)?(.*?)\{\{/\2\}\}(?(3)\n?)", re.DOTALL)
_VALUE = re.compile(r"\{\{([\w.-]+)\}\}")


def fill(template: str, values: Mapping[str, Any], where: str = "template") -> str:
    """A report's Markdown from its template: ``{{name}}`` becomes ``values[name]``;
    ``{{#name}}...{{/name}}`` is kept only when ``values[name]`` is truthy (a section whose
    table or figure the run has), ``{{^name}}...{{/name}}`` only when it is not. A name the
    template uses and ``values`` lacks is a :class:`ReportError` naming it, so prose never
    refers to a number nobody computed."""
    def section(m):
        if m.group(2) not in values:
            raise ReportError(f"{where}: no value for section '{m.group(2)}'")
        shown = bool(values[m.group(2)]) == (m.group(1) == "#")
        return fill(m.group(4), values, where) if shown else ""

    def value(m):
        if m.group(1) not in values:
            raise ReportError(f"{where}: no value for '{{{{{m.group(1)}}}}}'")
        return str(values[m.group(1)])

    return _VALUE.sub(value, _SECTION.sub(section, template))


# -- paper vs xlat --------------------------------------------------------------------------

#: Fields of one paper number. ``id`` and ``paper`` are required; ``metric``+``where`` (and
#: optionally ``agg`` and ``relative_to``) say how to compute xlat's number from the results,
#: unless the study's ``render`` supplies it by ``id``. ``kind`` says what the paper states:
#: a ``point`` value (the default), an ``upper`` bound ("< 1.5"), a ``lower`` bound, or a
#: ``range`` from ``paper`` to ``paper_hi`` ("1.1-1.8"); xlat's difference is then its
#: distance from the bound or range (0 within it). ``cause`` says why xlat's number differs
#: from the paper's, and ``shown_by`` names the run that shows it (a command, as the study's
#: README gives it with its result): they sort a number outside :data:`WITHIN` into
#: :data:`VERDICTS`.
PAPER_FIELDS = ("id", "what", "paper", "paper_hi", "kind", "unit", "source", "metric", "where", "agg", "relative_to",
                "note", "cause", "shown_by")
PAPER_KINDS = ("point", "upper", "lower", "range")


def load_paper(path: str | os.PathLike) -> list[dict]:
    """The published numbers of a study: ``paper.toml`` (``[[numbers]]`` tables) or
    ``paper.csv`` (columns as :data:`PAPER_FIELDS`; ``where``/``relative_to`` as
    ``key=value;key=value``)."""
    path = Path(path)
    if path.suffix == ".toml":
        doc = _config.read_toml(path, "paper table", ReportError)
        entries = doc.get("numbers")
        if not isinstance(entries, list):
            raise ReportError(f"{path}: expected [[numbers]] tables")
    elif path.suffix == ".csv":
        with open(path, newline="", encoding="utf-8") as f:
            entries = [dict(r) for r in csv.DictReader(f)]
        for e in entries:
            for k in ("where", "relative_to"):
                if e.get(k):
                    e[k] = _parse_selector(e[k], path)
                else:
                    e.pop(k, None)
            for k in [k for k, v in e.items() if v in ("", None)]:
                del e[k]
            try:
                e["paper"] = float(e["paper"])
                if "paper_hi" in e:
                    e["paper_hi"] = float(e["paper_hi"])
            except (KeyError, ValueError):
                raise ReportError(f"{path}: entry {e.get('id')!r}: 'paper' and 'paper_hi' must be numbers") from None
    else:
        raise ReportError(f"{path}: paper numbers must be in a .toml or .csv file")
    return [_check_entry(e, path, i) for i, e in enumerate(entries)]


#: Fields of an ``[[out_of_scope]]`` table: a number of the paper's evaluation that the study
#: does not compare, and why (power, area, a machine xlat does not model).
OUT_OF_SCOPE_FIELDS = ("what", "source", "paper", "reason")


def paper_tables(path: Path, name: str, fields: Sequence[str]) -> list[Mapping]:
    """``paper.toml``'s ``[[name]]`` tables (none from a ``paper.csv``), each a table of known
    ``fields``, or :class:`ReportError` naming the first that is not."""
    if path.suffix != ".toml":
        return []
    entries = _config.read_toml(path, "paper table", ReportError).get(name, [])
    if not isinstance(entries, list):
        raise ReportError(f"{path}: expected [[{name}]] tables")
    for i, e in enumerate(entries):
        if not isinstance(e, Mapping):
            raise ReportError(f"{path}: {name}[{i}] is not a table")
        unknown = sorted(set(e) - set(fields))
        if unknown:
            raise ReportError(f"{path}: {name}[{i}]: unknown field '{unknown[0]}' (fields: {', '.join(fields)})")
    return entries


def load_out_of_scope(path: str | os.PathLike) -> list[dict]:
    """The paper's numbers a study leaves out, from ``paper.toml``'s ``[[out_of_scope]]`` tables
    (none from a ``paper.csv``): each with ``what``, ``source``, ``reason`` and optionally
    ``paper``, the number or range as the paper states it."""
    out = []
    for i, e in enumerate(paper_tables(Path(path), "out_of_scope", OUT_OF_SCOPE_FIELDS)):
        for k in ("what", "source", "reason"):
            if not (isinstance(e.get(k), str) and e[k].strip()):
                raise ReportError(f"{path}: out_of_scope[{i}] needs a non-empty '{k}'")
        if "paper" in e and not (isinstance(e["paper"], str) or _is_number(e["paper"])):
            raise ReportError(f"{path}: out_of_scope[{i}]: 'paper' must be a number or text")
        out.append(dict(e))
    return out


def out_of_scope_lines(entries: list[dict]) -> list[str]:
    """Markdown listing the paper's numbers a study leaves out, and why."""
    if not entries:
        return []
    items = [f"- **{e['what']}** ({e['source']}{'; paper: ' + str(e['paper']) if 'paper' in e else ''}): "
             f"{e['reason'].rstrip('.')}." for e in entries]
    return [f"Left out of the comparison ({len(entries)}):", "", *items, ""]


def _parse_selector(text: str, path) -> dict:
    out = {}
    for item in filter(None, (s.strip() for s in text.split(";"))):
        k, sep, v = item.partition("=")
        if not sep:
            raise ReportError(f"{path}: selector item '{item}' is not key=value")
        out[k.strip()] = v.strip()
    return out


def _check_entry(e: Any, path, i: int) -> dict:
    if not isinstance(e, Mapping):
        raise ReportError(f"{path}: numbers[{i}] is not a table")
    unknown = sorted(set(e) - set(PAPER_FIELDS))
    if unknown:
        raise ReportError(f"{path}: numbers[{i}]: unknown field '{unknown[0]}' (fields: {', '.join(PAPER_FIELDS)})")
    if not isinstance(e.get("id"), str) or not e["id"]:
        raise ReportError(f"{path}: numbers[{i}] needs an 'id'")
    if not _is_number(e.get("paper")):
        raise ReportError(f"{path}: number '{e['id']}': 'paper' must be a number")
    for k in ("where", "relative_to"):
        if k in e and not isinstance(e[k], Mapping):
            raise ReportError(f"{path}: number '{e['id']}': '{k}' must be a table of column = value")
    kind = e.get("kind", "point")
    if kind not in PAPER_KINDS:
        raise ReportError(f"{path}: number '{e['id']}': 'kind' must be one of {', '.join(PAPER_KINDS)}")
    if (kind == "range") != ("paper_hi" in e):
        raise ReportError(f"{path}: number '{e['id']}': a range needs 'paper_hi' (and only a range has one)")
    if kind == "range" and not (_is_number(e["paper_hi"]) and float(e["paper_hi"]) > float(e["paper"])):
        raise ReportError(f"{path}: number '{e['id']}': 'paper_hi' must be a number above 'paper'")
    for k in ("cause", "shown_by"):
        if k in e and not (isinstance(e[k], str) and e[k].strip()):
            raise ReportError(f"{path}: number '{e['id']}': '{k}' must be a non-empty string")
    if "shown_by" in e and "cause" not in e:
        raise ReportError(f"{path}: number '{e['id']}': 'shown_by' needs the 'cause' it shows")
    return dict(e)


def paper_text(e: Mapping) -> str | float:
    """How the paper states a number: the value, "< x", "> x" or "lo-hi"."""
    kind, lo = e.get("kind", "point"), float(e["paper"])
    if kind == "upper":
        return f"< {lo:g}"
    if kind == "lower":
        return f"> {lo:g}"
    if kind == "range":
        return f"{lo:g}–{float(e['paper_hi']):g}"
    return lo


def _distance(e: Mapping, x: float) -> float:
    """xlat's value less the paper's statement: the value, or the nearest end of a bound or
    range that x is outside of (0 inside)."""
    kind, lo = e.get("kind", "point"), float(e["paper"])
    hi = float(e["paper_hi"]) if kind == "range" else lo
    if kind == "upper":
        return max(0.0, x - lo)
    if kind == "lower":
        return min(0.0, x - lo)
    if kind == "range":
        return 0.0 if lo <= x <= hi else (x - lo if x < lo else x - hi)
    return x - lo


def paper_vs_xlat(entries: Iterable[Mapping], df=None, values: Mapping[str, float] | None = None):
    """One row per paper number: paper, xlat, absolute and relative difference.

    xlat's number comes from ``values[id]`` if given (a study computes it itself), else from
    ``metric``/``where``/``agg`` over ``df`` (divided by the same metric over ``relative_to``
    when present, for normalized figures). A number that cannot be computed gets no xlat value
    and says why in ``note``, rather than failing the whole report.
    """
    import pandas as pd

    values = dict(values or {})
    rows = []
    for e in entries:
        x, note = None, e.get("note", "")
        try:
            if e["id"] in values:
                x = None if values[e["id"]] is None else float(values[e["id"]])
            elif "metric" in e and df is not None:
                agg = e.get("agg", "mean")
                x = value(df, e["metric"], e.get("where"), agg)
                if "relative_to" in e:
                    base = value(df, e["metric"], e["relative_to"], agg)
                    x = x / base if base else math.nan
            else:
                note = _join(note, "not computed by this study")
        except ReportError as err:
            note = _join(note, str(err))
        paper = float(e["paper"])
        diff = None if x is None else _distance(e, x)
        rel = None if x is None or paper == 0 else diff / abs(paper)
        row = {"id": e["id"], "what": e.get("what", e["id"]), "source": e.get("source", ""),
               "unit": e.get("unit", ""), "paper": paper, "paper_text": paper_text(e), "xlat": x, "diff": diff,
               "rel_diff": rel, "note": note, "cause": e.get("cause", ""), "shown_by": e.get("shown_by", "")}
        row["verdict"] = verdict(row)
        rows.append(row)
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


#: The columns of :func:`paper_vs_xlat`'s frame (and of a study's ``paper_vs_xlat.csv``).
COMPARISON_COLUMNS = ["id", "what", "source", "unit", "paper", "paper_text", "xlat", "diff", "rel_diff", "note",
                      "cause", "shown_by", "verdict"]


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


def paper_table(comparison, digits: int = 4) -> str:
    """Markdown for :func:`paper_vs_xlat`'s frame: relative difference as a signed percent."""
    rows = []
    for r in comparison.to_dict("records"):
        rel = r["rel_diff"]
        rows.append([
            r["what"], r["source"], r["unit"], r.get("paper_text", r["paper"]), r["xlat"],
            None if r["diff"] is None or _nan(r["diff"]) else (f"{r['diff']:+.{digits - 1}g}"),
            None if rel is None or _nan(rel) else f"{rel * 100:+.1f}%",
            r["note"],
            r.get("verdict", ""),
        ])
    return markdown_table(rows, columns=["what", "source", "unit", "paper", "xlat", "xlat − paper", "relative", "note",
                                         "verdict"],
                          digits=digits, align=["left", "left", "left", "right", "right", "right", "right", "left", "left"])


#: How near a number must be to count as reproduced (:func:`fidelity`).
WITHIN = 0.25


def within(unit: str, paper: float, diff: float) -> bool:
    """Whether xlat's value, ``diff`` from the paper's statement (:func:`_distance`), is within
    :data:`WITHIN` of it. A ratio is compared as a gain (its distance from 1): 1.30 against
    1.068 is 4.4 times the gain, not 22 % more; anything else as a plain relative difference.
    A value inside a stated range or bound is within."""
    if diff == 0:
        return True
    scale = abs(paper - 1) if unit == "ratio" else abs(paper)
    return scale > 0 and abs(diff) <= WITHIN * scale


#: What became of a paper number, in the order a fidelity table counts them: no xlat value;
#: within :data:`WITHIN`; outside, with the cause shown by a run (``shown_by``); outside, with
#: a cause argued but not shown (``cause`` only); outside and unexplained.
VERDICTS = ("no value", "within", "shown", "argued", "unexplained")


def verdict(row: Mapping) -> str:
    """One of :data:`VERDICTS` for a row of :func:`paper_vs_xlat`'s frame."""
    x, diff = row.get("xlat"), row.get("diff")
    if x is None or _nan(x) or diff is None or _nan(diff):
        return "no value"
    if within(row.get("unit", ""), row["paper"], diff):
        return "within"
    return explained(row)


def explained(row: Mapping) -> str:
    """How a difference from the paper (a number outside, a conclusion not reached) is
    explained: ``shown`` by a run, ``argued``, or ``unexplained``."""
    if row.get("shown_by"):
        return "shown"
    return "argued" if row.get("cause") else "unexplained"


def fidelity(comparison) -> tuple[int, int, int]:
    """(paper numbers, of them with an xlat value, of those within 25 %) of :func:`paper_vs_xlat`'s frame."""
    counts = verdict_counts(comparison)
    return len(comparison), len(comparison) - counts["no value"], counts["within"]


def verdict_counts(comparison) -> dict[str, int]:
    """How many of :func:`paper_vs_xlat`'s rows have each of :data:`VERDICTS`."""
    out = dict.fromkeys(VERDICTS, 0)
    for r in comparison.to_dict("records"):
        out[r.get("verdict") or verdict(r)] += 1
    return out


def fidelity_line(comparison) -> str:
    n, measured, close = fidelity(comparison)
    c = verdict_counts(comparison)
    rest = measured - close
    why = (f"; of the {rest} outside, {c['shown']} with a cause shown by a run, {c['argued']} with a cause argued, "
           f"{c['unexplained']} unexplained") if rest else ""
    return (
        f"{n} paper numbers, {measured} with an xlat value, **{close} within {WITHIN:.0%}**{why} "
        "(ratios compared as gains: their distance from 1; a value inside a stated range or bound counts as within)."
    )


def causes(comparison) -> list[str]:
    """Markdown lines listing why each number outside :data:`WITHIN` differs (from its
    ``cause`` and ``shown_by``), or nothing when none says."""
    out = []
    for r in comparison.to_dict("records"):
        if r.get("verdict") in ("shown", "argued"):
            shown = f" Shown by: `{r['shown_by']}`." if r.get("shown_by") else " (Argued, not shown by a run.)"
            out.append(f"- **{r['what']}**: {r['cause'].rstrip('.')}.{shown}")
    return ["Why the numbers outside differ:", "", *out, ""] if out else []


def _nan(v) -> bool:
    return isinstance(v, float) and math.isnan(v)


# -- figures --------------------------------------------------------------------------------

def new_figure(width: float = 6.4, height: float = 3.6):
    """A matplotlib figure of ``width`` x ``height`` inches, laid out for a report (no pyplot:
    no global state, safe in workers)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path: str | os.PathLike) -> Path:
    """Write ``fig`` as a PNG at ``path``, atomically; the same data draws the same bytes."""
    from ._io import atomic_path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        # No timestamp or software version in the PNG: the same data draws the same bytes.
        fig.savefig(tmp, format="png", metadata={"Software": None})
    return path


def _grouped(df, x: str, y: str, hue: str | None):
    """Mean and spread of y per (hue, x), in first-appearance order (grid order)."""
    cols = [column(df, x), column(df, y)] + ([column(df, hue)] if hue else [])
    data = df[cols].copy()
    data.columns = ["x", "y"] + (["hue"] if hue else [])
    data["y"] = data["y"].astype(float)
    if not hue:
        data["hue"] = ""
    xs = list(dict.fromkeys(data["x"]))
    hues = list(dict.fromkeys(data["hue"]))
    g = data.groupby(["hue", "x"], sort=False)["y"]
    stats = {k: (v.mean(), v.min(), v.max(), len(v)) for k, v in g}
    return xs, hues, stats


def bar_figure(df, x: str, y: str, path: str | os.PathLike, hue: str | None = None, title: str | None = None,
               ylabel: str | None = None, xlabel: str | None = None, log: bool = False) -> Path:
    """Bars of the mean of ``y`` per ``x`` (grouped by ``hue``), with min–max whiskers when
    several points (seeds) share a bar. Only successful points are drawn. Returns ``path``."""
    df = select(df, None)
    if not len(df):
        raise ReportError(f"no successful points to draw in {Path(path).name}")
    xs, hues, stats = _grouped(df, x, y, hue)
    fig = new_figure(max(6.4, 0.5 * len(xs) * max(1, len(hues)) + 2))
    ax = fig.add_subplot()
    width = 0.8 / len(hues)
    for i, h in enumerate(hues):
        pos, means, lo, hi = [], [], [], []
        for j, xv in enumerate(xs):
            if (h, xv) in stats:
                m, mn, mx, _ = stats[(h, xv)]
                pos.append(j - 0.4 + width * (i + 0.5))
                means.append(m)
                lo.append(m - mn)
                hi.append(mx - m)
        err = [lo, hi] if any(v > 0 for v in lo + hi) else None
        ax.bar(pos, means, width, yerr=err, capsize=3, label=str(h) if hue else None)
    ax.set_xticks(range(len(xs)), [_text(v) for v in xs], rotation=30 if len(xs) > 4 else 0,
                  ha="right" if len(xs) > 4 else "center")
    _decorate(ax, title, xlabel or x, ylabel or y, log, hue)
    return save_figure(fig, path)


def line_figure(df, x: str, y: str, path: str | os.PathLike, hue: str | None = None, title: str | None = None,
                ylabel: str | None = None, xlabel: str | None = None, logx: bool = False, logy: bool = False) -> Path:
    """Lines of the mean of ``y`` against ``x`` (one per ``hue``), with a min–max band across
    seeds. Numeric ``x`` is placed by value, text ``x`` evenly in grid order."""
    df = select(df, None)
    if not len(df):
        raise ReportError(f"no successful points to draw in {Path(path).name}")
    xs, hues, stats = _grouped(df, x, y, hue)
    numeric = all(_is_number(v) for v in xs)
    fig = new_figure()
    ax = fig.add_subplot()
    for h in hues:
        pts = [(xv, *stats[(h, xv)][:3]) for xv in xs if (h, xv) in stats]
        if numeric:
            pts.sort(key=lambda p: float(p[0]))
        px = [float(p[0]) if numeric else xs.index(p[0]) for p in pts]
        ax.plot(px, [p[1] for p in pts], marker="o", label=str(h) if hue else None)
        if any(p[3] > p[2] for p in pts):
            ax.fill_between(px, [p[2] for p in pts], [p[3] for p in pts], alpha=0.2)
    if logx:
        ax.set_xscale("log")
    if numeric:
        # Ticks at the swept values, in plain numbers: a sweep has few x values, and a log
        # axis would otherwise label only powers of ten.
        vals = sorted({float(v) for v in xs})
        ax.set_xticks(vals, [fmt_number(v if not float(v).is_integer() else int(v)) for v in vals])
        ax.minorticks_off()
    else:
        ax.set_xticks(range(len(xs)), [_text(v) for v in xs])
    _decorate(ax, title, xlabel or x, ylabel or y, logy, hue)
    return save_figure(fig, path)


def _decorate(ax, title, xlabel, ylabel, logy, hue) -> None:
    if title:
        ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    if hue:
        title = hue[hue.index(".") + 1:] if hue.split(".")[0] in ("param", "set", "cfg", "stat") else hue
        ax.legend(fontsize="small", title=title, title_fontsize="small")


def figure_md(path: str | os.PathLike, out_dir: str | os.PathLike, caption: str = "") -> str:
    """Markdown that shows a figure, with its path relative to the report's directory."""
    rel = os.path.relpath(Path(path), Path(out_dir))
    return f"![{_escape(caption)}]({Path(rel).as_posix()})\n" + (f"\n*{caption}*\n" if caption else "")
