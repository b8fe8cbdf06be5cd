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
        assert {w for w in (p.workload for p in spec.points)} == {"xsbench", "canneal", "pagerank", "liblinear", "churn"}
        assert all(dict(p.params)["free"] == "madv_free" for p in spec.points if p.workload == "churn"), "jemalloc's frees"
        for label, s in by_label.items():
            cpu = label.split("-")[0]
            assert s["preset"] == ("zenplus" if cpu == "F2" else "zen3"), label
            want = "none" if label.endswith("nocoal") else "32k" if cpu in ("F2", "Z3") else "16k"
            assert s["tlb.coalescing"] == want, label
            # Linux's per-CPU lists hand out ascending frames, FreeBSD's page cache a stack.
            assert s.get("phys.pcp_order", "fifo") == ("fifo" if cpu == "L" else "lifo"), label
            # nomdv: super with jemalloc's MADV_FREE calls ignored.
            assert s.get("os.madv_free", True) == (not label.endswith("nomdv")), label
            resv = s.get("os.reservations", "none")
            if "reserv" in label or "super" in label or "nomdv" in label:
                assert resv == ("reserv" if "reserv" in label else "super") and "os.page_policy" not in s, label
            else:
                assert resv == "none" and s.get("os.page_policy", "never") == ("thp" if label == "L-thp" else "never"), label
        assert len(by_label) == 13


@needs_sim
def test_report_renders_from_a_tiny_sweep(tmp_path):
    d, real = study_copy(STUDY, tmp_path)
    lines = ["refs = 60000", "warmup = 200000", "prefault = true", "seeds = [1]"]
    # (The paper's columns only: the ablations are left out to keep the test short, and the
    # report must do without them.)
    for c in (c for c in real["configs"] if not c["label"].startswith("Z3") and not c["label"].endswith("nocoal")):
        body = ", ".join(f'"{k}" = {v!r}'.replace("'", '"').replace("False", "false") for k, v in c["set"].items())
        lines += ["[[configs]]", f'preset = "{c["preset"]}"', f'label = "{c["label"]}"', f"set = {{ {body} }}"]
    # (PageRank needs a graph too large for a test before its L1 DTLB misses hit the L2 DTLB.)
    for name, params in [("xsbench", "gridpoints = 1000"), ("canneal", "elements = 50000"), ("liblinear", "instances = 20000"),
                         ("churn", 'footprint = "8M", free = "madv_free", ops = "20K"')]:
        lines += ["[[workloads]]", f'name = "{name}"', f"params = {{ {params} }}"]
    (d / "sweep.toml").write_text("\n".join(lines) + "\n")

    res = study.run(str(d), workers=2, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0
    text = res.report.read_text()
    # Every number of the four workloads has a value, but the 32 KB / 16 KB ratio of 4 KB
    # misses (with every group whole and uniform, runs this short have none of either) and the
    # tiny heap's 2 MB share of L2 DTLB hits (its 2 MB pages all fit the L1 DTLB: no L2 hits).
    missing = paper_numbers_without_value(text, STUDY / "paper.toml")
    assert {m for m in missing if not (m.endswith("_pagerank") or m.startswith("misses_4k_"))} <= {"nomdv_huge_share_f5"}
    assert len(missing) < 20, sorted(missing)
    for heading in ("## Contiguity by chance and by design (T-C)", "## 16 KB against 32 KB groups (T-B)", "## MADV_FREE and superpages (nomdv)",
                    "## The T2 counters", "### jemalloc heap (churn)"):
        assert heading in text
    assert (res.report.parent / "coalesced_share.png").is_file()
