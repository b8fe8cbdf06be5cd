"""Report of the combine study: the five papers' mechanisms on one machine (mechanisms.py).

Every point's speed-up is the base machine's cycles over its own for the same program
references (same workload, environment and memory scenario): PT-Baker's helper thread runs
beside the program, so cycles, not IPC, compare the runs. A mix's window is a number of
references of its programs together, which a mechanism shares out differently (the faster
program runs more of them), so its speed-up is the geometric mean over its programs of each
one's references per cycle against the base machine's. A pair's interaction is its speed-up
over the product of its two mechanisms' speed-ups alone:

- additive: within 2 % of the product (the two act on different costs);
- more than additive: above it;
- redundant: below it, but at least the better one alone (both remove the same cost);
- conflicting: below the better one alone by more than 2 % (together they lose).

Means over workloads are geometric. The statistics that explain an interaction are per 1,000
program references against the base machine: walks, their cycles, page-table reads from DRAM,
LLC data misses, shootdowns and promotions.
"""
from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

from xlat import report

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("xlat_combine_mechanisms", HERE / "mechanisms.py")
M = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = M  # (its dataclasses look their module up)
_spec.loader.exec_module(M)

#: Within this of the product of the two gains, a pair is additive (and within this of the
#: better one alone, redundant rather than conflicting).
TOLERANCE = 0.02
#: The statistics that explain interactions, per 1,000 program references.
EXPLAIN = [
    ("walks", "walks"),
    ("walk_cycles", "walk cycles"),
    ("pte_served.dram", "PT reads from DRAM"),
    ("cache.llc.data.misses", "LLC data misses"),
    ("shootdowns", "shootdowns"),
    ("promotions", "promotions"),
]


def _scenario(df):
    names = {(pp, fr): name for name, pp, fr in M.SCENARIOS}
    return [names.get((str(a), str(b)), f"{a}/{b}")
            for a, b in zip(df["set.os.page_policy"], df["set.phys.fragmentation"])]


def _workload(df):
    import pandas as pd

    label = df.get("param.label", pd.Series("", index=df.index)).astype(str)
    names = df["workload"].astype(str)
    return names.mask(names.isin(["mix", "trace"]), label).values


def tidy(df):
    """One row per point: combo, env, scenario, workload, cycles and the explaining stats."""
    import pandas as pd

    # (A config label carries its zipped scenario keys after a space.)
    labels = df["config_label"].astype(str).str.split(" ").str[0]
    parsed = [M.parse(lab) for lab in labels]
    out = pd.DataFrame({
        "label": labels.str.split("@").str[0].values,
        "combo": [p[0] for p in parsed],
        "env": [p[1] for p in parsed],
        "scenario": _scenario(df),
        "workload": _workload(df),
    })
    refs = pd.to_numeric(df["stat.refs"], errors="coerce").values
    out["cycles"] = pd.to_numeric(df["stat.cycles"], errors="coerce").values
    out["rates"] = _program_rates(df)
    for stat, _ in EXPLAIN:
        col = f"stat.{stat}"
        v = pd.to_numeric(df[col], errors="coerce").values if col in df.columns else math.nan
        out[stat] = v / refs * 1000
    for stat in ("check.translations_checked", "stale_translation_uses"):
        col = f"stat.{stat}"
        out[stat] = pd.to_numeric(df[col], errors="coerce").fillna(0).values if col in df.columns else 0
    return out


def _program_rates(df) -> list:
    """Per row, a mix's programs' references per cycle, one per core that ran references
    (each program of the study's mix has its own core); None for a single program."""
    import pandas as pd

    cores = sorted({int(c[len("stat.core"):].split(".")[0]) for c in df.columns
                    if c.startswith("stat.core") and c.endswith(".refs") and c[len("stat.core"):].split(".")[0].isdigit()})
    out = []
    for i, wl in enumerate(df["workload"].astype(str).values):
        if wl != "mix":
            out.append(None)
            continue
        rates = []
        for k in cores:
            r = pd.to_numeric(df[f"stat.core{k}.refs"].iloc[i], errors="coerce")
            c = pd.to_numeric(df[f"stat.core{k}.cycles"].iloc[i], errors="coerce") if f"stat.core{k}.cycles" in df.columns else math.nan
            if r > 0 and c > 0:
                rates.append(r / c)
        out.append(tuple(rates) or None)
    return out


def speedups(t):
    """Each point's speed-up over the base machine in its environment, scenario and workload:
    cycles for the same references, or for a mix, the geometric mean over its programs of
    each one's references per cycle against the base machine's."""
    idx = t[t["combo"].map(len) == 0].set_index(["env", "scenario", "workload"])
    base, base_rates = idx["cycles"], idx["rates"]
    key = list(zip(t["env"], t["scenario"], t["workload"]))
    t = t.copy()

    def one(k, cycles, rates):
        b = base_rates.get(k)
        if rates is not None and b is not None and len(b) == len(rates):
            return _gmean([r / q for r, q in zip(rates, b)])
        return base.get(k, math.nan) / cycles if cycles else math.nan

    t["speedup"] = [one(k, c, r) for k, c, r in zip(key, t["cycles"], t["rates"])]
    return t


def _is(t, combo):
    """The rows of ``t`` that ran exactly ``combo`` (a Series compared with a tuple would
    compare elementwise)."""
    return t["combo"].map(lambda c: c == combo)


def _gmean(xs) -> float:
    xs = [x for x in xs if not math.isnan(x) and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def kind(pair: float, a: float, b: float) -> str:
    """A pair's interaction from its speed-up and its mechanisms' alone."""
    if any(math.isnan(x) for x in (pair, a, b)):
        return ""
    product = a * b
    if abs(pair / product - 1) <= TOLERANCE:
        return "additive"
    if pair > product:
        return "more than additive"
    if pair >= max(a, b) * (1 - TOLERANCE):
        return "redundant"
    return "conflicting"


def interactions(t):
    """Per environment and pair: the geometric-mean speed-ups alone and together, the
    interaction (together over the product) and its kind; over workloads and scenarios."""
    import pandas as pd

    rows = []
    for env in M.ENVS:
        e = t[t["env"] == env]
        alone = {c[0]: e[_is(e, c)] for c in M.combos(env) if len(c) == 1}
        for combo in M.combos(env):
            if len(combo) != 2:
                continue
            p = e[_is(e, combo)]
            if not len(p):
                continue
            a, b = alone[combo[0]], alone[combo[1]]
            # Over the (scenario, workload) cells all three have.
            cells = set(zip(p["scenario"], p["workload"])) & set(zip(a["scenario"], a["workload"])) & set(zip(b["scenario"], b["workload"]))

            def g(frame, cells=cells):
                return _gmean(r.speedup for r in frame.itertuples() if (r.scenario, r.workload) in cells)
            sp, sa, sb = g(p), g(a), g(b)
            # Two mechanisms that build on the same hardware (CSALT and TCAT on the POM-TLB)
            # each carry its gain: measured against it, the product counts it once.
            base = M.shared(combo)
            ref = g(alone[base]) if base else 1.0
            if base:
                cells &= set(zip(alone[base]["scenario"], alone[base]["workload"]))
                sp, sa, sb = g(p) / ref, g(a) / ref, g(b) / ref
            worst = min((r.speedup * ref_ / (sa_ * sb_) for r, sa_, sb_, ref_ in _cellwise(p, a, b, cells, alone.get(base))), default=math.nan)
            rows.append({"env": env, "a": combo[0], "b": combo[1], "over": base or "", "A": sa, "B": sb, "A+B": sp,
                         "interaction": sp / (sa * sb) if sa and sb else math.nan,
                         "kind": kind(sp, sa, sb), "cells": len(cells), "lowest cell": worst})
    return pd.DataFrame(rows)


def _cellwise(p, a, b, cells, ref=None):
    """Per cell: the pair's row, A's and B's speed-ups alone, and the shared hardware's (1
    without)."""
    ia = {(r.scenario, r.workload): r.speedup for r in a.itertuples()}
    ib = {(r.scenario, r.workload): r.speedup for r in b.itertuples()}
    ir = {(r.scenario, r.workload): r.speedup for r in ref.itertuples()} if ref is not None else {}
    for r in p.itertuples():
        c = (r.scenario, r.workload)
        if c in cells:
            yield r, ia[c], ib[c], ir.get(c, 1.0)


def explain(t, a: str, b: str, env: str):
    """What A, B and A+B change against the base machine, per statistic (mean over the cells)."""
    e = t[t["env"] == env]
    base = e[e["combo"].map(len) == 0]
    out = {}
    for name, combo in ((a, (a,)), (b, (b,)), (f"{a}+{b}", (a, b))):
        rows = e[_is(e, combo)]
        merged = rows.merge(base, on=["scenario", "workload"], suffixes=("", "_base"))
        out[name] = {stat: (merged[stat] - merged[f"{stat}_base"]).mean() for stat, _ in EXPLAIN}
    return out


def heatmap(inter, env: str, path: Path, title: str):
    """The interaction matrix of ``env`` as a figure: together over the product, per pair."""
    names = M.allowed(env)
    n = len(names)
    grid = [[math.nan] * n for _ in range(n)]
    kinds = [[""] * n for _ in range(n)]
    for r in inter[inter["env"] == env].itertuples():
        i, j = names.index(r.a), names.index(r.b)
        grid[i][j] = grid[j][i] = (r.interaction - 1) * 100
        kinds[i][j] = kinds[j][i] = {"additive": "=", "more than additive": "+", "redundant": "r", "conflicting": "x"}.get(r.kind, "")
    fig = report.new_figure(5.2, 4.4)
    ax = fig.add_subplot(1, 1, 1)
    lim = max([abs(v) for row in grid for v in row if not math.isnan(v)] + [1.0])
    im = ax.imshow(grid, cmap="RdBu", vmin=-lim, vmax=lim)
    ax.set_xticks(range(n), names)
    ax.set_yticks(range(n), names)
    for i in range(n):
        for j in range(n):
            if not math.isnan(grid[i][j]):
                ax.text(j, i, f"{grid[i][j]:+.1f}\n{kinds[i][j]}", ha="center", va="center", fontsize=7)
            elif i != j:
                ax.text(j, i, "n/a", ha="center", va="center", fontsize=7, color="grey")
    fig.colorbar(im, ax=ax, label="together vs product of gains alone (%)")
    ax.set_title(title, fontsize=9)
    return report.save_figure(fig, path)


def _pct(x: float) -> str:
    return "" if math.isnan(x) else f"{(x - 1) * 100:+.1f} %"


def render(df, out_dir, quick):
    t = speedups(tidy(df))
    parts: dict = {"quick": quick}

    # Each mechanism alone: per environment and scenario, the geometric mean over workloads,
    # and per workload.
    alone_rows = []
    for env in M.ENVS:
        for combo in [c for c in M.combos(env) if len(c) == 1] + [M.everything(env)]:
            sel = t[(t["env"] == env) & _is(t, combo)]
            if not len(sel):
                continue
            row = {"env": env, "mechanisms": M.label(combo, env).split("@")[0]}
            for name, _, _ in M.SCENARIOS:
                row[name] = _pct(_gmean(sel[sel["scenario"] == name]["speedup"]))
            alone_rows.append(row)
    cols = ["env", "mechanisms"] + [s[0] for s in M.SCENARIOS]
    parts["alone"] = report.markdown_table(alone_rows, columns=cols)

    per_wl = []
    for (env, scenario, wl), g in t[t["combo"].map(len) == 1].groupby(["env", "scenario", "workload"], sort=False):
        row = {"env": env, "scenario": scenario, "workload": wl}
        for r in g.itertuples():
            row[r.combo[0]] = _pct(r.speedup)
        per_wl.append(row)
    names = list(M.PREREQS) + list(M.MECHANISMS)
    parts["per_workload"] = report.markdown_table(per_wl, columns=["env", "scenario", "workload"] + names)

    inter = interactions(t)
    if len(inter):
        inter.to_csv(Path(out_dir) / "interactions.csv", index=False)
        tab = inter.assign(A=inter["A"].map(_pct), B=inter["B"].map(_pct), **{"A+B": inter["A+B"].map(_pct)},
                           interaction=inter["interaction"].map(_pct), lowest=inter["lowest cell"].map(_pct))
        parts["interactions"] = report.markdown_table(
            tab, columns=["env", "a", "b", "over", "A", "B", "A+B", "interaction", "kind", "lowest", "cells"],
            headers=["env", "A", "B", "over", "A alone", "B alone", "together", "together / product", "kind", "lowest cell", "cells"])
        figs = []
        for env in M.ENVS:
            if (inter["env"] == env).any():
                f = heatmap(inter, env, Path(out_dir) / f"interactions-{env}.png",
                            f"{env}: together vs the product of the gains alone")
                figs.append(report.figure_md(f, out_dir, f"Interaction matrix, {env} (= additive, + more than additive, "
                                                         "r redundant, x conflicting; geometric mean over workloads and scenarios)"))
        parts["heatmaps"] = "\n".join(figs)
        # The statistics behind the pairs that touch the same resource and those that are
        # not additive.
        expl = []
        for r in inter.itertuples():
            shared = M.SHARED.get((r.a, r.b)) or M.SHARED.get((r.b, r.a))
            if r.kind == "additive" and not shared:
                continue
            why = r.kind + (f"; {shared}" if shared else "")
            for who, d in explain(t, r.a, r.b, r.env).items():
                expl.append({"env": r.env, "pair": f"{r.a}+{r.b} ({why})", "run": who,
                             **{label: f"{d[stat]:+.3g}" for stat, label in EXPLAIN}})
        parts["explain"] = report.markdown_table(expl, columns=["env", "pair", "run"] + [lab for _, lab in EXPLAIN])

    # The best combination per workload and scenario, and what it costs.
    best = []
    for (env, scenario, wl), g in t[t["combo"].map(len) > 0].groupby(["env", "scenario", "workload"], sort=False):
        r = g.loc[g["speedup"].idxmax()]
        best.append({"env": env, "scenario": scenario, "workload": wl, "best": M.label(r["combo"], env).split("@")[0],
                     "speed-up": _pct(r["speedup"]),
                     "cost": "; ".join(f"{n}: {M.cost(n)}" for n in r["combo"]),
                     "promotions": f"{r['promotions']:.3g}", "shootdowns": f"{r['shootdowns']:.3g}"})
    parts["best"] = report.markdown_table(best, columns=["env", "scenario", "workload", "best", "speed-up", "promotions", "shootdowns", "cost"],
                                          headers=["env", "scenario", "workload", "best combination", "speed-up",
                                                   "promotions / 1K refs", "shootdowns / 1K refs", "its cost"])

    parts["not_combined"] = "\n".join(
        [f"- `{'+'.join(sorted(p))}`: {why}." for p, why in M.INCOMPATIBLE.items()]
        + [f"- `{m.name}` in a VM: {m.not_in_vm}." for m in M.MECHANISMS.values() if m.not_in_vm]
        + [f"- `{m.name}` on the two-program mix: {m.not_in_mix}." for m in M.MECHANISMS.values() if m.not_in_mix])
    checked = int(t["check.translations_checked"].sum())
    stale = int(t["stale_translation_uses"].sum())
    parts["checked"] = f"{checked:,}"
    parts["stale"] = f"{stale:,}"
    parts["points"] = f"{len(t):,}"

    template = HERE / "report.md.in"
    body = report.fill(template.read_text(encoding="utf-8"), parts, where=str(template)).rstrip("\n")
    return body, {}
