"""Report of the PTE-coalescing study (seed 002, kernel half): see sweep.toml and paper.toml.

``render(df, out_dir, quick)`` turns each point's T2 counters (L1 DTLB misses split by whether
the L2 DTLB hit and by the size of the entry that refilled the L1: the paper's
``ls_l1_d_tlb_miss.tlb_reload_*``) into the paper's rows, per 1000 instructions, and returns
the report body with the xlat values of paper.toml's entries.
"""
import math
from pathlib import Path

from xlat import report

HERE = Path(__file__).resolve().parent

# The paper's programs, as the kernels here stand for them.
PAPER_NAME = {"xsbench": "XSBench", "canneal": "Canneal", "pagerank": "GraphChi", "liblinear": "BlockSVM"}
SIZES = ("4k", "coalesced", "2m", "1g")
COLUMNS = ["L-nothp", "L-thp", "F5-noresv", "F5-reserv", "F5-super", "F2-noresv", "F2-reserv", "F2-super"]
# (The T-A..T-F tables are for the paper's programs; the jemalloc heap has its own section.)
# The real programs traced here (prepare.py), and the paper's program each stands for.
PROGRAMS = {"clang": "Clang", "node": "Node.js", "sqlite": None, "python": None, "xz": None}
CODE_COLUMNS = ["L-nothp", "L-thp", "LB-noresv", "LB-reserv", "LB-super", "F5-noresv", "F5-reserv", "F5-super",
                "F2-noresv", "F2-reserv", "F2-super"]
# The id of the paper's number for a T2 row, column and workload is "<prefix>_<config id>_<workload>"
# (paper.toml: l1d_pki_f5_noresv_xsbench is T10's L1 DTLB misses under F5-noresv), so each row of
# the paper's T4-T11 it quotes is paired where the report shows that row, cell by cell.
ROW_IDS = {"l1d": "l1d_pki", "l2_hit": "l2_hits_pki", "l2_hit.coalesced": "coalesced_hits_pki",
           "l2_hit.2m.pct": "huge_share", "l2_hit.coalesced.pct": "coalesced_share", "l2_miss": "l2_misses_pki",
           "l2_miss.4k": "misses_4k_pki", "l2_miss.2m.pct": "huge_miss_share",
           "l2_miss.coalesced.pct": "coalesced_miss_share", "l1i": "l1i_pki"}


def _id(config):
    return config.lower().replace("-", "_")


def _counts(df):
    """One row per point: its counts of the T2 rows (summed over windows and seeds before they
    become rates), its levels (kept as means), and `window`, the trace a traced program's point
    ran (a program sampled in several windows has one per window; "" for a kernel)."""
    import pandas as pd

    def num(col):
        return pd.to_numeric(df[col], errors="coerce").fillna(0.0) if col in df.columns else pd.Series(0.0, index=df.index)

    workload = df["workload"].astype(str)
    if "param.label" in df.columns:
        # (A traced program is the workload `trace`; its label names it.)
        workload = workload.where(workload != "trace", df["param.label"].astype(str))
    path = df["param.path"].astype(str) if "param.path" in df.columns else pd.Series("", index=df.index)
    c = pd.DataFrame({"setup": df["config_label"].astype(str).values, "workload": workload.values})
    c["window"] = path.where(df["workload"].astype(str) == "trace", "").values
    c["instructions"] = num("stat.instructions").values
    c["l1i"] = num("stat.tlb.l1i.misses").values
    c["l1i.l2_miss"] = num("stat.tlb.l1i.misses.l2_miss").values
    c["l1d"] = num("stat.tlb.l1d.misses").values
    for kind in ("hit", "miss"):
        for size in SIZES:
            c[f"l2_{kind}.{size}"] = num(f"stat.tlb.l1d.misses.l2_{kind}.{size}").values
    c["walks"] = num("stat.walks").values
    c["cycles"] = num("stat.cycles").values
    c["os.calls"] = num("stat.os.calls").values
    c["huge_coverage"] = (100 * num("stat.huge_coverage")).values
    for size in ("16k", "32k"):
        col = f"stat.pt.coalescable.{size}"
        c[f"groups.{size}"] = (100 * pd.to_numeric(df[col], errors="coerce")).values if col in df.columns else math.nan
    c["ipc"] = num("stat.ipc").values
    return c


#: Columns of `_counts` that are levels or ratios already: averaged, not summed.
LEVELS = ("huge_coverage", "groups.16k", "groups.32k", "ipc")


def _tidy(df):
    """One row per (config, workload): the T2 rows per 1000 instructions, shares in %. A traced
    program's windows are a sample of it: their counts are summed before the ratios are taken
    (the ratio estimator, as `xlat.sampling` takes a sampled run's)."""
    c = _counts(df)
    keys = ["setup", "workload"]
    counts = [col for col in c.columns if col not in keys + ["window", *LEVELS]]
    g = c.groupby(keys, sort=False)
    t = g[counts].sum().join(g[list(LEVELS)].mean()).reset_index()
    ki = t["instructions"] / 1000
    for col in ("l1i", "l1i.l2_miss", "l1d", "os.calls"):
        t[col] = t[col] / ki
    for kind in ("hit", "miss"):
        total = sum(t[f"l2_{kind}.{s}"] for s in SIZES)
        for s in SIZES:
            part = t[f"l2_{kind}.{s}"]
            t[f"l2_{kind}.{s}.pct"] = 100 * part / total.where(total > 0)
            t[f"l2_{kind}.{s}"] = part / ki
        t[f"l2_{kind}"] = total / ki
    # (Without coalescing the engine has no T2 split: every L2 DTLB miss is a walk.)
    off = (t["l2_hit"] == 0) & (t["l2_miss"] == 0)
    t.loc[off, "l2_miss"] = (t["walks"] / ki)[off]
    return t


#: The rows of a sampled program's windows the report gives with their confidence intervals:
#: (what, paper.toml's id prefix, config, numerator, config of the denominator, denominator,
#: scale, cut): the ratio of sums times `scale`; with `cut`, 100 minus the ratio in percent.
SAMPLED_ROWS = [
    ("L1 ITLB misses PKI, F5-noresv", "l1i_pki_f5_noresv", "F5-noresv", "l1i", "F5-noresv", "instructions", 1000.0, False),
    ("L1 ITLB misses PKI, F5-reserv", "l1i_pki_f5_reserv", "F5-reserv", "l1i", "F5-reserv", "instructions", 1000.0, False),
    ("L1 ITLB misses cut % by reserv, F5", "l1i_reduction_f5_reserv", "F5-reserv", "l1i", "F5-noresv", "l1i", 100.0, True),
    ("L1 DTLB misses PKI, F5-noresv", "l1d_pki_f5_noresv", "F5-noresv", "l1d", "F5-noresv", "instructions", 1000.0, False),
    ("L1 DTLB misses cut % by reserv, F5", "l1d_reduction_f5_reserv", "F5-reserv", "l1d", "F5-noresv", "l1d", 100.0, True),
    ("coalesced % of L2 DTLB hits, F5-reserv", "coalesced_share_f5_reserv", "F5-reserv", "l2_hit.coalesced", "F5-reserv", "l2_hits", 100.0, False),
]


def _per_window(per, windows, config, col):
    """`col` of `config` in each of `windows` (NaN where a window has no such point)."""
    return [float(per.loc[(config, x), col]) if (config, x) in per.index else math.nan for x in windows]


def _windows_table(df, programs, paper):
    """The traced programs sampled in several windows: for each of SAMPLED_ROWS its estimate
    over the windows (sums' ratio), the 95 % confidence interval (`xlat.sampling.ratio_ci`,
    the windows a systematic sample of the run), and each window's own value; "" if no
    program has more than one window."""
    from xlat.sampling import ratio_ci

    c = _counts(df)
    c["l2_hits"] = sum(c[f"l2_hit.{s}"] for s in SIZES)
    rows = []
    for w in programs:
        mine = c[c["workload"] == w]
        windows = sorted(set(mine["window"]))
        if len(windows) < 2:
            continue
        per = mine.groupby(["setup", "window"]).sum(numeric_only=True)
        for what, key, a, top, b, bottom, scale, cut in SAMPLED_ROWS:
            tops, bottoms = _per_window(per, windows, a, top), _per_window(per, windows, b, bottom)
            if any(math.isnan(v) for v in tops + bottoms):
                continue
            r, half = ratio_ci(tops, bottoms, scale)
            each = [scale * t / d if d else math.nan for t, d in zip(tops, bottoms)]
            if cut:
                r, each = 100 - r, [100 - v for v in each]
            ref = paper.get(f"{key}_{w}")
            rows.append([_program(w), what, str(len(windows)), f"{r:.2f} ± {half:.2f}", ", ".join(f"{v:.2f}" for v in each),
                         "-" if ref is None else f"{ref}"])
    if not rows:
        return ""
    return report.markdown_table(rows, columns=["program", "row", "windows", "estimate ± 95 %", "each window", "paper"])


def _get(t, config, workload, col):
    sel = t[(t["setup"] == config) & (t["workload"] == workload)]
    return float(sel[col].iloc[0]) if len(sel) else math.nan


def _cut(before, after):
    """Percent reduction from `before` to `after`."""
    return 100 * (1 - after / before) if before and not math.isnan(before) else math.nan


def _cell(x, paper=None, digits=3):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        text = "-"
    else:
        text = f"{x:.{digits}f}"
    return text if paper is None else f"{text} ({paper})"


def _paired(values, paper, key, x, digits):
    """The cell of xlat's `x` with the paper's value for `key` beside it, if it has one (and
    then `x` is xlat's value for that entry)."""
    if key in paper:
        values[key] = x
    return _cell(x, paper.get(key), digits)


def _row_cell(t, c, w, col, values, paper, digits):
    """The cell of T2 row `col` for config `c` and workload `w`, paired with the paper's value
    of that cell (ROW_IDS) if paper.toml quotes it."""
    x = _get(t, c, w, col)
    return _paired(values, paper, f"{ROW_IDS[col]}_{_id(c)}_{w}", x, digits) if col in ROW_IDS else _cell(x, None, digits)


def _ratio(t, w, col, a, b):
    """`col` of config `a` over config `b` for workload `w`."""
    base = _get(t, b, w, col)
    return _get(t, a, w, col) / base if base else math.nan


def _cuts(t, cpu, w, col, values, paper):
    """The cells of the cut (%) reserv and super make in `col` against noresv on `cpu`, each
    paired with the paper's `<col>_reduction_<cpu>_<mode>_<w>`."""
    base = _get(t, f"{cpu}-noresv", w, col)
    return [_paired(values, paper, f"{col}_reduction_{cpu.lower()}_{mode}_{w}", _cut(base, _get(t, f"{cpu}-{mode}", w, col)), 1)
            for mode in ("reserv", "super")]


def _paired_rows(t, names, columns, col, key, values, paper, digits):
    """One row per workload (`names`: workload -> its row's name) of `col` per configuration,
    each cell paired with the paper's value for `key` (formatted with `c`, the config's id,
    and `w`, the workload)."""
    return [[name] + [_paired(values, paper, key.format(c=_id(c), w=w), _get(t, c, w, col), digits) for c in columns]
            for w, name in names.items()]


def _bars(t, col, path, title, ylabel, caption):
    """A bar figure of `col` per paper column, one bar per workload: its Markdown ("" without points)."""
    points = t[t["setup"].isin(COLUMNS)]
    if not len(points):
        return ""
    fig = report.bar_figure(points, x="setup", y=col, hue="workload", path=path, title=title, xlabel="configuration", ylabel=ylabel)
    return report.figure_md(fig, path.parent, caption)


def render(df, out_dir, quick):
    t = _tidy(df)
    workloads = [w for w in PAPER_NAME if w in set(t["workload"])]
    # The traced programs that are the paper's (clang, node): §5.1.1, §5.1.5 and §5.4
    # quote their data-TLB rows too, so T-C and T-A have a row for each.
    named = {w: _program(w) for w in PROGRAMS if PROGRAMS[w] and w in set(t["workload"])}
    paper = {e["id"]: e["paper"] for e in report.load_paper(__file__.replace("report.py", "paper.toml"))}
    values = {}
    # The report's prose and layout are in report.md.in; the run's tables and figures fill it.
    parts = {"quick": quick}

    # --- T-C: contiguity each allocator makes, seen as coalesced L2 DTLB hits ----------------
    rows = _paired_rows(t, {w: f"{PAPER_NAME[w]} ({w})" for w in workloads} | named, COLUMNS, "l2_hit.coalesced.pct",
                        "coalesced_share_{c}_{w}", values, paper, 1)
    parts["tc"] = report.markdown_table(rows, columns=["workload"] + COLUMNS)
    rows = []
    for w in workloads:
        row = [f"{PAPER_NAME[w]} ({w})"]
        for c in COLUMNS:
            size = "32k" if c.startswith("F2") else "16k"
            row.append(_cell(_get(t, c, w, f"groups.{size}"), None, 1))
        rows.append(row)
    parts["tc_groups"] = report.markdown_table(rows, columns=["workload"] + COLUMNS)
    parts["tc_figure"] = _bars(t, "l2_hit.coalesced.pct", out_dir / "coalesced_share.png", "Coalesced share of L2 DTLB hits", "% of L2 DTLB hits",
                  "Share of L2 DTLB hits served by coalesced entries, per configuration and workload")

    # --- T-A: L1 DTLB misses and what reservations and promotion cut ------------------------
    rows = []
    for w, name in ({w: f"{PAPER_NAME[w]} ({w})" for w in workloads} | named).items():
        row = [name]
        for cpu in ("F5", "F2"):
            row.append(_row_cell(t, f"{cpu}-noresv", w, "l1d", values, paper, 3))
            row += _cuts(t, cpu, w, "l1d", values, paper)
        rows.append(row)
    parts["ta"] = report.markdown_table(rows, columns=["workload", "F5 noresv", "F5 reserv cut %", "F5 super cut %",
                                                        "F2 noresv", "F2 reserv cut %", "F2 super cut %"])
    parts["ta_figure"] = _bars(t, "l1d", out_dir / "l1d_misses.png", "L1 DTLB misses", "per 1000 instructions", "L1 DTLB misses per 1000 instructions")

    # --- T-B: 16 KB vs 32 KB, across CPUs (the paper's) and on one geometry (the ablation) ---
    rows = []
    for w in workloads:
        f5 = _get(t, "F5-reserv", w, "l2_miss.4k")
        f2 = _get(t, "F2-reserv", w, "l2_miss.4k")
        z3 = _get(t, "Z3-32k-reserv", w, "l2_miss.4k")
        ratio = _paired(values, paper, f"misses_4k_32k_over_16k_{w}", f2 / f5 if f5 else math.nan, 2)
        rows.append([f"{PAPER_NAME[w]} ({w})", _row_cell(t, "F5-reserv", w, "l2_miss.4k", values, paper, 3),
                     _row_cell(t, "F2-reserv", w, "l2_miss.4k", values, paper, 3), ratio, _cell(z3),
                     _cell(z3 / f5 if f5 else math.nan, None, 2),
                     _cell(_get(t, "F5-reserv", w, "l2_miss")), _cell(_get(t, "Z3-32k-reserv", w, "l2_miss"))])
    parts["tb"] = report.markdown_table(rows, columns=["workload", "F5 4K misses", "F2 4K misses", "F2 / F5", "Z3-32k 4K misses",
                                                        "Z3-32k / F5", "F5 all misses", "Z3-32k all misses"])

    # --- T-F: cycles ----------------------------------------------------------------------
    rows = []
    for w in workloads:
        ref = _get(t, "F5-super", w, "cycles")
        row = [f"{PAPER_NAME[w]} ({w})"]
        for c in COLUMNS:
            row.append(_paired(values, paper, f"cycles_{_id(c)}_{w}", _get(t, c, w, "cycles") / ref if ref else math.nan, 3))
        row.append(_paired(values, paper, f"cycles_f5_reserv_over_noresv_{w}", _ratio(t, w, "cycles", "F5-reserv", "F5-noresv"), 3))
        rows.append(row)
    parts["tf"] = report.markdown_table(rows, columns=["workload"] + COLUMNS + ["F5 reserv / noresv"])

    # --- What coalescing itself is worth, with reservations ---------------------------------
    rows = []
    for w in workloads:
        on, off = _get(t, "F5-reserv", w, "l2_miss"), _get(t, "F5-reserv-nocoal", w, "l2_miss")
        c_on, c_off = _get(t, "F5-reserv", w, "cycles"), _get(t, "F5-reserv-nocoal", w, "cycles")
        rows.append([f"{PAPER_NAME[w]} ({w})", _cell(off), _cell(on), _cell(_cut(off, on), None, 1),
                     _cell(_cut(c_off, c_on), None, 2)])
    parts["worth"] = report.markdown_table(rows, columns=["workload", "L2 misses, off", "L2 misses, 16 KB", "walks cut %", "cycles cut %"])

    # --- MADV_FREE and superpages (nomdv) ---------------------------------------------------
    rows = []
    for w in workloads + (["churn"] if "churn" in set(t["workload"]) else []):
        name = f"{PAPER_NAME[w]} ({w})" if w in PAPER_NAME else f"jemalloc heap ({w})"
        row = [name]
        for cpu in ("F5", "F2"):
            sup, nom = _get(t, f"{cpu}-super", w, "l1d"), _get(t, f"{cpu}-nomdv", w, "l1d")
            row += [_cell(sup), _cell(nom)]
            if w == "churn":
                key = f"nomdv_l1d_cut_{cpu.lower()}"
                values[key] = _cut(sup, nom)
                row.append(_cell(values[key], paper.get(key), 1))
            else:
                key = f"nomdv_over_super_l1d_{w}"
                ratio = nom / sup if sup else math.nan
                if cpu == "F5" and key in paper:
                    values[key] = ratio
                row.append(_cell(ratio, paper.get(key) if cpu == "F5" else None, 3))
        huge = (_get(t, "F5-super", w, "l2_hit.2m.pct"), _get(t, "F5-nomdv", w, "l2_hit.2m.pct"))
        if w == "churn":
            values["nomdv_huge_share_f5"] = huge[1]
        row += [_paired(values, paper, f"huge_share_f5_super_{w}", huge[0], 1),
                _cell(huge[1], paper.get("nomdv_huge_share_f5") if w == "churn" else None, 1),
                _cell(_get(t, "F5-super", w, "os.calls"), None, 3)]
        rows.append(row)
    parts["nomdv"] = report.markdown_table(rows, columns=["workload", "F5-super", "F5-nomdv", "F5 nomdv cut % / ratio", "F2-super", "F2-nomdv",
                                                           "F2 nomdv cut % / ratio", "2 MB % of L2 hits, F5-super", "F5-nomdv",
                                                           "madvise calls PKI, F5-super"])

    # --- Code: the real programs' L1 ITLB misses (T-E) and the linker's phase shift ----------
    programs = [w for w in PROGRAMS if w in set(t["workload"])]
    parts["programs"] = bool(programs)
    parts.update(_code_section(t, programs, paper, values, out_dir))
    parts["windows"] = _windows_table(df, programs, paper)

    # --- Every T2 row, per workload ---------------------------------------------------------
    t2 = []
    labels = list(dict.fromkeys(t["setup"]))
    for w in workloads + (["churn"] if "churn" in set(t["workload"]) else []) + programs:
        rows = []
        for name, col, digits in [("L1 DTLB misses", "l1d", 3), ("L2 DTLB hits", "l2_hit", 3),
                                  ("L2 DTLB coalesced hits", "l2_hit.coalesced", 3)] + \
                [(f"L2 DTLB {s} hits %", f"l2_hit.{s}.pct", 1) for s in ("2m", "coalesced", "4k")] + \
                [("L2 DTLB misses", "l2_miss", 3), ("L2 DTLB 4k misses", "l2_miss.4k", 3)] + \
                [(f"L2 DTLB {s} misses %", f"l2_miss.{s}.pct", 1) for s in ("2m", "coalesced", "4k")] + \
                [("L1 ITLB misses", "l1i", 3), ("L1 ITLB misses that walked", "l1i.l2_miss", 3),
                 ("2 MB pages, % of mapped memory", "huge_coverage", 1), ("IPC", "ipc", 3)]:
            rows.append([name] + [_row_cell(t, c, w, col, values, paper, digits) for c in labels])
        title = f"{PAPER_NAME[w]} ({w})" if w in PAPER_NAME else f"jemalloc heap ({w})" if w == "churn" else f"{w} (traced)"
        t2.append(f"### {title}\n\n" + report.markdown_table(rows, columns=["counter"] + labels))
    parts["t2"] = "\n\n".join(t2)
    template = HERE / "report.md.in"
    return report.fill(template.read_text(encoding="utf-8"), parts, where=str(template)), values


def _program(w):
    return f"{PROGRAMS[w]} ({w})" if PROGRAMS.get(w) else w


def _code_section(t, programs, paper, values, out_dir):
    """T-E for the traced programs: L1 ITLB misses per configuration and what reservations
    cut, on the FreeBSD binaries (F5, F2: relinked with 2 MB) and the Linux ones (LB); then
    Fig. 1's phase shift (F5-reserv relinked with 4 KB) and A-bit presetting: its tables and
    figure, for the template ("" without programs)."""
    out = {"te": "", "te_cuts": "", "te_cycles": "", "te_linker": "", "te_figure": ""}
    if not programs:
        return out
    rows = _paired_rows(t, {w: _program(w) for w in programs}, CODE_COLUMNS, "l1i", "l1i_pki_{c}_{w}", values, paper, 3)
    out["te"] = report.markdown_table(rows, columns=["program"] + CODE_COLUMNS)
    rows = []
    for w in programs:
        row = [_program(w)]
        for cpu in ("F5", "F2", "LB"):
            row += _cuts(t, cpu, w, "l1i", values, paper)
        rows.append(row)
    out["te_cuts"] = report.markdown_table(rows, columns=["program", "F5 reserv", "F5 super", "F2 reserv", "F2 super", "LB reserv", "LB super"])
    # §5.3.1 quotes Clang's cycles as what one column saves against another, not as T4's cells.
    # (Each with the id of its paper number, named as the kernels' cycles_f5_reserv_over_noresv_<w>.)
    pairs = [("F5-reserv", "F5-noresv", "f5_reserv_over_noresv"), ("F5-nomdv", "F5-noresv", "f5_nomdv_over_noresv"),
             ("LB-reserv", "L-nothp", "lb_reserv_over_l_nothp"), ("LB-super", "L-thp", "lb_super_over_l_thp")]
    rows = [[_program(w)] + [_paired(values, paper, f"cycles_{key}_{w}", _ratio(t, w, "cycles", a, b), 3) for a, b, key in pairs]
            for w in programs]
    out["te_cycles"] = report.markdown_table(rows, columns=["program"] + [f"{a} / {b}" for a, b, _ in pairs])
    rows = []
    for w in programs:
        two, four, pre = (_get(t, c, w, col) for c, col in (("F5-reserv", "l1i"), ("F5-reserv-4k", "l1i"), ("F5-reserv-presetA", "l1i")))
        walks = (_get(t, "F5-reserv", w, "l1i.l2_miss"), _get(t, "F5-reserv-4k", w, "l1i.l2_miss"))
        groups = (_get(t, "F5-reserv", w, "groups.16k"), _get(t, "F5-reserv-4k", w, "groups.16k"), _get(t, "F5-reserv-presetA", w, "groups.16k"))
        rows.append([_program(w), _cell(two), _cell(four), _cell(-_cut(two, four), None, 1), _cell(walks[0]), _cell(walks[1]),
                     _cell(groups[0], None, 1), _cell(groups[1], None, 1), _cell(pre), _cell(groups[2], None, 1)])
    out["te_linker"] = report.markdown_table(rows, columns=["program", "L1I, 2 MB", "L1I, 4 KB", "4 KB adds %", "walks, 2 MB", "walks, 4 KB",
                                                          "groups %, 2 MB", "groups %, 4 KB", "L1I, preset A", "groups %, preset A"])
    points = t[t["setup"].isin(CODE_COLUMNS) & t["workload"].isin(programs)]
    if len(points):
        path = out_dir / "l1i_misses.png"
        fig = report.bar_figure(points, x="setup", y="l1i", hue="workload", path=path, title="L1 ITLB misses",
                                xlabel="configuration", ylabel="per 1000 instructions")
        out["te_figure"] = report.figure_md(fig, path.parent, "L1 ITLB misses per 1000 instructions of the traced programs")
    return out
