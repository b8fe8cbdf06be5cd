"""The PTE-coalescing study (studies/coalescing, seed 002, kernel half): its spec runs the
paper's allocator columns with the coalescing size of each CPU and the same-geometry ablation,
and its report renders from a tiny sweep with an xlat value for every paper number."""
from __future__ import annotations

import pytest

from xlat import study, sweep
from xlat_testutil import REPO, has_core, paper_numbers_without_value, study_copy

STUDY = REPO / "studies" / "coalescing"
needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")


def test_spec_pairs_each_column_with_its_cpu_and_allocator():
    for quick in (False, True):
        spec = sweep.load_spec(STUDY / "sweep.toml", quick=quick)
        by_label = {}
        for p in spec.points:
            s = dict(p.config.overrides)
            by_label.setdefault(p.config.label, dict(s, preset=p.config.base))
            assert p.prefault and s["os.prefault_as"] == "write", p
        assert {w for w in (p.workload for p in spec.points)} == {"xsbench", "canneal", "pagerank", "liblinear"}
        for label, s in by_label.items():
            cpu = label.split("-")[0]
            assert s["preset"] == ("zenplus" if cpu == "F2" else "zen3"), label
            want = "none" if label.endswith("nocoal") else "32k" if cpu in ("F2", "Z3") else "16k"
            assert s["tlb.coalescing"] == want, label
            # Linux's per-CPU lists hand out ascending frames, FreeBSD's page cache a stack.
            assert s.get("phys.pcp_order", "fifo") == ("fifo" if cpu == "L" else "lifo"), label
            policy = s.get("os.page_policy", "never")
            if "reserv" in label or "super" in label:
                assert policy == "freebsd" and s.get("os.reservation_promote", True) == ("super" in label), label
            else:
                assert policy == ("thp" if label == "L-thp" else "never"), label
        assert len(by_label) == 11


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d, real = study_copy(STUDY, tmp_path)
    lines = ["refs = 60000", "warmup = 200000", "prefault = true", "seeds = [1]"]
    for c in real["configs"]:
        body = ", ".join(f'"{k}" = {v!r}'.replace("'", '"').replace("False", "false") for k, v in c["set"].items())
        lines += ["[[configs]]", f'preset = "{c["preset"]}"', f'label = "{c["label"]}"', f"set = {{ {body} }}"]
    # (PageRank needs a graph too large for a test before its L1 DTLB misses hit the L2 DTLB.)
    for name, params in [("xsbench", "gridpoints = 1000"), ("canneal", "elements = 50000"), ("liblinear", "instances = 20000")]:
        lines += ["[[workloads]]", f'name = "{name}"', f"params = {{ {params} }}"]
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    # Every number of the three workloads has a value, but the 32 KB / 16 KB ratio of 4 KB
    # misses: with every group whole and uniform, runs this short have none of either.
    missing = paper_numbers_without_value(text, STUDY / "paper.toml")
    assert all(m.endswith("_pagerank") or m.startswith("misses_4k_") for m in missing), sorted(missing)
    assert len(missing) < 20, sorted(missing)
    for heading in ("## Contiguity by chance and by design (T-C)", "## 16 KB against 32 KB groups (T-B)", "## The T2 counters"):
        assert heading in text
    assert (res.report.parent / "coalesced_share.png").is_file()
