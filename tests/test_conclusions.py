"""A paper's conclusions as checks over its numbers (xlat.conclusions): the grammar, the loader's
refusals (a check must hold on the paper's own values) and the verdicts on xlat's values."""
from __future__ import annotations

import io
import re
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from xlat import conclusions
from xlat.report import ReportError

STUDIES = Path(__file__).resolve().parent.parent / "studies"


def test_checks_compare_chain_and_combine():
    v = {"a": 1.2, "b": 1.1, "c": 0.5}
    assert conclusions.holds(conclusions.parse("a > b > 1"), v)
    assert not conclusions.holds(conclusions.parse("a > b > c > 1"), v)
    assert conclusions.holds(conclusions.parse("a - 1 > 0.5 * (b - 1) and not c >= 1"), v)
    assert conclusions.holds(conclusions.parse("c > 1 or a >= 1.2"), v)
    assert conclusions.names(conclusions.parse("a / b < c + 2")) == {"a", "b", "c"}
    with pytest.raises(KeyError):
        conclusions.holds(conclusions.parse("a > zzz"), v)
    with pytest.raises(KeyError):  # a number without a value is missing too
        conclusions.holds(conclusions.parse("a > b"), {"a": 1.0, "b": float("nan")})


@pytest.mark.parametrize("check, why", [
    ("a >", "not a check"),
    ("a", "must compare"),
    ("a + 1", "must compare"),
    ("a == b", "'a == b' is not allowed"),
    ("f(a) > 1", "'f(a)' is not allowed"),
    ("a.b > 1", "'a.b' is not allowed"),
    ("__import__('os') > 1", "is not allowed"),
    ("a > 'x'", "is not allowed"),
    ("a > True", "is not allowed"),
    ("(a if b else c) > 1", "is not allowed"),
    ("a and b > 1", "must compare"),
    ("(a > b) > 1", "'a > b' is not allowed"),
    ("not a", "must compare"),
    ("+a > 1", "'+a' is not allowed"),
])
def test_anything_but_arithmetic_comparisons_is_refused(check, why):
    with pytest.raises(ReportError, match=re.escape(why)):
        conclusions.parse(check)


def _paper(tmp_path, body: str) -> Path:
    p = tmp_path / "paper.toml"
    p.write_text(textwrap.dedent("""
        [[numbers]]
        id = "fast"
        paper = 1.3
        [[numbers]]
        id = "slow"
        paper = 1.1
        [[numbers]]
        id = "band"
        paper = 2.0
        paper_hi = 4.0
        kind = "range"
    """) + textwrap.dedent(body))
    return p


def _load(path):
    from xlat.report import load_paper

    return conclusions.load(path, load_paper(path))


def test_a_conclusion_must_hold_on_the_papers_own_numbers(tmp_path):
    ok = _load(_paper(tmp_path, """
        [[conclusions]]
        id = "order"
        claim = "fast beats slow, both gain"
        source = "Fig. 1"
        check = "fast > slow > 1 and band > 2.5"
    """))
    assert [c["id"] for c in ok] == ["order"]  # (a range stands for its middle, 3.0)
    with pytest.raises(ReportError, match="conclusion 'backwards': check 'slow > fast' does not hold on the paper's own numbers"):
        _load(_paper(tmp_path, """
            [[conclusions]]
            id = "backwards"
            claim = "slow beats fast"
            source = "Fig. 1"
            check = "slow > fast"
        """))


@pytest.mark.parametrize("body, why", [
    ('id = "x"\nclaim = "c"\nsource = "s"\ncheck = "fast > nope"', "check reads 'nope', which is not a number of this paper.toml"),
    ('id = "x"\nclaim = "c"\nsource = "s"', "needs a non-empty 'check'"),
    ('id = "x"\nclaim = "c"\nsource = "s"\ncheck = "fast > 1"\nwhy = "?"', "unknown field 'why'"),
    ('id = "x"\nclaim = "c"\nsource = "s"\ncheck = "fast > 1"\nshown_by = "a run"', "'shown_by' needs the 'cause' it shows"),
    ('id = "x"\nclaim = "c"\nsource = "s"\ncheck = "fast >"', "conclusion 'x': check: not a check"),
])
def test_a_malformed_conclusion_is_one_clear_error(tmp_path, body, why):
    with pytest.raises(ReportError, match=why):
        _load(_paper(tmp_path, "[[conclusions]]\n" + body + "\n"))
    twice = "[[conclusions]]\n" + 'id = "x"\nclaim = "c"\nsource = "s"\ncheck = "fast > 1"\n'
    with pytest.raises(ReportError, match="conclusion 'x': the id is used twice"):
        _load(_paper(tmp_path, twice + twice))


def test_verdicts_on_xlats_numbers():
    concl = [
        {"id": "r", "claim": "holds", "source": "s", "check": "fast > slow"},
        {"id": "s", "claim": "shown", "source": "s", "check": "slow > fast", "cause": "why", "shown_by": "a run"},
        {"id": "a", "claim": "argued", "source": "s", "check": "slow > fast", "cause": "why"},
        {"id": "u", "claim": "unexplained", "source": "s", "check": "slow > fast"},
        {"id": "n", "claim": "no value", "source": "s", "check": "band > 1"},
    ]
    comp = pd.DataFrame({"id": ["fast", "slow", "band"], "xlat": [1.2, 1.0, None]})
    rows = conclusions.evaluate(concl, comp)
    assert list(rows["verdict"]) == ["reproduced", "shown", "argued", "unexplained", "no value"]
    assert conclusions.counts(rows) == {"no value": 1, "reproduced": 1, "shown": 1, "argued": 1, "unexplained": 1}
    md = "\n".join(conclusions.markdown(rows))
    assert "**1 of 5 conclusions reproduced**" in md and "the others' causes: 1 shown by a run, 1 argued, 1 none; 1 without an xlat value." in md
    assert "- **shown**: why (shown by: a run)." in md and "- **argued**: why." in md
    # Read back as `xlat study fidelity` reads a study's conclusions.csv (empty cells as NaN).
    buf = io.StringIO(rows.to_csv(index=False))
    back = pd.read_csv(buf, keep_default_na=False, na_values=[""])
    assert "\n".join(conclusions.markdown(back)) == md


@pytest.mark.parametrize("study", sorted(p.parent.name for p in STUDIES.glob("*/paper.toml")))
def test_every_studys_conclusions_hold_on_its_papers_numbers(study):
    """Each study's [[conclusions]] load: known ids, and true on the paper's own values."""
    from xlat.report import load_paper

    path = STUDIES / study / "paper.toml"
    concl = conclusions.load(path, load_paper(path))
    assert concl, f"{study}: no [[conclusions]] in paper.toml"
