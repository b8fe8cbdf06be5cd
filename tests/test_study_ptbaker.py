"""The PT-Baker study (studies/ptbaker, seed 000): its spec runs every workload with no helper,
the user-level and the kernel-level one, natively, under both kinds of pressure and in a VM,
the SMT placement and the throttles, each label saying what its keys set; its report renders
from a tiny sweep with an xlat value for every paper number."""
from __future__ import annotations

import json

import pytest

from xlat import results, study, sweep
from xlat_testutil import REPO, has_core, paper_numbers_without_value, study_copy

STUDY = REPO / "studies" / "ptbaker"
needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")


def test_each_label_says_what_its_keys_set():
    for quick, n in ((False, 134), (True, 21)):
        spec = sweep.load_spec(STUDY / "sweep.toml", quick=quick)
        assert len(spec.points) == n
        for p in spec.points:
            s = dict(p.config.overrides)
            mode, env, *throttle = p.config.label.split(" ")[0].split("@")
            assert p.config.base == str(STUDY / "zen3-init.toml")
            assert s.get("ptbaker.mode", "off") == ("off" if mode == "ptp" else mode), p.config.label
            assert (s.get("cache.l2.policy"), s.get("cache.llc.policy")) == (("ptp", "ptp") if mode == "ptp" else (None, None))
            assert s.get("pressure", "none") == (env if env in ("cache1", "stream2") else "none")
            assert s.get("virt.enabled", False) == (env == "vm")
            assert s.get("system.threads_per_core", 1) == (2 if env == "smt" else 1)
            assert s.get("ptbaker.placement", "core") == ("smt" if env == "smt" and mode not in ("off", "ptp") else "core")
            assert throttle == [] or f"ptbaker.{'nops' if throttle == ['nops'] else 'sleep_cycles'}" in s
        if not quick:
            # Every workload in every environment, with and without each helper.
            for env in ("native", "cache1", "stream2", "vm"):
                for mode in ("off", "user", "kernel"):
                    assert {p.workload for p in spec.points if p.config.label == f"{mode}@{env}"} == \
                        {"bfs", "liblinear", "gups", "hashjoin", "canneal", "bc"}
            # The thesis's own forms at its scale, natively with and without each helper, in a VM
            # without one (and Graph500 with the user helper, the thesis's best VM case, and the
            # prefetching one with a sleep, Fig. 6.9's): graph500's list-based code and
            # hashjoin's probe (its build fast-forwarded).
            scale = {(p.config.label.split(" ")[0], p.workload) for p in spec.points
                     if dict(p.params).get("layout") == "list" or p.skip}
            assert scale == {(f"{m}@native", w) for m in ("off", "user", "kernel") for w in ("bfs", "hashjoin")} | \
                {("off@vm", "bfs"), ("user@vm", "bfs"), ("off@vm", "hashjoin"), ("user-prefetch@native@sleep", "bfs")}
            # Loads against prefetches with a sleep, on the thesis's three workloads (Fig. 6.9).
            for mode in ("user", "user-prefetch"):
                assert {p.workload for p in spec.points if p.config.label.startswith(f"{mode}@native@sleep")} == {"bfs", "liblinear", "bc"}
            # Both helpers on the SMT sibling with a sleep per pass (Fig. 6.8).
            for mode in ("user", "kernel"):
                assert {p.workload for p in spec.points if p.config.label.startswith(f"{mode}@smt@sleep")} == {"bfs", "liblinear", "bc"}


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d, real = study_copy(STUDY, tmp_path)
    # A 256 KB LLC so that tiny inputs still read page-table entries from DRAM.
    lines = ['refs = 20000', 'warmup = 5000', 'prefault = true', 'seeds = [1]']
    for c in real["configs"]:
        sets = {**c.get("set", {}), "cache.llc.size_kb": 256}
        body = ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in sets.items())
        lines += ["[[configs]]", 'preset = "zen3"', f'label = "{c["label"]}"', f"set = {{ {body} }}"]
        if "workloads" in c:
            lines.append(f"workloads = {json.dumps(c['workloads'])}")
    small = {"bfs": 'scale = 12', "liblinear": 'instances = "4K", epochs = 8', "gups": 'footprint = "64M"',
             "hashjoin": 'build = "16K", probe = "64K"', "canneal": 'elements = "16K", swaps = 2000', "bc": 'scale = 11'}
    for w in real["workloads"]:
        params = small[w["name"]]
        if w["params"].get("layout") == "list":
            params += ', layout = "list"'
        lines += ["[[workloads]]", f'name = "{w["name"]}"', f"params = {{ {params} }}"]
        if w["name"] == "liblinear":
            lines.append('warmup = "20K"')  # past the first shuffle
        if "skip" in w:
            lines.append('skip = "64K"')  # the build: 4 references a tuple
        if "configs" in w:
            lines.append(f"configs = {json.dumps(w['configs'])}")
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    assert paper_numbers_without_value(text, STUDY / "paper.toml") == set()
    assert (res.report.parent / "speedup.png").is_file() and (res.report.parent / "dram_share.png").is_file()
    df = results.load(d.name, root=tmp_path / "results")
    helped = df[~df["config_label"].str.startswith("off@")]
    assert len(helped) == 103
    assert "## PT-Baker or page-table prioritization" in text
    # The thesis-scale forms are tables' workloads of their own.
    assert "bfs-list" in text and "hashjoin-probe" in text
    # The prefetching helper's touches are prefetches, and Zen 3's walk. (Tiny runs: most of
    # the measured time the helper sleeps.)
    pf = df[df["config_label"].str.startswith("user-prefetch@")]
    assert len(pf) == 8 and pf["stat.core1.prefetches"].sum() > 0 and (pf["stat.core1.prefetches.dropped"] == 0).all()
    # The kernel helper reads page-table entries; its throttles make it read fewer.
    reads = dict(zip(df["config_label"] + "/" + df["workload"], df["stat.os.pte_reads"]))
    kernel = df[df["config_label"].str.fullmatch(r"kernel@[a-z0-9]+")]
    assert len(kernel) == 29 and (kernel["stat.os.pte_reads"] > 0).all()
    plain = reads["kernel@native/liblinear"]
    assert reads["kernel@native@nops ptbaker.nops=512/liblinear"] < reads["kernel@native@nops ptbaker.nops=64/liblinear"] < plain
    assert reads["kernel@native@sleep ptbaker.sleep_cycles=1000000/liblinear"] \
        < reads["kernel@native@sleep ptbaker.sleep_cycles=100000/liblinear"] < plain
