"""The statistics glossary from Python (`xlat.glossary`) and the command line (`xlat stats`)."""
from __future__ import annotations

import pytest

from xlat_testutil import assert_one_line_error, has_core, run_xlat

pytestmark = pytest.mark.skipif(not has_core("stat_glossary", "stat_lookup"), reason="engine has no glossary yet")


def test_entries_are_complete_and_sectioned():
    from xlat import glossary

    entries = glossary.entries()
    titles = [t for t, _ in glossary.sections()]
    assert len(entries) > 50
    assert {e["section"] for e in entries} <= set(titles)
    for e in entries:
        assert e["kind"] in ("counter", "level", "ratio", "float"), e
        assert e["pattern"] and e["unit"] and e["doc"], e
    assert any(p["name"] == "cache" and "llc" in p["values"] for p in glossary.placeholders())


@pytest.mark.parametrize(("name", "pattern"), [
    ("walks", "[core<N>.]walks"),
    ("core3.walks", "[core<N>.]walks"),
    ("tlb.l1d.accesses", "[core<N>.]tlb.l1d.accesses"),
    ("cache.llc.pt.miss_rate", "cache.<cache>.<kind>.miss_rate"),
    ("host.pt.nodes.l4", "[host.]pt.nodes.<ptlevel>"),
    ("core0.pte_served.guest.dram", "[core<N>.]pte_served.<side>.<where>"),
    ("phys.start.free_blocks.order9", "[host.]phys.start.free_blocks.order<order>"),
    # A pattern as the glossary writes it, with or without its optional prefix.
    ("cache.<cache>.accesses", "cache.<cache>.accesses"),
    ("[core<N>.]walks", "[core<N>.]walks"),
    ("core<N>.walks", "[core<N>.]walks"),
])
def test_lookup_matches_patterns(name, pattern):
    from xlat import glossary

    e = glossary.lookup(name)
    assert e is not None and e["pattern"] == pattern, (name, e)


@pytest.mark.parametrize("name", ["nosuch", "core.walks", "host.walks", "core0.cache.llc.misses", "cache.l3.accesses", "walks."])
def test_lookup_rejects_undeclared_names(name):
    from xlat import glossary

    assert glossary.lookup(name) is None


@pytest.mark.skipif(not has_core("simulate"), reason="engine has no simulate() yet")
def test_every_statistic_of_a_vm_run_is_in_the_glossary():
    import xlat
    from xlat import glossary

    r = xlat.simulate(None, "gups:footprint=256M", refs=5_000, seed=1, host_threads=1,
                      **{"system.cores": 1, "virt.enabled": True, "virt.guest_mem_gb": 2, "phys.size_gb": 4})
    missing = [k for k in r.stats if glossary.lookup(k) is None]
    assert not missing, missing


def test_cli_describes_named_statistics():
    p = run_xlat("stats", "core1.tlb.l2.misses", "host.pt_bytes", "cache.llc.pt.miss_rate")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "core1.tlb.l2.misses  (counter, lookups; TLBs: [core<N>.]tlb.l2.misses)" in out
    assert "each starts a page walk" in out
    assert "host.pt_bytes  (level, bytes;" in out
    assert "[host.]pt_bytes" in out
    assert "cache.llc.pt.miss_rate  (ratio, fraction;" in out


def test_cli_prints_the_whole_glossary_by_section():
    from xlat import glossary

    p = run_xlat("stats")
    assert p.returncode == 0, p.stderr
    for title, _ in glossary.sections():
        assert f"== {title}" in p.stdout
    for e in glossary.entries():
        assert f"{e['pattern']}  ({e['kind']}, {e['unit']})" in p.stdout
    assert "<cache>: l1i, l1d, l2, llc" in p.stdout


def test_cli_unknown_statistic_is_one_line_and_status_2():
    assert_one_line_error(run_xlat("stats", "nosuch"), "'nosuch'", "xlat stats")
    line = assert_one_line_error(run_xlat("stats", "walks", "tlb.l9.hits", "frob"), "'tlb.l9.hits'", "'frob'")
    assert "'walks'" not in line
