"""Report of the CSALT study (seed 003 part 1): see sweep.toml and paper.toml beside this file.

``render(df, out_dir, quick)`` computes the thesis's headline ratios from the points, draws the
speed-up and partition figures, and returns the report body with the xlat numbers for
paper.toml's entries. Speed-up is the thesis's (§6.1): the geometric mean of the cores' IPCs of
a scheme over that of the baseline; averages over workloads are geometric means.
"""
import math
import re
from pathlib import Path

from xlat import report, results

HERE = Path(__file__).resolve().parent

MAIN = ["conventional", "pomtlb", "dip", "csalt-d", "csalt-cd"]


def _gmean(xs):
    xs = [x for x in xs if x and not math.isnan(x) and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def _levels(sf, col, end):
    """A level statistic at each interval's end, from its changes and its final value."""
    import pandas as pd

    deltas = pd.to_numeric(sf[col], errors="coerce").fillna(0).tolist()
    level, out = float(end.get("stat." + col, math.nan)), []
    for d in reversed(deltas):
        out.append(level)
        level -= d
    return out[::-1]


def _tidy(df):
    """Per point: config, workload and the metrics used here."""
    import pandas as pd

    core_ipc = sorted((c for c in df.columns if re.fullmatch(r"stat\.core\d+\.ipc", str(c))),
                      key=lambda c: int(re.findall(r"\d+", c)[0]))

    def num(col):
        # (A column no stored point has yet, in an interrupted run's store: NaN.)
        return pd.to_numeric(df[col], errors="coerce") if col in df.columns else pd.Series(math.nan, index=df.index)

    # (A config whose `set` has a list is labelled "label key=value" per grid point.)
    # (A heterogeneous pair is a mix: its label, "canneal+cc", names it.)
    wl = df["workload"].astype(str)
    if "param.label" in df.columns:
        wl = wl.where(wl != "mix", df["param.label"].astype(str))
    out = pd.DataFrame({"config": df["config_label"].astype(str).str.split(" ").str[0].values,
                        "workload": wl.values})
    out["ipc"] = [_gmean([float(r[c]) for c in core_ipc]) for _, r in df.iterrows()] if core_ipc else num("stat.ipc").values
    instr = num("stat.instructions")
    out["walks"] = num("stat.walks").values
    out["l2tlb_mpki"] = num("stat.tlb.l2.mpki").values
    out["l2d_mpki"] = (num("stat.cache.l2.data.misses") / instr * 1000).values
    # (Tab. 3.1's "page walk cycles per L2 TLB miss": every L2 TLB miss walks without a POM-TLB.)
    out["walk_cpw"] = num("stat.walk_cycles_per_walk").values
    # (§3.2's miss rates, misses over lookups: the L2 TLB's and the L1D's for data.)
    out["l2tlb_miss_rate"] = (num("stat.tlb.l2.misses") / num("stat.tlb.l2.accesses")).values
    out["l1d_miss_rate"] = (num("stat.cache.l1d.data.misses") / num("stat.cache.l1d.data.accesses")).values
    out["llcd_mpki"] = (num("stat.cache.llc.data.misses") / instr * 1000).values
    for k in ("cache.l2.tlb_lines", "cache.llc.tlb_lines", "pomtlb.hit_rate", "csalt.l2.data_ways", "csalt.llc.data_ways"):
        out[k] = num("stat." + k).values
    for k in ("virt.vms", "virt.switch_interval_cycles", "csalt.epoch"):
        out[k] = num("set." + k).values
    return out


def _get(t, config, workload, metric, **where):
    sel = t[(t["config"] == config) & (t["workload"] == workload)]
    for k, v in where.items():
        sel = sel[sel[k] == v]
    return float(sel[metric].mean()) if len(sel) else math.nan


def _ratio(t, a, b, metric, workloads, **where):
    return _gmean([_get(t, a, w, metric, **where) / _get(t, b, w, metric, **where) for w in workloads])


def render(df, out_dir, quick):
    t = _tidy(df)
    workloads = list(dict.fromkeys(t["workload"]))
    values = {}
    main = t[t["config"].isin(MAIN)]
    wl = [w for w in workloads if len(main[main["workload"] == w])]

    walks = [1 - _get(t, "pomtlb", w, "walks") / _get(t, "conventional", w, "walks") for w in wl]
    values["walks_eliminated"] = sum(walks) / len(walks) if walks else math.nan
    values["mpki_switching"] = _ratio(t, "conventional", "conventional-1vm", "l2tlb_mpki", wl)
    # Tab. 3.1's virtualized column was measured on the real host with one VM: the one-VM points.
    for w in ("canneal", "cc", "bfs", "gups", "pagerank"):
        values[f"walk_cycles_virt_{w}"] = _get(t, "conventional-1vm", w, "walk_cpw")
        values[f"walk_cycles_native_{w}"] = _get(t, "conventional-native", w, "walk_cpw")
    # Fig. 6.6: natively, two processes per core on a timer, CSALT-CD over the POM-TLB (the
    # baseline of Fig. 6.1, which the text gives for Fig. 6.6 too).
    native = [w for w in wl if not math.isnan(_get(t, "csalt-cd-native", w, "ipc"))]
    if native:
        values["native_csalt_cd"] = _ratio(t, "csalt-cd-native", "pomtlb-native", "ipc", native)
    if "cc" in native:
        values["native_cc_csalt_cd"] = _ratio(t, "csalt-cd-native", "pomtlb-native", "ipc", ["cc"])
    # §3.2: each pagerank instance's cycles with a second VM switching on its cores over alone.
    # Per instruction it runs (its own slices only): IPC alone / IPC with the other VM.
    values["pagerank_cycles_switching"] = _ratio(t, "conventional-1vm", "conventional", "ipc", ["pagerank"])
    values["tlb_lines_l2"] = sum(_get(t, "pomtlb", w, "cache.l2.tlb_lines") for w in wl) / len(wl)
    values["tlb_lines_llc"] = sum(_get(t, "pomtlb", w, "cache.llc.tlb_lines") for w in wl) / len(wl)
    if "cc" in wl:
        values["tlb_lines_cc"] = max(_get(t, "pomtlb", "cc", "cache.l2.tlb_lines"), _get(t, "pomtlb", "cc", "cache.llc.tlb_lines"))
        values["cc_csalt_cd_over_pomtlb"] = _ratio(t, "csalt-cd", "pomtlb", "ipc", ["cc"])
        values["cc_l2_data_mpki"] = _ratio(t, "csalt-cd", "pomtlb", "l2d_mpki", ["cc"])
        values["cc_llc_data_mpki"] = _ratio(t, "csalt-cd", "pomtlb", "llcd_mpki", ["cc"])
        values["cc_l2_data_mpki_csalt_d"] = _ratio(t, "csalt-d", "pomtlb", "l2d_mpki", ["cc"])
        # §3.2: cc's L2 TLB miss rate over its L1D miss rate, in Fig. 3.2's setting (POM-TLB, 2 VMs).
        values["cc_tlb_vs_l1d_miss_rate"] = _get(t, "pomtlb", "cc", "l2tlb_miss_rate") / _get(t, "pomtlb", "cc", "l1d_miss_rate")
    values["pomtlb_over_conventional"] = _ratio(t, "pomtlb", "conventional", "ipc", wl)
    values["csalt_d_over_pomtlb"] = _ratio(t, "csalt-d", "pomtlb", "ipc", wl)
    values["csalt_cd_over_pomtlb"] = _ratio(t, "csalt-cd", "pomtlb", "ipc", wl)
    values["csalt_cd_over_conventional"] = _ratio(t, "csalt-cd", "conventional", "ipc", wl)
    values["csalt_cd_over_dip"] = _ratio(t, "csalt-cd", "dip", "ipc", wl)
    ctx = t[t["config"] == "csalt-cd-ctx"]
    if len(ctx):
        sens = [w for w in ("gups", "cc") if w in workloads]
        values["csalt_cd_gain_4ctx"] = _ratio(t, "csalt-cd-ctx", "pomtlb-ctx", "ipc", sens, **{"virt.vms": 4})
    sw = t[t["config"] == "csalt-cd-sw"]
    if len(sw):
        # Fig. 6.10's "30 ms": 3 M cycles, as 1 M stands for 10 ms.
        sens = [w for w in ("gups", "cc") if w in workloads]
        values["csalt_cd_gain_30ms"] = _ratio(t, "csalt-cd-sw", "pomtlb-sw", "ipc", sens, **{"virt.switch_interval_cycles": 3000000})

    # -- the main table and the speed-up figure -----------------------------------------------
    import pandas as pd

    rows = []
    for w in wl:
        base = _get(t, "conventional", w, "ipc")
        for c in MAIN:
            if not len(main[(main["config"] == c) & (main["workload"] == w)]):
                continue
            rows.append({"workload": w, "config": c, "ipc": _get(t, c, w, "ipc"),
                         "speedup": _get(t, c, w, "ipc") / base,
                         "walks": _get(t, c, w, "walks"), "l2tlb_mpki": _get(t, c, w, "l2tlb_mpki"),
                         "pom_hit": _get(t, c, w, "pomtlb.hit_rate"),
                         "l2_tlb_lines": _get(t, c, w, "cache.l2.tlb_lines"),
                         "llc_tlb_lines": _get(t, c, w, "cache.llc.tlb_lines"),
                         "l2d_mpki": _get(t, c, w, "l2d_mpki"), "llcd_mpki": _get(t, c, w, "llcd_mpki")})
    table = pd.DataFrame(rows)
    # The report's prose and layout are in report.md.in; the run's tables and figures fill it.
    parts = {"main": "", "main_figure": "", "partition": "", "sensitivity": "", "quick": quick}
    if len(table):
        fig = report.bar_figure(table.rename(columns={"config": "scheme"}), x="workload", y="speedup", hue="scheme", path=out_dir / "speedup.png",
                                title="Speed-up over conventional TLBs (geomean of the 8 cores' IPC)",
                                ylabel="speed-up over conventional")
        parts["main_figure"] = report.figure_md(fig, out_dir, "IPC speed-up over conventional L1/L2 TLBs, per workload and scheme")
        parts["main"] = report.markdown_table(table, headers=["workload", "config", "IPC (gm)", "speed-up", "walks",
                                                            "L2 TLB MPKI", "POM-TLB hit rate", "L2 TLB lines",
                                                            "LLC TLB lines", "L2 data MPKI", "LLC data MPKI"])

    # -- the partition and the TLB lines' occupancy over time ------------------------------------
    trace = df[df["config_label"].astype(str).str.startswith("csalt-cd-trace")]
    sf = results.series_frame(trace) if len(trace) else None
    if sf is not None and len(sf) and "csalt.llc.data_ways" in sf.columns:
        end = trace.iloc[0]
        lines = []
        # (Levels: a series holds each interval's change; the level at the run's end is known.)
        for name, col, total in (("L2 ways (mean of 8)", "csalt.l2.data_ways", 8 * 4), ("LLC ways", "csalt.llc.data_ways", 16)):
            for x, lv in zip(sf["end_instructions"], _levels(sf, col, end)):
                lines.append({"instructions": x, "what": name, "tlb_share": 1 - lv / total})
        for name, col, ratio in (("L2 lines", "cache.l2.tlbe.lines", "cache.l2.tlb_lines"), ("LLC lines", "cache.llc.tlbe.lines", "cache.llc.tlb_lines")):
            final, share = float(end.get("stat." + col, math.nan)), float(end.get("stat." + ratio, math.nan))
            if col in sf.columns and share > 0:
                for x, lv in zip(sf["end_instructions"], _levels(sf, col, end)):
                    lines.append({"instructions": x, "what": name, "tlb_share": lv * share / final})
        pf = pd.DataFrame(lines)
        fig = report.line_figure(pf, x="instructions", y="tlb_share", hue="what", path=out_dir / "partition.png",
                                 title="CSALT-CD on connected components: TLB lines' share over time",
                                 xlabel="instructions after warm-up", ylabel="share for POM-TLB lines")
        parts["partition"] = report.figure_md(fig, out_dir, "Share of the ways CSALT-CD gives to POM-TLB lines (L2s' mean, LLC) "
                                                            "and share of the lines that hold them, at each interval's end")

    # -- sensitivity ---------------------------------------------------------------------------
    sens_rows = []
    for label, base, key in (("csalt-cd-ctx", "pomtlb-ctx", "virt.vms"), ("csalt-cd-sw", "pomtlb-sw", "virt.switch_interval_cycles")):
        sel = t[t["config"] == label]
        for (w, v), _ in sel.groupby(["workload", key]):
            sens_rows.append({"axis": key, "value": v, "workload": w,
                              "csalt-cd / pomtlb": _get(t, label, w, "ipc", **{key: v}) / _get(t, base, w, "ipc", **{key: v})})
    for w in ("gups", "cc"):
        for v in sorted(set(t[t["config"] == "csalt-cd-epoch"]["csalt.epoch"].dropna())):
            sens_rows.append({"axis": "csalt.epoch", "value": v, "workload": w,
                              "csalt-cd / pomtlb": _get(t, "csalt-cd-epoch", w, "ipc", **{"csalt.epoch": v}) / _get(t, "pomtlb", w, "ipc")})
    if sens_rows:
        parts["sensitivity"] = report.markdown_table(pd.DataFrame(sens_rows))
    template = HERE / "report.md.in"
    text = report.fill(template.read_text(encoding="utf-8"), parts, where=str(template)).rstrip("\n")
    return text, {k: v for k, v in values.items() if not (isinstance(v, float) and math.isnan(v))}
