"""PT-Baker's TLB-thrash microbenchmark (Algorithm 5) on the zen3 preset: the knees of the
thesis's Fig. 4.2 (the L1 DTLB thrashes past 64 pages, the L2 DTLB's misses start rising near
2048)."""
from __future__ import annotations

import pytest

import xlat
from xlat_testutil import has_core

pytestmark = pytest.mark.skipif(not has_core(), reason="needs the compiled extension")


def misses_per_touch(pages: int, **over) -> tuple[float, float]:
    # Three passes to fill the TLBs, then ten to measure.
    r = xlat.simulate("zen3", f"tlbthrash:pages={pages},touches={13 * pages}", warmup=3 * pages, prefault=True, **over)
    return r["tlb.l1d.misses"] / r["refs"], r["tlb.l2.misses"] / r["refs"]


# The L2 DTLB without the page directory entries it also holds (tlb.l2.pdes): translations only.
NO_PDES = {"tlb.l2.pdes": False, "pwc.l2.entries": 24}


@pytest.mark.parametrize(("pages", "l1", "l2"), [(64, 0.0, 0.0), (65, 1.0, 0.0), (2048, 1.0, 0.0), (2304, 1.0, 1.0)])
def test_the_thrash_curve_has_the_theses_knees(pages, l1, l2):
    assert misses_per_touch(pages, **NO_PDES) == (l1, l2)


def test_the_page_directory_entries_take_ways_of_the_l2_dtlb():
    # 2048 pages are four 2 MB regions, whose four page directory entries each take a way of
    # one set (zen3's L2 DTLB holds them): those sets hold 16 pages and an entry, so each walk
    # refreshes the entry and the set's 16 pages thrash (64 of 2048 miss; the thesis: misses
    # "start rising near 2048").
    assert misses_per_touch(2048) == (1.0, 64 / 2048)


def test_one_page_past_the_l2_reach_thrashes_one_set():
    # 2049 pages over 128 sets of 16 ways: one set holds 17 pages in cyclic order, so LRU
    # misses all 17 on every pass.
    _, l2 = misses_per_touch(2049, **NO_PDES)
    assert l2 == pytest.approx(17 / 2049)


def test_smt_threads_do_not_share_tlb_entries_on_zen3():
    # The thesis's Fig. 4.6: 2112 pages, one thread, then two SMT threads of one core touching
    # the same array. Zen 3's TLB entries carry the thread (tlb.thread_tagged in the preset):
    # two threads need 2 x 2112 entries and miss the L2 DTLB on every touch.
    def l2_misses_per_touch(threads: int, **over) -> float:
        r = xlat.simulate("zen3", f"tlbthrash:pages=2112,touches={13 * 2112},threads={threads}", warmup=3 * 2112 * threads,
                          prefault=True, **{"system.threads_per_core": 2, **over})
        return r["tlb.l2.misses"] / r["refs"]

    alone, both = l2_misses_per_touch(1), l2_misses_per_touch(2)
    # Alone: 2112 pages over 128 sets of 16 ways; 64 sets hold 17 pages and miss all 17.
    assert alone == pytest.approx(64 * 17 / 2112) and both == 1.0
    # Competitively shared entries would have let each thread use the other's.
    assert l2_misses_per_touch(2, **{"tlb.thread_tagged": False}) < alone


def test_prefetches_start_walks_on_zen3():
    # The thesis's Fig. 4.3: 4224 pages = 2 x 2112, loads over the first half, then with a
    # prefetch over the other half after each load. On Zen 3 prefetches walk and fill the TLBs
    # (tlb.prefetch_walks in the preset): 4224 pages thrash the 2048-entry L2 DTLB and every
    # load and prefetch walks. Where prefetches start no walks, they are dropped and the loads
    # walk as often as alone.
    def walks_per_load(prefetch: int, **over) -> tuple[float, float]:
        per_load = 2 if prefetch else 1
        r = xlat.simulate("zen3", f"tlbthrash:pages=2112,prefetch={prefetch},touches={13 * 2112}",
                          warmup=3 * 2112 * per_load, prefault=True, **over)
        return r["walks"] / r["loads"], r["prefetches.dropped"] / r["loads"]

    alone, _ = walks_per_load(0)
    assert alone == pytest.approx(64 * 17 / 2112)
    assert walks_per_load(2112) == (2.0, 0.0)
    assert walks_per_load(2112, **{"tlb.prefetch_walks": False}) == (pytest.approx(alone), 1.0)


@pytest.mark.parametrize("over", [{"churn": "free=munmap"},
                                  {"churn": "free=madv_free", "os.reservations": "super", "phys.pcp_order": "lifo",
                                   "loader.max_page_size": "2m"}])
def test_the_l2_dtlbs_page_directory_entries_never_outlive_their_table(over):
    # Unmapped regions free their leaf tables and promotions replace them by 2 MB pages: every
    # translation a walk from an entry the L2 DTLB held gives must be the page tables' own.
    keys = {k: v for k, v in over.items() if k != "churn"}
    r = xlat.simulate("zen3", f"churn:footprint=64M,ops=50K,{over['churn']}", refs="600k",
                      **{"check.translations": 1, **keys})
    assert r["check.translations_checked"] > 500_000 and r["stale_translation_uses"] == 0
    assert r["pwc.l2.hits"] > 10 * r["pwc.l2.misses"] > 0
    assert keys.get("os.reservations") != "super" or r["promotions"] > 0
