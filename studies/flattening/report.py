"""Report of the FLATTENING study (seed 004, "Every Walk's a Hit", Park et al., ASPLOS '22).

``render(df, out_dir, quick)`` gets the study's successful points, draws the figures, and
returns the Markdown body plus xlat's counterpart of every number of ``paper.toml`` (by id;
``None`` where the configuration it needs has not run). `xlat study` puts the paper-vs-xlat
table above the body.

Configurations are recognised by their labels in sweep.toml: ``baseline``, ``ptp``, ``fpt``,
``fpt+ptp``; ``2d`` (the virtualized baseline), ``2d+ptp``, ``2d-hf``, ``2d-gf``, ``2d-hf+gf``
and their ``+ptp`` variants; a ``-lp50`` / ``-lp100`` suffix for the large-page scenarios.
Every speedup and energy figure is relative to the matching 0 %-large-page baseline
(``baseline`` natively, ``2d`` virtualized), as the paper normalises (Fig. 9, 12, 13).
"""
from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

from xlat import report

HERE = Path(__file__).resolve().parent

# Canonical order of the configurations (others follow in the order they appear).
ORDER = ["baseline", "ptp", "fpt", "fpt+ptp", "asap", "ech", "csalt",
         "2d", "2d+ptp", "2d-hf", "2d-hf+ptp", "2d-gf", "2d-gf+ptp", "2d-hf+gf", "2d-hf+gf+ptp"]
ORDER += ["fpt-l3l2", "pwc-l3-1", "pwc-l3-2", "pwc-l3-8", "pwc-l3-16", "ptp+pwc-l3-16", "2d-l3l2"]
ORDER += [f"{c}-lp{p}" for p in (50, 100) for c in ("baseline", "ptp", "fpt", "fpt+ptp", "fpt-nonf", "fpt-l3l2", "asap", "ech", "csalt")]
ORDER += [f"{c}-lp{p}" for p in (50, 100) for c in ("2d", "2d-hf+gf", "2d-hf+gf+ptp", "2d-l3l2")]

FPT = "flattened page tables"
VIRT = "virtualization"
LP = "large pages"
MC = "four-program mixes on 4 cores"

# What each configuration label needs beyond today's engine (for the coverage list).
NEEDS = {"baseline": [], "ptp": [], "fpt": [FPT], "fpt+ptp": [FPT], "asap": [], "ech": [], "csalt": [], "pwc-size": [],
         "fpt-l3l2": [FPT], "fpt-nonf": [FPT]}
for _c in ORDER:
    if _c.startswith("2d"):
        NEEDS[_c] = [VIRT] + ([FPT] if ("hf" in _c or "gf" in _c) else [])
    if "-lp" in _c:
        NEEDS[_c] = NEEDS.get(_c.split("-lp")[0], []) + [LP]

# The workloads the paper names (Tab. 2) and the xlat kernel standing in for each.
PAPER_NAMES = {
    "gups": "GUPS (N = 30, 8 GB)", "random": "random access ('rand')", "bfs": "graph500 (scale 24, 5.4 GB)",
    "pagerank": "GraphBIG (LDBC-1000k, 6.6 GB) [pagerank kernel]", "cc": "GraphBIG cc",
    "hashjoin": "hashjoin (Mitosis)", "xsbench": "XSBench", "kvstore": "memcached (stood in for by 'rand')",
    "canneal": "(PARSEC; not in the paper)", "btree": "(not in the paper)",
}

METRICS = {
    "apw": "stat.walk_steps_per_walk",
    "walk_cycles": "stat.walk_cycles_per_walk",
    "ipc": "stat.ipc",
    "mpki": "stat.tlb.l2.mpki",
    "walks": "stat.walks",
    "tlb_misses": "stat.tlb.l2.misses",
    "dirty_walks": "stat.tlb.dirty_walks",
    "instructions": "stat.instructions",
    "l2_data": "stat.cache.l2.data.miss_rate",
    "l2_pt": "stat.cache.l2.pt.miss_rate",
    "llc_data": "stat.cache.llc.data.miss_rate",
    "llc_pt": "stat.cache.llc.pt.miss_rate",
    "e_cache": "stat.energy_nj.cache",
    "e_dram": "stat.energy_nj.dram",
    "pt_nodes": "stat.pt.nodes",
    "pt_bytes": "stat.pt_bytes",
    "mapped": "stat.mapped_bytes",
    "pte_l1": "stat.pte_served.l1",
    "pte_l2": "stat.pte_served.l2",
    "pte_llc": "stat.pte_served.llc",
    "pte_dram": "stat.pte_served.dram",
    "walk_steps": "stat.walk_steps",
    "ech_table_reads": "stat.ech.table_reads",
    "host_pte_guest_pt": "stat.virt.guest_pt_host_pte_bytes",
    "acc_l1d": "stat.cache.l1d.accesses",
    "acc_l2": "stat.cache.l2.accesses",
    "acc_llc": "stat.cache.llc.accesses",
    "llc_kb": "cfg.cache.llc.size_kb",
    "refs_done": "stat.refs",
    "walker_wait": "stat.walker_wait_cycles",
    "cycles": "stat.cycles",
    "apw_guest": "stat.walk_steps_per_walk.guest",
    "apw_host": "stat.walk_steps_per_walk.host",
    "host_walk_steps": "stat.walk_steps_per_host_walk",
    "ntlb_hit": "stat.tlb.nested.hit_rate",
    "host_pt_bytes": "stat.host.pt_bytes",
    "huge_cov": "stat.huge_coverage",
    "fallbacks": "stat.pt.flatten_fallbacks",
    "unflattened": "stat.pt.unflattened",
    "flat_nodes": "stat.pt.flat_nodes",
}


# -- data -------------------------------------------------------------------------------------

def _workload_labels(df):
    """One label per point: the kernel's name, plus its parameters when a sweep runs one
    kernel with several inputs."""
    params = df["params"] if "params" in df.columns else None
    names = df["workload"].astype(str)
    labels = []
    multi = {n for n in set(names) if params is not None and params[names == n].nunique() > 1}
    for i, n in enumerate(names):
        if n in multi:
            p = json.loads(params.iloc[i]) if isinstance(params.iloc[i], str) else {}
            labels.append(n + "(" + ",".join(f"{k}={v}" for k, v in p.items()) + ")")
        else:
            labels.append(n)
    return labels


def _tidy(df):
    """Per (config, workload, seed): the metrics used here (NaN where a column is missing)."""
    import pandas as pd

    out = pd.DataFrame({"config": df["config_label"].astype(str).values,
                        "wl": _workload_labels(df),
                        "workload": df["workload"].astype(str).values,
                        "seed": df["seed"].values if "seed" in df.columns else 1})
    for k, col in METRICS.items():
        out[k] = pd.to_numeric(df[col], errors="coerce").values if col in df.columns else math.nan
    out["cache_acc"] = out["acc_l1d"] + out["acc_l2"] + out["acc_llc"]
    out["refs_asked"] = pd.to_numeric(df["refs"], errors="coerce").values if "refs" in df.columns else math.nan
    out["warmup_asked"] = pd.to_numeric(df["warmup"], errors="coerce").values if "warmup" in df.columns else math.nan
    fp = df["param.footprint"] if "param.footprint" in df.columns else None
    out["footprint"] = fp.astype(str).values if fp is not None else ""
    return out


class Data:
    """The results arranged for the report: per-point rows, per-(config, workload) means and
    ratios to the matching baseline."""

    def __init__(self, df):
        # Mixes (the multicore part) have their own arrangement: see `Mixes`.
        is_mix = df["workload"].astype(str) == "mix" if "workload" in df.columns else None
        self.mixes = Mixes(df[is_mix] if is_mix is not None else df.iloc[0:0])
        if is_mix is not None:
            df = df[~is_mix]
        self.points = _tidy(df)
        # One-pass miss-ratio curves of the points that asked for them ({(config, wl): [Curve]}).
        from xlat.results import curves_of

        self.curves = {}
        if "curves" in df.columns:
            for (cfg, wl), cell in zip(zip(self.points["config"], self.points["wl"]), df["curves"]):
                got = curves_of(cell)
                if got:
                    self.curves.setdefault((cfg, wl), got)
        p = self.points
        present = list(dict.fromkeys(p["config"]))
        self.configs = [c for c in ORDER if c in present] + [c for c in present if c not in ORDER]
        self.workloads = list(dict.fromkeys(p["wl"]))
        self.mean = p.groupby(["config", "wl"], sort=False).mean(numeric_only=True)

    def has(self, *configs):
        return all(c in self.configs or c in self.mixes.configs() for c in configs)

    def get(self, config, wl, metric):
        try:
            return float(self.mean.loc[(config, wl), metric])
        except KeyError:
            return math.nan

    def per_workload(self, config, metric):
        """{workload: mean over seeds} for the workloads `config` ran."""
        return {wl: self.get(config, wl, metric) for wl in self.workloads
                if (config, wl) in self.mean.index and not math.isnan(self.get(config, wl, metric))}

    def before_after(self, metric, ref, config):
        """(per-workload `metric` of ref, of config)."""
        return self.per_workload(ref, metric), self.per_workload(config, metric)

    def gains(self, config, ref, metric="ipc"):
        """{workload: % change of config over ref} (see :meth:`ratios`)."""
        return {w: _pct(r) for w, r in self.ratios(config, ref, metric).items()}

    def ratios(self, config, ref, metric):
        """{workload: mean over seeds of config/ref}, matching points by workload and seed."""
        p = self.points
        a = p[p["config"] == config].set_index(["wl", "seed"])[metric]
        b = p[p["config"] == ref].set_index(["wl", "seed"])[metric]
        r = (a / b).dropna()
        out = {}
        for wl in self.workloads:
            if wl in r.index.get_level_values(0):
                v = r.loc[wl]
                out[wl] = float(v.mean())
        return out


class Mixes:
    """The four-program mixes (configs ``*-mc``) and each program alone (``alone-mc``): per mix
    point its programs (as written, with their cores), each one's IPC and references."""

    def __init__(self, df):
        from xlat import _core

        self.rows = []       # {config, label, programs: [(spec, cores)], ipc: [...], refs: [...]}
        self.alone = {}      # (spec, cores) -> IPC alone
        for _, r in df.iterrows():
            params = json.loads(r["params"]) if isinstance(r.get("params"), str) else {}
            progs = [(spec, tuple(cores or ())) for spec, cores in _core.mix_programs(params.get("programs", ""))]
            stat = functools.partial(_stat, r)
            if len(progs) == 1:
                self.alone[progs[0]] = stat("stat.ipc")
                continue
            self.rows.append({"config": str(r["config_label"]), "label": params.get("label", ""), "programs": progs,
                              "ipc": [stat(f"stat.prog{i}.ipc") for i in range(len(progs))],
                              "refs": [stat(f"stat.prog{i}.refs") for i in range(len(progs))]})

    def configs(self):
        return list(dict.fromkeys(r["config"] for r in self.rows))

    def labels(self):
        return list(dict.fromkeys(r["label"] for r in self.rows))

    def row(self, config, label):
        return next((r for r in self.rows if r["config"] == config and r["label"] == label), None)

    def weighted_speedup(self, config, label):
        """Sum over the mix's programs of IPC in the mix / IPC alone (NaN without them all)."""
        r = self.row(config, label)
        if r is None:
            return math.nan
        alone = [self.alone.get(p, math.nan) for p in r["programs"]]
        return _xlat_ws(r["ipc"], alone)

    def gain(self, config, base="baseline-mc"):
        """% change of the mean (over mixes) of WS(config) / WS(base), as Fig. 11."""
        ratios = [self.weighted_speedup(config, m) / self.weighted_speedup(base, m) for m in self.labels()]
        ratios = [x for x in ratios if not math.isnan(x)]
        return (sum(ratios) / len(ratios) - 1) * 100 if ratios else math.nan


def _stat(row, k):
    """A row's statistic `k` as a float (NaN when missing)."""
    return float(row[k]) if k in row.index and not _isnan(row[k]) else math.nan


def _isnan(v):
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def _xlat_ws(shared, alone):
    import xlat

    return xlat.weighted_speedup(shared, alone)


def mc_table(d: Data):
    """Weighted speedup of each mix on each machine, and how evenly the programs progressed."""
    m = d.mixes
    if not m.rows:
        return None
    rows = []
    for label in m.labels():
        r0 = m.row("baseline-mc", label) or next(r for r in m.rows if r["label"] == label)
        total = sum(x for x in r0["refs"] if not math.isnan(x))
        shares = "/".join(f"{100 * x / total:.0f}" for x in r0["refs"]) if total else ""
        progs = ", ".join(f"{s.split(':')[0]}@{'-'.join(map(str, c))}" for s, c in r0["programs"])
        ws = [m.weighted_speedup(c, label) for c in m.configs()]
        rows.append([label, progs, shares] + ws)
    t = report.markdown_table(rows, columns=["mix", "programs", "refs share % (baseline)"] + [f"WS {c}" for c in m.configs()])
    gains = ", ".join(f"{c} {m.gain(c):+.1f} %" for c in m.configs() if c != "baseline-mc")
    return ("Weighted speedup (Σ IPC in the mix / IPC alone on `alone-mc`, the same machine; 4 = no interference) "
            "of each mix on each 4-core machine. Each program ran alone for a quarter of the mix's references; "
            "the shares column says what each actually ran in the baseline mix (programs with a low IPC run fewer "
            f"references in the same time). Mean gain over `baseline-mc` (Fig. 11's metric): {gains}. Paper "
            "(mean of 20 mixes, 0 % LP): FPT +2.2 %, PTP +9.2 %, FPT+PTP +11.5 %.\n\n" + t)


def geomean(values):
    vals = [v for v in values if v is not None and not math.isnan(v) and v > 0]
    if not vals:
        return math.nan
    return math.exp(sum(math.log(v) for v in vals) / len(vals))


def amean(values):
    vals = [v for v in values if v is not None and not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def reference(config):
    """The baseline a configuration is normalised to (0 % large pages, as the paper; the
    LLC-scaling configs to the baseline with the same LLC)."""
    if "-llc" in config:
        return "baseline" + config[config.index("-llc"):]
    return "2d" if config.startswith("2d") else "baseline"


def group(config):
    """Which part of the paper's matrix a configuration belongs to."""
    if "-llc" in config:
        return "llc"
    if "-lp" in config:
        return "lp"
    return "virt" if config.startswith("2d") else "native"


GROUPS = {"native": "native, 0 % large pages", "virt": "virtualized, 0 % large pages",
          "lp": "50 % and 100 % large pages", "llc": "smaller LLC (page-table-to-LLC ratio)"}


def lp_reference(config):
    """The baseline with the same large-page scenario (``fpt+ptp-lp50`` -> ``baseline-lp50``,
    ``2d-hf+gf+ptp-lp50`` -> ``2d-lp50``)."""
    suffix = config[config.index("-lp"):]
    return ("2d" if config.startswith("2d") else "baseline") + suffix


# -- xlat's counterpart of each paper number ----------------------------------------------------

def _speedup(d, config, ref=None):
    ref = ref or reference(config)
    return (geomean(d.ratios(config, ref, "ipc").values()) - 1) * 100


def _gain_over(d, config, base):
    """The gain of ``config`` over ``base`` on the scale both are normalised to (each over its
    :func:`reference`), in pp: their geometric-mean speed-ups over the workloads both ran (a
    comparator that runs on fewer workloads than the baseline is set against the baseline's
    speed-up on those, not on all of its)."""
    a, b = d.ratios(config, reference(config), "ipc"), d.ratios(base, reference(base), "ipc")
    common = [w for w in a if w in b]
    if not common:
        return math.nan
    return (geomean([a[w] for w in common]) - geomean([b[w] for w in common])) * 100


def _all_walks(d, config, wl):
    """Walks of TLB misses and of stores through clean translations (both read the tables)."""
    return d.get(config, wl, "walks") + d.get(config, wl, "dirty_walks")


def _energy(d, config, kind):
    return (geomean(d.ratios(config, reference(config), kind).values()) - 1) * 100


def _ech_reads(d, config):
    """{workload: ECH table lines read per walk} (walks of TLB misses and of D-bit updates)."""
    return {w: r / _all_walks(d, config, w) for w, r in d.per_workload(config, "ech_table_reads").items()
            if _all_walks(d, config, w)}


def _gups8g(d, config, metric):
    p = d.points
    sel = p[(p["config"] == config) & (p["workload"] == "gups") & (p["footprint"] == "8G")]
    return float(sel[metric].mean()) if len(sel) else math.nan


def _workload(d, config, name, metric):
    p = d.points
    sel = p[(p["config"] == config) & (p["workload"] == name)]
    return float(sel[metric].mean()) if len(sel) else math.nan


def _pwc_curve(d, wl_name, structure="pwc.l2"):
    """The pwc-size point's curve of `structure` for the workload named `wl_name`, or None."""
    for (cfg, wl), curves in d.curves.items():
        if cfg == "pwc-size" and _base(wl) == wl_name:
            return next((c for c in curves if c.structure == structure), None)
    return None


def _pwc_entries_for(d, wl_name, ratio):
    """The fewest L2-PWC entries within `ratio` of its lookups of the fewest misses the curve
    reaches (past them, more entries remove only compulsory misses' worth: the knee)."""
    c = _pwc_curve(d, wl_name)
    if c is None or not c.lookups:
        return math.nan
    floor = c.misses(c.max_ways)
    return next(float(c.entries(w)) for w in range(1, c.max_ways + 1) if c.misses(w) - floor <= ratio * c.lookups)


def pwc_table(d: Data):
    """§7.1's page-walk-cache sweep from the pwc-size points' one-pass curves."""
    wls = [w for w in ("gups", "random") if _pwc_curve(d, w) is not None]
    if not wls:
        return ""
    sizes = [s for s in (1, 4, 24, 64, 256, 1024, 2048, 3072, 4096, 8192)]
    rows = []
    for n in sizes:
        row = [f"{n:,}" + (" (skylake)" if n == 24 else "")]
        for w in wls:
            c = _pwc_curve(d, w)
            row.append(f"{c.misses(n) / c.lookups:.3f}" if n <= c.max_ways and c.lookups else "—")
        rows.append(row)
    l3 = []
    for w in wls:
        c3 = _pwc_curve(d, w, "pwc.l3")
        if c3 is not None and c3.lookups:
            l3.append(f"{w}: " + ", ".join(f"{n} entries {c3.misses(n) / c3.lookups:.3f}" for n in (1, 4, 16) if n <= c3.max_ways))
    fpt = {w: _workload(d, "fpt", w, "apw") for w in wls} if d.has("fpt") else {}
    text = [
        ("One run per workload on the baseline machine (config `pwc-size`, `curves = [\"pwc.l2\", \"pwc.l3\"]` in "
        "sweep.toml) gives the L2 PWC's misses at every size from 1 to 8,192 entries (fully associative, LRU): "
        "Mattson's stack algorithm (`xlat mrc`, docs/performance.md), each value what a separate run with that "
        "many entries counts, instead of one run per size. L2-PWC misses per lookup:"),
        "",
        report.markdown_table(rows, columns=["L2 PWC entries"] + wls),
        "",
        "A walk that hits the L2 PWC reads one PTE, as every FPT walk does; one that misses reads at least two, so "
        "accesses per walk are at least 1 + the miss ratio above. The paper: matching FPT's single access needs "
        "about 4,096 entries (8 GB / 2 MB); xlat: "
        + ", ".join(f"{w} {_pwc_entries_for(d, w, 0.01):,.0f}" for w in wls)
        + " entries (the fewest within 1 % of lookups of the curve's lowest misses)"
        + ("; FPT's accesses per walk in this run: " + ", ".join(f"{w} {v:.2f}" for w, v in fpt.items() if not math.isnan(v)) if fpt else "")
        + ".",
    ]
    if l3:
        text += ["", "The L3 PWC (approximate: an upper level is filled only when the levels below miss), misses per "
                 "lookup at 1, 4 (skylake) and 16 entries, where the paper's performance moves -1.5 % to +2.4 %: "
                 + "; ".join(l3) + "."]
    return "\n".join(text)


def _delta_pp(d, config, metric):
    base = d.per_workload(reference(config), metric)
    other = d.per_workload(config, metric)
    return amean([(other[w] - base[w]) * 100 for w in other if w in base])


# id -> (configurations it needs, workload it needs or None, function of Data)
RECIPES = {
    "apw_base_mean": (["baseline"], None, lambda d: amean(d.per_workload("baseline", "apw").values())),
    "apw_base_random": (["baseline"], "random", lambda d: _workload(d, "baseline", "random", "apw")),
    "pwc_l2_entries_for_fpt": (["pwc-size"], "gups", lambda d: _pwc_entries_for(d, "gups", 0.01)),
    "apw_base_gups": (["baseline"], "gups", lambda d: _workload(d, "baseline", "gups", "apw")),
    "apw_fpt_mean": (["fpt"], None, lambda d: amean(d.per_workload("fpt", "apw").values())),
    "apw_fpt_max": (["fpt"], None, lambda d: max(d.per_workload("fpt", "apw").values(), default=math.nan)),
    "apw_2d_base_mean": (["2d"], None, lambda d: amean(d.per_workload("2d", "apw").values())),
    "apw_2d_base_gups": (["2d"], "gups", lambda d: _workload(d, "2d", "gups", "apw")),
    "apw_2d_base_random": (["2d"], "random", lambda d: _workload(d, "2d", "random", "apw")),
    "apw_2d_hfgf_mean": (["2d-hf+gf"], None, lambda d: amean(d.per_workload("2d-hf+gf", "apw").values())),
    "walk_cycles_base": (["baseline"], None, lambda d: amean(d.per_workload("baseline", "walk_cycles").values())),
    "walk_cycles_ptp": (["ptp"], None, lambda d: amean(d.per_workload("ptp", "walk_cycles").values())),
    "walk_cycles_ptp_ratio": (["baseline", "ptp"], None,
                              lambda d: amean(d.per_workload("ptp", "walk_cycles").values())
                              / amean(d.per_workload("baseline", "walk_cycles").values())),
    "walk_cycles_fpt_ptp": (["fpt+ptp"], None, lambda d: amean(d.per_workload("fpt+ptp", "walk_cycles").values())),
    "speedup_ptp": (["baseline", "ptp"], None, lambda d: _speedup(d, "ptp")),
    "speedup_fpt": (["baseline", "fpt"], None, lambda d: _speedup(d, "fpt")),
    "speedup_fpt_ptp": (["baseline", "fpt+ptp"], None, lambda d: _speedup(d, "fpt+ptp")),
    "speedup_asap": (["baseline", "asap"], None, lambda d: _speedup(d, "asap")),
    "speedup_ech": (["baseline", "ech"], None, lambda d: _speedup(d, "ech")),
    "speedup_csalt": (["baseline", "csalt"], None, lambda d: _speedup(d, "csalt")),
    "ech_table_reads_per_walk": (["ech"], None, lambda d: amean(_ech_reads(d, "ech").values())),
    # "four (mixed 4 KB/2 MB pages)": the same count at 50 % large pages.
    "ech_table_reads_per_walk_lp50": (["ech-lp50"], None, lambda d: amean(_ech_reads(d, "ech-lp50").values())),
    "speedup_fpt_gups": (["baseline", "fpt"], "gups",
                         lambda d: (d.ratios("fpt", "baseline", "ipc").get("gups", math.nan) - 1) * 100),
    "speedup_fpt_ptp_lp50": (["baseline", "baseline-lp50", "fpt+ptp-lp50"], None,
                             lambda d: _gain_over(d, "fpt+ptp-lp50", "baseline-lp50")),
    "speedup_base_lp50": (["baseline", "baseline-lp50"], None, lambda d: _speedup(d, "baseline-lp50")),
    "speedup_2d_hf": (["2d", "2d-hf"], None, lambda d: _speedup(d, "2d-hf")),
    "speedup_2d_gf": (["2d", "2d-gf"], None, lambda d: _speedup(d, "2d-gf")),
    "speedup_2d_hfgf": (["2d", "2d-hf+gf"], None, lambda d: _speedup(d, "2d-hf+gf")),
    "speedup_2d_hf_ptp": (["2d", "2d-hf+ptp"], None, lambda d: _speedup(d, "2d-hf+ptp")),
    "speedup_2d_gf_ptp": (["2d", "2d-gf+ptp"], None, lambda d: _speedup(d, "2d-gf+ptp")),
    "speedup_2d_hfgf_ptp": (["2d", "2d-hf+gf+ptp"], None, lambda d: _speedup(d, "2d-hf+gf+ptp")),
    "speedup_2d_hfgf_ptp_lp50": (["2d-lp50", "2d-hf+gf+ptp-lp50"], None,
                                 lambda d: _speedup(d, "2d-hf+gf+ptp-lp50", "2d-lp50")),
    "l2_data_miss_delta_ptp": (["baseline", "ptp"], None, lambda d: _delta_pp(d, "ptp", "l2_data")),
    "l2_pt_miss_delta_ptp": (["baseline", "ptp"], None, lambda d: _delta_pp(d, "ptp", "l2_pt")),
    "l2_data_miss_base": (["baseline"], None, lambda d: 100 * amean(d.per_workload("baseline", "l2_data").values())),
    "llc_data_miss_base": (["baseline"], None, lambda d: 100 * amean(d.per_workload("baseline", "llc_data").values())),
    "energy_cache_ptp": (["baseline", "ptp"], None, lambda d: _energy(d, "ptp", "e_cache")),
    "energy_dram_ptp": (["baseline", "ptp"], None, lambda d: _energy(d, "ptp", "e_dram")),
    "energy_cache_ech": (["baseline", "ech"], None, lambda d: _energy(d, "ech", "e_cache")),
    "energy_cache_csalt": (["baseline", "csalt"], None, lambda d: _energy(d, "csalt", "e_cache")),
    "energy_dram_csalt": (["baseline", "csalt"], None, lambda d: _energy(d, "csalt", "e_dram")),
    "energy_dram_ech": (["baseline", "ech"], None, lambda d: _energy(d, "ech", "e_dram")),
    "energy_cache_fpt_ptp": (["baseline", "fpt+ptp"], None, lambda d: _energy(d, "fpt+ptp", "e_cache")),
    "energy_dram_fpt_ptp": (["baseline", "fpt+ptp"], None, lambda d: _energy(d, "fpt+ptp", "e_dram")),
    "energy_cache_2d_hfgf": (["2d", "2d-hf+gf"], None, lambda d: _energy(d, "2d-hf+gf", "e_cache")),
    "energy_cache_2d_hfgf_ptp": (["2d", "2d-hf+gf+ptp"], None, lambda d: _energy(d, "2d-hf+gf+ptp", "e_cache")),
    "energy_dram_2d_hfgf_ptp": (["2d", "2d-hf+gf+ptp"], None, lambda d: _energy(d, "2d-hf+gf+ptp", "e_dram")),
    "pt_nodes_8g_radix": (["baseline"], "gups 8 GB", lambda d: _gups8g(d, "baseline", "pt_nodes")),
    "pt_nodes_8g_fpt": (["fpt"], "gups 8 GB", lambda d: _gups8g(d, "fpt", "pt_nodes")),
    "pt_mb_8g_radix": (["baseline"], "gups 8 GB", lambda d: _gups8g(d, "baseline", "pt_bytes") / 2**20),
    "pt_mb_8g_fpt": (["fpt"], "gups 8 GB", lambda d: _gups8g(d, "fpt", "pt_bytes") / 2**20),
}
# PTP under a growing page-table-to-LLC ratio (§7.1): the LLC shrunk 2-16x, PTP gain over the
# baseline with the same LLC (sweep.toml runs them on 4 workloads).
for _x in (2, 4, 8, 16):
    RECIPES[f"speedup_ptp_llc{_x}x"] = ([f"baseline-llc{_x}x", f"ptp-llc{_x}x"], None,
                                        lambda d, x=_x: _speedup(d, f"ptp-llc{x}x", f"baseline-llc{x}x"))
    NEEDS[f"baseline-llc{_x}x"] = NEEDS[f"ptp-llc{_x}x"] = []
    ORDER += [f"baseline-llc{_x}x", f"ptp-llc{_x}x"]
# "In the 16x page table to LLC ratio, we are caching 6.3% of the page table": the 1/16 LLC's
# capacity over the page table of GUPS 8 GB (the paper's 8 GB example) on that machine.
RECIPES["llc16x_pt_share"] = (["baseline-llc16x"], "gups 8 GB",
                              lambda d: 100 * _gups8g(d, "baseline-llc16x", "llc_kb") * 2**10
                              / _gups8g(d, "baseline-llc16x", "pt_bytes"))

# Multicore (Fig. 11): mean over the mixes of each machine's weighted speedup over baseline-mc's.
RECIPES["mc_speedup_ptp"] = (["baseline-mc", "ptp-mc"], None, lambda d: d.mixes.gain("ptp-mc"))
RECIPES["mc_speedup_fpt"] = (["baseline-mc", "fpt-mc"], None, lambda d: d.mixes.gain("fpt-mc"))
RECIPES["mc_speedup_fpt_ptp"] = (["baseline-mc", "fpt+ptp-mc"], None, lambda d: d.mixes.gain("fpt+ptp-mc"))
NEEDS.update({"baseline-mc": [MC], "ptp-mc": [MC], "fpt-mc": [FPT, MC], "fpt+ptp-mc": [FPT, MC]})
# At 50 % and 100 % large pages: the gain over that scenario's baseline, both on the scale of
# baseline-mc (the paper's pp on the 0 %-normalised scale, as the native large-page rows).
for _lp in ("lp50", "lp100"):
    for _id, _c in (("fpt", "fpt"), ("ptp", "ptp"), ("fpt_ptp", "fpt+ptp")):
        RECIPES[f"mc_speedup_{_id}_{_lp}"] = (
            ["baseline-mc", f"baseline-mc-{_lp}", f"{_c}-mc-{_lp}"], None,
            lambda d, c=_c, lp=_lp: d.mixes.gain(f"{c}-mc-{lp}") - d.mixes.gain(f"baseline-mc-{lp}"))
        NEEDS[f"{_c}-mc-{_lp}"] = NEEDS[f"{_c}-mc"] + [LP]
    NEEDS[f"baseline-mc-{_lp}"] = [MC, LP]

# Accesses per walk of the workloads the paper calls typical (all but GUPS and random access).
def _apw_others(d, config):
    return amean([x for w, x in d.per_workload(config, "apw").items() if w.split(":")[0] not in ("gups", "random")])


RECIPES["apw_base_typical"] = (["baseline"], None, lambda d: _apw_others(d, "baseline"))
RECIPES["apw_2d_base_others"] = (["2d"], None, lambda d: _apw_others(d, "2d"))
# §7.1's L3-PWC sweep on GUPS: the least and most of the 1-16-entry speedups, and 16 on PTP.
_PWC_L3 = ["pwc-l3-1", "pwc-l3-2", "pwc-l3-8", "pwc-l3-16"]


def _gups_speedup(d, config, ref):
    return (d.ratios(config, ref, "ipc").get("gups", math.nan) - 1) * 100


RECIPES["pwc_l3_sweep_min"] = (["baseline"] + _PWC_L3, "gups", lambda d: min(_gups_speedup(d, c, "baseline") for c in _PWC_L3))
RECIPES["pwc_l3_sweep_max"] = (["baseline"] + _PWC_L3, "gups", lambda d: max(_gups_speedup(d, c, "baseline") for c in _PWC_L3))
RECIPES["pwc_l3_16_on_ptp"] = (["ptp", "ptp+pwc-l3-16"], "gups", lambda d: _gups_speedup(d, "ptp+pwc-l3-16", "ptp"))
# "PTP adds 6.1-6.9 pp" to HF, GF and HF+GF: the mean of the three increments.
RECIPES["speedup_2d_ptp_adds"] = (
    ["2d", "2d-hf", "2d-gf", "2d-hf+gf", "2d-hf+ptp", "2d-gf+ptp", "2d-hf+gf+ptp"], None,
    lambda d: amean([_gain_over(d, f"{c}+ptp", c) for c in ("2d-hf", "2d-gf", "2d-hf+gf")]))
# §4.1's graph500 table sizes: BFS (graph500's kernel) in the Base-2D VM.
RECIPES["graph500_guest_pt_mb"] = (["2d"], "bfs", lambda d: _workload(d, "2d", "bfs", "pt_bytes") / 2**20)
RECIPES["graph500_host_pt_kb"] = (["2d"], "bfs", lambda d: _workload(d, "2d", "bfs", "host_pte_guest_pt") / 2**10)
# The comparators at 50 %: their gain over the 50 %-LP baseline, on the 0 %-normalised scale.
for _c in ("asap", "ech", "csalt"):
    RECIPES[f"speedup_{_c}_lp50"] = (["baseline", "baseline-lp50", f"{_c}-lp50"], None,
                                     lambda d, c=_c: _gain_over(d, f"{c}-lp50", "baseline-lp50"))
# The FPT -2.8 % of Fig. 13 is stated as fewer memory-system accesses to the caches.
RECIPES["cache_accesses_fpt"] = (["baseline", "fpt"], None, lambda d: _energy(d, "fpt", "cache_acc"))
# CSALT "increases the L3 access 5%" (§7.3): LLC accesses over the baseline's, same references.
RECIPES["llc_accesses_csalt"] = (["baseline", "csalt"], None, lambda d: _energy(d, "csalt", "acc_llc"))
# Fig. 4 at 50 % and 100 %: plain FPT (no NF rule) and FPT+NF against the THP baseline.
for _lp in ("lp50", "lp100"):
    RECIPES[f"fig4_fpt_nonf_{_lp}"] = ([f"baseline-{_lp}", f"fpt-nonf-{_lp}"], None,
                                       lambda d, lp=_lp: _speedup(d, f"fpt-nonf-{lp}", f"baseline-{lp}"))
    RECIPES[f"fig4_fpt_nf_{_lp}"] = ([f"baseline-{_lp}", f"fpt-{_lp}"], None,
                                     lambda d, lp=_lp: _speedup(d, f"fpt-{lp}", f"baseline-{lp}"))
# §7.5: L3+L2 flattening over the baseline of the same large-page share, native and with host and
# guest both L3+L2; and at 100 % against the L4+L3/L2+L1 design.
for _lp, _sfx in (("0", ""), ("50", "-lp50"), ("100", "-lp100")):
    RECIPES[f"l3l2_native_lp{_lp}"] = ([f"baseline{_sfx}", f"fpt-l3l2{_sfx}"], None,
                                       lambda d, x=_sfx: _speedup(d, f"fpt-l3l2{x}", f"baseline{x}"))
    RECIPES[f"l3l2_virt_lp{_lp}"] = ([f"2d{_sfx}", f"2d-l3l2{_sfx}"], None,
                                     lambda d, x=_sfx: _speedup(d, f"2d-l3l2{x}", f"2d{x}"))
RECIPES["l3l2_beats_fpt_native_lp100"] = (
    ["baseline-lp100", "fpt-l3l2-lp100", "fpt-lp100"], None,
    lambda d: _speedup(d, "fpt-l3l2-lp100", "baseline-lp100") - _speedup(d, "fpt-lp100", "baseline-lp100"))
RECIPES["l3l2_beats_fpt_virt_lp100"] = (
    ["2d-lp100", "2d-l3l2-lp100", "2d-hf+gf-lp100"], None,
    lambda d: _speedup(d, "2d-l3l2-lp100", "2d-lp100") - _speedup(d, "2d-hf+gf-lp100", "2d-lp100"))

# Numbers that need something no configuration label of this study provides.
UNSUPPORTED: dict = {}

# Numbers of paper.toml's [[numbers]] no simulation here can reproduce, and why. (None now: the
# paper's numbers the study does not compare, the mobile, kernel-prototype and real-hardware ones
# among them, are paper.toml's [[out_of_scope]] entries, each with its reason, listed under the
# paper-vs-xlat table.)
OUT_OF_SCOPE: dict = {}


# How to tell whether the engine has a feature: a configuration it must accept.
PROBES = {FPT: {"pt.format": "fpt"}, VIRT: {"virt.enabled": "true"},
          LP: {"os.page_policy": "ideal", "phys.fragmentation": "lowhalf"}, MC: {"cache.llc.ways_per_core": "0"}}
_AVAILABLE: dict = {}


def available(feature):
    """Whether this engine build can run `feature` (multi-program mixes: no label here)."""
    if feature not in _AVAILABLE:
        probe = PROBES.get(feature)
        ok = False
        if probe is not None:
            try:
                from xlat import config

                config.resolve("skylake", probe)
                ok = True
            except Exception:  # noqa: BLE001 - any refusal means "not in this engine"
                ok = False
        _AVAILABLE[feature] = ok
    return _AVAILABLE[feature]


def _needs_text(configs):
    needs = []
    for c in configs:
        for n in NEEDS.get(c, []):
            if n not in needs:
                needs.append(n)
    return " + ".join(needs)


def compute(d: Data, entries):
    """xlat's value and status for every paper entry: {id: (value or None, status)}."""
    out = {}
    for e in entries:
        i = e["id"]
        if i in UNSUPPORTED:
            out[i] = (None, f"not yet run (needs: {' + '.join(f for f in UNSUPPORTED[i] if not available(f))})")
            continue
        if i in OUT_OF_SCOPE:
            out[i] = (None, f"out of scope: {OUT_OF_SCOPE[i]}")
            continue
        if i not in RECIPES:
            out[i] = (None, "no recipe in report.py")
            continue
        configs, wl, fn = RECIPES[i]
        missing = [c for c in configs if not d.has(c)]
        if missing:
            names = ", ".join(repr(c) for c in missing)
            lacking = [f for f in _needs_text(missing).split(" + ") if f and not available(f)]
            out[i] = (None, f"not yet run (needs: {' + '.join(lacking)}; config {names})" if lacking
                      else f"not in this sweep (runnable now: uncomment config {names} in sweep.toml)")
            continue
        try:
            v = float(fn(d))
        except (ValueError, ZeroDivisionError):
            v = math.nan
        if math.isnan(v):
            out[i] = (None, f"not in this sweep (needs workload {wl})" if wl else "no matching points")
        else:
            out[i] = (v, "ran")
    return out


# -- figures ----------------------------------------------------------------------------------

def _bars(ax, groups, series, ylabel, title=None, percent_zero=False):
    """Grouped bars: groups on x, one bar per (label, {group: value}) series."""
    n = max(1, len(series))
    width = 0.8 / n
    for i, (label, vals) in enumerate(series):
        xs = [j - 0.4 + width * (i + 0.5) for j, g in enumerate(groups) if g in vals]
        ys = [vals[g] for g in groups if g in vals]
        ax.bar(xs, ys, width, label=label)
    ax.set_xticks(range(len(groups)), groups, rotation=30, ha="right")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize="medium")
    if percent_zero:
        ax.axhline(0, color="black", linewidth=0.8)
    ax.grid(axis="y", alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize="small")


def _figure(path, ncols, nrows, draw, width=None, height=None):
    fig = report.new_figure(width or 6.4 * ncols, height or 3.6 * nrows)
    axes = [fig.add_subplot(nrows, ncols, k + 1) for k in range(nrows * ncols)]
    draw(axes)
    return report.save_figure(fig, path)


def figures(d: Data, out_dir: Path):
    """All figures, one set per part of the matrix that ran (native, virtualized, large pages,
    LLC scaling); returns [(path, caption)]."""
    out = []
    parts = {}
    for c in d.configs:
        parts.setdefault(group(c), []).append(c)
    # Each large-page figure also shows the 0 % baselines it is compared with.
    if "lp" in parts:
        parts["lp"] = [c for c in ("baseline", "2d") if c in d.configs] + parts["lp"]
    if "llc" in parts:
        parts["llc"] = [c for c in ("baseline", "ptp") if c in d.configs] + parts["llc"]
    suffix = {"native": "", "virt": "_virt", "lp": "_lp", "llc": "_llc"}
    paper = {
        "native": ("The paper: < 1.5 on average, up to 2.5 (random) in the baseline; 1.0 with FPT.",
                   "The paper's averages: 50.9 (baseline), 33.0 (PTP), 29.1 (FPT+PTP).",
                   "(paper, native: +2.3 % FPT, +6.8 % PTP, +9.2 % FPT+PTP)",
                   "(paper, native PTP: -2.5 % cache, -4.6 % DRAM; FPT+PTP: -5.1 % / -4.7 %)"),
        "virt": (("Guest and host reads together. The paper: 4.4 on average for Base-2D (GUPS 9.6, random 9.4), "
                  "2.8 with both tables flattened."),
                 "The paper gives no virtualized walk latency.",
                 "(paper, over Base-2D: HF +1.1, GF +4.9, HF+GF +7.1 %; with PTP +7.5, +11.6, +14.0 %)",
                 "(paper, HF+GF: -6.7 % cache; HF+GF+PTP: -8.7 % cache, -4.7 % DRAM)"),
        "lp": ("With the 0 % baselines for comparison.", "",
               ("(paper: baseline 50 % +11.0 % over baseline 0 %; "
                "FPT+PTP at 50 % +5.8 pp over it; virtualized HF+GF+PTP with fragmentation +7.2 %)"), ""),
        "llc": ("", "", "(paper, PTP at page-table-to-LLC ratio 2x/4x/8x/16x: +5.9/+5.6/+6.5/+7.0 %)", ""),
    }
    for part in ("native", "virt", "lp", "llc"):
        cfgs = parts.get(part)
        if not cfgs:
            continue
        sx, name = suffix[part], GROUPS[part]
        wls = [w for w in d.workloads if any((c, w) in d.mean.index for c in cfgs if group(c) == part)]
        p_apw, p_lat, p_sp, p_en = paper[part]

        def series(metric, scale=1.0, cfgs=cfgs, wls=wls):
            return [(c, {w: v * scale for w, v in d.per_workload(c, metric).items() if w in wls}) for c in cfgs]

        out.append((_figure(out_dir / f"accesses_per_walk{sx}.png", 1, 1, lambda ax, series=series, wls=wls, name=name: _bars(
            ax[0], wls, series("apw"), "PTE reads per walk (after the PWC)",
            f"Accesses per walk (Fig. 10's metric), {name}")),
            f"Memory accesses per page walk (PTE reads sent to L1D after page-walk-cache filtering), {name}. "
            + p_apw))
        out.append((_figure(out_dir / f"walk_latency{sx}.png", 1, 1, lambda ax, series=series, wls=wls, name=name: _bars(
            ax[0], wls, series("walk_cycles"), "cycles per walk", f"Page-walk latency, {name}")),
            f"Mean page-walk latency in cycles (the walk itself, not the wait for a free walker), {name}. " + p_lat))

        others = [c for c in cfgs if group(c) == part and c not in ("baseline", "2d")]
        if part == "llc":
            others = [c for c in others if c.startswith("ptp")]
        if not others:
            continue

        def rel(metric, others=others, wls=wls):
            ser = []
            for c in others:
                r = {w: v for w, v in d.ratios(c, reference(c), metric).items() if w in wls}
                vals = {w: (v - 1) * 100 for w, v in r.items()}
                if r:
                    vals["geomean"] = (geomean(r.values()) - 1) * 100
                ser.append((f"{c} vs {reference(c)}", vals))
            return ser

        out.append((_figure(out_dir / f"speedup{sx}.png", 1, 1, lambda ax, rel=rel, wls=wls, name=name: _bars(
            ax[0], wls + ["geomean"], rel("ipc"), "speedup (IPC) over baseline, %",
            f"Performance (Fig. 9 / 12's metric), {name}", percent_zero=True)),
            f"IPC speedup over the matching 0 %-large-page baseline per workload, and the geomean {p_sp}."))
        if part in ("native", "virt"):
            def misses(ax, series=series, wls=wls):
                for a, (m, t) in zip(ax, [("l2_data", "L2 data"), ("l2_pt", "L2 page-table"),
                                         ("llc_data", "LLC data"), ("llc_pt", "LLC page-table")]):
                    _bars(a, wls, series(m, 100), "miss ratio, %", f"{t} miss ratio")
            out.append((_figure(out_dir / f"miss_ratios{sx}.png", 2, 2, misses),
                        f"Miss ratios of data and page-table lines in L2 and the LLC, {name}."
                        + (" The paper, PTP vs baseline: L2 data +4.7 pp, L2 page-walk -36.2 pp; baseline data "
                           "miss ratios 95 % (L2), 80 % (L3)." if part == "native" else "")))

            def energy(ax, rel=rel, wls=wls):
                for a, (m, t) in zip(ax, [("e_cache", "Cache (L1D+L2+LLC)"), ("e_dram", "DRAM")]):
                    _bars(a, wls + ["geomean"], rel(m), "dynamic energy vs baseline, %", f"{t} dynamic energy",
                          percent_zero=True)
            out.append((_figure(out_dir / f"energy{sx}.png", 2, 1, energy),
                        f"Dynamic energy relative to the matching baseline, same references, {name} {p_en}."))
    return out


# -- tables and text --------------------------------------------------------------------------

def _fmt(v, digits=3, signed=False):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "—"
    if signed:
        return f"{v:+.{digits}g}" if abs(v) >= 1 else f"{v:+.2f}"
    return report.fmt_number(float(v), digits + 1)


def workload_tables(d: Data):
    rows, rows2 = [], []
    for w in d.workloads:
        for c in d.configs:
            if (c, w) not in d.mean.index:
                continue
            g = functools.partial(d.get, c, w)
            ref = reference(c)
            sp = d.ratios(c, ref, "ipc").get(w) if c != ref else None
            walks = g("walks")
            dirty = g("dirty_walks")
            rows.append([w, c, g("mapped") / 2**30, g("mpki"), g("apw"), g("walk_cycles"),
                         None if math.isnan(dirty) or not walks else 100 * dirty / walks, g("ipc"),
                         None if sp is None else (sp - 1) * 100])
            served = [g(k) for k in ("pte_l1", "pte_l2", "pte_llc", "pte_dram")]
            tot = sum(served)
            ec = d.ratios(c, ref, "e_cache").get(w) if c != ref else None
            ed = d.ratios(c, ref, "e_dram").get(w) if c != ref else None
            rows2.append([w, c, 100 * g("l2_data"), 100 * g("l2_pt"), 100 * g("llc_data"), 100 * g("llc_pt"),
                          100 * served[3] / tot if tot else None,
                          None if ec is None else (ec - 1) * 100, None if ed is None else (ed - 1) * 100])
    t1 = report.markdown_table(rows, columns=["workload", "config", "mapped GiB", "L2 TLB MPKI", "accesses/walk",
                                              "walk cycles", "D-bit walks %", "IPC", "speedup %"])
    t2 = report.markdown_table(rows2, columns=["workload", "config", "L2 data miss %", "L2 PT miss %",
                                               "LLC data miss %", "LLC PT miss %", "PTE reads from DRAM %",
                                               "cache energy Δ%", "DRAM energy Δ%"])
    return t1, t2


def _subset_mean(d, config, metric, wls, scale=1.0):
    vals = d.per_workload(config, metric)
    return amean([vals[w] * scale for w in wls if w in vals])


def _subset_speedup(d, config, ref, wls, metric="ipc"):
    r = d.ratios(config, ref, metric)
    return (geomean([r[w] for w in wls if w in r]) - 1) * 100


PAPER_2D = {"2d-hf": 1.1, "2d-gf": 4.9, "2d-hf+gf": 7.1, "2d-hf+ptp": 7.5, "2d-gf+ptp": 11.6, "2d-hf+gf+ptp": 14.0}


def virt_table(d: Data):
    """The virtualized machines side by side, over the workloads they ran (Fig. 12, §4.1)."""
    cfgs = [c for c in d.configs if group(c) == "virt"]
    if "2d" not in cfgs:
        return None
    wls = list(d.per_workload("2d", "apw"))
    rows = []
    if d.has("baseline"):
        rows.append(["baseline (native)", _subset_mean(d, "baseline", "apw", wls), None, None,
                     _subset_mean(d, "baseline", "walk_cycles", wls), None, None, None, None, None])
    for c in cfgs:
        sp = _subset_speedup(d, c, "2d", wls) if c != "2d" else None
        ec = _subset_speedup(d, c, "2d", wls, "e_cache") if c != "2d" else None
        ed = _subset_speedup(d, c, "2d", wls, "e_dram") if c != "2d" else None
        rows.append([c, _subset_mean(d, c, "apw", wls), _subset_mean(d, c, "apw_guest", wls),
                     _subset_mean(d, c, "apw_host", wls), _subset_mean(d, c, "walk_cycles", wls),
                     _subset_mean(d, c, "ntlb_hit", wls, 100), sp, PAPER_2D.get(c), ec, ed])
    t = report.markdown_table(rows, columns=["config", "accesses/walk", "guest", "host", "walk cycles",
                                             "nested TLB hit %", "speedup vs 2d %", "paper %",
                                             "cache energy Δ%", "DRAM energy Δ%"])
    return (f"Means (speedups and energy: geomeans) over the workloads the virtualized machines ran "
            f"({', '.join(wls)}); the native baseline over the same workloads for comparison. Paper: "
            "4.4 accesses per walk for Base-2D, 2.8 for HF+GF.\n\n" + t)


def lp_table(d: Data):
    """The large-page scenarios (Fig. 4, 9) against the 0 % baselines, over the workloads they ran."""
    cfgs = [c for c in d.configs if group(c) == "lp"]
    if not cfgs:
        return None
    rows = []
    for c in cfgs:
        ref0 = reference(c)
        refl = lp_reference(c)
        wls = list(d.per_workload(c, "ipc"))
        fb = d.per_workload(c, "fallbacks")
        un = d.per_workload(c, "unflattened")
        is_fpt = "fpt" in c or "gf" in c
        rows.append([c, ", ".join(wls), _subset_mean(d, c, "huge_cov", wls, 100),
                     _subset_mean(d, ref0, "apw", wls), _subset_mean(d, c, "apw", wls),
                     _subset_mean(d, ref0, "walk_cycles", wls), _subset_mean(d, c, "walk_cycles", wls),
                     _subset_speedup(d, c, ref0, wls) if d.has(ref0) else None,
                     _subset_speedup(d, c, refl, wls) if d.has(refl) and refl != c else None,
                     (f"{sum(fb.values()):.0f} / {sum(un.values()):.0f}" if is_fpt and fb else "")])
    t = report.markdown_table(rows, columns=["config", "workloads", "2 MB coverage %", "accesses/walk at 0 %",
                                             "accesses/walk", "walk cycles at 0 %", "walk cycles",
                                             "speedup vs 0 % baseline %", "speedup vs same-LP baseline %",
                                             "FPT fallbacks / unflattened 1 GB regions"])
    return ("Each large-page machine against its 0 % baseline (`baseline`, or `2d` in a VM) and against the "
            "baseline with the same large pages (`baseline-lp50`, `2d-lp50`, ...), over the workloads it ran. "
            "Paper (Fig. 9, §7.1, §8): baseline 50 % +11.0 % over baseline 0 %; FPT+PTP at 50 % +5.8 pp above "
            "the 50 % baseline on the 0 %-normalised scale; gains shrink at 100 % (no number); virtualized "
            "HF+GF+PTP +7.2 % \"with realistic large page fragmentation\".\n\n" + t)


def sanity_checks(d: Data):
    """Checks against the seed's own expectations and the engine's invariants: (ok, text)."""
    out = []
    for name in ("gups", "random"):
        v = _workload(d, "baseline", name, "apw")
        if not math.isnan(v):
            # Seed §7.9: uniform over 8 GB with a 4-entry L3 PSC and a 24-entry L2 PSC: 2.49.
            ok = 2.3 <= v <= 2.6 if _gups_like_8g(d, name) else True
            text = f"baseline accesses/walk on {name}: {v:.3f} (analytic for uniform 8 GB: 2.49)"
            dirty = _workload(d, "baseline", name, "dirty_walks") / max(1.0, _workload(d, "baseline", name, "walks"))
            if not ok and dirty > 0.05:
                ok, text = None, text + (f"; {100 * dirty:.0f} % of its walks are 1-access D-bit walks after a short "
                                         "warm-up (see Discussion), which explains the gap")
            out.append((ok, text))
    rest = {w: v for w, v in d.per_workload("baseline", "apw").items() if w.split("(")[0] not in ("gups", "random")}
    if rest:
        lo, hi = min(rest.values()), max(rest.values())
        out.append((lo >= 1.0 and hi <= 2.0,
                    f"baseline accesses/walk on the other workloads: {lo:.2f}-{hi:.2f} (paper: 1.1-1.8)"))
    n = _gups8g(d, "baseline", "pt_nodes")
    if not math.isnan(n):
        out.append((n == 4106, f"page-table nodes of GUPS 8 GB, 4-level: {n:.0f} (paper: 4106)"))
    if d.has("baseline", "ptp"):
        diff = [abs(d.get("ptp", w, "apw") - d.get("baseline", w, "apw")) for w in d.workloads]
        diff = [x for x in diff if not math.isnan(x)]
        if diff:
            out.append((max(diff) < 1e-9, f"PTP leaves accesses per walk unchanged (largest difference {max(diff):.2g})"))
        same = [d.get("ptp", w, "instructions") == d.get("baseline", w, "instructions") for w in d.workloads]
        out.append((all(same), "PTP and baseline points count the same instructions (energy and IPC compare like for like)"))
    if d.has("2d"):
        a = d.per_workload("2d", "apw")
        out.append((max(a.values()) <= 24, (f"2d: accesses per walk at most 24, the 4-level x 4-level worst case "
                     f"(largest {max(a.values()):.2f})")))
        if d.has("baseline"):
            g, n = d.per_workload("2d", "apw_guest"), d.per_workload("baseline", "apw")
            dev = {w: g[w] / n[w] - 1 for w in g if n.get(w)}
            if dev:
                worst = max(dev, key=lambda w: abs(dev[w]))
                out.append((abs(dev[worst]) < 0.1,
                            ("2d: the guest dimension reads what a native walk reads (same table, same PWC): "
                             f"largest difference {100 * dev[worst]:+.1f} % ({worst}; the windows differ)")))
    for c, cap in (("2d-hf+gf", 8), ("2d-hf+gf+ptp", 8), ("2d-hf", 14), ("2d-gf", 14)):
        a = d.per_workload(c, "apw")
        if a:
            out.append((max(a.values()) <= cap, f"{c}: accesses per walk at most {cap} (largest {max(a.values()):.2f})"))
    g = d.per_workload("2d-gf", "apw_guest")
    if g:
        out.append((max(g.values()) < 1.05, f"2d-gf: one guest read per walk, as native FPT (largest {max(g.values()):.3f})"))
    for c in d.configs:
        if group(c) != "lp":
            continue
        cov = d.per_workload(c, "huge_cov")
        want = 0.5 if "lp50" in c else 1.0
        if cov:
            lo, hi = min(cov.values()), max(cov.values())
            out.append((None if abs(lo - want) > 0.1 or abs(hi - want) > 0.1 else True,
                        (f"{c}: 2 MB coverage {100 * lo:.0f}-{100 * hi:.0f} % of mapped memory (target {100 * want:.0f} %; "
                         "regions smaller than 2 MB or not 2 MB-aligned stay in 4 KB pages)")))
        fb = d.per_workload(c, "fallbacks")
        if ("fpt" in c or "gf" in c) and fb:
            out.append((sum(fb.values()) == 0, (f"{c}: no flattened node fell back to 4 KB levels "
                         f"({sum(fb.values()):.0f} fallbacks; the paper's simulations have none)")))
    p = d.points
    short = p[p["refs_done"] < p["refs_asked"]]
    if len(short):
        out.append((False, "workload ended before the references asked for (measured window shorter): "
                    + ", ".join(f"{r.wl} on {r.config}: {r.refs_done:,.0f} of {r.refs_asked:,.0f}"
                                for r in short.itertuples())))
    else:
        out.append((True, "every point measured the references it asked for"))
    # (A POM-TLB answers L2 TLB misses without a walk: the CSALT machines walk less by design.)
    for c in [c for c in d.configs if not c.startswith("csalt")]:
        bad = [w for w in d.workloads
               if d.get(c, w, "walks") < d.get(c, w, "tlb_misses") - 0.5]
        if bad:
            out.append((False, f"{c}: fewer walks than L2 TLB misses on {', '.join(bad)}"))
    return out


def _gups_like_8g(d, name):
    p = d.points
    sel = p[(p["workload"] == name) & (p["config"] == "baseline")]
    return len(sel) and (sel["mapped"] >= 7.9 * 2**30).all()


# Likely causes of each difference: their prose is in causes.md.in, keyed by paper number;
# cause_values computes the numbers in it from the run at hand.
UNIFORM = ("gups", "random", "kvstore")  # uniform or Zipf-scattered over 6-8 GB
CAUSES = HERE / "causes.md.in"
_BLOCK = re.compile(r"^\[([\w ]+)\]$")


def _top(values: dict, n=3, reverse=True, fmt="{:+.0f}"):
    items = sorted(values.items(), key=lambda kv: kv[1], reverse=reverse)[:n]
    return ", ".join(f"{w} {fmt.format(x)}" for w, x in items)


def _base(wl):
    return wl.split("(")[0]


def _pct(x):
    return (x - 1) * 100


def _pairs(before: dict, after: dict, fmt="{:.2f}"):
    """'w a -> b, ...' for the workloads in both."""
    return ", ".join(f"{w} {fmt.format(before[w])} -> {fmt.format(after[w])}" for w in after if w in before)


def load_causes(path=CAUSES) -> dict[str, str]:
    """{paper number id: its block of causes.md.in, one line}."""
    out, ids, lines = {}, None, []

    def close():
        if ids:
            text = " ".join(lines).strip()
            out.update({i: text for i in ids})

    for line in Path(path).read_text(encoding="utf-8").splitlines():
        m = _BLOCK.match(line.strip())
        if m:
            close()
            ids, lines = m.group(1).split(), []
        elif line.strip() and not line.startswith("#"):
            if ids is None:
                raise report.ReportError(f"{path}: text before the first [id] line: {line.strip()[:60]}")
            lines.append(line.strip())
    close()
    return out


def causes(d: Data, vals, path=CAUSES) -> dict[str, str]:
    """{paper number id: the likely cause of its difference}, for the numbers with a value: a
    block without placeholders always, one with placeholders when cause_values filled it."""
    v = lambda i: vals.get(i, (None,))[0]
    filled = cause_values(d, v)
    out = {}
    for i, block in load_causes(path).items():
        if v(i) is None:
            continue
        if i in filled:
            text = report.fill(block, filled[i], where=f"{path} [{i}]")
        elif "{{" in block:
            continue
        else:
            text = block
        out[i] = re.sub(r"  +", " ", text).strip()
    return out


def cause_values(d: Data, v) -> dict[str, dict]:
    """{paper number id: the values its causes.md.in block needs}, for the causes the run at
    hand has the numbers for (`v(id)`: xlat's value of a paper number, or None)."""
    c = {}
    apw = d.per_workload("baseline", "apw")
    if v("apw_base_mean") is not None:
        rest = [a for w, a in apw.items() if _base(w) not in UNIFORM]
        c["apw_base_mean"] = {"head": "Above" if v("apw_base_mean") > 1.5 else "Within",
                              "uniform": ", ".join(f"{w} {a:.2f}" for w, a in apw.items() if _base(w) in UNIFORM),
                              "rest": f"{amean(rest):.2f}"}
    g = _pwc_curve(d, "gups")
    if v("pwc_l2_entries_for_fpt") is not None and g is not None:
        c["pwc_l2_entries_for_fpt"] = {"max_ways": f"{g.max_ways:,}", "knee": abs(v("pwc_l2_entries_for_fpt") - 4096) <= 512}
    for w in ("random", "gups"):
        x = v(f"apw_base_{w}")
        if x is not None:
            dirty = _workload(d, "baseline", w, "dirty_walks") / max(1.0, _workload(d, "baseline", w, "walks"))
            c[f"apw_base_{w}"] = {"analytic": abs(x - 2.49) <= 0.1, "dirty": f"{100 * dirty:.0f}"}
    per = d.per_workload("baseline", "walk_cycles")
    if v("walk_cycles_base") is not None and per:
        uni = [per[w] for w in per if _base(w) in ("gups", "random")]
        oth = [per[w] for w in per if _base(w) not in ("gups", "random")]
        dram = [100 * d.get("baseline", w, "pte_dram") / max(1.0, d.get("baseline", w, "walk_steps"))
                for w in per if _base(w) in ("gups", "random")]
        c["walk_cycles_base"] = {"uniform": f"{amean(uni):.0f}" if uni else "",
                                 "uniform_dram": f"{amean(dram):.0f}" if dram else "",
                                 "others": f"{min(oth):.0f}-{max(oth):.0f}" if oth else ""}
    if v("walk_cycles_ptp") is not None and per:
        l2 = {w: 100 * (d.get("ptp", w, "l2_pt") - d.get("baseline", w, "l2_pt")) for w in per}
        c["walk_cycles_ptp"] = {"l2_pt": _top(l2, 3, reverse=False)}
    r = d.ratios("ptp", "baseline", "ipc")
    if v("speedup_ptp") is not None and r:
        rest = [x for w, x in r.items() if _base(w) not in ("gups", "random")]
        c["speedup_ptp"] = {"top": _top({w: _pct(x) for w, x in r.items()}, 5),
                            "rest": f"{_pct(geomean(rest)):+.1f}" if rest else "",
                            "walkers8": f"{_pct(w8['gups']):+.1f}" if "gups" in (w8 := d.ratios("ptp-walkers8", "walkers8", "ipc")) else ""}
    if v("llc_data_miss_base") is not None:
        c["llc_data_miss_base"] = {"close": abs(v("llc_data_miss_base") - 80) < 5}
    dl2 = {w: 100 * (d.get("ptp", w, "l2_data") - d.get("baseline", w, "l2_data")) for w in d.per_workload("ptp", "l2_data")}
    if dl2:
        c["l2_data_miss_delta_ptp"] = {"top": _top(dl2, 2, fmt="{:+.1f}")}
    pl2 = {w: 100 * (d.get("ptp", w, "l2_pt") - d.get("baseline", w, "l2_pt")) for w in d.per_workload("ptp", "l2_pt")}
    if pl2:
        uni = [pl2[w] for w in pl2 if _base(w) in ("gups", "random")]
        c["l2_pt_miss_delta_ptp"] = {"top": _top(pl2, 3, reverse=False), "uniform": f"{amean(uni):+.1f}" if uni else ""}
    for i, cfg, ref, metric, n, reverse in (
            ("energy_cache_ptp", "ptp", "baseline", "e_cache", 3, False),
            ("energy_dram_ptp", "ptp", "baseline", "e_dram", 3, False),
            ("speedup_fpt_ptp", "fpt+ptp", "baseline", "ipc", 3, True),
            ("cache_accesses_fpt", "fpt", "baseline", "cache_acc", 3, False),
            ("energy_dram_fpt_ptp", "fpt+ptp", "baseline", "e_dram", 3, False),
            ("energy_cache_csalt", "csalt", "baseline", "e_cache", 3, True),
            ("energy_dram_csalt", "csalt", "baseline", "e_dram", 3, True),
            ("energy_cache_ech", "ech", "baseline", "e_cache", 3, True),
            ("energy_dram_ech", "ech", "baseline", "e_dram", 3, True),
            ("energy_cache_2d_hfgf", "2d-hf+gf", "2d", "e_cache", 5, False),
            ("energy_cache_2d_hfgf_ptp", "2d-hf+gf+ptp", "2d", "e_cache", 5, False),
            ("energy_dram_2d_hfgf_ptp", "2d-hf+gf+ptp", "2d", "e_dram", 5, False)):
        gain = d.gains(cfg, ref, metric)
        if gain:
            c[i] = {"top": _top(gain, n, reverse=reverse), "max": f"{max(gain.values()):+.1f}"}
    rf = d.ratios("fpt", "baseline", "ipc")
    if rf:
        sp = sorted(_pct(x) for x in rf.values())
        c["speedup_fpt"] = {"top": _top({w: _pct(x) for w, x in rf.items()}, 3), "lo": f"{sp[0]:+.1f}",
                            "hi": f"{sp[max(0, len(sp) - 4)]:+.1f}",
                            "latency": _top(d.gains("fpt", "baseline", "walk_cycles"), 3, reverse=False)}
    cut = d.ratios("fpt", "baseline", "walk_cycles").get("gups")
    if cut is not None:
        c["speedup_fpt_gups"] = {"cut": f"{-_pct(cut):.0f}"}
    for cfg in ("asap", "ech", "csalt"):
        if d.has(cfg):
            c[f"speedup_{cfg}"] = {"ipc": _top(d.gains(cfg, "baseline"), 3),
                                   "latency": _top(d.gains(cfg, "baseline", "walk_cycles"), 3, reverse=False),
                                   "apw": _top(d.per_workload(cfg, "apw"), 3, fmt="{:.1f}")}
    if d.has("2d"):
        c["graph500_guest_pt_mb"] = {"mapped": f"{_workload(d, '2d', 'bfs', 'mapped') / 2**30:.1f}"}
    if v("ech_table_reads_per_walk_lp50") is not None:
        mixed, only4k = _ech_reads(d, "ech-lp50"), _ech_reads(d, "ech")
        c["ech_table_reads_per_walk_lp50"] = {"per": _pairs(only4k, mixed) or _top(mixed, len(mixed), fmt="{:.2f}")}
    if v("llc_accesses_csalt") is not None:
        c["llc_accesses_csalt"] = {"top": _top(d.gains("csalt", "baseline", "acc_llc"), 5, fmt="{:+.1f}")}
    if v("llc16x_pt_share") is not None:
        c["llc16x_pt_share"] = {"llc_mb": f"{_gups8g(d, 'baseline-llc16x', 'llc_kb') / 2**10:g}",
                                "pt_mib": f"{_gups8g(d, 'baseline-llc16x', 'pt_bytes') / 2**20:.2f}"}
    c.update(_llc_cause_values(d, v))
    c.update(_virt_cause_values(d, v))
    c.update(_lp_cause_values(d, v))
    c.update(_mc_cause_values(d, v))
    return c


def _mc_cause_values(d: Data, v):
    """The multicore rows: what each machine's weighted speedup is made of, per mix."""
    c = {}
    m = d.mixes
    for i, cfg, one in (("mc_speedup_ptp", "ptp-mc", "speedup_ptp"), ("mc_speedup_fpt", "fpt-mc", "speedup_fpt"),
                        ("mc_speedup_fpt_ptp", "fpt+ptp-mc", "speedup_fpt_ptp")):
        if v(i) is not None:
            per = ", ".join(f"{lab} {_pct(m.weighted_speedup(cfg, lab) / m.weighted_speedup('baseline-mc', lab)):+.1f} %"
                            for lab in m.labels())
            c[i] = {"per_mix": per, "mixes": len(m.labels()), "alone": "" if v(one) is None else f"{v(one):+.1f}"}
    for lp in ("lp50", "lp100"):
        for i, cfg in (("fpt", "fpt"), ("ptp", "ptp"), ("fpt_ptp", "fpt+ptp")):
            if v(f"mc_speedup_{i}_{lp}") is not None:
                base, gain, gain0 = m.gain(f"baseline-mc-{lp}"), m.gain(f"{cfg}-mc-{lp}"), m.gain(f"{cfg}-mc")
                c[f"mc_speedup_{i}_{lp}"] = {"percent": lp[2:], "base": f"{base:+.1f}", "machine": f"{cfg}-mc-{lp}",
                                             "gain": f"{gain:+.1f}", "pp": f"{gain - base:+.1f}", "gain0": f"{gain0:+.1f}",
                                             # (Whether the mechanism gains less over its baseline than at 0 %.)
                                             "shrinks": round(gain - base, 1) < round(gain0, 1)}
    return c


LLC_MB = {2: 8, 4: 4, 8: 2, 16: 1}


def _llc_cause_values(d: Data, v):
    """The PTP-vs-LLC-size rows (§7.1)."""
    c = {}
    done = [x for x in LLC_MB if v(f"speedup_ptp_llc{x}x") is not None]
    seq = [v(f"speedup_ptp_llc{y}x") for y in done]
    low = seq.index(min(seq)) if seq else 0
    trend = ", ".join(f"{LLC_MB[y]} MB {v(f'speedup_ptp_llc{y}x'):+.1f}" for y in done)
    for x in done:
        base, ptp = f"baseline-llc{x}x", f"ptp-llc{x}x"
        g = d.gains(ptp, base)
        g16 = {w: r for w, r in d.gains("ptp", "baseline").items() if w in g}
        dram = {w: d.get(base, w, "pte_dram") / max(1.0, d.get(base, w, "walks")) for w in g}
        dram0 = {w: d.get("baseline", w, "pte_dram") / max(1.0, d.get("baseline", w, "walks")) for w in g16}
        c[f"speedup_ptp_llc{x}x"] = {
            "llc_mb": LLC_MB[x], "top": _top(g, 4), "top16": ", ".join(f"{w} {g16[w]:+.0f}" for w in g16),
            "dram": _pairs(dram0, dram), "trend": trend, "dips": 0 < low < len(seq) - 1 and seq[-1] > seq[0],
            "up": ", ".join(w for w in g if w in g16 and g[w] > g16[w]),
            "down": ", ".join(w for w in g if w in g16 and g[w] <= g16[w])}
    return c


def _virt_cause_values(d: Data, v):
    """The virtualized rows (Fig. 12, §4.1)."""
    c = {}
    if not d.has("2d"):
        return c
    a = d.per_workload("2d", "apw")
    wls = list(a)
    g, h = d.per_workload("2d", "apw_guest"), d.per_workload("2d", "apw_host")
    hw, nt = d.per_workload("2d", "host_walk_steps"), d.per_workload("2d", "ntlb_hit")
    nat = d.per_workload("baseline", "apw")
    split = lambda w: (f"{w} {a[w]:.2f} = {g.get(w, math.nan):.2f} guest + {h.get(w, math.nan):.2f} host"
                       f" ({hw.get(w, math.nan):.1f} reads per host walk, nested TLB hit rate "
                       f"{100 * nt.get(w, math.nan):.0f} %)")
    if v("apw_2d_base_mean") is not None:
        uni = [w for w in wls if _base(w) in ("gups", "random")]
        rest = [a[w] for w in wls if w not in uni]
        r = amean(rest) if rest else math.nan
        c["apw_2d_base_mean"] = {
            "workloads": ", ".join(wls), "native_mean": f"{amean([nat[w] for w in wls if w in nat]):.2f}",
            "split": "; ".join(split(w) for w in wls), "mix": bool(rest and uni), "uniform_count": len(uni),
            "count": len(wls), "rest_count": len(rest), "rest": f"{r:.2f}",
            "rest_where": "inside" if 3.0 <= r <= 4.8 else "below" if r < 3.0 else "above",
            "bfs": f"{nat.get('bfs', math.nan):.2f}" if any(_base(w) == "bfs" for w in wls) else ""}
    for w in ("gups", "random"):
        if w in a:
            c[f"apw_2d_base_{w}"] = {"split": split(w)}
    if v("apw_2d_hfgf_mean") is not None:
        f = d.per_workload("2d-hf+gf", "apw")
        fg, fh = d.per_workload("2d-hf+gf", "apw_guest"), d.per_workload("2d-hf+gf", "apw_host")
        c["apw_2d_hfgf_mean"] = {
            "close": abs(v("apw_2d_hfgf_mean") - 2.8) < 0.4, "mean_2d": f"{amean(a.values()):.2f}",
            "mean": f"{v('apw_2d_hfgf_mean'):.2f}",
            "split": ", ".join(f"{w} {f[w]:.2f} = {fg.get(w, math.nan):.2f} + {fh.get(w, math.nan):.2f}" for w in f)}
    lat = {cfg: amean(d.per_workload(cfg, "walk_cycles").values())
           for cfg in ("2d", "2d-hf", "2d-gf", "2d-hf+gf", "2d-hf+ptp", "2d-gf+ptp", "2d-hf+gf+ptp") if d.has(cfg)}
    for cfg, pid, what in (("2d-hf", "speedup_2d_hf", "Host flattening"), ("2d-gf", "speedup_2d_gf", "Guest flattening"),
                           ("2d-hf+gf", "speedup_2d_hfgf", "Flattening both"),
                           ("2d-hf+ptp", "speedup_2d_hf_ptp", "HF+PTP"), ("2d-gf+ptp", "speedup_2d_gf_ptp", "GF+PTP"),
                           ("2d-hf+gf+ptp", "speedup_2d_hfgf_ptp", "HF+GF+PTP")):
        if v(pid) is None:
            continue
        without = cfg.removesuffix("+ptp")
        adds = _speedup(d, cfg) - _speedup(d, without) if cfg.endswith("+ptp") and d.has(without) else math.nan
        c[pid] = {"what": what, "top": _top(d.gains(cfg, "2d"), 5), "apw": _pairs(a, d.per_workload(cfg, "apw")),
                  "latency_2d": f"{lat['2d']:.0f}", "latency": f"{lat.get(cfg, math.nan):.0f}",
                  "hf": cfg == "2d-hf", "gf": cfg == "2d-gf", "hfgf": cfg == "2d-hf+gf",
                  "ptp_adds": "" if math.isnan(adds) else f"{adds:+.1f}", "without_ptp": without,
                  "gups_walk": f"{d.get('2d', 'gups', 'walk_cycles'):.0f}"}
    return c


def _lp_cause_values(d: Data, v):
    """The large-page rows (Fig. 9, §8)."""
    c = {}
    if v("speedup_base_lp50") is not None:
        sp = d.gains("baseline-lp50", "baseline")
        mk0, mk = d.before_after("mpki", "baseline", "baseline-lp50")
        flat = [w for w in mk if w in mk0 and mk[w] > 0.9 * mk0[w] and mk0[w] > 1 and _base(w) not in ("gups", "random")]
        c["speedup_base_lp50"] = {"workloads": ", ".join(sp), "top": _top(sp, 4), "flat": ", ".join(flat),
                                  "mpki": ", ".join(f"{w} {mk0[w]:.0f} -> {mk[w]:.0f} MPKI" for w in mk if w in mk0),
                                  "apw": _pairs(*d.before_after("apw", "baseline", "baseline-lp50"))}
    if v("speedup_fpt_ptp_lp50") is not None:
        r = d.gains("fpt+ptp-lp50", "baseline-lp50")
        c["speedup_fpt_ptp_lp50"] = {
            "top": _top(r, 4), "geomean": f"{_speedup(d, 'fpt+ptp-lp50', 'baseline-lp50'):+.1f}",
            "geomean_0": f"{_subset_speedup(d, 'fpt+ptp', 'baseline', list(r)):+.1f}",
            "unflattened": f"{sum(d.per_workload('fpt+ptp-lp50', 'unflattened').values()):.0f}"}
    if v("speedup_2d_hfgf_ptp_lp50") is not None:
        r = d.gains("2d-hf+gf+ptp-lp50", "2d-lp50")
        hb0, hb1 = d.before_after("host_pt_bytes", "2d", "2d-lp50")
        c["speedup_2d_hfgf_ptp_lp50"] = {
            "top": _top(r, 4), "top_lp50": _top(d.gains("2d-lp50", "2d"), 4),
            "host_pt": ", ".join(f"{w} {hb0[w] / 2**20:.0f} -> {hb1[w] / 2**20:.0f} MiB" for w in hb1 if w in hb0),
            "host_apw": _pairs(*d.before_after("apw_host", "2d", "2d-lp50")),
            "geomean_0": f"{_subset_speedup(d, '2d-hf+gf+ptp', '2d', list(r)):+.1f}"}
    return c


def status_table(d: Data, entries, vals):
    cause = causes(d, vals)
    rows = []
    for e in entries:
        x, status = vals[e["id"]]
        if x is None:
            text = status
        else:
            text = cause.get(e["id"], "")
        rows.append([e.get("what", e["id"]), e.get("unit", ""), report.paper_text(e), x, text])
    return report.markdown_table(rows, columns=["what", "unit", "paper", "xlat", "status / likely cause of the difference"],
                                 align=["left", "left", "right", "right", "left"])


def coverage(d: Data, vals):
    wanted = ["fpt", "fpt+ptp", "2d", "2d+ptp", "2d-hf", "2d-hf+ptp", "2d-gf", "2d-gf+ptp", "2d-hf+gf",
              "2d-hf+gf+ptp", "baseline-lp50", "fpt+ptp-lp50", "baseline-lp100", "fpt+ptp-lp100", "2d-lp50",
              "2d-hf+gf+ptp-lp50", "baseline-llc16x", "ptp-llc16x"]
    pending = [c for c in wanted if c not in d.configs]
    ran = sum(1 for x, _ in vals.values() if x is not None)
    left = len(report.load_out_of_scope(HERE / "paper.toml"))
    lines = ["| part of the paper's matrix | configurations | workloads | window |", "| --- | --- | --- | --- |"]
    p = d.points
    for part, name in GROUPS.items():
        cfgs = [c for c in d.configs if group(c) == part]
        if not cfgs:
            continue
        sel = p[p["config"].isin(cfgs)]
        wls = list(dict.fromkeys(sel["wl"]))
        wins = sorted({(int(r), int(w)) for r, w in zip(sel["refs_asked"], sel["warmup_asked"])
                       if not (math.isnan(r) or math.isnan(w))})
        win = "; ".join(f"{r / 1e6:g} M after {w / 1e6:g} M" for r, w in wins)
        lines.append(f"| {name} | {', '.join(f'`{c}`' for c in cfgs)} | {', '.join(wls)} | {win} |")
    lines += ["",
              ("Means and geomeans of a part are over the workloads that part ran, and every comparison is "
               "between points with the same workload and window. The virtualized and large-page machines run a "
               "subset to keep the whole study under an hour on two cores (sweep.toml says why these)."),
              "",
              f"{ran} of {len(vals)} paper numbers have an xlat value"
              + (f"; {left} more are left out of the comparison, each with its reason (paper.toml's "
                 "[[out_of_scope]], listed under the paper-vs-xlat table)" if left else "") + ". The others:",
              ""]
    for i, (x, s) in vals.items():
        if x is None:
            lines.append(f"- `{i}`: {s}")
    if pending:
        def state(c):
            lacking = [f for f in _needs_text([c]).split(" + ") if f and not available(f)]
            return f"needs {' + '.join(lacking)}" if lacking else "runnable now"
        lines += ["", "Configurations not in this sweep (commented out in sweep.toml, with their keys): "
                  + ", ".join(f"`{c}` ({state(c)})" for c in pending) + "."]
    return "\n".join(lines)


# -- entry point ------------------------------------------------------------------------------

def render(df, out_dir, quick):
    out_dir = Path(out_dir)
    entries = report.load_paper(HERE / "paper.toml")
    d = Data(df)
    vals = compute(d, entries)
    values = {i: x for i, (x, _) in vals.items()}

    p = d.points
    window = f"{p['refs_asked'].median() / 1e6:g} M references" if len(p) else "a few references"
    t1, t2 = workload_tables(d)
    stand_ins = report.markdown_table([[w, PAPER_NAMES.get(w.split("(")[0], "")] for w in d.workloads],
                                      columns=["xlat workload", "paper (Tab. 2)"])
    checks = "\n".join(f"- {'ok' if ok else 'note' if ok is None else '**CHECK**'}: {text}" for ok, text in sanity_checks(d))
    # The report's prose and layout are in report.md.in; what a run measured fills it.
    parts = {
        "quick": quick,
        "quick_window": window,
        "status_table": status_table(d, entries, vals),
        "coverage": coverage(d, vals),
        "figures": "\n\n".join(report.figure_md(path, out_dir, caption) for path, caption in figures(d, out_dir)),
        "virtualized": virt_table(d),
        "large_pages": lp_table(d),
        "pwc_size": pwc_table(d),
        "multicore": mc_table(d),
        "per_workload_translation": t1,
        "per_workload_caches": t2,
        "stand_ins": stand_ins,
        "sanity_checks": checks,
    }
    parts.update(discussion_values(d, quick))
    template = HERE / "report.md.in"
    text = report.fill(template.read_text(encoding="utf-8"), parts, where=str(template))
    return text, values


def discussion_values(d: Data, quick: bool = False) -> dict:
    """The numbers of the Discussion in report.md.in, from the run at hand (the explanations
    there were worked out on the full run); a point's key is empty when the run lacks it."""
    out = {"ptp": d.has("baseline", "ptp")}
    r = d.ratios("ptp", "baseline", "ipc")
    wc = d.ratios("ptp", "baseline", "walk_cycles")
    bound = {}
    for w in d.workloads:
        walks, lat, cyc = (d.get("baseline", w, k) for k in ("walks", "walk_cycles", "cycles"))
        if cyc and not math.isnan(cyc):
            bound[w] = 100 * walks * lat / 2 / cyc  # share of cycles both walkers are busy
    out["walker_bound"] = ", ".join(f"{w} {b:.0f} %" for w, b in bound.items() if b >= 40) or "below 40 % everywhere"
    out["ipc_follows_latency"] = ", ".join(f"{w}: IPC x{r[w]:.2f}, walk latency x{1 / wc[w]:.2f} shorter"
                                           for w in r if _base(w) in ("gups", "random") and w in wc)
    walkers = []
    for n, lru, ptp in ((2, "baseline", "ptp"), (8, "walkers8", "ptp-walkers8"), (32, "walkers32", "ptp-walkers32")):
        a, b = d.get(lru, "gups", "ipc"), d.get(ptp, "gups", "ipc")
        if not (math.isnan(a) or math.isnan(b)):
            walkers.append(f"{n} walkers IPC {a:.4f} -> {b:.4f} ({_pct(b / a):+.1f} %)")
    out["walkers_measured"] = "; ".join(walkers) or "the walkers8/32 points did not run"
    llc_up, l2_up = [], []
    for w in d.workloads:
        b, p_ = d.get("baseline", w, "llc_pt"), d.get("ptp", w, "llc_pt")
        db = d.get("baseline", w, "pte_dram") / max(1.0, d.get("baseline", w, "walk_steps"))
        dp = d.get("ptp", w, "pte_dram") / max(1.0, d.get("ptp", w, "walk_steps"))
        if p_ - b > 0.05:
            llc_up.append(f"{w} {100 * b:.1f} -> {100 * p_:.1f} % (PTE reads from DRAM {100 * db:.2f} -> {100 * dp:.2f} %)")
        b, f = d.get("baseline", w, "l2_pt"), d.get("fpt", w, "l2_pt")
        if f - b > 0.1:
            l2_up.append(f"{w} {100 * b:.0f} -> {100 * f:.0f} %")
    out["llc_pt_up"], out["l2_pt_up"] = "; ".join(llc_up), ", ".join(l2_up)
    out["pt_miss_up"] = bool(out["ptp"] and (llc_up or l2_up))
    out["ptp_slower"] = ", ".join(
        f"{w} {_pct(x):+.1f} %, walk latency {_pct(wc.get(w, 1)):+.0f} %, L2 data miss ratio "
        f"{100 * (d.get('ptp', w, 'l2_data') - d.get('baseline', w, 'l2_data')):+.1f} pp"
        for w, x in r.items() if x < 1)
    rf, rb = d.ratios("fpt", "baseline", "ipc"), d.ratios("fpt+ptp", "baseline", "ipc")
    out["compound"] = ", ".join(f"{w} (x{rb[w]:.2f} vs x{r[w] * rf[w]:.2f})" for w in rb
                                if w in r and w in rf and rb[w] > 1.05 * r[w] * rf[w])
    dbit = [100 * d.get("baseline", w, "dirty_walks") / d.get("baseline", w, "walks")
            for w in d.workloads if _base(w) == "gups" and d.get("baseline", w, "walks")]
    out["dbit"] = ", ".join(f"{x:.2f}" for x in dbit)
    wait = {w: d.get("baseline", w, "walker_wait") / max(1.0, d.get("baseline", w, "walks")) for w in d.workloads}
    out["walker_wait"] = ", ".join(f"{w} {x:,.0f} cycles per walk" for w, x in wait.items() if x > 100)
    out["virt_order"] = out["virt_follows_latency"] = ""
    if d.has("2d", "2d-hf+gf"):
        rv, wv = d.ratios("2d-hf+gf", "2d", "ipc"), d.ratios("2d-hf+gf", "2d", "walk_cycles")
        out["virt_order"] = ", ".join(f"{c} {_speedup(d, c, '2d'):+.1f} %" for c in
                                      ("2d-hf", "2d-gf", "2d-hf+gf", "2d-hf+ptp", "2d-gf+ptp", "2d-hf+gf+ptp") if d.has(c))
        out["virt_follows_latency"] = "; ".join(f"{w} IPC x{rv[w]:.2f}, walk latency /{1 / wv[w]:.2f}" for w in rv if w in wv)
    hb0, hb1 = d.before_after("host_pt_bytes", "2d", "2d-lp50")
    lp50 = [w for w in hb1 if w in hb0] if d.has("2d", "2d-lp50") else []
    out["lp50_host_pt"] = ", ".join(f"{w} {hb0[w] / 2**20:.0f} -> {hb1[w] / 2**20:.0f} MiB" for w in lp50)
    out["lp50_host_apw"] = _pairs(*d.before_after("apw_host", "2d", "2d-lp50"))
    out["lp50_walk_cycles"] = ", ".join(f"{w} {d.get('2d', w, 'walk_cycles'):.0f} -> {d.get('2d-lp50', w, 'walk_cycles'):.0f}"
                                        for w in lp50)
    out["lp50_mpki"] = ", ".join(f"{w} {d.get('2d', w, 'mpki'):.0f} -> {d.get('2d-lp50', w, 'mpki'):.0f}" for w in lp50)
    out["lp100_gain"] = out["lp100_walk_cycles"] = ""
    if d.has("baseline-lp100", "fpt+ptp-lp100"):
        out["lp100_gain"] = ", ".join(f"{w} {x:+.1f} %" for w, x in d.gains("fpt+ptp-lp100", "baseline-lp100").items())
        out["lp100_walk_cycles"] = ", ".join(f"{w} {x:.0f}" for w, x in d.per_workload("baseline-lp100", "walk_cycles").items())
    sizes = {w: d.get("baseline", w, "mapped") / 2**30 for w in d.workloads}
    out["footprints"] = ", ".join(f"{w} {x:.1f} GiB" for w, x in sizes.items())
    p = d.points
    # (The native baseline's window; the warm-up most of its workloads have, and the others'.)
    base = p[p["config"] == "baseline"] if (p["config"] == "baseline").any() else p
    refs, warm = base["refs_asked"].median(), base["warmup_asked"]
    usual = warm.mode().iloc[0] if len(warm) else math.nan
    other = ", ".join(f"{w} {x / 1e6:g} M" for w, x in zip(base["workload"], warm) if x != usual)
    out["window"] = (f"{refs / 1e6:g} M references after a {usual / 1e6:g} M warm-up" + (f" ({other})" if other else "")
                     if not math.isnan(refs) else "a fixed number of references")
    virt = p[p["config"].str.startswith("2d")]["refs_asked"]
    out["virt_window"] = f"{virt.median() / 1e6:g}" if len(virt) else ""
    out["quick"] = quick
    out["bfs_gib"] = f"{sizes.get('bfs', math.nan):.1f}"
    gap = [x for w, x in sizes.items() if _base(w) in ("pagerank", "cc")]
    out["gap_gib"] = f"{min(gap):.1f}-{max(gap):.1f}" if gap else "—"
    return out
