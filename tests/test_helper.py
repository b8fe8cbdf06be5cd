"""PT-Baker's helper thread in simulation (`ptbaker.*`): a stream beside the program's own, in
its address space on the next core, touching every 8th page of its largest region. The shape
of PT-Baker's result in a small test: the main thread's page-walk reads move from DRAM to the
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


def run(**helper) -> dict:
    r = xlat.simulate("skylake4", MAIN, refs=2_000_000, warmup=500_000, prefault=True, **SMALL_LLC, **helper)
    return main_thread(r)


KERNEL = {"ptbaker.mode": "kernel"}
USER = {"ptbaker.mode": "user"}


@pytest.fixture(scope="module")
def alone():
    return run()


def dram_share(m: dict) -> float:
    return m["pte_served.dram"] / m["walk_steps"]


def test_a_kernel_helper_reading_page_table_entries_keeps_them_in_the_cache(alone):
    helped = run(**KERNEL)
    assert dram_share(alone) > 0.1, "without a helper, walks read PTEs from DRAM"
    assert dram_share(helped) < 0.01, "with it, they hit in the caches"
    assert helped["walk_cycles_per_walk"] < 0.7 * alone["walk_cycles_per_walk"]
    assert helped["ipc"] > alone["ipc"]


def test_a_user_helper_touching_pages_helps_less(alone):
    # Its touches walk too (bringing the PTE lines in) but also bring a data line each.
    helped = run(**USER)
    assert dram_share(helped) < 0.85 * dram_share(alone)
    assert helped["pte_served.llc"] / helped["walk_steps"] > alone["pte_served.llc"] / alone["walk_steps"]


def test_a_prefetching_user_helper_works_only_where_prefetches_walk():
    # Its prefetches walk on a TLB miss (as on Zen 3) and wait for no data; where prefetches
    # start no walks, every one of them misses the helper's TLBs and is dropped.
    # (Short runs: a helper that waits for nothing makes many references per main-thread one.)
    def short(**helper) -> tuple[float, dict]:
        r = xlat.simulate("skylake4", MAIN, refs=300_000, warmup=200_000, prefault=True, **SMALL_LLC, **helper)
        return dram_share(main_thread(r)), r.stats

    base, _ = short()
    helped, st = short(**{"ptbaker.mode": "user-prefetch"})
    assert st["core1.prefetches"] > 0 and st["core1.prefetches.dropped"] == 0
    assert helped < 0.85 * base
    dropped, st = short(**{"ptbaker.mode": "user-prefetch", "tlb.prefetch_walks": False})
    assert st["core1.prefetches.dropped"] == st["ptbaker.touches"] > 0 and st["core1.prefetches"] == 0
    assert dropped == pytest.approx(base, rel=0.05)


def test_the_helper_is_a_thread_of_the_program():
    r = xlat.simulate("skylake4", MAIN, refs=200_000, prefault=True, **USER)
    assert r["core1.refs"] > 0 and r["pt.nodes.l4"] == 1, "one address space, two cores"
    # Its touches are its references; a pass over the 256 MB array is 8192 of them.
    assert r["ptbaker.touches"] == r["core1.refs"] and r["ptbaker.passes"] == r["ptbaker.touches"] / 8192
    with pytest.raises(xlat.XlatError, match="the helper needs context 1 but the machine has 1"):
        xlat.simulate("skylake", MAIN, refs=1000, **USER)


def test_in_a_vm_the_kernel_helper_warms_the_guests_table():
    # The guest kernel's software walk: guest entries, reached through the host's table. Walks
    # still read the host's entries from DRAM, so the share falls less than natively.
    def share(**helper) -> float:
        r = xlat.simulate("skylake4", MAIN, refs=500_000, warmup=200_000, prefault=True, **SMALL_LLC,
                          **{"virt.enabled": True}, **helper)
        return dram_share(main_thread(r))

    alone, helped = share(), share(**KERNEL)
    assert helped < 0.8 * alone


def test_a_helper_on_the_sibling_keeps_page_table_entries_in_the_shared_l2():
    # Two threads per core: the helper on the main thread's sibling shares its L2 (the
    # thesis's option B); on the next core it shares only the LLC.
    def served(placement: str) -> dict:
        r = xlat.simulate("skylake4", MAIN, refs=300_000, prefault=True, **SMALL_LLC, **KERNEL,
                          **{"system.threads_per_core": 2, "ptbaker.placement": placement})
        return main_thread(r)

    sib, other = served("smt"), served("core")
    assert sib["refs"] == other["refs"] == 300_000, "the program's own references, the helper's apart"
    assert sib["pte_served.l2"] > 2 * other["pte_served.l2"]


def test_pressure_runs_stressors_on_cores_of_their_own():
    r = xlat.simulate("skylake4", MAIN, refs=300_000, prefault=True, **SMALL_LLC, pressure="stream2")
    assert r["core0.refs"] == 300_000, "--refs counts the program's references, not the stressors'"
    assert r["core1.refs"] > 0 and r["core2.refs"] > 0 and "core3.refs" not in r.stats, "core 3 idles"
    assert r["pt.nodes.l4"] == 3, "each stressor in an address space of its own"
    with pytest.raises(xlat.XlatError, match="needs 3 more core"):
        xlat.simulate("skylake", MAIN, refs=1000, pressure="stream3")


def test_a_helper_running_ahead_of_a_sequential_thread_prefetches_its_page_tables():
    # One load per page, in page order, over 4 GB: a new PTE line every 8 pages, from DRAM.
    # A helper that passes over all the regions cannot keep up; one that follows the thread
    # 256 pages ahead (ptbaker.ahead) has each PTE line in the cache before the walk needs it.
    # (MSHRs unlimited: with the preset's 10, the walk reads that miss the L1D wait for MSHRs
    # the thread's own data misses hold, and the walk gets 22 % shorter rather than 62 %.)
    def run(**helper):
        r = xlat.simulate("skylake4", "tlbthrash:pages=1M,touches=4M", refs=1_000_000, warmup=300_000,
                          prefault=True, **SMALL_LLC, **{"core.mshrs": 1000}, **helper)
        return main_thread(r)

    alone, cyclic, ahead = run(), run(**KERNEL), run(**KERNEL, **{"ptbaker.ahead": 256})
    assert dram_share(alone) == pytest.approx(1 / 8, abs=0.01)
    assert dram_share(ahead) < 0.01 < 0.5 * dram_share(alone) < dram_share(cyclic)
    assert ahead["walk_cycles_per_walk"] < 0.4 * alone["walk_cycles_per_walk"]


def test_a_sampled_run_measures_the_program_beside_its_helper():
    # The helper's touches are simulated in the warm and measured phases but are not the
    # program's references: each phase is measured in the program's own (before, the helper's
    # counted too, so the first warm phase overran the period and no unit was measured).
    s = xlat.simulate("skylake4", MAIN, refs="2M", prefault=True, sample="1M:300k:100k", **SMALL_LLC, **KERNEL)
    assert s["sample.units"] == 2 and s["sample.simulated_refs"] == 2 * 400_000
    assert s["core0.refs"] == 2 * 100_000 and s["ptbaker.touches"] > 0
