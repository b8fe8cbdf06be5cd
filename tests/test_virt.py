"""Virtual machines as a user meets them: --set virt.*, 2D-walk statistics split into guest and
host reads, the nested TLB and VM switches in the `xlat run` summary, one-line errors, and a
two-VM run on the 8-core CSALT preset."""
from __future__ import annotations

import json

import pytest

from xlat.cli import summary_rows
from xlat_testutil import assert_one_line_error, has_config_key, has_core, run_xlat

needs_virt = pytest.mark.skipif(
    not (has_core("simulate", "resolve_config") and has_config_key("virt.enabled")),
    reason="engine without virtualization",
)
WL = "gups:footprint=256M"
VIRT_KEYS = ("walk_steps.guest", "walk_steps.host", "walk_steps_per_walk", "walk_steps_per_walk.guest",
             "walk_steps_per_walk.host", "tlb.nested.hits", "tlb.nested.misses", "vm_switches",
             "ept_violations", "host_walks", "host.pt_bytes", "host.huge_coverage")


def test_summary_rows_split_guest_and_host_reads():
    stats = {
        "walks": 1000, "walk_steps": 7300, "walk_steps.miss": 7300, "walk_steps.guest": 2500, "walk_steps.host": 4800,
        "walk_steps.miss.guest": 2500, "walk_steps.miss.host": 4800,
        "tlb.nested.hits": 300, "tlb.nested.misses": 700, "vm_switches": 4, "ept_violations": 0,
        "pt_bytes": 16 << 20, "host.pt_bytes": 17 << 20, "huge_coverage": 0.0, "host.huge_coverage": 1.0,
    }
    rows = dict(summary_rows(stats))
    assert rows["PTE reads per walk"] == "7.30"
    assert rows["PTE reads per walk: guest / host"] == "2.50 / 4.80"
    assert rows["nested TLB hits"] == "300 of 1,000 (30.0%)"
    assert rows["VM switches"] == "4"
    assert rows["EPT violations"] == "0"
    assert rows["host (EPT) page-table memory"] == "17.0 MiB"
    assert rows["host huge-page coverage"] == "100.0%"
    # A native run has none of these rows.
    native = dict(summary_rows({"walks": 10, "walk_steps": 25}))
    for label in ("PTE reads per walk: guest / host", "nested TLB hits", "VM switches", "EPT violations",
                  "host (EPT) page-table memory", "host huge-page coverage"):
        assert label not in native, label


@needs_virt
def test_virtualized_run_reports_guest_and_host_walk_steps(tmp_path):
    out = tmp_path / "r.json"
    p = run_xlat("run", "--config", "skylake", "--workload", WL, "--refs", "30k", "--prefault", "--json", str(out),
                 "--set", "virt.enabled=true", "--set", "virt.guest_mem_gb=2", "--set", "phys.size_gb=4")
    assert p.returncode == 0, p.stderr
    assert "PTE reads per walk: guest / host" in p.stdout and "nested TLB hits" in p.stdout, p.stdout
    doc = json.loads(out.read_text())
    stats = doc["stats"]
    for k in VIRT_KEYS:
        assert k in stats, k
    assert doc["config"]["virt.enabled"] in (True, "true")
    assert stats["walk_steps"] == stats["walk_steps.guest"] + stats["walk_steps.host"]
    # Random 8-byte updates over 256 MB of 4 KB pages on both sides: a few guest reads per
    # walk (the guest PWC skips the upper levels) and more host reads (one host walk per
    # nested-TLB miss).
    assert 1.0 < stats["walk_steps_per_walk.guest"] < 3.0
    assert stats["walk_steps_per_walk.host"] > stats["walk_steps_per_walk.guest"]
    assert stats["tlb.nested.hits"] + stats["tlb.nested.misses"] > 0
    assert stats["vm_switches"] == 0 and stats["ept_violations"] == 0  # one VM, prefaulted
    assert "nested_tlb.hits" not in stats, "one name per structure: tlb.nested, as its keys"
    assert stats["host.mapped_bytes"] >= stats["mapped_bytes"]


@needs_virt
def test_old_structure_names_are_accepted():
    """The nested TLB and the host page-walk cache had two names each (nested_tlb.* and
    tlb.nested.*, vpwc.* and virt.host_pwc.*); the old ones still work as keys and in lookups."""
    import xlat
    r = xlat.simulate(config={"base": "skylake", "virt.enabled": True, "virt.guest_mem_gb": 1, "phys.size_gb": 4,
                              "nested_tlb.entries": 32, "vpwc.l2.entries": 8},
                      workload="gups:footprint=64M", refs=20_000, prefault=True)
    assert r.config["tlb.nested.entries"] == 32 and r.config["virt.host_pwc.l2.entries"] == 8
    assert r["nested_tlb.hits"] == r["tlb.nested.hits"]
    assert r["vpwc.l2.hits"] == r["virt.host_pwc.l2.hits"]


@needs_virt
def test_native_run_has_no_virtualization_statistics(tmp_path):
    out = tmp_path / "r.json"
    p = run_xlat("run", "-q", "--workload", WL, "--refs", "5k", "--json", str(out))
    assert p.returncode == 0, p.stderr
    stats = json.loads(out.read_text())["stats"]
    assert "walk_steps_per_walk" in stats
    for k in VIRT_KEYS:
        if k != "walk_steps_per_walk":
            assert k not in stats, k


@needs_virt
def test_two_vms_switch_on_the_8_core_csalt_machine(tmp_path):
    # The CSALT setup: 8 threads, two VMs on every core (the preset's 10 ms interval is 4e7
    # cycles; a shorter one here so that a short run switches a few times), VPIDs on.
    out = tmp_path / "r.json"
    p = run_xlat("run", "--config", "csalt8", "--workload", "gups:footprint=512M,threads=8", "--refs", "400k",
                 "--prefault", "--json", str(out), "--set", "virt.enabled=true", "--set", "virt.vms=2",
                 "--set", "virt.switch_interval_cycles=1000000", "--set", "virt.guest_mem_gb=2",
                 "--set", "phys.size_gb=8", timeout=300)
    assert p.returncode == 0, p.stderr
    assert "VM switches" in p.stdout, p.stdout
    stats = json.loads(out.read_text())["stats"]
    assert stats["vm_switches"] >= 8, stats["vm_switches"]
    assert all(stats[f"core{c}.vm_switches"] >= 1 for c in range(8))
    assert stats["mapped_bytes"] == 2 * (512 << 20)  # each VM has its own copy
    assert stats["walk_steps"] == stats["walk_steps.guest"] + stats["walk_steps.host"]


@needs_virt
@pytest.mark.parametrize("setting, needle", [
    ("virt.vms=2", "virt.enabled=true"),
    ("virt.host_page_policy=freebsd", "never|ideal|thp"),
    ("virt.vpid=maybe", "true or false"),
    ("virt.host_pt.format=radix3", "radix4|radix5"),
])
def test_bad_virt_settings_are_one_line_errors(setting, needle):
    p = run_xlat("run", "--workload", WL, "--refs", "1000", "--set", setting)
    assert_one_line_error(p, needle)


@needs_virt
def test_guest_memory_too_small_is_a_one_line_error():
    p = run_xlat("run", "--workload", "gups:footprint=2G", "--refs", "1000", "--prefault",
                 "--set", "virt.enabled=true", "--set", "virt.guest_mem_gb=1")
    assert_one_line_error(p, "virt.guest_mem_gb")


def test_skipping_over_os_calls_of_vcpus_that_share_a_core():
    # 16 vCPUs time-sliced on 8 cores: the skipped OS calls of vCPUs 8-15 were applied to
    # hardware context 8-15, which does not exist ("index out of bounds", an internal error).
    from pathlib import Path

    import xlat

    vm = Path(__file__).resolve().parents[1] / "studies" / "tcat" / "vm.toml"
    r = xlat.simulate(str(vm), "kvstore:threads=16,keys=64K,ops=8M,writes=0.05,churn=0.0025", refs=1000, skip=200_000, prefault=True)
    assert r.stats["refs"] == 1000
    assert r.stats["os.calls"] > 0
