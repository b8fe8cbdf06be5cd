"""A paper's conclusions, checked on xlat's numbers.

A number within 25 % says xlat measures what the paper measured; a conclusion says what the
paper *concludes* from its numbers: which scheme wins, the sign of an effect, the order of the
schemes. A study states them in ``paper.toml`` as ``[[conclusions]]`` tables, each a ``check``
over the ids of its ``[[numbers]]``::

    [[conclusions]]
    id = "pcc_beats_hawkeye"
    claim = "The PCC removes more walks than HawkEye"
    source = "§5.1, Fig. 5"
    check = "walks_removed_pcc > walks_removed_hawkeye"

A check is a comparison (``<``, ``<=``, ``>``, ``>=``, chains such as ``a > b > 1``), or several
joined by ``and``, ``or``, ``not``, over number ids, numbers and ``+ - * /``. It must hold on the
paper's own values (a bound or a range stands for its stated end or middle), which the loader
checks, so a conclusion cannot be encoded backwards. On xlat's values it is *reproduced* or it
*differs*; one that differs has its cause shown by a run or argued (``cause``, ``shown_by``), as
a number outside 25 % does.
"""
from __future__ import annotations

import ast
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from .report import ReportError, explained, markdown_table, paper_tables

#: Fields of a ``[[conclusions]]`` table.
FIELDS = ("id", "claim", "source", "check", "cause", "shown_by")

#: Verdicts, in table order: a number it needs has no xlat value; the check holds on xlat's
#: values; it fails, with its cause shown by a run, argued, or not given.
VERDICTS = ("no value", "reproduced", "shown", "argued", "unexplained")

#: The columns of :func:`evaluate`'s frame (and of a study's ``conclusions.csv``).
COLUMNS = ["id", "claim", "source", "check", "holds", "verdict", "cause", "shown_by"]

_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b}
_ARITH = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
          ast.Div: lambda a, b: a / b if b else math.nan}


def parse(check: str) -> ast.Expression:
    """The check as a syntax tree, or :class:`ReportError` naming what is not allowed."""
    try:
        tree = ast.parse(check, mode="eval")
    except SyntaxError as e:
        raise ReportError(f"not a check: {e.msg}") from None
    _logic(tree.body)
    return tree


_ALLOWED = "comparisons with < <= > >=, and/or/not, + - * /, number ids and numbers"


def _logic(node: ast.expr) -> None:
    """A comparison, or comparisons joined by and/or/not."""
    if isinstance(node, ast.Compare):
        bad = next((o for o in node.ops if type(o) not in _COMPARE), None)
        if bad is not None:
            raise ReportError(f"'{ast.unparse(node)}' is not allowed in a check ({_ALLOWED})")
        for x in (node.left, *node.comparators):
            _arith(x)
    elif isinstance(node, ast.BoolOp):
        for x in node.values:
            _logic(x)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        _logic(node.operand)
    elif isinstance(node, (ast.Name, ast.Constant, ast.BinOp, ast.UnaryOp)):
        raise ReportError("a check must compare (e.g. 'a > b'), or join comparisons with and/or/not")
    else:
        raise ReportError(f"'{ast.unparse(node)}' is not allowed in a check ({_ALLOWED})")


def _arith(node: ast.expr) -> None:
    """A number id, a number, or + - * / of them."""
    ok = (isinstance(node, ast.Name) or (isinstance(node, ast.Constant) and type(node.value) in (int, float))
          or (isinstance(node, ast.BinOp) and type(node.op) in _ARITH)
          or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)))
    if not ok:
        raise ReportError(f"'{ast.unparse(node)}' is not allowed in a check ({_ALLOWED})")
    for x in ast.iter_child_nodes(node):
        if isinstance(x, ast.expr):
            _arith(x)


def names(tree: ast.Expression) -> set[str]:
    """The number ids a check reads."""
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def holds(tree: ast.Expression, values: Mapping[str, float | None]) -> bool:
    """Whether the check holds with these values; :class:`KeyError` if one it reads is missing
    or not a number."""
    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            v = values.get(node.id)
            if v is None or (isinstance(v, float) and math.isnan(v)):
                raise KeyError(node.id)
            return float(v)
        if isinstance(node, ast.UnaryOp):
            x = ev(node.operand)
            return -x if isinstance(node.op, ast.USub) else not x
        if isinstance(node, ast.BinOp):
            return _ARITH[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.BoolOp):
            parts = [ev(v) for v in node.values]
            return all(parts) if isinstance(node.op, ast.And) else any(parts)
        left = ev(node.left)
        for op, right in zip(node.ops, node.comparators):
            r = ev(right)
            if not _COMPARE[type(op)](left, r):
                return False
            left = r
        return True

    return bool(ev(tree))


def paper_value(e: Mapping) -> float:
    """A paper number as one value: a point or a bound as stated, a range by its middle."""
    lo = float(e["paper"])
    return (lo + float(e["paper_hi"])) / 2 if e.get("kind") == "range" else lo


def load(path: str | os.PathLike, numbers: Iterable[Mapping]) -> list[dict]:
    """The ``[[conclusions]]`` of ``paper.toml``, each checked: its fields, its check's syntax,
    the ids it reads (among ``numbers``) and that it holds on the paper's own values."""
    path = Path(path)
    paper = {e["id"]: paper_value(e) for e in numbers}
    out, seen = [], set()
    for i, e in enumerate(paper_tables(path, "conclusions", FIELDS)):
        for k in ("id", "claim", "source", "check"):
            if not (isinstance(e.get(k), str) and e[k].strip()):
                raise ReportError(f"{path}: conclusions[{i}] needs a non-empty '{k}'")
        where = f"{path}: conclusion '{e['id']}'"
        if e["id"] in seen:
            raise ReportError(f"{where}: the id is used twice")
        seen.add(e["id"])
        for k in ("cause", "shown_by"):
            if k in e and not (isinstance(e[k], str) and e[k].strip()):
                raise ReportError(f"{where}: '{k}' must be a non-empty string")
        if "shown_by" in e and "cause" not in e:
            raise ReportError(f"{where}: 'shown_by' needs the 'cause' it shows")
        try:
            tree = parse(e["check"])
        except ReportError as err:
            raise ReportError(f"{where}: check: {err}") from None
        unknown = sorted(names(tree) - set(paper))
        if unknown:
            raise ReportError(f"{where}: check reads '{unknown[0]}', which is not a number of this paper.toml")
        if not holds(tree, paper):
            raise ReportError(f"{where}: check '{e['check']}' does not hold on the paper's own numbers")
        out.append(dict(e))
    return out


def evaluate(conclusions: Iterable[Mapping], comparison):
    """One row per conclusion, its check on xlat's values (``comparison``: the frame of
    :func:`xlat.report.paper_vs_xlat`) and its verdict."""
    import pandas as pd

    xlat = {r["id"]: (None if r["xlat"] is None or pd.isna(r["xlat"]) else float(r["xlat"]))
            for r in comparison.to_dict("records")}
    rows = []
    for c in conclusions:
        try:
            ok = holds(parse(c["check"]), xlat)
        except KeyError:
            ok = None
        verdict = "no value" if ok is None else "reproduced" if ok else explained(c)
        rows.append({"id": c["id"], "claim": c["claim"], "source": c["source"], "check": c["check"], "holds": ok,
                     "verdict": verdict, "cause": c.get("cause", ""), "shown_by": c.get("shown_by", "")})
    return pd.DataFrame(rows, columns=COLUMNS)


def counts(rows) -> dict[str, int]:
    """How many conclusions have each verdict."""
    return {v: int((rows["verdict"] == v).sum()) for v in VERDICTS}


def markdown(rows, level: int = 2) -> list[str]:
    """The conclusions section of a report (a heading of ``level``): a line of counts, the
    table, the causes."""
    if not len(rows):
        return []
    n = counts(rows)
    lines = [f"{'#' * level} The paper's conclusions", "",
             f"**{n['reproduced']} of {len(rows)} conclusions reproduced** on xlat's numbers above (each a check in "
             f"`paper.toml`'s `[[conclusions]]`, true on the paper's own numbers); the others' causes: "
             f"{n['shown']} shown by a run, {n['argued']} argued, {n['unexplained']} none"
             + (f"; {n['no value']} without an xlat value" if n["no value"] else "") + ".", ""]
    table = [[r["claim"], r["source"], f"`{r['check']}`", r["verdict"]] for r in rows.to_dict("records")]
    lines += [markdown_table(table, columns=["conclusion", "source", "check", "verdict"]), ""]
    differs = [r for r in rows.to_dict("records") if r["verdict"] in ("shown", "argued")]
    if differs:
        lines += ["Where xlat concludes otherwise:", ""]
        lines += [f"- **{r['claim']}**: {_text(r['cause']).rstrip('.')}"
                  + (f" (shown by: {_text(r['shown_by']).rstrip('.')})" if _text(r["shown_by"]) else "") + "."
                  for r in differs]
        lines.append("")
    return lines


def _text(v) -> str:
    """A text cell, empty where a table read back from CSV has none (NaN)."""
    return v if isinstance(v, str) else ""
