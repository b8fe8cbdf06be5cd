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
