"""`xlat mrc` and simulate(curves=...): one run's miss-ratio curves, each point the count a
separate run at that size makes (the engine's own tests check every size; these check the
plumbing: Python, JSON, the command)."""
from __future__ import annotations

import json

import pytest

import xlat
from xlat.mrc import Curve
from xlat_testutil import assert_one_line_error, run_xlat

WL = "random:footprint=256M"


def test_a_curve_point_is_a_separate_runs_count():
    r = xlat.simulate("skylake", WL, refs="60k", warmup="10k", curves=["tlb.l2", "pwc.l2", "cache.l2"], curve_ways=24)
    l2, pwc, cl2 = (next(c for c in r.curves if c.structure == s) for s in ("tlb.l2", "pwc.l2", "cache.l2"))
    assert l2.exact and pwc.exact and cl2.exact and l2.max_ways == 24
    assert l2.misses(l2.ways) == r["tlb.l2.misses"] and pwc.misses(pwc.ways) == r["pwc.l2.misses"]
    assert cl2.misses(cl2.ways) == r["cache.l2.misses"]
    sets = l2.arrays[0][0]
    # (One structure at a time: the page-walk cache sees the L2 TLB's misses.)
    small_l2 = xlat.simulate("skylake", WL, refs="60k", warmup="10k", **{"tlb.l2.entries": sets * 4, "tlb.l2.ways": 4})
    small_pwc = xlat.simulate("skylake", WL, refs="60k", warmup="10k", **{"pwc.l2.entries": 7})
    assert (l2.misses(4), pwc.misses(7)) == (small_l2["tlb.l2.misses"], small_pwc["pwc.l2.misses"])
    assert l2.misses(1) >= l2.misses(4) >= l2.misses(24)
    assert l2.entries(4) == sum(s * 4 for s, _ in l2.arrays)
    with pytest.raises(ValueError, match="from 1 to 24 ways"):
        l2.misses(25)
    # A Result keeps its curves through JSON.
    again = xlat.Result.from_dict(json.loads(r.to_json()))
    assert again.curves == r.curves and isinstance(again.curves[0], Curve)


def test_a_pwc_curve_is_exact_only_under_lru():
    # (Mattson's stack counts what LRU keeps; `pwc.policy=fifo` keeps other entries.)
    for policy, exact in (("lru", True), ("fifo", False)):
        r = xlat.simulate("skylake", WL, refs="20k", curves=["pwc.l2"], **{"pwc.policy": policy})
        assert r.curves[0].exact is exact, policy


def test_xlat_mrc_prints_writes_and_plots(tmp_path):
    out, png = tmp_path / "c.json", tmp_path / "c.png"
    p = run_xlat("mrc", "-w", WL, "-n", "30k", "-s", "tlb.l2,pwc", "--max-ways", "16", "--json", str(out), "--plot", str(png))
    assert p.returncode == 0, p.stderr
    assert "tlb.l2: 128 sets x 12 ways" in p.stdout and "12 *" in p.stdout and "(approximate" in p.stdout
    doc = json.loads(out.read_text())
    assert [c["structure"] for c in doc["curves"]] == ["tlb.l2", "pwc.l2", "pwc.l3", "pwc.l4"]
    assert png.stat().st_size > 0


def test_a_structure_the_machine_lacks_is_one_line(tmp_path):
    assert_one_line_error(run_xlat("mrc", "-w", WL, "-n", "1k", "-s", "tlb.l3"), "tlb.l3", "known:")
    assert_one_line_error(run_xlat("mrc", "-w", WL, "-n", "1k", "-s", "pwc.l5"), "no level 5")
    assert_one_line_error(run_xlat("mrc", "-w", WL, "--json", str(tmp_path / "no" / "c.json")), "its directory", "does not exist")
    with pytest.raises(xlat.XlatError, match="curve_ways"):
        xlat.simulate("skylake", WL, refs=10, curves=["tlb.l2"], curve_ways=0)
