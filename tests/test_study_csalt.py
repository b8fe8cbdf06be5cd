"""The CSALT study (studies/csalt, seed 003 part 1): its spec parses with the five schemes on
csalt8 and two VMs per core, and its report renders from a tiny sweep with an xlat value for
every paper number the sweep covers and the partition-over-time figure."""
from __future__ import annotations

import json

import pytest

from xlat import report, study, sweep
from xlat_testutil import REPO, has_core, paper_numbers_without_value, study_copy

STUDY = REPO / "studies" / "csalt"
needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")
MAIN = ["conventional", "pomtlb", "dip", "csalt-d", "csalt-cd"]


def test_spec_runs_the_five_schemes_on_csalt8_with_two_vms():
    for quick in (False, True):
        spec = sweep.load_spec(STUDY / "sweep.toml", quick=quick)
        labels = list(dict.fromkeys(p.config.label for p in spec.points))
        assert labels[:5] == MAIN and "conventional-1vm" in labels and "csalt-cd-trace" in labels
        for p in spec.points:
            s = dict(p.config.overrides)
            # Every point in VMs but the native ones (Tab. 3.1's native column, Fig. 6.6).
            native = p.config.label.endswith("-native")
            assert p.config.base == "csalt8" and s.get("virt.enabled", False) is not native and p.prefault, p
            # Two VMs per core in every main scheme; the POM-TLB in all but conventional TLBs.
            if p.config.label in MAIN:
                assert s["virt.vms"] == 2 and s.get("pomtlb.enabled", False) == (p.config.label != "conventional"), p
        trace = [p for p in spec.points if p.config.label == "csalt-cd-trace"]
        assert trace and all(p.interval for p in trace) and {p.workload for p in trace} == {"cc"}
    full = sweep.load_spec(STUDY / "sweep.toml")
    assert {p.workload for p in full.points if p.config.label == "csalt-cd"} == {"gups", "bfs", "cc", "pagerank", "canneal", "mix"}
    # Natively: two processes per core on the main comparison's timer, as its two VMs are.
    for label in ("pomtlb-native", "csalt-cd-native"):
        s = dict(next(p for p in full.points if p.config.label == label).config.overrides)
        assert (s["os.processes"], s["os.timeslice_cycles"], s["pomtlb.enabled"]) == (2, 1000000, True), label
    assert {p.workload for p in full.points if p.config.label == "conventional-native"} == {"gups", "bfs", "cc", "pagerank", "canneal"}
    # The heterogeneous pairs (Tab. 6.2): two programs on the same 8 cores, in the main schemes only.
    pairs = [p for p in full.points if p.workload == "mix"]
    assert {p.config.label for p in pairs} == set(MAIN) and len(pairs) == 10
    assert all(dict(p.params)["programs"].count("@0-7") == 2 for p in pairs), pairs[0].params


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d, real = study_copy(STUDY, tmp_path)
    lines = ['refs = 30000', 'warmup = 30000', 'prefault = true', 'seeds = [1]']
    for c in real["configs"]:
        sets = dict(c.get("set") or {})
        sets["virt.switch_interval_cycles"] = 20000 if sets.get("virt.vms") != 1 else 1000000
        sets["csalt.epoch"] = 2000
        body = ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in sets.items())
        lines += ["[[configs]]", f'preset = "{c["preset"]}"', f'label = "{c["label"]}"', f"set = {{ {body} }}"]
        if "interval" in c:
            lines.append('interval = "5K"')
        if "workloads" in c:
            lines.append(f"workloads = {json.dumps(c['workloads'])}")
    for name, params in [("gups", 'footprint = "64M", threads = 8'), ("cc", "scale = 12, threads = 8")]:
        lines += ["[[workloads]]", f'name = "{name}"', f"params = {{ {params} }}"]
    lines += ["[[mixes]]", 'label = "gups+cc"', 'programs = ["gups:footprint=64M,threads=8@0-7", "cc:scale=12,threads=8@0-7"]',
              f"configs = {json.dumps(MAIN)}"]
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    # Every number has an xlat value (the sensitivity sweeps and the native points are in this
    # tiny copy too), but those no point of the study measures (paper.toml's note says "no ...
    # point") and those of the workloads this copy leaves out.
    entries = report.load_paper(STUDY / "paper.toml")
    unmeasured = {e["id"] for e in entries if e.get("note", "").startswith("no ")}
    # (The copy switches every VM at 20,000 cycles: no "30 ms" point.)
    absent = {e["id"] for e in entries if any(w in e["id"] for w in ("pagerank", "canneal", "bfs", "graph500", "30ms"))}
    missing = paper_numbers_without_value(text, STUDY / "paper.toml")
    assert unmeasured <= missing <= unmeasured | absent, missing - unmeasured - absent
    assert {"walk_cycles_native_gups", "walk_cycles_native_cc", "native_csalt_cd", "native_cc_csalt_cd"}.isdisjoint(missing), missing
    assert (res.report.parent / "speedup.png").is_file() and (res.report.parent / "partition.png").is_file()
    assert "## Sensitivity" in text
    # The pair's row in the main table, under its label.
    assert "| gups+cc | csalt-cd |" in text
