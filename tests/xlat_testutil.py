"""Helpers for the tests that drive the installed `xlat` command as a user would."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from xlat import _core

REPO = Path(__file__).resolve().parent.parent


def xlat_exe() -> str:
    """The `xlat` script of the environment running the tests (`.venv/bin/xlat` under make)."""
    exe = Path(sys.executable).parent / "xlat"
    if exe.exists():
        return str(exe)
    found = shutil.which("xlat")
    assert found, "the xlat script is not installed (run `make install`)"
    return found


def run_xlat(*args: str, cwd=None, env=None, timeout: float = 120) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.pop("XLAT_DEBUG", None)
    if env:
        full_env.update(env)
    return subprocess.run([xlat_exe(), *args], capture_output=True, text=True, cwd=cwd, env=full_env, timeout=timeout, check=False)


def assert_one_line_error(p: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit status 2, exactly one line on stderr, `xlat: error: ...`, containing every needle."""
    lines = p.stderr.splitlines()
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert len(lines) == 1, p.stderr
    assert lines[0].startswith("xlat: error: "), lines[0]
    assert "Traceback" not in p.stderr
    for n in needles:
        assert n in lines[0], (n, lines[0])
    return lines[0]


def has_core(*names: str) -> bool:
    return all(hasattr(_core, n) for n in names)


def has_config_key(key: str) -> bool:
    return has_core("config_keys") and any(row[0] == key for row in _core.config_keys())


def study_copy(study, tmp_path):
    """A study's report.py, paper.toml and report templates (``*.md.in``) copied under
    ``tmp_path/studies/NAME`` (for a test to write its own tiny sweep.toml there), and the real
    sweep.toml's contents."""
    import shutil
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    d = tmp_path / "studies" / study.name
    d.mkdir(parents=True)
    for f in ["report.py", "paper.toml"] + sorted(p.name for p in study.glob("*.md.in")):
        shutil.copy(study / f, d / f)
    with open(study / "sweep.toml", "rb") as f:
        return d, tomllib.load(f)


def report_table_rows(text: str, heading: str) -> list[str]:
    """The body rows of the markdown table under ``heading`` in a study report."""
    part = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return [line for line in part.splitlines() if line.startswith("| ") and not line.startswith(("| what", "| ---"))]


def paper_numbers_without_value(text: str, paper) -> set[str]:
    """A study report's paper-vs-xlat table has one row per number of ``paper`` (its
    paper.toml), in order; returns the ids of those with no xlat value."""
    from xlat import report

    entries = report.load_paper(paper)
    rows = report_table_rows(text, "## Paper vs xlat\n")
    assert [r.split(" | ")[0][2:] for r in rows] == [e["what"] for e in entries]
    return {e["id"] for e, r in zip(entries, rows) if r.split(" | ")[4] == "—"}
