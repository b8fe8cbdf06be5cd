"""Programs that change their own mappings: OS calls in a stream (the `churn` kernel, kvstore's
`churn`, native traces) reach the OS model, free memory and page-table nodes, and shoot down
on every core that runs the program."""
from __future__ import annotations

import pytest

import xlat
from xlat_testutil import has_core, run_xlat

pytestmark = pytest.mark.skipif(not has_core(), reason="needs the compiled extension")

CHURN = "churn:footprint=32M,chunk=64K,ops=4K,reads=16"
# Runs that change mappings check every translation against the page tables (a stale one fails
# the run: see check.translations).
CHECKED = {"check.translations": 1}


def test_a_churning_heap_shoots_down_on_every_core_that_runs_it():
    one = xlat.simulate("skylake4", CHURN, seed=3, **CHECKED)
    two = xlat.simulate("skylake4", CHURN + ",threads=2", seed=3, **CHECKED)
    for r in (one, two):
        calls = r["os.calls"]
        assert calls > 3000 and r["shootdowns"] >= calls
        assert r["os.unmapped_pages"] == 16 * calls, "each free unmaps its chunk's 16 pages"
        # Freed chunks are allocated again: their pages fault back in.
        assert r["faults"] > 32 * 2**20 / 4096
    assert one["os.shootdown_ipis"] == 0, "one core: every shootdown is local"
    assert two["os.shootdown_ipis"] == two["shootdowns"], "two cores: each interrupts the other"
    assert two["shootdown_cycles"] > one["shootdown_cycles"]


def test_os_calls_cost_their_cycles():
    cheap = xlat.simulate("skylake", CHURN, seed=3, prefault=True, **{"os.call_cycles": 0})
    dear = xlat.simulate("skylake", CHURN, seed=3, prefault=True, **{"os.call_cycles": 10_000})
    assert cheap["os.calls"] == dear["os.calls"] > 0
    assert dear["cycles"] - cheap["cycles"] >= 0.9 * 10_000 * dear["os.calls"]


def test_kvstore_churn_and_traces_carry_os_calls(tmp_path):
    r = xlat.simulate("skylake", "kvstore:keys=64K,ops=64K,writes=0.5,churn=0.2", prefault=True, **CHECKED)
    assert r["os.calls"] > 0 and r["os.unmapped_pages"] == r["os.calls"]
    trace = tmp_path / "churn.xtr"
    p = run_xlat("record", "-w", CHURN, "-o", str(trace), "--refs", "200000")
    assert p.returncode == 0, p.stderr
    replay = xlat.simulate("skylake", trace=str(trace), **CHECKED)
    live = xlat.simulate("skylake", CHURN, refs=200_000, **CHECKED)
    for k in ("os.calls", "os.unmapped_pages", "shootdowns", "faults", "walks", "cycles"):
        assert replay[k] == live[k], k


def test_a_shootdown_trace_injects_page_table_changes(tmp_path):
    """The thesis's simulation input (seed 003 §6.3): records keyed by instruction count. Each
    record reached is one OS call and one shootdown; a page migrated under TCAT leaves no stale
    translation anywhere (the checker looks at every one)."""
    sd = tmp_path / "sd.txt"
    sd.write_text("# instructions stream op [va [pages]]\n"
                  "50000 0 migrate\n100000 1 unmap - 2\n150000 0 protect\n9000000000 0 unmap\n")
    wl = "gups:footprint=64M,threads=2"
    common = {"refs": "200K", "seed": 3, "prefault": True, "system__cores": 2, "check__translations": 1}
    plain = xlat.simulate("skylake", wl, **common)
    r = xlat.simulate("skylake", wl, shootdowns=sd, **common)
    assert plain["os.calls"] == 0
    assert (r["os.calls"], r["shootdowns"], r["stale_translation_uses"]) == (3, 3, 0)
    assert r.shootdowns == str(sd) and r.to_dict()["run"]["shootdowns"] == str(sd)
    tcat = xlat.simulate("csalt8", wl, shootdowns=sd, **common, virt__enabled=True, pomtlb__enabled=True,
                         coherence__enabled=True, tlb__set_index="vpn_xor_vm", shootdown__protocol="tcat-cotag")
    assert (tcat["shootdowns"], tcat["stale_translation_uses"]) == (3, 0)
    assert tcat["tcat.lines"] >= 3


def test_a_bad_shootdown_trace_is_one_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("100 0 unmap\n200 0 explode\n")
    with pytest.raises(xlat.TraceError, match=r"bad.txt:2: unknown op 'explode'"):
        xlat.simulate("skylake", "gups", refs=1000, shootdowns=bad)
    p = run_xlat("run", "-w", "gups", "-n", "1K", "--shootdowns", str(bad))
    assert p.returncode != 0 and p.stderr.strip().endswith("bad.txt:2: unknown op 'explode' (known: unmap, protect, unprotect, migrate, madv-free)")
    assert len(p.stderr.strip().splitlines()) == 1
