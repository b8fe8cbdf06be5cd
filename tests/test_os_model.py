"""The OS model as a user meets it: page-size policies and fragmentation scenarios chosen with
--set, huge-page coverage and free 2 MB blocks in the `xlat run` summary, one-line errors."""
from __future__ import annotations

import json

import pytest

from xlat.cli import free_2m_summary, summary_rows
from xlat_testutil import assert_one_line_error, has_config_key, has_core, run_xlat

needs_os = pytest.mark.skipif(
    not (has_core("simulate", "resolve_config") and has_config_key("phys.fragmentation")),
    reason="engine without the OS model",
)
WL = "gups:footprint=1G"


def test_summary_rows_show_coverage_shootdowns_and_free_blocks():
    stats = {
        "huge_coverage": 0.375, "promotions": 12, "demotions": 0, "shootdowns": 12, "shootdown_cycles": 96000,
        "phys.start.free_2m_blocks": 100, "phys.start.free_bytes": 400 << 20, "phys.free_2m_blocks": 40,
    }
    rows = dict(summary_rows(stats))
    assert rows["huge-page coverage"] == "37.5%  (12 promotions)"
    assert rows["TLB shootdowns"] == "12  (96,000 cycles)"
    assert rows["free 2 MB blocks"] == "100 at start (50.0% of free memory) -> 40 at end"
    # 4 KB only, no shootdowns: coverage still shows (0 %), shootdowns do not.
    rows = dict(summary_rows({"huge_coverage": 0.0, "shootdowns": 0}))
    assert rows["huge-page coverage"] == "0.0%"
    assert "TLB shootdowns" not in rows and "free 2 MB blocks" not in rows
    assert free_2m_summary({}) is None
    # Nothing mapped (a run of no references): no share, rather than "nan%".
    rows = dict(summary_rows({"huge_coverage": float("nan"), "host.huge_coverage": float("nan"), "refs": 0}))
    assert "huge-page coverage" not in rows and "host huge-page coverage" not in rows
    assert not any("nan" in v for v in rows.values()), rows


@needs_os
def test_run_summary_shows_huge_pages_and_fragmentation(tmp_path):
    out = tmp_path / "r.json"
    p = run_xlat("run", "--workload", WL, "--refs", "20k", "--json", str(out),
                 "--set", "os.page_policy=thp", "--set", "phys.size_gb=4",
                 "--set", "phys.available_gb=1", "--set", "phys.fragmentation=pinned:0.9",
                 "--set", "check.translations=1")
    assert p.returncode == 0, p.stderr
    assert "huge-page coverage" in p.stdout and "free 2 MB blocks" in p.stdout, p.stdout
    stats = json.loads(out.read_text())["stats"]
    # 10 % of the 1 GB left free is in whole 2 MB blocks; THP spends them at first touch.
    assert 48 <= stats["phys.start.free_2m_blocks"] <= 52
    assert 0 < stats["huge_coverage"] < 1
    assert stats["phys.free_blocks.order9"] >= 0
    for k in ("promotions", "demotions", "shootdowns", "shootdown_cycles", "faults"):
        assert k in stats, k


@needs_os
def test_ideal_policy_maps_everything_huge(tmp_path):
    out = tmp_path / "r.json"
    p = run_xlat("run", "-q", "--workload", WL, "--refs", "20k", "--prefault", "--json", str(out),
                 "--set", "os.page_policy=ideal")
    assert p.returncode == 0, p.stderr
    stats = json.loads(out.read_text())["stats"]
    assert stats["huge_coverage"] == 1.0
    assert stats["pt.nodes.l1"] == 0


@needs_os
@pytest.mark.parametrize("setting, needle", [
    ("phys.fragmentation=pinned:2", "phys.fragmentation"),
    ("phys.fragmentation=swiss", "pinned:X"),
    ("os.page_policy=always", "never|ideal|thp|madvise|freebsd"),
    ("os.processes=0", "os.processes"),
])
def test_bad_os_settings_are_one_line_errors(setting, needle):
    p = run_xlat("run", "--workload", WL, "--refs", "1000", "--set", setting)
    assert_one_line_error(p, needle)


@needs_os
def test_the_oracle_runs_the_workload_twice_and_promotes_the_most_walked_regions(tmp_path):
    # A kernel workload is opened twice: the first run ranks the regions by their 4 KB walks,
    # the second promotes the best 10 % of the footprint's 2 MB regions at its first read.
    out = tmp_path / "r.json"
    common = ("run", "-q", "--workload", "gups:footprint=64M", "--refs", "100k", "--prefault", "--set", "check.translations=1")
    p = run_xlat(*common, "--json", str(out), "--set", "os.promotion=oracle", "--set", "os.promotion_first=1000",
                 "--set", "os.promotion_cap=0.1")
    assert p.returncode == 0, p.stderr
    s = json.loads(out.read_text())["stats"]
    assert s["oracle.requests"] == s["promotions"] == 3  # floor(32 regions x 0.1)
    assert s["oracle.profile_regions"] == 32 and s["oracle.profile_walks"] > 0
    base = tmp_path / "b.json"
    assert run_xlat(*common, "--json", str(base)).returncode == 0
    b = json.loads(base.read_text())["stats"]
    assert s["walks"] < b["walks"]


@needs_os
@pytest.mark.parametrize("setting, needle", [
    ("os.promotion=khugepaged", "none|pcc|hawkeye|thp|oracle"),
    ("pcc.demotion=true", "needs os.promotion=pcc"),
])
def test_bad_promotion_settings_are_one_line_errors(setting, needle):
    assert_one_line_error(run_xlat("run", "--workload", WL, "--refs", "1000", "--set", setting), needle)
