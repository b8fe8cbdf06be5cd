"""A ChampSim configuration as alike to an xlat machine preset as the two can be.

    .venv/bin/python calibration/machine.py skylake OUTDIR   # writes OUTDIR/champsim_skylake_*.json

``calibration/run.py --machine PRESET`` calls :func:`write_configs` and prints how to build each
configuration from ChampSim's public source (outside this repository); this module only writes
JSON. Each value comes from the preset's resolved keys (``xlat.resolve_config``); what ChampSim
cannot express is approximated as the comments say: it has one page size (the preset's 2 MB and
1 GB TLB arrays are left out); its page walker never checks its own MSHRs, so walks in flight
are bounded by the DTLB's, set to ``core.walkers`` (a DTLB miss that hits the STLB holds one
too); it issues two loads a cycle; it always has banks (a flat-latency preset gets its
DDR4-3200, a channel per 25.6 GB/s); a DDR5 channel is one 64-bit channel to it (DDR5's two 32-bit
subchannels, 16 transfers a line each, move a line in the time of its 8 transfers at the same rate).

Latencies. xlat's are load-to-use totals (an L2 hit costs ``cache.l2.latency`` in all); ChampSim
splits each cache's configured latency into a tag check, paid on the way down, and a fill (half,
rounded up), paid on the way back (docs/timing.md, "ChampSim splits each cache's latency"). So
ChampSim's L1D gets twice xlat's L1 latency (a hit pays its tag half); an L2 hit pays the L1D's
whole latency and the L2's tag half, so the L2 gets twice what is left of xlat's L2 latency after
the L1D's, and the LLC likewise: its hits then cost what xlat's do, and a DRAM access pays the
LLC's fill half on top.
"""

from __future__ import annotations

import copy
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# ChampSim's machine changes, as run.py's CHANGES does them in xlat.
CHANGES = ("base", "stlb4", "pwc4", "page2m", "stlbhuge", "ptp", "mshr4")


def _sets(size_bytes: int, ways: int) -> int:
    sets = max(1, size_bytes // 64 // ways)
    # ChampSim wants a power of two.
    return 1 << (sets.bit_length() - 1)


def _tlb(entries: int, ways: int) -> tuple[int, int]:
    ways = ways if ways > 0 else entries
    return max(1, entries // ways), ways


# The DDR5 presets, whose bandwidth alone does not name their data rate (zen4's one DDR5-4800
# channel, 38.4 GB/s, is two DDR4-2400 channels' worth too): the rate of each, by preset name.
DDR5_RATES = {"zen4": 4800, "zen5": 6000}


def _data_rate(bandwidth_gbps: float, preset: str = "") -> int:
    """The data rate (MT/s) of a preset's channels: a DDR5 preset's own (:data:`DDR5_RATES`),
    else the DDR4 rate of which its bandwidth is a whole number of 8-byte channels (DDR4-2400 x 4
    = 76.8 GB/s, DDR4-2133 x 1 = 17.06 GB/s, DDR4-2933 x 2 = 46.93 GB/s),
    else DDR4-2400 up to four channels' worth and DDR4-3200 above."""
    if Path(preset).stem in DDR5_RATES:
        return DDR5_RATES[Path(preset).stem]
    for rate in (2400, 3200, 2133, 2933):
        n = bandwidth_gbps / (rate * 8 / 1000)
        if n >= 0.99 and abs(n - round(n)) < 0.01:
            return rate
    return 2400 if bandwidth_gbps / 4 <= 19.2 + 1e-9 else 3200


def champsim_config(preset: str, change: str = "base") -> dict:
    """ChampSim's configuration (its champsim_config.json format) for ``preset`` with ``change``."""
    k = _resolved(preset)
    c = copy.deepcopy(json.loads((HERE / "champsim" / "base.json").read_text()))
    name = Path(preset).stem
    c["executable_name"] = f"champsim_{name}_{change}"
    mhz = round(k["core.freq_ghz"] * 1000)
    cpu = c["ooo_cpu"][0]
    width = k["core.width"]
    cpu.update(
        frequency=mhz,
        rob_size=k["core.rob"],
        # (0 is unlimited in xlat: as many as the reorder buffer holds.)
        lq_size=k["core.lq"] or k["core.rob"],
        sq_size=k["core.store_buffer"] or k["core.rob"],
        fetch_width=width,
        decode_width=width,
        dispatch_width=width,
        execute_width=width,
        retire_width=width,
    )
    lat1 = 2 * k["cache.l1d.latency"]
    lat2 = 2 * max(k["cache.l2.latency"] - lat1, 1)
    lat3 = 2 * max(k["cache.llc.latency"] - lat1 - lat2, 1)
    for key, pre, lat in (("L1D", "cache.l1d", lat1), ("L2C", "cache.l2", lat2), ("LLC", "cache.llc", lat3)):
        c[key].update(sets=_sets(k[f"{pre}.size_kb"] * 1024, k[f"{pre}.ways"]), ways=k[f"{pre}.ways"], latency=lat, prefetcher="no")
    c["L1I"].update(sets=_sets(k["cache.l1i.size_kb"] * 1024, k["cache.l1i.ways"]), ways=k["cache.l1i.ways"], latency=2 * k["cache.l1i.latency"])
    c["L1D"]["mshr_size"] = k["core.mshrs"]
    # xlat bounds no L2 or LLC misses in flight but by the L1D's MSHRs.
    c["L2C"]["mshr_size"] = max(64, 2 * k["core.mshrs"])
    c["LLC"]["mshr_size"] = max(64, 2 * k["core.mshrs"])
    c["LLC"]["frequency"] = mhz
    sets, ways = _tlb(k["tlb.l1d.entries"], k["tlb.l1d.ways"])
    c["DTLB"].update(sets=sets, ways=ways, latency=k["tlb.l1d.latency"], mshr_size=k["core.walkers"])
    sets, ways = _tlb(k["tlb.l1i.entries"], k["tlb.l1i.ways"])
    c["ITLB"].update(sets=sets, ways=ways, latency=k["tlb.l1i.latency"])
    sets, ways = _tlb(k["tlb.l2.entries"], k["tlb.l2.ways"])
    c["STLB"].update(sets=sets, ways=ways, latency=k["tlb.l2.latency"])
    ptw = c["PTW"]
    for level in (4, 3, 2):
        n = k[f"pwc.l{level}.entries"]
        sets, ways = _tlb(n, k[f"pwc.l{level}.ways"]) if n else (1, 1)
        ptw[f"pscl{level}_set"], ptw[f"pscl{level}_way"] = sets, ways
    if k["walker.port"] == "l2":
        # Walks entering at the L2 (AMD): ChampSim's walker can be wired below the L1D.
        ptw["lower_level"] = "cpu0_L2C"
    levels = 5 if k["pt.format"] == "radix5" else 4
    c["virtual_memory"]["num_levels"] = levels
    mem = c["physical_memory"]
    if k["dram.banks"]:
        # A DDR4 channel of the preset's banks per channel, its row size and timings in DRAM
        # clocks; as many channels as its bandwidth is 8-byte transfers at its data rate.
        rate = _data_rate(k["dram.bandwidth_gbps"], preset)
        channels = max(1, round(k["dram.bandwidth_gbps"] / (rate * 8 / 1000)))
        per_channel = max(1, k["dram.banks"] // channels)
        clock_ns = 2000 / rate
        mem.update(
            data_rate=rate,
            channels=channels,
            ranks=max(1, per_channel // 16),
            bankgroups=4,
            banks=max(1, min(per_channel, 16) // 4),
            bank_columns=k["dram.row_kb"] * 1024 // 8,
            # (Whole clocks; a timing given in ns rounded from whole clocks stays that count.)
            tCAS=math.ceil(k["dram.tcas_ns"] / clock_ns - 0.01),
            tRCD=math.ceil(k["dram.trcd_ns"] / clock_ns - 0.01),
            tRP=math.ceil(k["dram.trp_ns"] / clock_ns - 0.01),
            # ChampSim turns the bus around between reads and writes for tRAS: its default's
            # 32.5 ns.
            tRAS=math.ceil(32.5 / clock_ns),
        )
        if k["dram.trefi_ns"]:
            # Refreshes in ChampSim's 32 ms period, one every tREFI.
            mem["refreshes_per_period"] = round(32e6 / k["dram.trefi_ns"])
    else:
        channels = max(1, round(k["dram.bandwidth_gbps"] / 25.6)) if k["dram.bandwidth_gbps"] else 1
        mem.update(channels=channels)
    if change == "stlb4":
        c["STLB"]["sets"] *= 4
    elif change == "stlbhuge":
        # As near a perfect TLB as ChampSim goes: 64 K entries, 4 GB of 4 KB pages.
        c["STLB"]["sets"] = 65536 // c["STLB"]["ways"]
        c["STLB"]["sets"] = 1 << (c["STLB"]["sets"].bit_length() - 1)
    elif change == "pwc4":
        for level in (4, 3, 2):
            ptw[f"pscl{level}_way"] *= 4
    elif change == "page2m":
        c["page_size"] = 2 << 20
        c["virtual_memory"]["num_levels"] = levels - 1
    elif change == "ptp":
        # The flattening paper's page-table prioritization in the L2 and the LLC: the replacement
        # policy of calibration/champsim/replacement/ptp (build with --replacement-dir).
        c["L2C"]["replacement"] = c["LLC"]["replacement"] = "ptp"
    elif change == "mshr4":
        # Four times the L1D's MSHRs (misses in flight), the L2's and LLC's as the base machine
        # sizes them from it: the CSALT study's question, what more misses in flight are worth.
        c["L1D"]["mshr_size"] = 4 * k["core.mshrs"]
        c["L2C"]["mshr_size"] = c["LLC"]["mshr_size"] = max(64, 8 * k["core.mshrs"])
    elif change != "base":
        raise ValueError(f"unknown change {change!r} (known: {', '.join(CHANGES)})")
    return c


# What a preset may have that ChampSim cannot be configured to do alike, given up in xlat for
# the comparison: hardware prefetchers (ChampSim's are different algorithms: its IP-stride
# trains per instruction, xlat's stride per page; it has no plain stream prefetcher), so both
# run without; a victim-filled LLC (Zen's; ChampSim fills its LLC with every line from DRAM).
UNEXPRESSIBLE = {"cache.l1d.prefetcher": "none", "cache.l2.prefetcher": "none", "cache.llc.fill": "inclusive"}


def _pde_cache(k: dict) -> dict:
    """ChampSim's STLB holds translations only: on a preset whose L2 TLB holds the page
    directory entries (``tlb.l2.pdes``, Zen), both simulators get a paging-structure cache of
    its own for them instead, of skylake's 24 entries (a typed override of ``k``'s keys)."""
    return {"tlb.l2.pdes": False, "pwc.l2.entries": 24, "pwc.l2.ways": 0} if k.get("tlb.l2.pdes") else {}


def _resolved(preset: str) -> dict:
    import xlat

    k = dict(xlat.resolve_config(preset))
    k.update(_pde_cache(k))
    return k


def champsim_drains(preset: str) -> dict[str, str]:
    """xlat's write-drain keys for ChampSim's DRAM controller on ``preset`` (empty for a flat
    DRAM): it drains from 7/8 to 6/8 of its write queue (``swap_write_mode``), so 8 writes of
    its 64 a channel, and turns the data bus around for tRAS at each switch, where DDR4's
    tWTR_L and read-to-write times are 7.5 to 9 ns."""
    import xlat

    k = xlat.resolve_config(preset)
    if not k["dram.banks"]:
        return {}
    mem = champsim_config(preset)["physical_memory"]
    batch = mem["channels"] * (mem["wq_size"] * 7 // 8 - mem["wq_size"] * 6 // 8)
    return {"dram.write_batch": str(batch), "dram.turnaround_ns": f"{mem['tRAS'] * 2000 / mem['data_rate']:.2f}"}


def xlat_keys(preset: str, change: str) -> dict[str, str]:
    """xlat's --set keys for ``change`` on ``preset``, as :func:`champsim_config` makes it, with
    :data:`UNEXPRESSIBLE` and :func:`dram_outside_banks`."""
    import xlat

    pde = {key: str(v).lower() for key, v in _pde_cache(xlat.resolve_config(preset)).items()}
    return {**UNEXPRESSIBLE, **pde, **dram_outside_banks(preset), **_change_keys(preset, change)}


def dram_outside_banks(preset: str) -> dict[str, str]:
    """On a banked preset, xlat's DRAM time outside the bank as ChampSim's: the burst alone.
    ChampSim's controller adds nothing to a read but its banks' timings, the data bus's burst
    (``DRAM_DBUS_RETURN_TIME``: 64 bytes over an 8-byte channel, 8 transfers) and its queues;
    a preset that charges a controller's own latencies too (``skylake``: gem5's front-end and
    back-end latencies, 20 ns) is given them up for the comparison (empty where the preset's
    ``dram.latency_ns`` is the burst already, or its DRAM is flat)."""
    import xlat

    k = xlat.resolve_config(preset)
    if not k["dram.banks"]:
        return {}
    burst = 8 * 1000 / _data_rate(k["dram.bandwidth_gbps"], preset)
    return {} if abs(k["dram.latency_ns"] - burst) < 0.01 else {"dram.latency_ns": f"{burst:.2f}"}


def _change_keys(preset: str, change: str) -> dict[str, str]:
    k = _resolved(preset)
    if change == "stlb4":
        return {"tlb.l2.entries": str(4 * k["tlb.l2.entries"])}
    if change == "stlbhuge":
        ways = k["tlb.l2.ways"] or k["tlb.l2.entries"]
        sets = 1 << ((65536 // ways).bit_length() - 1)
        return {"tlb.l2.entries": str(sets * ways), "tlb.l2.ways": str(ways)}
    if change == "pwc4":
        keys = {}
        for level in (4, 3, 2):
            n, ways = k[f"pwc.l{level}.entries"], k[f"pwc.l{level}.ways"] or k[f"pwc.l{level}.entries"]
            keys[f"pwc.l{level}.entries"] = str(4 * n)
            keys[f"pwc.l{level}.ways"] = str(4 * ways)
        return keys
    if change == "page2m":
        return {"os.page_policy": "ideal", "loader.trace_region_kb": "2048"}
    if change == "ptp":
        return {"cache.l2.policy": "ptp", "cache.llc.policy": "ptp", "ptp.mode": "always"}
    if change == "mshr4":
        return {"core.mshrs": str(4 * k["core.mshrs"])}
    return {}


def write_configs(preset: str, outdir: Path, changes=CHANGES) -> list[Path]:
    outdir.mkdir(parents=True, exist_ok=True)
    paths = []
    for ch in changes:
        cfg = champsim_config(preset, ch)
        path = outdir / f"{cfg['executable_name']}.json"
        path.write_text(json.dumps(cfg, indent=1) + "\n")
        paths.append(path)
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: machine.py PRESET OUTDIR")
    for p in write_configs(sys.argv[1], Path(sys.argv[2])):
        print(p)
