"""The PCC paper's machine-free characterisations as a user meets them: ``xlat pcc-cost`` (the
paper's 768 / 40 / 808 B, exactly) and ``xlat reuse`` (HUB / TLB-friendly / low-reuse pages and
the Fig. 2 scatter)."""
from __future__ import annotations

import json
import math

import pytest

from xlat import pcc
from xlat_testutil import assert_one_line_error, has_core, run_xlat

needs_tools = pytest.mark.skipif(not has_core("pcc_cost", "reuse"), reason="engine without the PCC tools")


@needs_tools
def test_pcc_cost_is_the_papers_arithmetic(tmp_path):
    out = tmp_path / "cost.json"
    p = run_xlat("pcc-cost", "--json", str(out))
    assert p.returncode == 0, p.stderr
    assert "808 B" in p.stdout and "768 B" in p.stdout
    c = json.loads(out.read_text())
    assert (c["bytes_2m"], c["bytes_1g"], c["bytes"], c["tlb_entries"], c["pages"]) == (768, 40, 808, 50, 65536)
    rows = {what: (ours, paper) for what, ours, paper in pcc.cost_rows(c)}
    assert rows["per core"] == ("808 B", "808 B")
    assert rows["2 MB PCC"] == ("128 x 6 B = 768 B", "768 B") and rows["1 GB PCC"] == ("8 x 5 B = 40 B", "40 B")
    assert rows["TLB entries it would buy"] == ("50", "50") and rows["of a 1024-entry L2 TLB"] == ("4.9 %", "~5 %")
    # Another PCC has no paper column.
    small = pcc.cost("haswell", [("pcc.entries", "64"), ("pcc.entries_1g", "0")])
    assert small["bytes"] == 384 and all(paper == "" for _, _, paper in pcc.cost_rows(small))


def test_classes_follow_the_papers_threshold():
    nan = math.nan
    assert pcc.classify(10, nan) == "tlb-friendly"
    assert pcc.classify(5000, 100) == "hub"
    assert pcc.classify(nan, 100) == "hub"
    assert pcc.classify(5000, 1024) == "low-reuse"
    assert pcc.classify(nan, nan) == "low-reuse"


@needs_tools
def test_reuse_classifies_a_random_table_and_draws_fig2(tmp_path):
    # GUPS over 64 MB: 16 K pages hit at random, far apart for a page (HUB or low reuse at
    # the page level), near for their 2 MB regions (32 of them): HUB pages dominate.
    p = run_xlat("reuse", "-w", "gups:footprint=64M", "--refs", "400k", "-o", str(tmp_path / "r"))
    assert p.returncode == 0, p.stderr
    assert "hub" in p.stdout and "HUB pages lie in" in p.stdout
    rows = (tmp_path / "r" / "pages.csv").read_text().splitlines()
    assert rows[0] == "va,accesses,d4k,d2m,d1g,class"
    classes = [r.rsplit(",", 1)[1] for r in rows[1:]]
    assert classes.count("hub") > 0.9 * len(classes)
    assert (tmp_path / "r" / "reuse.png").stat().st_size > 10_000
    r = pcc.reuse("gups:footprint=64M", refs=400_000, distinct=True)
    assert len(r["page"]) == len(rows) - 1
    assert max(d for d in r["d2m"] if not math.isnan(d)) < 32, "a region's stack distance is below the region count"


@needs_tools
def test_reuse_after_a_skip_counts_only_the_later_references():
    # The accesses of references 1,000-1,999 per page are those of the first 2,000 less those
    # of the first 1,000 (the PCC study measures PageRank's pull after its contributions pass).
    def counts(r):
        return dict(zip(r["page"], r["accesses"]))
    w = "random:footprint=1M,reads=5000"
    both, first, later = (counts(pcc.reuse(w, refs=n, skip=k)) for n, k in ((2000, 0), (1000, 0), (1000, 1000)))
    assert sum(later.values()) == 1000
    assert later == {p: n - first.get(p, 0) for p, n in both.items() if n > first.get(p, 0)}


@needs_tools
@pytest.mark.parametrize("args, needle", [
    (("--workload", "gups", "--distinct"), "reference limit"),
    (("--workload", "gups", "--trace", "x.trace"), "one of --workload and --trace"),
    (("--workload", "nosuch"), "nosuch"),
    (("--workload", "gups", "--refs", "0"), "omit --refs"),
])
def test_reuse_errors_are_one_line(args, needle):
    assert_one_line_error(run_xlat("reuse", *args), needle)
