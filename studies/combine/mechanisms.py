"""The combine study's mechanisms, scenarios and machines, in one place: `sweep.toml` is
written from them (`python studies/combine/mechanisms.py` rewrites it; a test checks that it is
current) and `report.py` reads its points' labels back through them.

A point's label is its mechanisms joined by `+` in the order of :data:`MECHANISMS` (`base`
for none, `all` for every one the environment allows), then `@native` or `@vm`. Its memory
scenario is in its columns: `set.os.page_policy` and `set.phys.fragmentation`
(:data:`SCENARIOS`).
"""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Mechanism:
    name: str
    seed: str  # which paper (../shared/seeds/)
    what: str
    set: dict
    #: Why the mechanism is not run in a VM (None: it is).
    not_in_vm: str | None = None
    #: Why the mechanism is not run on the two-program mix (None: it is).
    not_in_mix: str | None = None
    #: Its keys when combined with another mechanism whose keys would clash: {other: keys}.
    beside: dict = field(default_factory=dict)
    #: What it costs beside its gain: storage and OS work (the report's cost column).
    cost: str = ""
    #: The hardware it builds on (a key of PREREQS), run alone too: two mechanisms on the same
    #: one share it, and their interaction is measured against it.
    requires: str | None = None


#: The five papers' mechanisms, each as its paper's best configuration (the report compares
#: each alone, each pair and all together against the machine without any).
MECHANISMS: dict[str, Mechanism] = {m.name: m for m in [
    Mechanism(
        "pcc", "001", "PCC-guided promotion to 2 MB pages: one round, in the warm-up",
        # The paper reads the PCC every 30 M references of a 100 s run and promotes what it
        # finds; a point here is a few million references, which cannot amortize a promotion's
        # copy (about 200 K cycles for 2 MB) nor the cold misses of the data at its new frames
        # (a first run that promoted every 1 M references lost 51 % on GUPS with the copies
        # charged, 27 % on the mix without). So the daemon reads the PCC once, half-way through
        # the warm-up (after 500 K references; interval longer than any run), and the window
        # measures the steady state after that round of promotions: PCC's gain, not the OS's
        # cost, which the report counts (promotions) and which copies free here
        # (os.page_copy_cycles=0, as in the PCC study). Inputs that set the answer.
        {"os.promotion": "pcc", "os.promotion_first": 500000, "os.promotion_interval": 1000000000, "os.page_copy_cycles": 0},
        cost="a 128-entry PCC per core (`xlat pcc-cost`); a round of promotions (copies, shootdowns) in the warm-up",
    ),
    Mechanism(
        "coal", "002", "PTE coalescing (16 KB groups, as Zen 3 and later) on Linux's allocator",
        # The paper's reservations (os.reservations) are FreeBSD's fault-time policy, which
        # replaces the scenarios' Linux one (THP): here coalescing finds the contiguity Linux's
        # buddy allocator gives, as the paper's L-nothp and L-thp kernels.
        {"tlb.coalescing": "16k"},
        not_in_vm="PTE coalescing is modelled on native walks only: the coalescing paper measures native runs, and how "
                  "Zen coalesces a nested translation (both dimensions' PTEs contiguous) is not documented",
        cost="no storage (TLB fill logic)",
    ),
    Mechanism(
        "csalt", "003", "the POM-TLB (16 MB in stacked DRAM) with CSALT-CD partitioning L2 and LLC",
        {"cache.l2.policy": "csalt-cd", "cache.llc.policy": "csalt-cd"},
        requires="pom",
        cost="16 MB of die-stacked DRAM, stack-distance profilers in L2 and LLC",
    ),
    Mechanism(
        "tcat", "003", "TCAT: translation coherence through co-tagged POM-TLB lines",
        # TCAT keeps translations coherent through the POM-TLB's lines, so it brings one.
        {"shootdown.protocol": "tcat-cotag"},
        requires="pom",
        cost="a POM-TLB (16 MB) and a co-tag per cache line; no IPIs for shootdowns",
    ),
    Mechanism(
        "fpt", "004", "flattened page tables (L4+L3 and L2+L1 in 2 MB nodes)",
        {"pt.format": "fpt"},
        cost="page tables in 2 MB nodes (more memory for sparse address spaces)",
    ),
    Mechanism(
        "ptp", "004", "page-table prioritization in L2 and LLC (99 % of victims spare page-table lines)",
        {"cache.l2.policy": "ptp", "cache.llc.policy": "ptp"},
        # CSALT and PTP are both replacement policies of L2 and LLC: together, CSALT partitions
        # and PTP chooses the victim within CSALT's data ways.
        beside={"csalt": {"csalt.ptp": True}},
        cost="no storage (a victim-choice rule)",
    ),
    Mechanism(
        "ptb", "000", "PT-Baker's kernel helper on the next core, reading every 8th page's PTEs",
        {"ptbaker.mode": "kernel"},
        not_in_mix="its helper serves one program: xlat runs it beside a single program, and a mix would need a helper per program",
        cost="a helper thread on another core",
    ),
]}

#: What mechanisms build on, each a configuration of its own in the grid (`pom@native`).
PREREQS: dict[str, dict] = {
    # The CSALT thesis's POM-TLB as the engine's defaults give it: 16 MB in die-stacked DRAM,
    # 132 cycles beyond the LLC (Tab. 6.1's row miss, 33 ns, at the thesis's 4 GHz; 36 ns at
    # zen4's 3.7 GHz).
    "pom": {"pomtlb.enabled": True},
}

#: What each of PREREQS costs (the report's cost column).
PREREQ_COST = {"pom": "16 MB of die-stacked DRAM as an L3 TLB"}


def cost(name: str) -> str:
    return PREREQ_COST[name] if name in PREREQS else MECHANISMS[name].cost


#: Pairs the engine does not run together, and why (the report lists them; `all` leaves out
#: the later of such a pair, in the order of MECHANISMS). None now: TCAT beside coalescing
#: TLBs drops a coalesced entry by any of its pages' lines (mech/tcat.rs).
INCOMPATIBLE: dict[frozenset, str] = {}

#: Pairs that touch the same resource, and which: the report shows the statistics behind each
#: of them, whatever its kind, beside those of the pairs that are not additive.
SHARED: dict[tuple[str, str], str] = {
    ("csalt", "ptp"): "both steer L2 and LLC space",
    ("pcc", "coal"): "promotions leave fewer walks to shorten",
    ("pcc", "fpt"): "promotions leave fewer walks to shorten",
    ("ptp", "ptb"): "both keep page-table lines in the caches",
    ("pcc", "tcat"): "promotions cause shootdowns",
}

#: Memory scenarios: (label, os.page_policy, phys.fragmentation).
SCENARIOS = [
    ("4k", "never", "none"),       # 4 KB pages only (THP off)
    ("thp", "thp", "none"),        # transparent huge pages, unfragmented memory
    # THP on fragmented memory: one pinned 4 KB page in all but 0.5 % of the free 2 MB blocks
    # (the PCC paper's method), which leaves 164 of 64 GB's blocks whole (328 MB): all of
    # XSBench, about half of BFS's graph, a twenty-fifth of GUPS's table.
    ("frag", "thp", "pinned:0.995"),
]

#: The machine every point runs on, and what every point sets on it.
PRESET = "zen4"
COMMON = {
    # Coherent private caches, as any multicore of today (TCAT runs on them).
    "coherence.enabled": True,
    # The invariant checker, sampled: every 1,000th translation checked against a functional walk.
    "check.translations": 1000,
}
ENVS = {"native": {}, "vm": {"virt.enabled": True}}


def allowed(env: str) -> list[str]:
    """The mechanisms that run in ``env``."""
    return [n for n, m in MECHANISMS.items() if env == "native" or m.not_in_vm is None]


def compatible(combo: tuple[str, ...]) -> bool:
    return not any(frozenset(p) in INCOMPATIBLE for p in itertools.combinations(combo, 2))


def everything(env: str) -> tuple[str, ...]:
    """`all`: every mechanism of ``env``, less the later of each pair not run together."""
    out: tuple[str, ...] = ()
    for n in allowed(env):
        if compatible(out + (n,)):
            out += (n,)
    return out


def combos(env: str) -> list[tuple[str, ...]]:
    """Every mechanism alone, every pair, and all together: the study's grid in ``env`` (and
    what the mechanisms build on, alone)."""
    names = allowed(env)
    pairs = [p for p in itertools.combinations(names, 2) if compatible(p)]
    prereqs = [(r,) for r in PREREQS if any(MECHANISMS[n].requires == r for n in names)]
    return [()] + prereqs + [(n,) for n in names] + pairs + [everything(env)]


def shared(combo: tuple[str, ...]) -> str | None:
    """What every mechanism of ``combo`` builds on, if they all build on one thing."""
    reqs = {MECHANISMS[n].requires for n in combo if n in MECHANISMS}
    return reqs.pop() if len(reqs) == 1 and None not in reqs else None


def label(combo: tuple[str, ...], env: str) -> str:
    name = "base" if not combo else "all" if combo == everything(env) and len(combo) > 2 else "+".join(combo)
    return f"{name}@{env}"


def parse(label_: str) -> tuple[tuple[str, ...], str]:
    """A label's mechanisms and environment (the inverse of :func:`label`)."""
    name, _, env = label_.partition("@")
    if name == "base":
        return (), env
    if name == "all":
        return everything(env), env
    return tuple(name.split("+")), env


def keys(combo: tuple[str, ...], env: str) -> dict:
    """The config keys of a combination in ``env``."""
    out = {**COMMON, **ENVS[env]}
    for n in combo:
        if n in PREREQS:
            out.update(PREREQS[n])
            continue
        m = MECHANISMS[n]
        own = {**PREREQS.get(m.requires, {}), **m.set}
        for other, instead in m.beside.items():
            if other in combo:
                own = dict(instead)
        for k, v in own.items():
            if k in out and out[k] != v:
                raise ValueError(f"{'+'.join(combo)}: {n} sets {k}={v}, another mechanism {out[k]}")
            out[k] = v
    return out


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return '"' + str(v) + '"'


def _table(d: dict) -> str:
    return "{ " + ", ".join(f'"{k}" = {_value(v)}' for k, v in d.items()) + " }"


#: Workloads: (name, params, environments, run options beside the spec's, comment). Run
#: options under "vm" apply in the VM only.
WORKLOADS = [
    # In a VM a GUPS reference takes 60 cycles under 4 KB pages (23 natively) and PT-Baker's
    # helper, simulated all along, costs in proportion to cycles (31 s a point against 6 s
    # without): half the window and warm-up there, still longer in cycles than natively.
    ("gups", {"footprint": "8G"}, ("native", "vm"), {"vm": {"refs": "1M", "warmup": "1M"}},
     "HPCC RandomAccess over 8 GB (PCC, FPT, CSALT, PT-Baker)"),
    # Past the arrays BFS resets before its search (the ptbaker study's 5 M), fast-forwarded.
    ("bfs", {"scale": 22}, ("native", "vm"), {"skip": "4M", "warmup": "1M"},
     "Graph500 BFS, a Kronecker graph of 4 M vertices (every paper runs a graph)"),
    # A kvstore reference takes about 80 cycles, GUPS's 10: a shorter window is as long in
    # cycles (and PT-Baker's helper, simulated all along, costs in proportion to cycles).
    ("kvstore", {"threads": 2, "churn": 0.05}, ("native", "vm"), {"refs": "1M", "warmup": "1M"},
     "a key-value store on 2 threads whose allocator returns pages to the OS (shootdowns: TCAT)"),
    ("hashjoin", {"build": "16M", "probe": "32M"}, ("native",), {}, "hash join (FPT, PT-Baker)"),
    ("xsbench", {}, ("native", "vm"), {}, "XSBench (FPT, PCC)"),
]
MIX = ("gups+bfs", ["gups:footprint=4G@0", "bfs:scale=21@1"], "two programs on two cores, each its own address space")


def render_sweep() -> str:
    out = [
        "# GENERATED by `python studies/combine/mechanisms.py` from mechanisms.py: edit that, not this.",
        "#",
        "# The combine study: the five papers' mechanisms on one machine, alone, in pairs and all",
        "# together, native and in a VM, under 4 KB pages, THP and fragmented memory. See README.md.",
        "",
        'name = "combine"',
        ('description = "The five papers\' mechanisms on one machine: each alone, every pair and all together, '
         'native and virtualized, under 4 KB pages, THP and fragmented memory: which add up, which do the same work twice, which fight."'),
        'refs = "2M"',
        'warmup = "2M"',
        "prefault = true",
        "seeds = [1]",
        "",
    ]
    pp = [s[1] for s in SCENARIOS]
    fr = [s[2] for s in SCENARIOS]
    for env in ENVS:
        for combo in combos(env):
            mix = env == "native" and not any(MECHANISMS[n].not_in_mix for n in combo if n in MECHANISMS)
            # (The traced program, prepare.py's, natively: "trace".)
            wl = [w[0] for w in WORKLOADS if env in w[2]] + (["mix"] if mix else []) + (["trace"] if env == "native" else [])
            out += [
                "[[configs]]",
                f'preset = "{PRESET}"',
                f'label = "{label(combo, env)}"',
                f"set = {_table(keys(combo, env))}",
                f'zip = {{ "os.page_policy" = {_value(pp)}, "phys.fragmentation" = {_value(fr)} }}',
                f"workloads = {_value(wl)}",
                "",
            ]
    for name, params, envs, run, comment in WORKLOADS:
        own = {k: v for k, v in run.items() if k != "vm"}
        # (With options of its own in the VM, the workload is two entries, each naming the
        # configs it runs on.)
        split = [(e, {**own, **run.get(e, {})}) for e in envs] if "vm" in run else [(None, own)]
        for env, opts in split:
            out += [f"# {comment}" + (f" ({env})" if env else ""), "[[workloads]]", f'name = "{name}"']
            if params:
                out.append(f"params = {_table(params)}")
            if env:
                out.append(f"configs = {_value([label(c, env) for c in combos(env)])}")
            out += [f"{k} = {_value(v)}" for k, v in opts.items()]
            out.append("")
    out += [f"# {MIX[2]}", "[[mixes]]", f'label = "{MIX[0]}"', f"programs = {_value(MIX[1])}", ""]
    quick_configs = [label(c, "native") for c in [(), ("fpt",), ("ptp",), ("fpt", "ptp"), ("pcc",), ("pcc", "fpt")]]
    out += [
        "# `xlat study combine --quick`: the base machine, FPT and PTP and their pair, PCC and PCC+FPT,",
        "# natively on GUPS, under the three scenarios, in short windows.",
        "[quick]",
        'refs = "300K"',
        'warmup = "300K"',
        "seeds = [1]",
        "configs = [",
    ]
    for combo in [(), ("fpt",), ("ptp",), ("fpt", "ptp"), ("pcc",), ("pcc", "fpt")]:
        out.append(f'  {{ preset = "{PRESET}", label = "{label(combo, "native")}", set = {_table(keys(combo, "native"))}, '
                   f'zip = {{ "os.page_policy" = {_value(pp)}, "phys.fragmentation" = {_value(fr)} }} }},')
    out += ["]", 'workloads = [{ name = "gups", params = { footprint = "1G" } }]', "mixes = []", ""]
    assert len(quick_configs) == 6
    return "\n".join(out)


if __name__ == "__main__":
    path = HERE / "sweep.toml"
    path.write_text(render_sweep(), encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)
