"""The calibration tools (calibration/): the synthetic traces read back as the loads they
describe, and a preset's ChampSim configuration is the preset's machine as ChampSim counts it
(its split latencies, its DRAM in channels, ranks and banks, walks bounded by the DTLB's MSHRs)."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

import xlat
from xlat_testutil import REPO


@pytest.fixture(scope="module")
def cal():
    sys.path.insert(0, str(REPO / "calibration"))
    try:
        yield importlib.import_module("synth"), importlib.import_module("machine")
    finally:
        sys.path.remove(str(REPO / "calibration"))


def test_readstream_is_a_load_every_third_instruction_a_line_apart(cal, tmp_path):
    synth, _ = cal
    path = tmp_path / "rs.champsim.xz"
    synth.write("readstream:footprint=16K,every=3", path)
    assert not path.with_suffix(".tmp").exists()
    r = xlat.simulate("skylake", trace=str(path), trace_format="champsim", prefault=True)
    # 16 KB of lines: 256 loads, 768 instructions, four pages walked once each.
    assert (r["loads"], r["stores"], r["instructions"]) == (256, 0, 768)
    assert r["walks"] == 4
    assert r["cache.l1d.data.misses"] == 256


def test_a_bad_synthetic_spec_is_one_clear_error(cal, tmp_path):
    synth, _ = cal
    with pytest.raises(ValueError, match="unknown synthetic trace 'nope'"):
        synth.write("nope", tmp_path / "x.xz")
    with pytest.raises(ValueError, match="expected key=value"):
        synth.write("readstream:32M", tmp_path / "x.xz")
    assert list(tmp_path.iterdir()) == []


def test_skylakes_champsim_machine_is_the_presets(cal):
    _, machine = cal
    c = machine.champsim_config("skylake")
    k = xlat.resolve_config("skylake")
    assert c["executable_name"] == "champsim_skylake_base"
    cpu = c["ooo_cpu"][0]
    assert (cpu["frequency"], cpu["rob_size"], cpu["lq_size"], cpu["sq_size"]) == (2000, 224, 72, 56)
    for key, pre in (("L1D", "cache.l1d"), ("L2C", "cache.l2"), ("LLC", "cache.llc")):
        assert c[key]["sets"] * c[key]["ways"] * 64 == k[f"{pre}.size_kb"] * 1024
    # ChampSim pays a cache's tag half (latency - ceil(latency / 2)) on the way down and its fill
    # half on the way back: its hits then cost xlat's load-to-use latencies, 4, 12 and 42.
    l1, l2, llc = (c[key]["latency"] for key in ("L1D", "L2C", "LLC"))
    tag = lambda lat: lat - (lat + 1) // 2
    assert tag(l1) == 4
    assert l1 + tag(l2) == 12
    assert l1 + l2 + tag(llc) == 42
    assert c["L1D"]["mshr_size"] == 10
    # Walks in flight: ChampSim's walker takes every request, its DTLB's MSHRs bound them.
    assert c["DTLB"]["mshr_size"] == 2
    assert c["STLB"]["sets"] * c["STLB"]["ways"] == 1536
    ptw = c["PTW"]
    assert [(ptw[f"pscl{n}_set"], ptw[f"pscl{n}_way"]) for n in (4, 3, 2)] == [(1, 4), (1, 4), (1, 24)]
    # DDR4-2400 in four channels of 2 ranks x 16 banks, 8 KB rows, 14.16 ns = 17 clocks.
    mem = c["physical_memory"]
    assert (mem["data_rate"], mem["channels"]) == (2400, 4)
    assert mem["channels"] * mem["ranks"] * mem["bankgroups"] * mem["banks"] == 128
    assert mem["bank_columns"] * mem["channel_width"] == 8192
    assert (mem["tCAS"], mem["tRCD"], mem["tRP"]) == (17, 17, 17)
    assert c["virtual_memory"]["num_levels"] == 4


def test_each_change_is_the_same_in_both_simulators(cal):
    _, machine = cal
    base = machine.champsim_config("skylake")
    stlb4 = machine.champsim_config("skylake", "stlb4")
    assert stlb4["STLB"]["sets"] * stlb4["STLB"]["ways"] == int(machine.xlat_keys("skylake", "stlb4")["tlb.l2.entries"]) == 4 * 1536
    huge = machine.champsim_config("skylake", "stlbhuge")
    keys = machine.xlat_keys("skylake", "stlbhuge")
    assert huge["STLB"]["sets"] * huge["STLB"]["ways"] == int(keys["tlb.l2.entries"]) >= 32768
    pwc4 = machine.champsim_config("skylake", "pwc4")
    keys = machine.xlat_keys("skylake", "pwc4")
    for n in (4, 3, 2):
        assert pwc4["PTW"][f"pscl{n}_way"] == 4 * base["PTW"][f"pscl{n}_way"] == int(keys[f"pwc.l{n}.entries"])
    page2m = machine.champsim_config("skylake", "page2m")
    assert (page2m["page_size"], page2m["virtual_memory"]["num_levels"]) == (2 << 20, 3)
    assert machine.xlat_keys("skylake", "page2m")["os.page_policy"] == "ideal"
    # PTP: the L2's and LLC's policy in both, ChampSim's from this repository's own module.
    ptp = machine.champsim_config("skylake", "ptp")
    assert (ptp["L2C"]["replacement"], ptp["LLC"]["replacement"]) == ("ptp", "ptp")
    assert base["L1D"].get("replacement", "lru") == ptp["L1D"].get("replacement", "lru") == "lru"
    keys = machine.xlat_keys("skylake", "ptp")
    assert (keys["cache.l2.policy"], keys["cache.llc.policy"], keys["ptp.mode"]) == ("ptp", "ptp", "always")
    assert (REPO / "calibration" / "champsim" / "replacement" / "ptp" / "ptp.cc").exists()
    # Four times the misses in flight: the L1D's MSHRs in both (ChampSim's L2 and LLC as the
    # base machine sizes them from the L1D's: xlat bounds their misses by the L1D's alone).
    mshr4 = machine.champsim_config("csalt8", "mshr4")
    assert mshr4["L1D"]["mshr_size"] == 4 * machine.champsim_config("csalt8")["L1D"]["mshr_size"] == int(machine.xlat_keys("csalt8", "mshr4")["core.mshrs"]) == 40
    assert mshr4["L2C"]["mshr_size"] >= 2 * mshr4["L1D"]["mshr_size"]
    with pytest.raises(ValueError, match="unknown change"):
        machine.champsim_config("skylake", "bogus")


@pytest.mark.parametrize("preset", ["haswell", "csalt8", "zen3", "zenplus", "skylake4", "zen4", "zen5"])
def test_every_study_preset_has_a_champsim_machine(cal, preset, tmp_path):
    _, machine = cal
    paths = machine.write_configs(preset, tmp_path)
    assert [p.name for p in paths] == [f"champsim_{preset}_{ch}.json" for ch in machine.CHANGES]
    c = machine.champsim_config(preset)
    assert c["physical_memory"]["channels"] >= 1
    assert c["L1D"]["mshr_size"] == xlat.resolve_config(preset)["core.mshrs"]


def test_what_champsim_cannot_do_alike_is_given_up_in_xlat(cal):
    _, machine = cal
    # Zen 3: walks enter at the L2 in both; its prefetchers and victim LLC, which ChampSim's
    # configuration cannot express, are off in xlat's runs, for every change.
    c = machine.champsim_config("zen3")
    assert c["PTW"]["lower_level"] == "cpu0_L2C"
    assert "lower_level" not in machine.champsim_config("skylake")["PTW"]
    assert all(c[k]["prefetcher"] == "no" for k in ("L1D", "L2C", "LLC"))
    for ch in machine.CHANGES:
        keys = machine.xlat_keys("zen3", ch)
        assert (keys["cache.l1d.prefetcher"], keys["cache.l2.prefetcher"], keys["cache.llc.fill"]) == ("none", "none", "inclusive")
        # Zen's L2 TLB holds the page directory entries, ChampSim's STLB cannot: both get a
        # 24-entry PSCL2 instead (four times that under pwc4).
        assert keys["tlb.l2.pdes"] == "false"
        assert keys.get("pwc.l2.entries", "24") == ("96" if ch == "pwc4" else "24")
    assert (c["PTW"]["pscl2_set"], c["PTW"]["pscl2_way"]) == (1, 24)
    assert "tlb.l2.pdes" not in machine.xlat_keys("skylake", "base")
    # A DRAM controller's own latencies (skylake's gem5 front and back ends, 20 ns): ChampSim's
    # read costs its bank timings, its queues and the burst, so xlat keeps the burst alone
    # (DDR4-2400: 8 transfers, 3.33 ns); where the preset charges the burst alone already
    # (csalt8's DDR4-2133, 3.75 ns) or its DRAM is flat (zen3), nothing changes.
    assert machine.xlat_keys("skylake", "base")["dram.latency_ns"] == "3.33"
    assert machine.xlat_keys("skylake4", "page2m")["dram.latency_ns"] == "3.33"
    # zenplus's controller and fabric (27 ns outside the banks): the DDR4-2933 burst, 2.73 ns.
    assert machine.xlat_keys("zenplus", "base")["dram.latency_ns"] == "2.73"
    assert "dram.latency_ns" not in machine.xlat_keys("csalt8", "base")
    assert "dram.latency_ns" not in machine.xlat_keys("zen3", "base")


def test_a_banked_ddr4_2133_is_champsims_too(cal):
    _, machine = cal
    mem = machine.champsim_config("csalt8")["physical_memory"]
    # Tab. 6.1's DDR4-2133 14-14-14 on one 64-bit channel; 16 banks.
    assert (mem["data_rate"], mem["channels"]) == (2133, 1)
    assert (mem["tCAS"], mem["tRCD"], mem["tRP"]) == (14, 14, 14)
    assert mem["ranks"] * mem["bankgroups"] * mem["banks"] == 16
    # haswell: the E5-2667 v3's four DDR4-2133 channels, 15-15-15, two ranks a channel.
    mem = machine.champsim_config("haswell")["physical_memory"]
    assert (mem["data_rate"], mem["channels"], mem["ranks"]) == (2133, 4, 2)
    assert (mem["tCAS"], mem["tRCD"], mem["tRP"]) == (15, 15, 15)
    assert mem["ranks"] * mem["bankgroups"] * mem["banks"] * mem["channels"] == xlat.resolve_config("haswell")["dram.banks"]


def test_a_ddr5_preset_gets_its_own_data_rate(cal):
    _, machine = cal
    # zen4's one DDR5-4800 channel (38.4 GB/s) is two DDR4-2400 channels' worth too: its rate is
    # named, not guessed from the bandwidth. JEDEC DDR5-4800B 40-39-39; 64 banks.
    mem = machine.champsim_config("zen4")["physical_memory"]
    assert (mem["data_rate"], mem["channels"]) == (4800, 1)
    assert (mem["tCAS"], mem["tRCD"], mem["tRP"]) == (40, 39, 39)
    assert mem["ranks"] * mem["bankgroups"] * mem["banks"] == xlat.resolve_config("zen4")["dram.banks"]
    # Outside the banks xlat keeps ChampSim's burst alone: 8 transfers at 4800 MT/s.
    assert machine.xlat_keys("zen4", "base")["dram.latency_ns"] == "1.67"
    mem = machine.champsim_config("zen5")["physical_memory"]
    assert (mem["data_rate"], mem["channels"], mem["tCAS"]) == (6000, 1, 48)
    # The DDR4 presets keep theirs.
    assert machine.champsim_config("skylake")["physical_memory"]["data_rate"] == 2400


def test_the_fit_counts_ipc_within_15_percent_and_speed_ups_within_1_2x():
    sys.path.insert(0, str(REPO / "calibration"))
    try:
        run = importlib.import_module("run")
    finally:
        sys.path.remove(str(REPO / "calibration"))

    def sims(cs, xc, cs2, xc2):
        walk = {"walk_latency": 500.0}
        return {
            "champsim": {"base": {"ipc": cs, **walk}, "page2m": {"ipc": cs2}},
            "xlat+cs": {"base": {"ipc": xc, **walk}, "page2m": {"ipc": xc2}},
            "xlat": {"base": {"ipc": xc}, "page2m": {"ipc": xc}},
        }

    rows = {
        "a": sims(1.0, 1.10, 2.0, 2.2),  # within 15 %, speed-ups equal
        "b": sims(1.0, 1.20, 1.0, 1.5),  # 20 % off; ChampSim gains nothing, xlat 25 %: apart 1.25x
        "c": sims(1.0, 0.90, 1.01, 0.905),  # neither gains more than 2 %: not a pair
        "d": {"champsim": {}, "xlat+cs": {}, "xlat": {}},  # no run: left out
    }
    out = run.fit(rows, ("page2m",))
    assert "IPC within 15 % on 2 of 3 traces" in out
    assert "speed-ups within 1.2x on 1 of 2 (trace, change) pairs" in out
    assert "| b | 1.000 | 1.200 (+20 %) | 500 / 500 | +0 % / +25 % / +0 % | 1.25x (xlat more) |" in out


def test_xlat_cs_gets_champsims_write_drains_on_a_banked_dram(cal):
    """ChampSim drains 7/8 to 6/8 of its 64-entry write queue, 8 writes a channel, turning the bus
    around for tRAS each way; xlat+cs gets the same (the presets keep their own controllers')."""
    _, machine = cal
    mem = machine.champsim_config("csalt8")["physical_memory"]
    assert (mem["channels"], mem["wq_size"]) == (1, 64)
    keys = machine.champsim_drains("csalt8")
    assert keys["dram.write_batch"] == "8"
    assert float(keys["dram.turnaround_ns"]) == pytest.approx(mem["tRAS"] * 2000 / mem["data_rate"], abs=0.01)
    assert machine.champsim_drains("haswell")["dram.write_batch"] == "32"  # four channels
    assert machine.champsim_drains("zen3") == {}  # a flat DRAM has no controller to drain
    assert xlat.resolve_config("csalt8")["dram.write_batch"] == 19


def test_champsims_stored_numbers_are_kept_for_the_same_configuration_and_trace_only(tmp_path):
    sys.path.insert(0, str(REPO / "calibration"))
    try:
        run = importlib.import_module("run")
    finally:
        sys.path.remove(str(REPO / "calibration"))
    cfg = tmp_path / "champsim_x_base.json"
    cfg.write_text('{"ooo_cpu": [{"rob_size": 224}]}\n')
    sha = run.config_sha(cfg)
    trace = tmp_path / "gups.champsim.xz"
    trace.write_bytes(b"\x00" * 3_000_000)
    t = run.config_sha(trace)
    store = tmp_path / "champsim-x.json"
    kept = {"ipc": 0.5, "config_sha": sha, "trace_sha": t}
    run.save(store, {"gups": {"base": kept}, "bfs": {"base": {**kept, "config_sha": "0" * 16}}, "cc": {"base": {**kept, "trace_sha": "1" * 16}}})
    champ = json.loads(store.read_text())
    traces = {"gups": t, "bfs": t, "cc": t, "stream": t}
    # gups's run is kept; bfs's came from another configuration, cc's from another recording
    # of its trace, and stream has none.
    assert run.pending(traces, {"base": sha}, champ) == [("bfs", "base"), ("cc", "base"), ("stream", "base")]
    assert len(run.pending(traces, {"base": sha}, champ, rerun=True)) == 4
    # Another configuration (a ROB of another size) reruns every trace.
    cfg.write_text('{"ooo_cpu": [{"rob_size": 256}]}\n')
    assert len(run.pending(traces, {"base": run.config_sha(cfg)}, champ)) == 4
    assert not list(tmp_path.glob("*.tmp"))
