"""Report of the PT-Baker study (seed 000): see sweep.toml and paper.toml beside this file.

``render(df, out_dir, quick)`` takes the main thread's statistics of each point (core 0's: the
helper and the co-runners run on other cores, or on core 0's sibling for ``smt``), computes
where its walk references were served (L2 / L3 / DRAM, the thesis's breakdown: page-walk-cache
hits are no memory reference) and each helper's speed-up over no helper in the same
environment, draws the figures and returns the report body with the xlat numbers for
paper.toml's entries. Config labels are ``mode@env`` or ``mode@env@throttle``.

Speed-up is the thesis's: execution time of the same work. Every point runs the same number of
the main thread's references, so it is the baseline's cycles over the helper run's (core 0's
clock: the main thread's time).
"""
import math
from pathlib import Path

from xlat import report

HERE = Path(__file__).resolve().parent

MODES = ["off", "user", "user-prefetch", "kernel", "ptp"]
ENVS = ["native", "cache1", "stream2", "vm", "smt"]
WORKLOADS = {"bfs": "graph500 BFS", "bfs-list": "graph500 BFS, list-based, scale 24", "liblinear": "LibLinear",
             "gups": "GUPS", "hashjoin": "hashjoin", "hashjoin-probe": "hashjoin probe, 600 M tuples",
             "canneal": "canneal", "bc": "GAP BC"}


def _workload(df):
    """Each point's workload as the tables name it: the kernel, or for the thesis-scale points
    the form the thesis ran: ``bfs-list`` (graph500's list-based code) and ``hashjoin-probe``
    (the probe, its build fast-forwarded with ``skip``)."""
    import pandas as pd

    names = df["workload"].astype(str)
    layout = df.get("param.layout", pd.Series("", index=df.index)).astype(str)
    skip = pd.to_numeric(df.get("skip", pd.Series(0, index=df.index)), errors="coerce").fillna(0)
    names = names.mask((names == "bfs") & (layout == "list"), "bfs-list")
    return names.mask((names == "hashjoin") & (skip > 0), "hashjoin-probe").values


def _tidy(df):
    """One row per point: mode, env, throttle, workload and the main thread's metrics."""
    import pandas as pd

    def col(name):
        return pd.to_numeric(df[name], errors="coerce") if name in df.columns else pd.Series([math.nan] * len(df), index=df.index)

    def main(stat):
        """The main thread's value: its hardware context's with SMT (core 0 also runs the
        helper on the sibling), else core 0's where the run had several cores, else the
        machine's."""
        return col(f"stat.ctx0.{stat}").fillna(col(f"stat.core0.{stat}")).fillna(col(f"stat.{stat}")).values

    parts = df["config_label"].astype(str).str.split(" ").str[0].str.split("@")
    throttle = []
    for (_, r), p in zip(df.iterrows(), parts):
        t = ""
        if len(p) > 2:
            key = "set.ptbaker.nops" if p[2] == "nops" else "set.ptbaker.sleep_cycles"
            t = f"{p[2]}={r.get(key)}"
        throttle.append(t)
    out = pd.DataFrame({"mode": parts.str[0].values, "env": parts.str[1].values, "throttle": throttle,
                        "workload": _workload(df)})
    for k in ("cycles", "instructions", "walk_cycles_per_walk", "pte_served.l2", "pte_served.llc", "pte_served.dram"):
        out[k] = main(k)
    served = out["pte_served.l2"] + out["pte_served.llc"] + out["pte_served.dram"]
    for lvl, k in (("l2", "pte_served.l2"), ("l3", "pte_served.llc"), ("dram", "pte_served.dram")):
        out[lvl] = out[k] / served
    out["walk_refs_pki"] = served / out["instructions"] * 1000
    out["dram_refs_pki"] = out["pte_served.dram"] / out["instructions"] * 1000
    return out


def _thesis_workloads(t, env):
    """The thesis's six workloads as run in ``env``: its own forms (``bfs-list``,
    ``hashjoin-probe``) where the sweep ran them there, else the scaled inputs."""
    present = set(t[t["env"] == env]["workload"])
    own = {"bfs": "bfs-list", "hashjoin": "hashjoin-probe"}
    picked = [own[w] if own.get(w) in present else w for w in ("bfs", "liblinear", "gups", "hashjoin", "canneal", "bc")]
    return [w for w in picked if w in present]


def _get(t, mode, env, workload, metric, throttle=""):
    sel = t[(t["mode"] == mode) & (t["env"] == env) & (t["workload"] == workload) & (t["throttle"] == throttle)]
    return float(sel[metric].mean()) if len(sel) else math.nan


def _speedups(t):
    """Every helper point's speed-up and DRAM-walk-reference cut against no helper, same env."""
    import pandas as pd

    rows = []
    for _, r in t[t["mode"] != "off"].iterrows():
        base = _get(t, "off", r["env"], r["workload"], "cycles")
        dram0 = _get(t, "off", r["env"], r["workload"], "pte_served.dram")
        rows.append({"workload": r["workload"], "env": r["env"], "mode": r["mode"], "throttle": r["throttle"] or "—",
                     "speedup": _ratio(base, r["cycles"]), "dram_cut": 1 - _ratio(r["pte_served.dram"], dram0),
                     "dram": r["dram"], "walk": r["walk_cycles_per_walk"]})
    return pd.DataFrame(rows)


def _versus_ptp(t, s):
    """Per workload and environment with a ptp point: the helpers' and ptp's speed-ups."""
    import pandas as pd

    rows = []
    plain = s[s["throttle"] == "—"]
    for (w, env), g in plain.groupby(["workload", "env"], sort=False):
        if "ptp" not in set(g["mode"]):
            continue
        by = {m: g[g["mode"] == m] for m in ("user", "kernel", "ptp")}
        sp = {m: float(x["speedup"].iloc[0]) if len(x) else math.nan for m, x in by.items()}
        dram = {m: float(x["dram"].iloc[0]) if len(x) else math.nan for m, x in by.items()}
        known = {m: v for m, v in sp.items() if not math.isnan(v)}
        rows.append({"workload": w, "env": env, "user": sp["user"], "kernel": sp["kernel"], "ptp": sp["ptp"],
                     "dram_user": dram["user"], "dram_kernel": dram["kernel"], "dram_ptp": dram["ptp"],
                     "best": max(known, key=known.get) if known else "—"})
    return pd.DataFrame(rows)


def _best(s, workload=None, mode=None, envs=None):
    sel = s
    if workload:
        sel = sel[sel["workload"] == workload]
    if mode:
        sel = sel[sel["mode"] == mode]
    if envs:
        sel = sel[sel["env"].isin(envs)]
    return float(sel["speedup"].max()) if len(sel) else math.nan


def _ratio(a, b):
    return a / b if b and not math.isnan(b) else math.nan


def _mean(xs):
    xs = [x for x in xs if not math.isnan(x)]
    return sum(xs) / len(xs) if xs else math.nan


def render(df, out_dir, quick):

    t = _tidy(df)
    s = _speedups(t)
    workloads = [w for w in WORKLOADS if w in set(t["workload"])]
    values = {}
    for env in ("native", "cache1", "stream2", "vm"):
        shares = [_get(t, "off", env, w, "dram") for w in _thesis_workloads(t, env)]
        values[f"{env}_dram_avg"] = _mean(shares)
        values[f"{env}_dram_max"] = max((x for x in shares if not math.isnan(x)), default=math.nan)
    for lvl in ("l2", "l3", "dram"):
        values[f"liblinear_{lvl}"] = _get(t, "off", "native", "liblinear", lvl)
        values[f"liblinear_vm_{lvl}"] = _get(t, "off", "vm", "liblinear", lvl)
    values["liblinear_walk_refs_pki"] = _get(t, "off", "native", "liblinear", "walk_refs_pki")
    values["liblinear_vm_walk_refs"] = _ratio(_get(t, "off", "vm", "liblinear", "walk_refs_pki"), values["liblinear_walk_refs_pki"])
    # (The thesis's VM and native runs execute the same instructions, so its ratio of counts is
    # one of rates: DRAM walk references per instruction.)
    values["liblinear_vm_dram_refs"] = _ratio(_get(t, "off", "vm", "liblinear", "dram_refs_pki"), _get(t, "off", "native", "liblinear", "dram_refs_pki"))
    for mode in ("user", "kernel"):
        cut = s[(s["mode"] == mode)]["dram_cut"]
        values[f"dram_cut_{mode}_max"] = float(cut.max()) if len(cut) else math.nan
    native = ["native"]
    # (The thesis's Graph500 and hashjoin are the list-based code and the probe at its scale:
    # from those points where the sweep ran them, else from the scaled inputs.)
    graph500 = "bfs-list" if "bfs-list" in workloads else "bfs"
    hashjoin = "hashjoin-probe" if "hashjoin-probe" in workloads else "hashjoin"
    values["bfs_user"] = _best(s, graph500, "user", native)
    values["bfs_kernel"] = _best(s, graph500, "kernel", native)
    values["liblinear_user"] = _best(s, "liblinear", "user", native)
    values["liblinear_kernel"] = _best(s, "liblinear", "kernel", native)
    values["hashjoin_kernel"] = _best(s, hashjoin, "kernel", native)
    values["canneal_kernel"] = _best(s, "canneal", "kernel", native)
    values["pressure_user_max"] = _best(s, mode="user", envs=["cache1", "stream2"])
    values["pressure_kernel_max"] = _best(s, mode="kernel", envs=["cache1", "stream2"])
    values["vm_user_max"] = _best(s, mode="user", envs=["vm"])
    values["bc_user_smt"] = _best(s, "bc", "user", ["smt"])
    for key, w in (("bfs", graph500), ("bc", "bc")):
        sel = s[(s["workload"] == w) & (s["mode"] == "user-prefetch") & (s["throttle"].str.startswith("sleep"))]
        values[f"{key}_user_prefetch_sleep"] = float(sel["speedup"].max()) if len(sel) else math.nan

    # The report's prose and layout are in report.md.in; the run's tables and figures fill it.
    parts = {"served": "", "served_figure": "", "speedups": "", "speedup_figure": "", "versus_ptp": "", "quick": quick}
    # Where the main thread's walk references were served, without a helper.
    base = t[t["mode"] == "off"].groupby(["env", "workload"], sort=False)[["l2", "l3", "dram", "walk_refs_pki", "walk_cycles_per_walk"]].mean().reset_index()
    if len(base):
        fig = report.bar_figure(base[base["env"] == "native"], x="workload", y="dram", path=out_dir / "dram_share.png",
                                title="Walk references served from DRAM, no helper, native",
                                ylabel="share of walk references (L2 + L3 + DRAM)")
        parts["served_figure"] = report.figure_md(fig, out_dir, "Share of the main thread's walk references served from DRAM, no helper")
        parts["served"] = report.markdown_table(base, headers=["env", "workload", "L2", "L3", "DRAM", "walk refs per 1000 instr.", "cycles per walk"])
    if len(s):
        plain = s[s["throttle"] == "—"]
        fig = report.bar_figure(plain, x="workload", y="speedup", hue="mode", path=out_dir / "speedup.png",
                                title="Speed-up of the helpers over none, per environment (mean over environments)",
                                ylabel="speed-up")
        parts["speedup_figure"] = report.figure_md(fig, out_dir, "Speed-up over no helper (mean over the environments run)")
        parts["speedups"] = report.markdown_table(s, headers=["workload", "env", "mode", "throttle", "speed-up", "DRAM refs cut",
                                                            "DRAM share", "cycles per walk"])
    versus = _versus_ptp(t, s)
    if len(versus):
        parts["versus_ptp"] = report.markdown_table(versus, headers=["workload", "env", "user", "kernel", "ptp", "DRAM user",
                                                                    "DRAM kernel", "DRAM ptp", "best"])
    template = HERE / "report.md.in"
    return report.fill(template.read_text(encoding="utf-8"), parts, where=str(template)), values

