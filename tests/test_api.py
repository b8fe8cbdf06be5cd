"""The Python API: xlat.simulate and Result."""
from __future__ import annotations

import json
import math

import pytest

import xlat
from xlat_testutil import has_config_key, has_core

pytestmark = pytest.mark.skipif(not has_core("simulate"), reason="engine has no simulate() yet")

# Small enough to keep the suite fast, big enough to miss in every TLB level: a 1 GiB GUPS
# table is 262,144 pages against 1,536 L2 TLB entries.
WL = "gups:footprint=1G"
REFS = 30_000

GLOSSARY = [
    "refs", "instructions", "cycles", "ipc",
    "tlb.l1d.misses", "tlb.l2.misses", "tlb.l2.mpki",
    "walks", "walk_steps", "walk_steps_per_walk",
    "pwc.l4.hits", "pwc.l3.hits", "pwc.l2.hits",
    "pte_served.l1", "pte_served.l2", "pte_served.llc", "pte_served.dram",
    "pt_bytes", "cache.llc.misses", "faults",
]


@pytest.fixture(scope="module")
def result():
    return xlat.simulate("skylake", WL, refs=REFS, seed=1)


def test_simulate_returns_the_glossary_stats(result):
    missing = [k for k in GLOSSARY if k not in result.stats]
    assert not missing, f"stats missing from the engine's output: {missing}"
    s = result.stats
    assert s["refs"] == REFS
    assert s["instructions"] >= s["refs"] > 0
    assert 0 < s["ipc"] <= xlat.resolve_config("skylake")["core.width"]
    assert s["walks"] > 0 and s["tlb.l2.misses"] > 0
    assert math.isclose(s["walk_steps_per_walk"], s["walk_steps.miss"] / s["walks"], rel_tol=1e-9)
    # Every read is a TLB-miss walk's, a dirty-bit walk's or a retry's.
    assert s["walk_steps.miss"] <= s["walk_steps"]
    assert result["ipc"] == s["ipc"]


def test_result_carries_config_workload_and_run(result):
    assert result.config["tlb.l2.entries"] == 1536
    assert len(result.config) == len(xlat._core.config_keys())
    assert result.workload["name"] == "gups"
    assert result.workload["params"]["footprint"]  # every parameter resolved, not just ours
    assert result.config_name == "skylake"
    assert len(result.config_hash) == 12
    assert result.xlat_version == xlat.__version__
    text = repr(result)
    assert text.startswith("<xlat.Result gups on skylake") and "IPC" in text and "\n" not in text


def test_same_seed_same_numbers(result):
    again = xlat.simulate("skylake", WL, refs=REFS, seed=1)
    assert again.stats == result.stats
    assert again.to_json() == result.to_json()


def test_one_or_two_host_threads_give_the_same_numbers(result):
    # Two threads split each reference into translation and memory side (one core, native).
    for threads in (1, 2):
        assert xlat.simulate("skylake", WL, refs=REFS, seed=1, host_threads=threads).stats == result.stats
    with pytest.raises(ValueError, match="host_threads"):
        xlat.simulate("skylake", WL, refs=10, host_threads=0)
    # The workload's simulated threads have a name of their own, which the run's do not share.
    with pytest.raises(xlat.ArgumentError, match=r"host_threads=1\|2; a workload's simulated threads"):
        xlat.simulate("skylake", WL, refs=10, threads=1)


def test_the_seed_reaches_the_workload():
    # `random` draws from it; GUPS takes a later window of HPCC's sequence (seed 1 = HPCC's).
    for wl in ("random:footprint=1G", "gups:footprint=1G"):
        a, b = (xlat.simulate("skylake", wl, refs=20_000, seed=s) for s in (1, 2))
        assert (a.workload["params"]["seed"], b.workload["params"]["seed"]) == ("1", "2")
        assert a.stats != b.stats, wl


def test_overrides_both_spellings():
    a = xlat.simulate("skylake", WL, refs=REFS, tlb__l2__entries=3072)
    b = xlat.simulate("skylake", WL, refs=REFS, **{"tlb.l2.entries": 3072})
    assert a.config["tlb.l2.entries"] == b.config["tlb.l2.entries"] == 3072
    assert a.stats == b.stats and a.config_hash == b.config_hash
    assert a.config_name == "skylake+1"


def test_to_pandas_is_one_row(result):
    df = result.to_pandas()
    assert len(df) == 1
    row = df.iloc[0]
    assert row["config_hash"] == result.config_hash
    assert row["workload"] == "gups" and row["seed"] == 1
    assert row["ipc"] == result.stats["ipc"]
    assert "workload.footprint" in df.columns
    assert not any(c.startswith("config.") for c in df.columns)
    wide = result.to_pandas(config=True)
    assert wide.iloc[0]["config.tlb.l2.entries"] == 1536


def test_json_round_trip(result, tmp_path):
    p = tmp_path / "r.json"
    text = result.to_json(p)
    doc = json.loads(p.read_text())
    assert json.loads(text) == doc
    assert {"xlat_version", "config", "workload", "stats"} <= set(doc)
    back = xlat.Result.from_json(p)
    assert back.stats == result.stats and back.config == result.config and back.workload == result.workload


def test_errors_are_xlat_errors():
    for exc in (xlat.ConfigError, xlat.WorkloadError, xlat.TraceError, xlat.SimulationError):
        assert issubclass(exc, xlat.XlatError)
    with pytest.raises(xlat.WorkloadError, match="nosuch"):
        xlat.simulate("skylake", "nosuch", refs=10)
    with pytest.raises(xlat.ConfigError, match="tlb.l2.entires"):
        xlat.simulate("skylake", WL, refs=10, tlb__l2__entires=5)
    with pytest.raises(xlat.ConfigError, match="nosuch"):
        xlat.simulate("nosuch", WL, refs=10)
    with pytest.raises(ValueError, match="refs"):
        xlat.simulate("skylake", WL, refs="lots")


def test_progress_is_reported():
    seen = []
    xlat.simulate("skylake", WL, refs=400_000, progress=lambda done, total: seen.append((done, total)))
    # The engine reports a few times a second; a run this size may finish within one period,
    # so only check what was reported.
    for done, total in seen:
        assert 0 <= done <= 400_000 and total in (None, 400_000)


@pytest.mark.skipif(not has_config_key("tlb.perfect"), reason="engine has no tlb.perfect key yet")
def test_a_perfect_tlb_never_walks_and_is_not_slower(result):
    perfect = xlat.simulate("skylake", WL, refs=REFS, **{"tlb.perfect": True})
    assert perfect.stats["walks"] == 0
    assert perfect.stats["ipc"] >= result.stats["ipc"]


# --- statistics over time --------------------------------------------------------------------

# Run to its end (409,600 references, 2.7 M instructions) in a tenth of a second, with a warm-up
# so that the first interval starts after it.
SERIES_WL = "gups:footprint=64M,updates=200K"


@pytest.fixture(scope="module")
def timed():
    return xlat.simulate("skylake", SERIES_WL, warmup="20K", interval="200K")


def test_series_adds_up_to_the_totals(timed):
    s, series = timed.stats, timed.series
    assert timed.interval == 200_000
    assert len(series) == 13, [iv["instructions"] for iv in series]
    for name in ("refs", "walks", "instructions", "cycles", "tlb.l2.misses", "faults"):
        assert sum(iv[name] for iv in series) == s[name], name
    # Boundaries are checked every 256 references (GUPS: 128 updates of 13 instructions):
    # intervals run a little long, never short (but for the last one).
    for iv in series[:-1]:
        assert 200_000 <= iv["instructions"] < 200_000 + 128 * 13
    # Taking the intervals changes nothing.
    assert xlat.simulate("skylake", SERIES_WL, warmup="20K").stats == s


def test_series_derives_the_headline_ratios_per_interval(timed):
    width = xlat.resolve_config("skylake")["core.width"]
    for iv in timed.series:
        assert 0 <= iv["ipc"] <= width
        assert math.isclose(iv["ipc"], iv["instructions"] / iv["cycles"])
        assert math.isclose(iv["tlb.l2.mpki"], 1000 * iv["tlb.l2.misses"] / iv["instructions"])
        assert math.isclose(iv["tlb.l1d.mpki"], 1000 * iv["tlb.l1d.misses"] / iv["instructions"])
        assert math.isclose(iv["walk_cycles_per_walk"], iv["walk_cycles"] / (iv["walks"] + iv["tlb.dirty_walks"]))
        assert math.isclose(iv["cache.llc.miss_rate"], iv["cache.llc.misses"] / iv["cache.llc.accesses"])
    # Levels that fell are negative changes (free memory, as pages are faulted in).
    assert timed.series[0]["phys.free_bytes"] < 0
    # A ratio with nothing to divide by is left out, not 0.
    quiet = xlat.api.interval_ratios({"instructions": 1000, "cycles": 500, "walks": 0, "walk_cycles": 0,
                                      "cache.l2.accesses": 0, "cache.l2.misses": 0})
    assert quiet["ipc"] == 2.0 and "walk_cycles_per_walk" not in quiet and "cache.l2.miss_rate" not in quiet
    assert xlat.api.interval_ratios(quiet) == quiet


def test_series_frame_has_one_row_per_interval(timed):
    df = timed.series_frame()
    assert list(df["interval"]) == list(range(len(timed.series)))
    assert df["end_instructions"].iloc[-1] == timed.stats["instructions"]
    assert list(df["ipc"]) == [iv["ipc"] for iv in timed.series]
    assert len(xlat.simulate("skylake", SERIES_WL, refs=1000).series_frame()) == 0


def test_json_round_trip_keeps_the_series(timed, tmp_path):
    p = tmp_path / "r.json"
    timed.to_json(p)
    doc = json.loads(p.read_text())
    assert doc["run"]["interval"] == 200_000 and len(doc["series"]) == len(timed.series)
    back = xlat.Result.from_json(p)
    assert back.series == timed.series and back.interval == timed.interval and back.stats == timed.stats
    # A document of counts alone gets its ratios back.
    derived = ("ipc", ".mpki", "_per_walk", ".miss_rate")
    doc["series"] = [{k: v for k, v in iv.items() if not k.endswith(derived)} for iv in doc["series"]]
    assert "ipc" not in doc["series"][0] and "walks" in doc["series"][0]
    assert xlat.Result.from_dict(doc).series == timed.series
    # Without an interval there is no series at all.
    plain = xlat.simulate("skylake", SERIES_WL, refs=1000)
    assert plain.series == [] and plain.interval is None and "series" not in plain.to_dict()


def test_interval_takes_counts_and_rejects_the_rest():
    # (10,000 references are 65,000 instructions: 5 intervals of at least 10,000 and the rest.)
    assert len(xlat.simulate("skylake", SERIES_WL, refs=10_000, interval=10_000).series) == 6
    assert xlat.simulate("skylake", SERIES_WL, refs=1000, interval=0).series == []
    for bad in ("abc", -5, 1.5, True):
        with pytest.raises(ValueError, match="interval"):
            xlat.simulate("skylake", SERIES_WL, refs=1000, interval=bad)
