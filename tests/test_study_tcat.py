"""The TCAT study (studies/tcat, seed 003 part 2): its spec runs every protocol at 2:1 with one
thread per vCPU, Tab. 6.3's other ratios, the native rows and the no-flush counterexample; its
report renders from a tiny sweep with an xlat value for every paper number, and no row but the
counterexample uses a stale translation."""
from __future__ import annotations

import json
import shutil

import pytest

from xlat import results, study, sweep
from xlat_testutil import REPO, has_core, paper_numbers_without_value, study_copy

STUDY = REPO / "studies" / "tcat"
needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")
CORES = 8


def _resolved(label_base):
    from xlat import config

    return config.resolve(str(STUDY / label_base), [])


def test_spec_gives_each_vcpu_a_thread_and_each_ratio_its_penalty():
    vm, native = _resolved("vm.toml"), _resolved("native.toml")
    assert (vm["virt.enabled"], vm["virt.vcpus_per_core"], vm["check.translations"]) == ("true", "2", "97")
    assert (native["virt.enabled"], native["system.threads_per_core"]) == ("false", "2")
    for quick in (False, True):
        spec = sweep.load_spec(STUDY / "sweep.toml", quick=quick)
        assert len(spec.points) == 43
        for p in spec.points:
            s = dict(p.config.overrides)
            scheme, _workload, *ratio = p.config.label.split("@")
            per_core = int(s.get("virt.vcpus_per_core", 2))
            assert ratio == ([] if per_core == 2 else [f"{per_core}:1"]), p.config.label
            assert dict(p.params)["threads"] == CORES * per_core, p.config.label
            assert p.config.base.endswith("native.toml" if scheme.startswith("native-") else "vm.toml")
            assert s["shootdown.protocol"] in scheme, p.config.label
            assert s.get("tcat.flush", True) == (scheme != "tcat-cotag-noflush")
        # Tab. 6.3's penalties, scaled by 1/10, rise with the ratio for apache.
        pen = {p.config.label: dict(p.config.overrides)["os.shootdown_initiator_cycles"] for p in spec.points}
        assert [pen[f"kvm_tlb@apache{r}"] for r in ("@1:1", "", "@3:1", "@4:1")] == [3222, 66050, 93336, 105708]


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d, real = study_copy(STUDY, tmp_path)
    for f in ("vm.toml", "native.toml"):
        shutil.copy(STUDY / f, d / f)
    lines = ['refs = 20000', 'prefault = true', 'seeds = [1]']
    for c in real["configs"]:
        sets = dict(c["set"])
        # Short slices so that every vCPU runs; every translation checked.
        sets["check.translations"] = 1
        if c["preset"] == "vm.toml":
            sets["virt.vcpu_slice_cycles"] = 20000
        body = ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in sets.items())
        lines += ["[[configs]]", f'preset = "{c["preset"]}"', f'label = "{c["label"]}"', f"set = {{ {body} }}",
                  f"workloads = {json.dumps(c['workloads'])}"]
    small = {"kvstore": 'keys = "16K", ops = "1M", writes = 0.3, churn = 0.05',
             "churn": 'footprint = "16M", chunk = "32K", reads = 64, live = 0.05, ops = "64K"'}
    for w in real["workloads"]:
        threads = w["params"]["threads"]
        lines += ["[[workloads]]", f'name = "{w["name"]}"', f"params = {{ threads = {threads}, {small[w['name']]} }}",
                  f"configs = {json.dumps(w['configs'])}"]
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    assert paper_numbers_without_value(text, STUDY / "paper.toml") == set()
    assert "## Overcommit" in text and (res.report.parent / "overcommit.png").is_file()
    df = results.load(d.name, root=tmp_path / "results")
    assert (df["stat.shootdowns"] > 0).all(), "every point shoots down"
    assert (df["stat.check.translations_checked"] > 0).all()
    correct = df[~df["config_label"].str.startswith("tcat-cotag-noflush")]
    assert (correct["stat.stale_translation_uses"] == 0).all()
