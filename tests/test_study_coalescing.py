"""The PTE-coalescing study (studies/coalescing, seed 002, kernel half): its spec runs the
paper's allocator columns with the coalescing size of each CPU and the same-geometry ablation,
and its report renders from a tiny sweep with an xlat value for every paper number."""
from __future__ import annotations

import shutil
import sys

import pytest

from xlat import study, sweep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib
from xlat_testutil import REPO, has_core, paper_numbers_without_value, study_copy

STUDY = REPO / "studies" / "coalescing"
needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")


def test_spec_pairs_each_column_with_its_cpu_and_allocator():
    for quick in (False, True):
        spec = sweep.load_spec(STUDY / "sweep.toml", quick=quick)
        by_label = {}
        for p in spec.points:
            s = dict(p.config.overrides)
            by_label.setdefault(p.config.label, dict(s, preset=p.config.base))
            assert p.prefault and s["os.prefault_as"] == "write", p
        assert {w for w in (p.workload for p in spec.points)} == {"xsbench", "canneal", "pagerank", "liblinear", "churn"}
        assert all(dict(p.params)["free"] == "madv_free" for p in spec.points if p.workload == "churn"), "jemalloc's frees"
        for label, s in by_label.items():
            cpu = label.split("-")[0]
            assert s["preset"] == ("zenplus" if cpu == "F2" else "zen3"), label
            want = "none" if label.endswith("nocoal") else "32k" if cpu in ("F2", "Z3") else "16k"
            assert s["tlb.coalescing"] == want, label
            # Linux's per-CPU lists hand out ascending frames, FreeBSD's page cache a stack.
            assert s.get("phys.pcp_order", "fifo") == ("fifo" if cpu == "L" else "lifo"), label
            # nomdv: super with jemalloc's MADV_FREE calls ignored.
            assert s.get("os.madv_free", True) == (not label.endswith("nomdv")), label
            # FreeBSD's world is linked with max-page-size 2 MB; the Linux binaries as they are.
            assert s.get("loader.max_page_size", "as-linked") == ("as-linked" if cpu == "L" else "2m"), label
            resv = s.get("os.reservations", "none")
            if "reserv" in label or "super" in label or "nomdv" in label:
                assert resv == ("reserv" if "reserv" in label else "super") and "os.page_policy" not in s, label
            else:
                assert resv == "none" and s.get("os.page_policy", "never") == ("thp" if label == "L-thp" else "never"), label
        assert len(by_label) == 13
    # The Linux binaries on FreeBSD, the 4 KB relink and A-bit presetting: real programs only.
    configs = {c["label"]: c for c in tomllib.loads((STUDY / "sweep.toml").read_text())["configs"]}
    for label, loader in [("LB-noresv", None), ("LB-reserv", None), ("LB-super", None), ("F5-reserv-4k", "4k"), ("F5-reserv-presetA", "2m")]:
        assert configs[label]["workloads"] == ["trace"] and configs[label]["set"].get("loader.max_page_size") == loader, label


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d, real = study_copy(STUDY, tmp_path)
    lines = ["refs = 60000", "warmup = 200000", "prefault = true", "seeds = [1]"]
    # (The paper's columns only: the ablations are left out to keep the test short, and the
    # report must do without them.)
    lines.append("traces = []")
    for c in (c for c in real["configs"] if not c["label"].startswith("Z3") and not c["label"].endswith("nocoal")):
        body = ", ".join(f'"{k}" = {v!r}'.replace("'", '"').replace("False", "false") for k, v in c["set"].items())
        lines += ["[[configs]]", f'preset = "{c["preset"]}"', f'label = "{c["label"]}"', f"set = {{ {body} }}"]
        if "workloads" in c:
            lines.append(f'workloads = {c["workloads"]!r}'.replace("'", '"'))
    # One real program, briefly (the study traces five, for longer).
    (d / "prepare.py").write_text(
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('real_prepare', {str(STUDY / 'prepare.py')!r})\n"
        "real = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(real)\n\n\n"
        "def traces(out_dir, quick):\n"
        "    return real.traces(out_dir, quick, only=['xz'], refs=400_000, windows=(2, 3_000_000))\n")
    # (PageRank needs a graph too large for a test before its L1 DTLB misses hit the L2 DTLB.)
    for name, params in [("xsbench", "gridpoints = 1000"), ("canneal", "elements = 50000"), ("liblinear", "instances = 20000"),
                         ("churn", 'footprint = "8M", free = "madv_free", ops = "20K"')]:
        lines += ["[[workloads]]", f'name = "{name}"', f"params = {{ {params} }}"]
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    # Every number of the four workloads has a value, but the 32 KB / 16 KB ratio of 4 KB
    # misses (with every group whole and uniform, runs this short have none of either) and the
    # tiny heap's 2 MB share of L2 DTLB hits (its 2 MB pages all fit the L1 DTLB: no L2 hits).
    # (The paper's Clang and Node.js rows need clang and node, which the test does not trace.)
    missing = [m for m in paper_numbers_without_value(text, STUDY / "paper.toml") if not m.endswith(("_clang", "_node"))]
    # (And canneal's coalesced share under F2-super: promoted 2 MB pages leave it no coalesced
    # L2 DTLB hits in a run this short.)
    assert {m for m in missing if not (m.endswith("_pagerank") or m.startswith("misses_4k_"))} <= {
        "nomdv_huge_share_f5", "coalesced_share_f2_super_canneal"}
    assert len([m for m in missing if not m.endswith("_pagerank")]) < 20, sorted(missing)
    for heading in ("## Contiguity by chance and by design (T-C)", "## 16 KB against 32 KB groups (T-B)", "## MADV_FREE and superpages (nomdv)",
                    "## The T2 counters", "### jemalloc heap (churn)", "## Code: L1 ITLB misses (T-E)"):
        assert heading in text
    assert (res.report.parent / "coalesced_share.png").is_file()
    if shutil.which("valgrind"):
        # xz, traced and run on every column, relinked or not.
        assert "### xz (traced)" in text and "### The linker's max-page-size (Fig. 1)" in text
        assert (res.report.parent / "l1i_misses.png").is_file()
        # Traced in two windows, which the report sums and gives with their interval.
        assert "### Programs sampled in several windows" in text
        assert "| xz | L1 ITLB misses PKI, F5-noresv | 2 |" in text


def test_a_trace_is_named_by_how_it_is_made(tmp_path):
    """A trace made another way (another input, start-up or length) is not reused; the same
    recipe in another store gives the same name."""
    prep = _prepare_module()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    (a / "prog.js").write_text("1")
    (b / "prog.js").write_text("1")
    name = prep._recipe(["/usr/bin/node", str(a / "prog.js")], 100, 10)
    assert name == prep._recipe(["/usr/bin/node", str(b / "prog.js")], 100, 10)
    assert name != prep._recipe(["/usr/bin/node", str(a / "prog.js")], 200, 10)
    assert name != prep._recipe(["/usr/bin/node", str(a / "prog.js")], 100, 20)
    assert name != prep._recipe(["/usr/bin/node", "--single-threaded", str(a / "prog.js")], 100, 10)
    (a / "prog.js").write_text("2")
    assert name != prep._recipe(["/usr/bin/node", str(a / "prog.js")], 100, 10)
    # (An input inside an argument, as sqlite's `.read FILE`, counts too.)
    sql = prep._recipe(["/usr/bin/sqlite3", f".read {a / 'prog.js'}"], 0, 1)
    (a / "prog.js").write_text("3")
    assert sql != prep._recipe(["/usr/bin/sqlite3", f".read {a / 'prog.js'}"], 0, 1)
    # Windows name it too; one window is a trace as before.
    cmd = ["/usr/bin/node", str(a / "prog.js")]
    assert prep._recipe(cmd, 100, 10, (1, 0)) == prep._recipe(cmd, 100, 10)
    assert len({prep._recipe(cmd, 100, 10), prep._recipe(cmd, 100, 10, (4, 50)), prep._recipe(cmd, 100, 10, (4, 60)),
                prep._recipe(cmd, 100, 10, (3, 50))}) == 4


def test_a_programs_windows_are_a_sample_of_it():
    """The report sums a program's windows before taking a ratio (the ratio estimator) and
    gives the estimate with its 95 % interval over the windows and each window's value."""
    import pandas as pd

    from xlat.sampling import ratio_ci

    rep = _report_module()
    rows = []
    # Two windows of clang: L1 ITLB misses 10 and 30 over 1,000 and 2,000 instructions without
    # reservations, 5 and 6 with them.
    for path, instrs, noresv, reserv in (("/t/clang.w0.xtr", 1000, 10, 5), ("/t/clang.w1.xtr", 2000, 30, 6)):
        for config, misses in (("F5-noresv", noresv), ("F5-reserv", reserv)):
            rows.append({"workload": "trace", "param.label": "clang", "param.path": path, "config_label": config,
                         "stat.instructions": instrs, "stat.tlb.l1i.misses": misses, "stat.tlb.l1d.misses": 1, "stat.cycles": instrs})
    df = pd.DataFrame(rows)
    t = rep._tidy(df)
    assert rep._get(t, "F5-noresv", "clang", "l1i") == pytest.approx(1000 * 40 / 3000)
    assert rep._get(t, "F5-reserv", "clang", "l1i") == pytest.approx(1000 * 11 / 3000)
    text = rep._windows_table(df, ["clang"], {"l1i_pki_f5_noresv_clang": 3.28})
    r, half = ratio_ci([10, 30], [1000, 2000], 1000.0)
    assert f"| Clang (clang) | L1 ITLB misses PKI, F5-noresv | 2 | {r:.2f} ± {half:.2f} | 10.00, 15.00 | 3.28 |" in text
    cut, cut_half = ratio_ci([5, 6], [10, 30], 100.0)
    assert f"| L1 ITLB misses cut % by reserv, F5 | 2 | {100 - cut:.2f} ± {cut_half:.2f} | 50.00, 80.00 |" in text
    # One window: no table.
    assert rep._windows_table(df[df["param.path"] == "/t/clang.w0.xtr"], ["clang"], {}) == ""


def _prepare_module():
    """studies/coalescing/prepare.py, loaded as a module."""
    return _study_module("prepare")


def _report_module():
    """studies/coalescing/report.py, loaded as a module."""
    return _study_module("report")


def _study_module(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"coalescing_{name}", STUDY / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fake_npm(tmp_path, monkeypatch, body: str):
    """An `npm` first on the PATH that logs its arguments and runs the shell `body`: its path
    and the log's."""
    import os

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    npm = bin_dir / "npm"
    npm.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\n{body}\n")
    npm.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return npm, calls


def tgz(members: dict[str, bytes]) -> bytes:
    """A gzipped tar of `members` (name: contents), as a package tarball."""
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_sqlite_is_fetched_once_and_only_the_pinned_file_kept(tmp_path, monkeypatch):
    """The paper's Clang input comes from the registry's `sqlite3` package (npm pack): a
    package whose amalgamation is not the pinned one, or a failed fetch, gives one line and no
    file; the pinned one is kept and not fetched again."""
    import hashlib

    prep = _prepare_module()

    source = b"/* the amalgamation */\n"
    package = tgz({prep.SQLITE_MEMBER[0]: tgz({prep.SQLITE_MEMBER[1]: source})})
    (tmp_path / "package.tgz").write_bytes(package)
    npm, calls = _fake_npm(tmp_path, monkeypatch, f"cp {tmp_path / 'package.tgz'} sqlite3-5.1.7.tgz")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    why = prep._sqlite_amalgamation(inputs)
    assert why is not None and "not the one this study pins" in why and "\n" not in why
    assert list(inputs.iterdir()) == []
    monkeypatch.setattr(prep, "SQLITE_SHA256", hashlib.sha256(source).hexdigest())
    assert prep._sqlite_amalgamation(inputs) is None
    assert (inputs / "sqlite3.c").read_bytes() == source and list(inputs.iterdir()) == [inputs / "sqlite3.c"]
    assert prep._sqlite_amalgamation(inputs) is None
    assert calls.read_text().count("pack sqlite3@5.1.7") == 2, "kept, not fetched a third time"
    npm.write_text("#!/bin/sh\necho 'npm error network: offline' >&2\nexit 1\n")
    (inputs / "sqlite3.c").unlink()
    why = prep._sqlite_amalgamation(inputs)
    assert why == "npm pack sqlite3@5.1.7 failed: npm error network: offline"


def test_react_is_fetched_once_unpacked_whole_and_pinned(tmp_path, monkeypatch):
    """Node.js's React comes from the registry (npm pack), each package pinned by its
    tarball's digest: one that is not the pinned one, or a failed fetch, gives one line and
    leaves no package; the pinned ones are unpacked into node_modules and not fetched again."""
    import hashlib

    prep = _prepare_module()

    packages = {}
    for name in ("react", "react-dom"):
        packages[name] = tgz({"package/index.js": f"module.exports = '{name}';\n".encode()})
        (tmp_path / f"{name}.tgz").write_bytes(packages[name])
    # (npm pack SPEC writes NAME-VERSION.tgz in its working directory.)
    npm, calls = _fake_npm(tmp_path, monkeypatch, f"name=${{2%@*}}\ncp {tmp_path}/$name.tgz $name.tgz")
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    why = prep._react(inputs)
    assert why is not None and "is not the one this study pins" in why and "\n" not in why
    assert not (inputs / "node_modules" / "react").exists()
    pinned = {f"{n}@18.2.0": hashlib.sha256(packages[n]).hexdigest() for n in ("react", "react-dom")}
    monkeypatch.setattr(prep, "REACT_PACKAGES", pinned)
    assert prep._react(inputs) is None
    assert (inputs / "node_modules" / "react-dom" / "index.js").read_text() == "module.exports = 'react-dom';\n"
    assert sorted(p.name for p in (inputs / "node_modules").iterdir()) == ["react", "react-dom"]
    assert prep._react(inputs) is None
    assert calls.read_text().count("pack react-dom@18.2.0") == 1, "kept, not fetched again"
    npm.write_text("#!/bin/sh\necho 'npm error network: offline' >&2\nexit 1\n")
    import shutil

    shutil.rmtree(inputs / "node_modules" / "react")
    assert prep._react(inputs) == "npm pack react@18.2.0 failed: npm error network: offline"
