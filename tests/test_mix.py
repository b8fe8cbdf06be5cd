"""Mixes of programs: `xlat.simulate(mix=...)`, `xlat run --mix`, the weighted speedup, and
`[[mixes]]` in sweep specs."""
from __future__ import annotations

import math

import pytest

import xlat
from xlat import sweep
from xlat_testutil import assert_one_line_error, has_core, run_xlat

pytestmark = pytest.mark.skipif(not has_core(), reason="needs the compiled extension")

MIX = "gups:footprint=64M@0,random:footprint=64M@1"
SMALL = {"system.cores": 2, "cache.llc.size_kb": 1024}


def test_a_mix_reports_each_program_beside_the_totals():
    r = xlat.simulate(None, mix=MIX, refs=40_000, prefault=True, **SMALL)
    assert r.workload["name"] == "mix"
    assert r.workload["params"]["prog0"].startswith("gups:footprint=64M,")
    assert ",seed=2," in r.workload["params"]["prog1"], "program i runs with seed + i"
    assert r["prog0.refs"] + r["prog1.refs"] == r["refs"] == 40_000
    assert r["prog0.walks"] + r["prog1.walks"] == r["walks"]
    # Two address spaces: two page tables.
    assert r["pt.nodes.l4"] == 2
    again = xlat.simulate(None, mix=["gups:footprint=64M@0", "random:footprint=64M@1"], refs=40_000, prefault=True, **SMALL)
    assert again.stats == r.stats, "a mix is deterministic (and a list is the same mix)"


def test_weighted_speedup_is_the_sum_of_each_programs_ratio():
    assert xlat.weighted_speedup([0.5, 1.0], [1.0, 1.0]) == 1.5
    assert math.isnan(xlat.weighted_speedup([0.5, 1.0], [0.0, 1.0]))
    with pytest.raises(ValueError):
        xlat.weighted_speedup([1.0], [1.0, 2.0])


def test_run_mix_compares_each_program_with_itself_alone():
    cache: dict = {}
    # Each core its own half of the LLC: the programs barely meet (DRAM has no queueing by
    # default), so each runs almost as fast as alone.
    m = xlat.run_mix(None, MIX, refs=40_000, prefault=True, cache=cache, **SMALL, **{"cache.llc.ways_per_core": 4})
    assert len(m.alone) == 2 and len(cache) == 2
    for p, alone in zip(m.programs, m.alone):
        assert alone["refs"] == p["refs"], "alone, a program replays the references it ran in the mix"
        assert p["speedup"] == pytest.approx(p["ipc_shared"] / p["ipc_alone"])
    assert m.weighted_speedup == pytest.approx(sum(p["speedup"] for p in m.programs))
    assert 1.9 < m.weighted_speedup <= 2.02
    xlat.run_mix(None, MIX, refs=40_000, prefault=True, cache=cache, **SMALL, **{"cache.llc.ways_per_core": 4})
    assert len(cache) == 2, "alone runs are cached"


def test_cli_mix_prints_each_program_and_the_weighted_speedup():
    p = run_xlat("run", "-c", "skylake4", "--mix", MIX, "--refs", "40000", "--prefault", "--weighted-speedup")
    assert p.returncode == 0, p.stderr
    assert "prog0 gups" in p.stdout and "prog1 random" in p.stdout
    assert "weighted speedup" in p.stdout


@pytest.mark.parametrize(("args", "needle"), [
    (("--mix", "gups@0,random@0"), "programs 0 and 1 both run on core 0: programs share a core only in VMs"),
    (("--mix", "random@0,gups:threads=2@0-1"), "shares some of its cores but not all"),
    (("--mix", "gups:threads=2@3"), "has 2 thread(s) but @ names 1 core(s)"),
    (("--mix", "gups@9"), "program 0 runs on core 9, but the machine has 4 cores"),
    (("--mix", "gups@x"), "not a core"),
    (("--mix", "gups", "--workload", "gups"), "not --workload and --mix"),
    (("--workload", "gups", "--weighted-speedup"), "--weighted-speedup needs --mix"),
])
def test_bad_mixes_get_one_line(args, needle):
    assert_one_line_error(run_xlat("run", "-c", "skylake4", *args, "--refs", "1000"), needle)


def test_a_spec_may_say_mix_or_mixes():
    one = sweep.load_spec({"name": "m", "configs": ["skylake4"], "mix": [{"programs": ["gups@0", "random@1"]}]})
    two = sweep.load_spec({"name": "m", "configs": ["skylake4"], "mixes": [{"programs": ["gups@0", "random@1"]}]})
    assert one.points == two.points and one.points[0].workload == "mix"
    with pytest.raises(sweep.SpecError, match="not both"):
        sweep.load_spec({"name": "m", "configs": ["skylake4"], "mix": [{"programs": "gups@0"}], "mixes": [{"programs": "gups@0"}]})


def test_mixes_run_on_the_configs_they_name():
    spec = sweep.load_spec({"name": "m", "refs": 1000, "workloads": ["gups"],
                            "configs": [{"preset": "skylake", "label": "one"},
                                        {"preset": "skylake4", "label": "four", "workloads": ["mix"]}],
                            "mixes": [{"programs": "gups@0,gups@1,gups@2,gups@3", "configs": ["four"]}]})
    assert sorted((p.config.label, p.workload) for p in spec.points) == [("four", "mix"), ("one", "gups")]


def test_sweep_specs_take_mixes(tmp_path):
    spec = sweep.load_spec({"name": "m", "refs": 20_000, "configs": [{"preset": "skylake4"}],
                            "mixes": [{"label": "pair", "programs": ["gups:footprint=64M@0", "random:footprint=64M@1"]}]})
    (p,) = spec.points
    assert (p.workload, p.workload_spec) == ("mix", "gups:footprint=64M@0,random:footprint=64M@1")
    (task,) = sweep.prepare(spec)
    row = sweep.run_task(task.config, p.workload_spec, p.options(), task.meta)
    assert row["status"] == "ok", row["error"]
    assert row["param.label"] == "pair" and row["stat.prog0.refs"] + row["stat.prog1.refs"] == 20_000
    for bad, needle in [
        ({"programs": ["gups@0", "nosuch@1"]}, "unknown workload 'nosuch'"),
        ({"programs": ["gups:sizes=1@0"]}, "no parameter 'sizes'"),
        ({"programs": "gups@z"}, "not a core"),
        ({"programs": []}, "'programs' must be a list"),
        ({"programs": ["gups@0"], "cores": 2}, "unknown key 'cores'"),
        ({"programs": ["gups@0"], "configs": ["nosuch"]}, "config 'nosuch' is not a label"),
    ]:
        with pytest.raises(sweep.SpecError, match=needle):
            sweep.load_spec({"name": "m", "configs": ["skylake4"], "mixes": [bad]})
