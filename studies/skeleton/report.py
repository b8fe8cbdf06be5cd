"""Report of the SKELETON study: a template for real studies (see sweep.toml, paper.toml).

``render(df, out_dir, quick)`` gets the study's successful points (one row per point, see
docs/experiments.md for the columns), draws its figures into ``out_dir`` and returns the
report body as Markdown plus the xlat numbers it computed for paper entries without a recipe.
The report's prose is in ``report.md.in``, which the run's figures and tables fill
(:func:`xlat.report.fill`). The paper-vs-xlat table, the header and the list of failed points
are added by `xlat study`.
"""
from pathlib import Path

from xlat import report

HERE = Path(__file__).resolve().parent


def render(df, out_dir, quick):
    df = df.copy()
    # A derived metric: the engine reports misses and accesses, the toy model a ratio.
    df["tlb.l2.miss_ratio"] = df["stat.tlb.l2.misses"] / df["stat.tlb.l2.accesses"]

    values = {}
    for fp in ("64M", "16M"):
        sel = {"tlb.l2.entries": 1536, "footprint": fp}
        if len(report.select(df, sel)):
            values[f"miss_ratio_{fp.lower()}_1536"] = report.value(df, "tlb.l2.miss_ratio", sel)

    fig = report.line_figure(
        df, x="set.tlb.l2.entries", y="tlb.l2.miss_ratio", hue="param.footprint",
        path=out_dir / "miss_ratio.png", title="GUPS: L2 TLB miss ratio vs L2 TLB entries",
        xlabel="L2 TLB entries", ylabel="L2 TLB misses / accesses", logx=True)

    table = (df.groupby(["param.footprint", "set.tlb.l2.entries"], sort=False)
               [["tlb.l2.miss_ratio", "stat.tlb.l2.mpki", "stat.ipc"]].mean().reset_index())
    # The prose and layout are in report.md.in beside this file; the run's figure and table
    # fill its {{name}} places ({{#name}}...{{/name}}: shown only when the value is truthy).
    parts = {
        "figure": report.figure_md(fig, out_dir, "L2 TLB miss ratio against L2 TLB entries, one line per table size "
                                                 "(mean over seeds; band: min-max)"),
        "table": report.markdown_table(table, headers=["footprint", "L2 TLB entries", "L2 miss ratio", "L2 TLB MPKI", "IPC"]),
        "quick": quick,
    }
    template = HERE / "report.md.in"
    return report.fill(template.read_text(encoding="utf-8"), parts, where=str(template)).rstrip("\n"), values
