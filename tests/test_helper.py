"""Helper threads (PT-Baker's mechanism, in simulation): a stream beside the program's own, in
its address space on the next core, touching every N-th page of its regions. The shape of
PT-Baker's result in a small test: the main thread's page-walk reads move from DRAM to the
shared cache."""
from __future__ import annotations

import pytest

import xlat
from xlat_testutil import has_core

pytestmark = pytest.mark.skipif(not has_core(), reason="needs the compiled extension")

# Random reads over 256 MB: 8 K lines of leaf PTEs (512 KB), which the data's misses push out
# of a 1 MB LLC between two walks that need them.
MAIN = "random:footprint=256M,reads=64M"
SMALL_LLC = {"cache.llc.size_kb": 1024}


def main_thread(r) -> dict:
    """The main thread's (core 0's) statistics, whether or not a helper ran beside it."""
    st = r.stats
    p = "core0." if "core0.refs" in st else ""
    return {k[len(p):]: v for k, v in st.items() if k.startswith(p) and (p or not k.startswith("core"))}


def run(helper: str = "") -> dict:
    r = xlat.simulate("skylake4", MAIN + helper, refs=2_000_000, warmup=500_000, prefault=True, **SMALL_LLC)
    return main_thread(r)


@pytest.fixture(scope="module")
def alone():
    return run()


def dram_share(m: dict) -> float:
    return m["pte_served.dram"] / m["walk_steps"]


def test_a_kernel_helper_reading_page_table_entries_keeps_them_in_the_cache(alone):
    helped = run(",helper=8,helper_mode=pte")
    assert dram_share(alone) > 0.1, "without a helper, walks read PTEs from DRAM"
    assert dram_share(helped) < 0.01, "with it, they hit in the caches"
    assert helped["walk_cycles_per_walk"] < 0.7 * alone["walk_cycles_per_walk"]
    assert helped["ipc"] > alone["ipc"]


def test_a_user_helper_touching_pages_helps_less(alone):
    # Its touches walk too (bringing the PTE lines in) but also bring a data line each.
    helped = run(",helper=8")
    assert dram_share(helped) < 0.85 * dram_share(alone)
    assert helped["pte_served.llc"] / helped["walk_steps"] > alone["pte_served.llc"] / alone["walk_steps"]


def test_the_helper_is_a_thread_of_the_program():
    r = xlat.simulate("skylake4", MAIN + ",helper=8", refs=200_000, prefault=True)
    assert r["core1.refs"] > 0 and r["pt.nodes.l4"] == 1, "one address space, two cores"
    with pytest.raises(xlat.SimulationError, match="the machine has 1 cores"):
        xlat.simulate("skylake", MAIN + ",helper=8", refs=1000)


def test_a_helper_running_ahead_of_a_sequential_thread_prefetches_its_page_tables():
    # One load per page, in page order, over 4 GB: a new PTE line every 8 pages, from DRAM.
    # A helper that passes over all the regions cannot keep up; one that follows the thread
    # 256 pages ahead (helper_ahead) has each PTE line in the cache before the walk needs it.
    # (MSHRs unlimited: with the preset's 10, the walk reads that miss the L1D wait for MSHRs
    # the thread's own data misses hold, and the walk gets 22 % shorter rather than 62 %.)
    def run(helper=""):
        r = xlat.simulate("skylake4", "tlbthrash:pages=1M,touches=4M" + helper, refs=1_000_000, warmup=300_000,
                          prefault=True, **SMALL_LLC, **{"core.mshrs": 1000})
        return main_thread(r)

    alone, cyclic, ahead = run(), run(",helper=8,helper_mode=pte"), run(",helper=8,helper_mode=pte,helper_ahead=256")
    assert dram_share(alone) == pytest.approx(1 / 8, abs=0.01)
    assert dram_share(ahead) < 0.01 < 0.5 * dram_share(alone) < dram_share(cyclic)
    assert ahead["walk_cycles_per_walk"] < 0.4 * alone["walk_cycles_per_walk"]
