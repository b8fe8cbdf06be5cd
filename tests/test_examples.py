"""The newcomer's path: examples/tour.sh (the README's tour with the files it uses) runs top
to bottom, and teaches steady state on the way."""
from __future__ import annotations

import os
import subprocess

from xlat_testutil import REPO, xlat_exe


def test_the_tour_runs_as_written(tmp_path):
    env = {**os.environ, "XLAT": xlat_exe(), "XLAT_TOUR_QUICK": "1", "TMPDIR": str(tmp_path)}
    p = subprocess.run(["bash", str(REPO / "examples" / "tour.sh")], capture_output=True, text=True, env=env,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    out = p.stdout
    # The first run is dominated by page faults, and says what to do about it; the
    # steady-state runs after it are not.
    first, rest = out.split("$ xlat run", 2)[1], out.split("--prefault --warmup", 1)[1]
    assert "note: page faults took" in first and "--prefault" in first
    assert "note: page faults" not in rest.split("$ xlat explain")[0]
    assert "pwc-sweep: all 4 points ok" in p.stderr
    (made,) = list(tmp_path.glob("xlat-tour.*"))
    assert (made / "mine.json").exists() and (made / "pwc.csv").read_text().count("\n") == 5


def test_the_readme_uses_the_shipped_examples():
    readme = (REPO / "README.md").read_text()
    for name in ("examples/my-machine.toml", "examples/pwc-sweep.toml", "examples/tour.sh"):
        assert name in readme and (REPO / name).exists(), name


def test_the_readme_is_a_front_page_whose_links_resolve():
    import re

    readme = REPO / "README.md"
    # (A front page: at most 10 KB; the rest belongs in docs/ and the studies' READMEs.)
    assert readme.stat().st_size <= 10_000, readme.stat().st_size
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme.read_text()):
        assert (REPO / target).exists(), target


def test_the_python_sweep_example_runs_saved_as_a_script(tmp_path):
    import re
    import sys

    text = (REPO / "docs" / "experiments.md").read_text()
    script = tmp_path / "example.py"
    script.write_text(re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1))
    env = {**os.environ, "XLAT_RESULTS": str(tmp_path / "results")}
    p = subprocess.run([sys.executable, str(script)], cwd=REPO, capture_output=True, text=True, env=env, timeout=300,
                       check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "report.md" in p.stdout and (tmp_path / "results" / "pwc-sweep").is_dir()
