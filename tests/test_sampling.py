"""Sampled runs (simulate(sample=...), xlat run --sample): the estimate, its confidence
interval, and a plan that skips nothing measuring what the full run does."""
from __future__ import annotations

import math

import pytest

import xlat
from xlat.sampling import parse_plan, ratio_ci
from xlat_testutil import assert_one_line_error, run_xlat

WL = "gups:footprint=1G,updates=8M"


def test_a_plan_that_skips_nothing_is_the_full_run():
    full = xlat.simulate("skylake", WL, refs="300k", prefault=True, host_threads=1)
    s = xlat.simulate("skylake", WL, refs="300k", prefault=True, host_threads=1, sample="70k:0:70k")
    assert s["sample.units"] == 5 and s["sample.skipped_refs"] == 0
    for name in ("refs", "instructions", "cycles", "walks", "tlb.l2.misses"):
        assert s[name] == full[name], name
    assert s["ipc"] == pytest.approx(full["ipc"]) and s["ipc.ci95"] > 0
    # States are taken at the end, not summed.
    assert s["pt_bytes"] == full["pt_bytes"] > 0 and s["phys.free_bytes"] == full["phys.free_bytes"]


def test_a_sampled_estimate_brackets_the_full_run():
    full = xlat.simulate("skylake", WL, refs="4M", warmup="1M", prefault=True)
    s = xlat.simulate("skylake", WL, refs="4M", warmup="1M", prefault=True, sample="400k:100k:40k")
    assert s["sample.units"] == 10 and s["sample.simulated_refs"] == 10 * 140_000
    # (Within a few half-widths: the units are a sample, and warming is short.)
    assert abs(s["ipc"] - full["ipc"]) <= max(3 * s["ipc.ci95"], 0.02 * full["ipc"])
    assert abs(s["tlb.l2.mpki"] - full["tlb.l2.mpki"]) <= 0.02 * full["tlb.l2.mpki"]


def test_the_ratio_estimator():
    r, half = ratio_ci([10, 12, 8, 10], [20, 20, 20, 20])
    assert r == 0.5 and half == pytest.approx(3.182 * math.sqrt(8 / 3 / 4) / 20)
    assert math.isnan(ratio_ci([1], [2])[1])
    assert parse_plan("10M:1M:100k") == (10_000_000, 1_000_000, 100_000)
    for bad in ("10M:1M", "1M:1M:1", "x:1:1", "10:0:0"):
        with pytest.raises(xlat.XlatError, match="sample"):
            parse_plan(bad)
    # A workload that ends before a unit is measured says so instead of returning nothing.
    with pytest.raises(xlat.SimulationError, match="ended before a first measured unit"):
        xlat.simulate("skylake", "gups:footprint=1G,updates=1M", refs="10M", sample="5M:0:1k")


def test_xlat_run_sample_prints_the_interval_and_bad_plans_are_one_line():
    p = run_xlat("run", "-w", WL, "--prefault", "-n", "2M", "--sample", "500k:100k:50k")
    assert p.returncode == 0, p.stderr
    assert "sampled: 4 units of 50k references" in p.stdout and "± " in p.stdout
    # The window check counts what the sampled run covered, not only what it measured.
    assert "warning" not in p.stderr
    quiet = run_xlat("run", "-q", "-w", WL, "--prefault", "-n", "2M", "--sample", "500k:100k:50k")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == "", quiet.stderr
    assert_one_line_error(run_xlat("run", "-w", WL, "-n", "1M", "--sample", "1M:1M:1k"), "sample")
    assert_one_line_error(run_xlat("run", "-w", WL, "-n", "1M", "--sample", "1M:1k:1k", "--interval", "100k"), "sample")


# hashjoin's build is 4 references per inner tuple: build=512k is 2,097,152 of them, then the
# probe, whose chain walks read 12 MB of nodes at random (beyond the L2 TLB's 6 MB).
HJ = "hashjoin:build=512k,probe=1M"
BUILD = 4 * 524288


def test_skip_fast_forwards_to_the_same_place_as_simulating():
    # Skipping the build and warming in the probe measures what a run simulating the build as
    # its warm-up measures: the same references (instructions), and the same translations once
    # the warm-up has refilled the TLBs and page-walk caches (page tables and dirty bits are
    # kept across the skip). The caches, colder, may differ.
    full = xlat.simulate("skylake", HJ, refs="100k", warmup=BUILD + 100_000, prefault=True, host_threads=1)
    fwd = xlat.simulate("skylake", HJ, refs="100k", warmup="100k", skip=BUILD, prefault=True, host_threads=1)
    for name in ("refs", "instructions", "walks", "tlb.l2.misses", "walk_steps", "tlb.dirty_walks"):
        assert fwd[name] == full[name], name
    assert fwd.skip == BUILD and fwd.to_dict()["run"]["skip"] == BUILD
    # Skipping a quarter of the build measures the build, whose random reads (of the 4 MB of
    # buckets) stay within the TLBs' reach.
    build = xlat.simulate("skylake", HJ, refs="100k", warmup="100k", skip=BUILD // 4, prefault=True, host_threads=1)
    assert build["walks"] < 0.8 * full["walks"]


def test_skipping_past_the_end_is_one_line():
    with pytest.raises(xlat.SimulationError, match="ended after .* of the .* references to skip"):
        xlat.simulate("skylake", "gups:footprint=1G,updates=1k", refs="1k", skip="1M")
    assert_one_line_error(run_xlat("run", "-w", "gups:footprint=1G,updates=1k", "--skip", "1M"), "references to skip")


def test_a_sweep_point_may_skip(tmp_path):
    from xlat import sweep

    (tmp_path / "s.toml").write_text(f'name = "s"\nrefs = "10k"\n[[configs]]\npreset = "skylake"\n'
                                     f'[[workloads]]\nname = "hashjoin"\nparams = {{ build = "512k", probe = "1M" }}\nskip = {BUILD}\n'
                                     '[[workloads]]\nname = "gups"\n')
    hj, gups = sweep.load_spec(tmp_path / "s.toml").points
    assert hj.skip == BUILD and hj.options()["skip"] == BUILD
    # (A point without one keeps the id it had: no `skip` in its options.)
    assert gups.skip == 0 and "skip" not in gups.options()
    assert sweep.point_id("h", hj, "v") != sweep.point_id("h", sweep.Point(**{**hj.__dict__, "skip": 0}), "v")
