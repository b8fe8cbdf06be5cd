"""`xlat sweep`, `xlat results` and `xlat study`: the experiment subcommands.

``register(subparsers)`` adds them to the main parser (xlat.cli); each handler returns the
exit status: 0 on success, 1 when some points failed (the rest were stored), 2 for an error
(one line on stderr, raised as an ``xlat.XlatError`` subclass for the main CLI to print), 130
when interrupted (143 after SIGTERM). ``python -m xlat.experiments`` runs them without the rest of the CLI.
"""
from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import _core
from ._signals import interrupted_status, sigterm_as_interrupt

EXIT_FAILED_POINTS = 1

# What `xlat results` shows by default besides the point's identity: the headline numbers
# of the statistics glossary (docs/statistics.md), those that exist.
_DEFAULT_STATS = ["ipc", "tlb.l1d.mpki", "tlb.l2.mpki", "walk_steps_per_walk", "walks", "cycles"]
_DEFAULT_META = ["config_label", "workload", "params", "seed", "refs", "status"]


def _add_cluster_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("where points run (default: a local Dask cluster using every core)")
    g.add_argument("--workers", "-j", type=_positive_int, metavar="N",
                   help="local worker processes (default: every core), or SLURM workers with --slurm")
    g.add_argument("--scheduler", metavar="ADDRESS",
                   help="address of a running Dask scheduler, e.g. tcp://HOST:8786 (its workers "
                        "need xlat installed)")
    g.add_argument("--slurm", action="store_true",
                   help="start Dask workers as SLURM jobs (needs dask-jobqueue: pip install 'xlat[slurm]'; "
                        "job settings from the spec's [slurm] table or dask's jobqueue config)")
    p.add_argument("--root", metavar="DIR",
                   help="results root (default: $XLAT_RESULTS or ./results)")
    p.add_argument("--rerun-stale", action="store_true",
                   help="also rerun points stored by another build of the engine (same version)")
    p.add_argument("--no-progress", dest="progress", action="store_false",
                   help="no progress bar on stderr")


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a whole number") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"'{text}' must be at least 1")
    return n


def register(subparsers) -> None:
    """Add the `sweep`, `results` and `study` subcommands to the main argparse parser."""
    s = subparsers.add_parser(
        "sweep", help="run a grid of simulations on Dask, resuming finished points",
        description="Expand SPEC.toml (configs x workloads x run options x seeds) into points and "
                    "run them on Dask. Finished points are stored in results/NAME and reused by a "
                    "rerun; a failed point is recorded and the sweep goes on (exit status 1 at the "
                    "end). Spec format: docs/experiments.md.")
    s.add_argument("spec", metavar="SPEC.toml")
    s.add_argument("--name", help="results name (default: the spec's name)")
    s.add_argument("--quick", action="store_true", help="apply the spec's [quick] overrides")
    s.add_argument("--dry-run", action="store_true", help="list the points and which are already stored; run nothing")
    _add_cluster_options(s)
    s.set_defaults(func=cmd_sweep)

    r = subparsers.add_parser(
        "results", help="show or export a results store",
        description="Print the results of a sweep or study (one row per point) and optionally "
                    "export them as CSV. Without NAME, list the stores.")
    r.add_argument("name", nargs="?", metavar="NAME")
    r.add_argument("--csv", metavar="PATH", help="write the selected columns (default: all) as CSV ('-': stdout)")
    r.add_argument("--columns", "-c", nargs="+", metavar="COL",
                   help="columns to show: names, globs (stat.pwc.*) or statistic names (tlb.l2.mpki)")
    r.add_argument("--failed", action="store_true", help="only failed points, with their errors")
    r.add_argument("--root", metavar="DIR", help="results root (default: $XLAT_RESULTS or ./results)")
    r.add_argument("--max-rows", type=int, default=200, metavar="N", help="rows to print (default 200; 0: all)")
    r.set_defaults(func=cmd_results)

    st = subparsers.add_parser(
        "study", help="run a study and write its report",
        description="Run studies/NAME/sweep.toml (reusing finished points) and write "
                    "results/NAME/report.md with figures and a paper-vs-xlat table.")
    st.add_argument("name", nargs="?", metavar="NAME",
                    help="study name or directory (omit to list studies); 'fidelity': re-render every study's "
                         "report from its stored points and gather their paper-vs-xlat rows into one table")
    st.add_argument("--quick", action="store_true", help="small runs: the study's quick settings")
    st.add_argument("--render-only", action="store_true", help="only rewrite the report from stored points")
    _add_cluster_options(st)
    st.set_defaults(func=cmd_study)


def cmd_sweep(args: argparse.Namespace) -> int:
    from . import sweep

    spec = sweep.load_spec(args.spec, quick=args.quick)
    if args.dry_run:
        return _dry_run(spec, args)
    with sigterm_as_interrupt():
        res = sweep.run(spec, name=args.name, scheduler=args.scheduler, workers=args.workers, slurm=args.slurm,
                        root=args.root, progress=args.progress, rerun_stale=args.rerun_stale)
    print(sweep.summary(res), file=sys.stderr)
    if res.interrupted:
        # (sweep.run catches the interrupt itself, to keep the finished points.)
        return interrupted_status(None)
    return EXIT_FAILED_POINTS if res.failed else 0


def _dry_run(spec, args) -> int:
    from . import results, sweep

    store = results.Store(args.name or spec.name, args.root)
    done = store.done_ids()
    tasks = sweep.prepare(spec)
    rows = []
    for t in tasks:
        state = "stored" if t.point_id in done else ("bad config" if t.config is None else "to run")
        rows.append([t.point.config.label, t.point.workload_spec, t.point.seed, t.point.refs, state,
                     t.error or ""])
    _print_table(rows, ["config", "workload", "seed", "refs", "state", "error"])
    todo = sum(r[4] == "to run" for r in rows)
    print(f"{len(rows)} points: {len(rows) - todo} stored or rejected, {todo} to run (results in {store.path})",
          file=sys.stderr)
    return 0


def cmd_results(args: argparse.Namespace) -> int:
    from . import results

    if args.name is None:
        names = results.names(args.root)
        root = args.root or results.default_root()
        if not names:
            print(f"no results under {root}", file=sys.stderr)
            return 0
        for n in names:
            print(n)
        return 0
    df = results.load(args.name, root=args.root)
    if args.failed:
        df = df[df["status"] != "ok"]
    if args.columns:
        cols = results.select_columns(df, [c for part in args.columns for c in part.split(",") if c])
        # The columns that tell the rows apart come first, so chosen columns never leave rows
        # that cannot be told apart: the config and workload, and params and seed where they vary.
        ids = [c for c in ("config_label", "workload", "params", "seed") if c in df.columns and (c in ("config_label", "workload") or df[c].astype(str).nunique() > 1)]
        cols = [c for c in ids if c not in cols] + cols
    elif args.csv:
        cols = list(df.columns)
    else:
        cols = [c for c in _DEFAULT_META if c in df.columns]
        if args.failed:
            cols.append("error")
        else:
            cols += [f"stat.{s}" for s in _DEFAULT_STATS if f"stat.{s}" in df.columns]
            if "error" in df.columns and (df["status"] != "ok").any():
                cols.append("error")
    if args.csv:
        out = df[cols]
        if args.csv == "-":
            out.to_csv(sys.stdout, index=False)
        else:
            from ._io import atomic_path

            store = results.Store(args.name, args.root).path
            if os.path.realpath(os.path.dirname(os.path.abspath(args.csv))) == os.path.realpath(store):
                raise ValueError(f"--csv {args.csv}: is inside the results store it exports ({store}): give a path outside it")
            with atomic_path(args.csv) as tmp:
                out.to_csv(tmp, index=False)
            print(f"wrote {len(out)} rows x {len(cols)} columns to {args.csv}", file=sys.stderr)
        return 0
    shown = df if args.max_rows == 0 else df.head(args.max_rows)
    headers = [c.removeprefix("stat.") for c in cols]
    _print_table([[_fmt(v) for v in r] for r in shown[cols].itertuples(index=False, name=None)], headers)
    n_bad = int((df["status"] != "ok").sum()) if len(df) else 0
    more = f" (first {len(shown)} shown; --max-rows 0 for all)" if len(shown) < len(df) else ""
    print(f"{len(df)} points, {n_bad} failed{more}", file=sys.stderr)
    return 0


def cmd_study(args: argparse.Namespace) -> int:
    from . import study, sweep

    if args.name is None:
        names = study.available()
        print("\n".join(names) if names else "no studies found (looked in: "
              + ", ".join(str(d) for d in study.study_dirs()) + ")")
        return 0
    if args.name == FIDELITY and FIDELITY not in study.available():
        return _fidelity(args)
    if args.render_only:
        path = study.render_from_store(args.name, quick=args.quick, root=args.root)
        print(f"report: {path}", file=sys.stderr)
        return 0
    with sigterm_as_interrupt():
        res = study.run(args.name, quick=args.quick, scheduler=args.scheduler, workers=args.workers,
                        slurm=args.slurm, root=args.root, progress=args.progress, rerun_stale=args.rerun_stale)
    print(sweep.summary(res.sweep), file=sys.stderr)
    print(f"report: {res.report}", file=sys.stderr)
    return EXIT_FAILED_POINTS if res.sweep.failed else 0


#: ``xlat study fidelity``: not a study, the table of all of them.
FIDELITY = "fidelity"


def _fidelity(args: argparse.Namespace) -> int:
    from . import fidelity, report

    path, table, not_run, failed = fidelity.write(root=args.root, quick=args.quick)
    print(report.markdown_table(table))
    if not_run:
        print(f"not run (no stored points): {', '.join(not_run)}")
    for why in failed.values():
        # (The others are counted: one study's stored points, say an interrupted run's, do
        # not keep the table from the rest.)
        print(f"xlat: not counted: {why}", file=sys.stderr)
    print(f"table: {path}", file=sys.stderr)
    return EXIT_FAILED_POINTS if failed else 0


# -- printing -------------------------------------------------------------------------------

def _fmt(v) -> str:
    from .report import fmt_number

    try:
        import pandas as pd

        if v is not None and pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    return fmt_number(v)


def _print_table(rows: Sequence[Sequence], header: Sequence[str]) -> None:
    text = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in text) for i in range(len(header))]
    numeric = [all(_numeric(r[i]) for r in text[1:] if r[i]) and any(r[i] for r in text[1:]) for i in range(len(header))]
    out = sys.stdout
    for j, r in enumerate(text):
        cells = [c.rjust(w) if num and j else c.ljust(w) for c, w, num in zip(r, widths, numeric)]
        out.write("  ".join(cells).rstrip() + "\n")
        if j == 0:
            out.write("  ".join("-" * w for w in widths) + "\n")


def _numeric(s: str) -> bool:
    try:
        float(s.replace(",", ""))
        return True
    except ValueError:
        return False


# -- standalone -----------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    """``python -m xlat.experiments ...``: these subcommands with the CLI's error conventions."""
    parser = argparse.ArgumentParser(prog="xlat")
    register(parser.add_subparsers(dest="command", required=True))
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except KeyboardInterrupt as e:
        print("xlat: interrupted", file=sys.stderr)
        return interrupted_status(e)
    except BrokenPipeError:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (stays open until exit)
        return 0
    except (_core.XlatError, OSError, ValueError) as e:
        if os.environ.get("XLAT_DEBUG"):
            raise
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"xlat: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
