"""Programs that change their own mappings: OS calls in a stream (the `churn` kernel, kvstore's
`churn`, native traces) reach the OS model, free memory and page-table nodes, and shoot down
on every core that runs the program."""
from __future__ import annotations

import pytest

import xlat
from xlat_testutil import has_core, run_xlat

pytestmark = pytest.mark.skipif(not has_core(), reason="needs the compiled extension")

CHURN = "churn:footprint=32M,chunk=64K,ops=4K,reads=16"


def test_a_churning_heap_shoots_down_on_every_core_that_runs_it():
    one = xlat.simulate("skylake4", CHURN, seed=3)
    two = xlat.simulate("skylake4", CHURN + ",threads=2", seed=3)
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
    r = xlat.simulate("skylake", "kvstore:keys=64K,ops=64K,writes=0.5,churn=0.2", prefault=True)
    assert r["os.calls"] > 0 and r["os.unmapped_pages"] == r["os.calls"]
    trace = tmp_path / "churn.xtr"
    p = run_xlat("record", "-w", CHURN, "-o", str(trace), "--refs", "200000")
    assert p.returncode == 0, p.stderr
    replay = xlat.simulate("skylake", trace=str(trace))
    live = xlat.simulate("skylake", CHURN, refs=200_000)
    for k in ("os.calls", "os.unmapped_pages", "shootdowns", "faults", "walks", "cycles"):
        assert replay[k] == live[k], k
