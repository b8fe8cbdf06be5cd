"""The combine study (studies/combine, issue #68): its sweep is the one mechanisms.py writes,
every combination it runs is a machine the engine accepts, the ones it leaves out are refused
by the engine for the reason the report gives, a pair's interaction is classified as the report
says, and the report renders from a tiny sweep with its interaction matrix and invariants."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import shutil
import sys

import pytest

from xlat import config, study, sweep
from xlat_testutil import REPO, has_core

STUDY = REPO / "studies" / "combine"
needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")


def _mechanisms():
    spec = importlib.util.spec_from_file_location("xlat_combine_mechanisms_test", STUDY / "mechanisms.py")
    m = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = m
    spec.loader.exec_module(m)
    return m


M = _mechanisms()


def test_sweep_toml_is_what_mechanisms_py_writes():
    assert (STUDY / "sweep.toml").read_text(encoding="utf-8") == M.render_sweep(), "run: python studies/combine/mechanisms.py"


def test_the_grid_is_each_alone_every_pair_and_all_in_three_scenarios():
    # (Its traced program comes from prepare.py: none here.)
    spec = sweep.load_spec(STUDY / "sweep.toml", traces=[])
    labels = {p.config.label.split(" ")[0] for p in spec.points}
    native, vm = M.allowed("native"), M.allowed("vm")
    assert "coal" in native and "coal" not in vm
    pairs = [p for p in itertools.combinations(native, 2) if frozenset(p) not in M.INCOMPATIBLE]
    want = {"base@native", "all@native", "base@vm", "all@vm", "pom@native", "pom@vm"} | {f"{n}@native" for n in native} | {f"{a}+{b}@native" for a, b in pairs}
    assert want <= labels
    assert "coal+tcat@native" in labels and not any(lab.startswith("coal") and lab.endswith("@vm") for lab in labels)
    # Every configuration runs under the three memory scenarios.
    for lab in labels:
        scen = {(dict(p.config.overrides)["os.page_policy"], dict(p.config.overrides)["phys.fragmentation"])
                for p in spec.points if p.config.label.split(" ")[0] == lab}
        assert scen == {(pp, fr) for _, pp, fr in M.SCENARIOS}, lab
    # PT-Baker's helper runs beside one program, so its configurations leave the mix out.
    mixed = {p.config.label.split(" ")[0] for p in spec.points if p.workload == "mix"}
    assert "base@native" in mixed and not any("ptb" in M.parse(lab)[0] for lab in mixed)
    # The invariant checker is on in every point.
    assert all(dict(p.config.overrides)["check.translations"] == 1000 for p in spec.points)
    # CSALT and PTP together: CSALT's policy with PTP inside its data ways.
    both = M.keys(("csalt", "ptp"), "native")
    assert both["cache.llc.policy"] == "csalt-cd" and both["csalt.ptp"] is True
    assert M.parse("all@native") == (tuple(M.MECHANISMS), "native") and M.everything("vm") == tuple(n for n in M.MECHANISMS if n != "coal")
    assert M.parse("pcc+fpt@vm") == (("pcc", "fpt"), "vm")


@needs_sim
def test_every_combination_is_a_machine_the_engine_accepts():
    for env in M.ENVS:
        for combo in M.combos(env):
            config.resolve(M.PRESET, M.keys(combo, env))


@needs_sim
def test_the_combinations_left_out_are_refused_for_the_reason_given():
    from xlat import _core

    assert not M.INCOMPATIBLE
    with pytest.raises(_core.XlatError, match="native walks only"):
        config.resolve(M.PRESET, {**M.ENVS["vm"], **M.MECHANISMS["coal"].set})
    # TCAT beside coalescing drops by co-tag; the co-tagless variant is refused.
    tcat = {**M.keys(("coal", "tcat"), "native"), "shootdown.protocol": "tcat-cotagless", "tlb.set_index": "vpn_xor_vm"}
    with pytest.raises(_core.XlatError, match="tcat-cotagless with coalesced TLB entries"):
        config.resolve(M.PRESET, tcat)


def test_a_pairs_kind():
    spec = importlib.util.spec_from_file_location("xlat_combine_report_test", STUDY / "report.py")
    r = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(r)
    assert r.kind(1.10 * 1.20, 1.10, 1.20) == "additive"
    assert r.kind(1.40, 1.10, 1.20) == "more than additive"
    # Below the product, at least the better one alone: both remove the same cost.
    assert r.kind(1.20, 1.10, 1.20) == "redundant"
    # Below the better one alone by more than 2 %: together they lose.
    assert r.kind(1.05, 1.10, 1.20) == "conflicting"
    assert r.kind(float("nan"), 1.1, 1.2) == ""


def test_a_mixs_speedup_is_its_programs_rates_not_its_cycles():
    """A mix's window is references of its programs together: a mechanism that speeds one
    program up has it run more of them, so the cycles of the window do not compare. Here the
    first program runs 25 % more references per cycle and the second 10 % fewer: the speed-up
    is the geometric mean of 1.25 and 0.9, though the window took longer."""
    import pandas as pd

    spec = importlib.util.spec_from_file_location("xlat_combine_report_test2", STUDY / "report.py")
    r = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(r)
    base = {"stat.core0.refs": 160_000, "stat.core0.cycles": 1_000_000, "stat.core1.refs": 1_840_000, "stat.core1.cycles": 1_000_000}
    fast = {"stat.core0.refs": 250_000, "stat.core0.cycles": 1_250_000, "stat.core1.refs": 2_070_000, "stat.core1.cycles": 1_250_000}
    rows = [{"config_label": f"{name}@native os.page_policy=never phys.fragmentation=none", "workload": w,
             "param.label": "gups+bfs" if w == "mix" else "", "set.os.page_policy": "never", "set.phys.fragmentation": "none",
             "stat.refs": 2_000_000, "stat.cycles": c["stat.core1.cycles"], **c}
            for name, c in (("base", base), ("pcc", fast)) for w in ("mix", "gups")]
    t = r.speedups(r.tidy(pd.DataFrame(rows)))
    got = dict(zip(zip(t["label"], t["workload"]), t["speedup"]))
    assert got[("pcc", "gups+bfs")] == pytest.approx((1.25 * 0.9) ** 0.5)
    assert got[("pcc", "gups")] == pytest.approx(1 / 1.25)  # a single program: cycles


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d = tmp_path / "studies" / "combine"
    d.mkdir(parents=True)
    for f in ("report.py", "report.md.in", "mechanisms.py"):
        shutil.copy(STUDY / f, d / f)
    pp = [s[1] for s in M.SCENARIOS]
    fr = [s[2] for s in M.SCENARIOS]
    lines = ["refs = 20000", "warmup = 20000", "prefault = true", "seeds = [1]"]
    runs = {"native": [(), ("pom",), ("pcc",), ("csalt",), ("ptp",), ("csalt", "ptp"), ("coal",), ("tcat",), ("coal", "tcat"), ("csalt", "tcat"),
                       M.everything("native")],
            "vm": [(), ("tcat",), ("ptb",), ("tcat", "ptb")]}
    for env, combos in runs.items():
        for combo in combos:
            keys = {**M.keys(combo, env), "os.promotion_first": 10000} if "pcc" in combo else M.keys(combo, env)
            lines += ["[[configs]]", f'preset = "{M.PRESET}"', f'label = "{M.label(combo, env)}"',
                      "set = { " + ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in keys.items()) + " }",
                      f'zip = {{ "os.page_policy" = {json.dumps(pp)}, "phys.fragmentation" = {json.dumps(fr)} }}']
    lines += ["[[workloads]]", 'name = "gups"', 'params = { footprint = "64M" }']
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    for heading in ("## Each mechanism alone, and all together", "## Which compose, which collide",
                    "## The best combination per workload", "## Mechanisms not combined", "## Invariants"):
        assert heading in text, heading
    assert (res.report.parent / "interactions-native.png").is_file() and (res.report.parent / "interactions-vm.png").is_file()
    # The pairs the sweep ran, each classified; CSALT with PTP among them.
    rows = [line for line in text.splitlines() if line.startswith("| native | csalt | ptp |")]
    assert len(rows) == 1 and any(k in rows[0] for k in ("additive", "redundant", "conflicting")), rows
    assert "| vm | tcat | ptb |  |" in text
    # CSALT and PTP share L2 and LLC space: the statistics behind their pair are shown, for
    # each run of it, whatever its kind.
    shared = [line for line in text.splitlines() if line.startswith("| native | csalt+ptp (") and "both steer L2 and LLC space" in line]
    assert [line.split(" | ")[2] for line in shared] == ["csalt", "ptp", "csalt+ptp"], shared
    # CSALT and TCAT both build on the POM-TLB: their pair is measured over it.
    assert "| native | csalt | tcat | pom |" in text
    assert "`coal` in a VM: PTE coalescing is modelled on native walks only" in text
    # Every point checked translations, none stale.
    assert re.search(r"[1-9][0-9,]* translations checked over\s+45 points, 0 stale\.", text), text.split("## Invariants")[1]


@needs_sim
def test_tcat_beside_coalescing_leaves_no_stale_translation():
    """Coalescing and TLB coherence through TCAT's co-tags: two threads of a heap that unmaps
    its oldest chunks and maps new ones (whose addresses come back), every translation checked
    against the page tables. A coalesced entry is dropped by the line of any of its four pages,
    so none is used stale. (Without that, dropping only entries homed in the line, 4,558 of
    these references used a stale translation.)"""
    import xlat

    keys = {**M.keys(("coal", "tcat"), "native"), "check.translations": 1, "check.on_stale": "count"}
    s = xlat.simulate({"base": M.PRESET, **keys}, "churn:threads=2", refs="300K", warmup="20K").stats
    assert s["shootdowns"] > 1000 and s["tcat.invalidations"] > 0 and s["tlb.l1d.hits_coalesced"] > 0
    assert s["check.translations_checked"] > 100_000 and s["stale_translation_uses"] == 0
