"""Sweeps on Dask, the resumable results store, studies and reports (`xlat sweep`,
`xlat results`, `xlat study`).

The Dask tests run the real engine on small points (GUPS over 16-64 MB, 20K references), on
local clusters of 2 single-threaded worker processes, within about a minute on 2 cores.
"""
from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

from xlat import _core, report, results, sweep
from xlat_testutil import assert_one_line_error, has_core, run_xlat

needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")
TESTS = Path(__file__).resolve().parent

RESUME_SPEC = """
name = "resume"
refs = 20000
seeds = [1, 2, 3]
[[configs]]
preset = "skylake"
set = { "tlb.l2.entries" = [768, 1536] }
[[workloads]]
name = "gups"
params = { footprint = ["16M", "64M"] }
"""


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def fake_resolve(base, overrides):
    d = {"base": str(base)}
    d.update((k, str(v)) for k, v in overrides)
    return d


@pytest.fixture(scope="module")
def client():
    """One 2-worker local cluster shared by the in-process sweeps of this module."""
    import logging

    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                           silence_logs=logging.ERROR)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


def stat_frame(df: pd.DataFrame) -> pd.DataFrame:
    cols = sorted(results.stat_columns(df))
    return df.set_index("point_id")[cols].sort_index()


# --- the spec -------------------------------------------------------------------------------


def test_spec_expands_grid_zip_seeds_and_run_options(tmp_path):
    spec = sweep.load_spec(write(tmp_path / "s.toml", """
        name = "g"
        refs = ["10K", "2M"]
        seeds = [1, 2]
        prefault = true
        [[configs]]
        preset = "skylake"
        set = { "pwc.l2.entries" = [24, 64], "core.rob" = 224 }
        [[configs]]
        preset = "zen3"
        label = "z"
        zip = { "tlb.l2.entries" = [1536, 2048], "tlb.l2.ways" = [12, 16] }
        [[workloads]]
        name = "gups"
        params = { footprint = ["1G", "8G"] }
        [[workloads]]
        name = "stream"
        refs = 500
        seed = 7
    """))
    # configs: 2 (grid) + 2 (zip) = 4; workloads: gups x 2 footprints x 2 refs x 2 seeds = 8,
    # stream x 1 refs x 1 seed = 1.
    assert len(spec.points) == 4 * (8 + 1)
    labels = list(dict.fromkeys(p.config.label for p in spec.points))
    assert labels == ["skylake pwc.l2.entries=24 core.rob=224", "skylake pwc.l2.entries=64 core.rob=224",
                      "z tlb.l2.entries=1536 tlb.l2.ways=12", "z tlb.l2.entries=2048 tlb.l2.ways=16"]
    p = spec.points[0]
    assert (p.workload_spec, p.refs, p.seed, p.prefault, p.warmup) == ("gups:footprint=1G", 10_000, 1, True, 0)
    streams = [p for p in spec.points if p.workload == "stream"]
    assert {(p.refs, p.seed) for p in streams} == {(500, 7)}
    assert {p.refs for p in spec.points} == {10_000, 2_000_000, 500}


def test_unquoted_dotted_keys_and_quick_seeds(tmp_path):
    spec = sweep.load_spec(write(tmp_path / "s.toml", """
        seed = 3
        configs = [{ preset = "skylake", set = { pwc.l2.entries = [24, 64] } }]
        workloads = ["gups"]
        [quick]
        seeds = [1, 2]
    """))
    assert [p.config.overrides for p in spec.points] == [(("pwc.l2.entries", 24),), (("pwc.l2.entries", 64),)]
    assert [p.seed for p in spec.points] == [3, 3]
    assert [p.seed for p in sweep.load_spec(tmp_path / "s.toml", quick=True).points] == [1, 2, 1, 2]


def test_spec_shorthands_quick_and_duplicates(tmp_path):
    spec = sweep.load_spec(write(tmp_path / "s.toml", """
        configs = ["skylake", "skylake"]
        workloads = ["gups:footprint=64M", "stream"]
        refs = "1M"
        [quick]
        refs = 1000
    """))
    assert spec.name == "s"  # from the file name
    assert [p.workload_spec for p in spec.points] == ["gups:footprint=64M", "stream"]  # duplicates merged
    assert spec.points[0].refs == 1_000_000
    assert sweep.load_spec(tmp_path / "s.toml", quick=True).points[0].refs == 1000


def test_config_workload_filter_and_run_options(tmp_path):
    """A config may run only some workloads and have run options of its own: the workload's
    own beat the config's, which beat the top level's; --quick's replace the config's."""
    f = write(tmp_path / "s.toml", """
        refs = "50M"
        warmup = "20M"
        [[configs]]
        preset = "skylake"
        label = "native"
        [[configs]]
        preset = "skylake"
        label = "vm"
        workloads = ["gups", "bfs"]
        refs = "20M"
        set = { "virt.enabled" = true }
        [[workloads]]
        name = "gups"
        [[workloads]]
        name = "bfs"
        warmup = "30M"
        [[workloads]]
        name = "stream"
        [quick]
        refs = "1M"
        workloads = [{ name = "gups" }, { name = "stream" }]
    """)
    spec = sweep.load_spec(f)
    got = [(p.config.label, p.workload, p.refs, p.warmup) for p in spec.points]
    assert got == [("native", "gups", 50_000_000, 20_000_000), ("native", "bfs", 50_000_000, 30_000_000),
                   ("native", "stream", 50_000_000, 20_000_000),
                   ("vm", "gups", 20_000_000, 20_000_000), ("vm", "bfs", 20_000_000, 30_000_000)]
    # Quick: every point small; a name the quick list leaves out selects nothing there.
    quick = [(p.config.label, p.workload, p.refs) for p in sweep.load_spec(f, quick=True).points]
    assert quick == [("native", "gups", 1_000_000), ("native", "stream", 1_000_000), ("vm", "gups", 1_000_000)]
    # The filter does not change a point's identity: the same point with or without it is one id.
    ids = lambda spec: {(t.point.config.label, t.point.workload): t.point_id
                        for t in sweep.prepare(spec, resolve=fake_resolve, version="1")}
    plain = sweep.load_spec({"configs": [{"preset": "skylake", "label": "vm", "set": {"virt.enabled": True}}],
                             "workloads": ["gups"], "refs": "20M", "warmup": "20M", "name": "x"})
    assert ids(plain)[("vm", "gups")] == ids(spec)[("vm", "gups")]


@pytest.mark.parametrize("body, needle", [
    ('configs = ["skylake"]\nworkloads = ["gups"]\nrefz = 1', "unknown key 'refz'"),
    ('configs = ["skylake"]', "no 'workloads'"),
    ('workloads = ["gups"]', "no 'configs'"),
    ('configs = ["skylake"]\nworkloads = ["gups"]\nrefs = "lots"', "'lots' is not a count"),
    ('configs = ["skylake"]\nworkloads = ["gups"]\nseeds = []', "empty"),
    ('configs = [{preset = "skylake", zip = {a = [1, 2], b = [1]}}]\nworkloads = ["gups"]', "one length"),
    ('configs = [{preset = "skylake", sett = {}}]\nworkloads = ["gups"]', "unknown key 'sett'"),
    ('configs = [{preset = "skylake", workloads = ["gupz"]}]\nworkloads = ["gups"]', "workload 'gupz' is not in"),
    ('configs = [{preset = "skylake", workloads = []}]\nworkloads = ["gups"]', "non-empty list of workload names"),
    ('configs = [{preset = "skylake", refs = "many"}]\nworkloads = ["gups"]', "'many' is not a count"),
    ('configs = ["skylake"]\nworkloads = ["gups"]\ninterval = "often"', "'interval': 'often' is not a count"),
    ('configs = ["skylake"]\n[[workloads]]\nparams = {x = 1}', "'name' must be"),
    ('configs = ["skylake"\n', "sweep spec"),
])
def test_spec_errors_name_the_problem(tmp_path, body, needle):
    with pytest.raises(sweep.SpecError, match=needle.replace("(", r"\(").replace("[", r"\[")) as e:
        sweep.load_spec(write(tmp_path / "bad.toml", body))
    assert "\n" not in str(e.value)
    assert isinstance(e.value, _core.XlatError)


def test_point_id_covers_everything_that_determines_a_result(tmp_path):
    base = sweep.load_spec({"name": "x", "configs": ["skylake"], "workloads": ["gups:footprint=1G"], "refs": 1000})
    ids = lambda spec, version="1": [t.point_id for t in sweep.prepare(spec, resolve=fake_resolve, version=version)]
    again = sweep.load_spec({"name": "other", "configs": ["skylake"], "workloads": ["gups:footprint=1G"], "refs": "1K"})
    assert ids(base) == ids(again)  # the store name and the spelling of a count do not matter
    variants = [
        {"refs": 2000}, {"seeds": [2]}, {"warmup": 10}, {"prefault": True}, {"interval": "1K"},
        {"workloads": ["gups:footprint=2G"]}, {"workloads": ["stream"]},
        {"configs": [{"preset": "skylake", "set": {"tlb.l2.entries": 2048}}]}, {"configs": ["zen3"]},
    ]
    seen = {ids(base)[0], ids(base, version="2")[0]}
    assert len(seen) == 2
    for v in variants:
        spec = sweep.load_spec({"name": "x", "configs": ["skylake"], "workloads": ["gups:footprint=1G"],
                                "refs": 1000, **v})
        seen.add(ids(spec)[0])
    assert len(seen) == 2 + len(variants)


def test_interval_is_a_run_option_and_leaves_other_points_alone():
    spec = sweep.load_spec({"name": "x", "configs": ["skylake"], "workloads": [{"name": "gups", "interval": ["10K", 0]}],
                            "refs": 1000})
    assert [p.interval for p in spec.points] == [10_000, 0]
    assert spec.points[0].options()["interval"] == 10_000
    # A point without an interval has the options (and so the id) it had before intervals.
    assert spec.points[1].options() == {"refs": 1000, "warmup": 0, "prefault": False}
    tasks = sweep.prepare(spec, resolve=fake_resolve, version="1")
    assert tasks[0].meta["interval"] == 10_000 and "interval" not in tasks[1].meta


def test_shootdown_traces_are_a_run_option_identified_by_content(tmp_path):
    (tmp_path / "sd").mkdir()
    trace = tmp_path / "sd" / "a.txt"
    trace.write_text("1000 0 unmap\n")
    body = 'name = "x"\nconfigs = ["skylake"]\nrefs = 1000\n[[workloads]]\nname = "gups"\nshootdowns = "sd/a.txt"\n'
    spec = sweep.load_spec(write(tmp_path / "s.toml", body))
    (p,) = spec.points
    assert p.shootdowns == str(trace.resolve()) and p.options()["shootdowns"] == p.shootdowns
    (t,) = sweep.prepare(spec, resolve=fake_resolve, version="1")
    assert t.meta["shootdowns"] == "a.txt"
    # The same trace elsewhere is the same point; other content is another.
    moved = tmp_path / "b.txt"
    moved.write_text(trace.read_text())
    other = sweep.load_spec(write(tmp_path / "t.toml", body.replace("sd/a.txt", "b.txt")))
    assert sweep.prepare(other, resolve=fake_resolve, version="1")[0].point_id == t.point_id
    moved.write_text("2000 0 unmap\n")
    assert sweep.prepare(other, resolve=fake_resolve, version="1")[0].point_id != t.point_id
    with pytest.raises(sweep.SpecError, match="shootdown trace 'nope.txt' does not exist"):
        sweep.load_spec(write(tmp_path / "u.toml", body.replace("sd/a.txt", "nope.txt")))


@needs_sim
def test_config_hash_is_of_the_resolved_config():
    # Two spellings of one machine are one point: the hash is of the fully resolved config.
    a = sweep.load_spec({"configs": [{"preset": "skylake"}], "workloads": ["gups"], "name": "a"})
    b = sweep.load_spec({"configs": [{"preset": "skylake", "set": {"tlb.l2.entries": 1536, "tlb.l2.ways": 12}}],
                         "workloads": ["gups"], "name": "b"})
    ta, tb = sweep.prepare(a)[0], sweep.prepare(b)[0]
    from xlat import config

    assert config.resolve("skylake")["tlb.l2.entries"] == "1536"
    assert ta.meta["config_hash"] == tb.meta["config_hash"] and ta.point_id == tb.point_id


# --- the store ------------------------------------------------------------------------------


def row(pid, status="ok", t=1.0, **kw):
    return {"point_id": pid, "status": status, "error": None if status == "ok" else "E: x", "finished_at": t,
            "config_label": "c", "workload": "w", "params": "{}", "seed": 1, **kw}


def test_store_ignores_temporary_and_unreadable_files(tmp_path, capsys):
    store = results.Store("s", tmp_path)
    store.write([row("a", **{"stat.x": 1.0}), row("b", **{"stat.x": 2.0})])
    # A writer killed mid-write leaves its temporary file: complete Parquet, but not a result.
    import pyarrow.parquet as pq

    pq.write_table(results.rows_to_table([row("c", **{"stat.x": 3.0})]), store.path / ".part-dead.parquet.tmp")
    # ... and a partition damaged after the fact (truncated copy) is skipped with a warning.
    good = store.partitions()[0]
    (store.path / "part-99999999999999999999-trunc.parquet").write_bytes(good.read_bytes()[:100])
    (store.path / "notes.txt").write_text("not a partition")
    df = results.load("s", root=tmp_path)
    assert sorted(df["point_id"]) == ["a", "b"]
    assert "skipping unreadable results partition" in capsys.readouterr().err
    assert store.done_ids() == {"a", "b"}
    # Young temporary files may belong to a live writer; old ones are removed.
    assert store.remove_stale_temporaries() == 0
    old = time.time() - 2 * results.STALE_TMP_SECONDS
    os.utime(store.path / ".part-dead.parquet.tmp", (old, old))
    assert store.remove_stale_temporaries() == 1


def test_store_write_is_all_or_nothing(tmp_path, monkeypatch):
    store = results.Store("s", tmp_path)
    import pyarrow.parquet as pq

    real = pq.write_table

    def dies_midway(table, where, **kw):
        Path(where).write_bytes(b"PAR1 half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(pq, "write_table", dies_midway)
    with pytest.raises(KeyboardInterrupt):
        store.write([row("a")])
    monkeypatch.setattr(pq, "write_table", real)
    assert list(store.path.iterdir()) == []  # no partition and no temporary left behind
    assert len(results.load("s", root=tmp_path)) == 0


def test_each_point_once_ok_preferred_then_latest_error(tmp_path):
    store = results.Store("s", tmp_path)
    store.write([row("a", "error", t=1.0), row("b", "error", t=1.0, error_n=1)])
    store.write([row("a", "ok", t=2.0), row("b", "error", t=3.0, error_n=2)])
    store.write([row("a", "error", t=4.0), row("a", "ok", t=5.0)])
    df = results.load("s", root=tmp_path)
    assert sorted(df["point_id"]) == ["a", "b"]
    a, b = df.set_index("point_id").loc["a"], df.set_index("point_id").loc["b"]
    assert (a["status"], a["finished_at"]) == ("ok", 5.0)
    assert b["error_n"] == 2
    # Compaction keeps exactly that view in one partition.
    store.compact()
    assert len(store.partitions()) == 1
    pd.testing.assert_frame_equal(results.load("s", root=tmp_path), df, check_like=True)


def test_mixed_types_in_a_column_are_stored(tmp_path):
    store = results.Store("s", tmp_path)
    store.write([row("a", **{"param.size": 64, "stat.x": 1}), row("b", **{"param.size": "1G", "stat.x": 1.5})])
    df = results.load("s", root=tmp_path).set_index("point_id")
    assert df.loc["a", "param.size"] == "64" and df.loc["b", "param.size"] == "1G"
    assert df.loc["a", "stat.x"] == 1.0 and df.loc["b", "stat.x"] == 1.5


def test_results_root_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("XLAT_RESULTS", str(tmp_path / "r"))
    results.Store("e").write([row("a")])
    assert (tmp_path / "r" / "e").is_dir()
    assert list(results.load("e")["point_id"]) == ["a"]
    with pytest.raises(results.ResultsError, match="no results named 'nope'"):
        results.load("nope")
    with pytest.raises(results.ResultsError, match="invalid results name"):
        results.Store("../x")


def test_sweep_workers_that_fill_the_cores_keep_to_one_host_thread_each(monkeypatch):
    monkeypatch.setattr(sweep, "default_workers", lambda: 2)
    assert sweep.threads_per_run(1) == 2
    assert sweep.threads_per_run(2) == 1
    seen = []

    def fake(config, workload, **kw):
        seen.append(kw)
        return {"stats": {"refs": 1}, "workload": None}

    # A custom simulate gets only the point's own options; the engine's gets `threads` too.
    row = sweep.run_task({}, "gups", {"refs": 10}, {"seed": 1}, fake, threads=1)
    assert row["status"] == "ok" and seen == [{"seed": 1, "refs": 10}]


@needs_sim
def test_series_round_trips_through_the_results_store(tmp_path):
    import xlat

    opts = {"refs": 20_000, "interval": "20K"}
    rows = [sweep.run_task({}, "gups:footprint=64M", opts, row("a"), threads=1),
            sweep.run_task({}, "gups:footprint=64M", {"refs": 20_000}, row("b"), threads=1)]
    assert rows[0]["status"] == "ok", rows[0]["error"]
    assert "series" in rows[0] and "series" not in rows[1]
    results.Store("s", tmp_path).write(rows)
    df = results.load("s", root=tmp_path).set_index("point_id", drop=False)
    expected = xlat.simulate(None, "gups:footprint=64M", seed=1, **opts).series
    # (20,000 references are 130,000 instructions: 6 intervals and the rest.)
    assert len(expected) == 7
    assert results.series_of(df.loc["a", "series"]) == expected
    assert results.series_of(df.loc["b", "series"]) == []
    long = results.series_frame(df)
    assert list(long["point_id"]) == ["a"] * 7 and list(long["interval"]) == list(range(7))
    assert long["walks"].sum() == df.loc["a", "stat.walks"]
    assert list(long["ipc"]) == [iv["ipc"] for iv in expected]


@needs_sim
def test_run_task_passes_threads_to_the_engine():
    row = sweep.run_task({}, "gups:footprint=64M", {"refs": 2000}, {"seed": 1}, threads=1)
    assert row["status"] == "ok", row["error"]
    assert row["stat.refs"] == 2000


# --- sweeps on Dask -------------------------------------------------------------------------


@needs_sim
def test_a_local_sweeps_workers_log_nothing_of_their_own(tmp_path):
    # A sweep reports failed points itself; a worker's own Dask logs (a heartbeat's traceback
    # after Ctrl-C, say) would land after the sweep's closing line.
    spec = write(tmp_path / "quiet.toml", 'name = "quiet"\nrefs = 2000\nconfigs = ["skylake"]\n'
                 'workloads = ["gups:footprint=16M"]\n')
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]))
    code = ("import experiments_helpers as h; from xlat import sweep; "
            f"r = sweep.run({str(spec)!r}, root={str(tmp_path / 'r')!r}, workers=1, simulate=h.logging_simulate, "
            "progress=False); assert r.ok")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120,
                       check=False)
    assert p.returncode == 0, p.stderr
    assert "NOISE" not in p.stderr, p.stderr


@needs_sim
def test_killed_sweep_resumes_with_each_point_once_and_identical_stats(tmp_path, client):
    spec = write(tmp_path / "resume.toml", RESUME_SPEC)
    root = tmp_path / "results"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
               XLAT_TEST_POINT_DELAY="0.4")
    code = ("import experiments_helpers as h; from xlat import sweep; "
            f"sweep.run({str(spec)!r}, root={str(root)!r}, workers=2, simulate=h.slow_simulate, progress=False)")
    # Its own session, so that killing the group takes the Dask workers down with it, as a
    # crash or a lost node would.
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    store = results.Store("resume", root)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            if len(store.done_ids()) >= 3:
                break
            time.sleep(0.05)
        assert proc.poll() is None, f"the sweep ended before it could be killed: {proc.stderr.read()[-2000:]}"
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    stored = store.done_ids()
    assert 3 <= len(stored) < 12, len(stored)

    resumed = sweep.run(spec, root=root, client=client, progress=False, log=False)
    assert (resumed.total, resumed.reused, resumed.failed) == (12, len(stored), 0)
    assert resumed.ran == 12 - len(stored)
    df = results.load("resume", root=root)
    assert len(df) == 12 and df["point_id"].is_unique and (df["status"] == "ok").all()
    assert len(store.partitions()) == 1  # compacted once complete

    clean = sweep.run(spec, root=tmp_path / "clean", client=client, progress=False, log=False)
    assert clean.reused == 0 and clean.failed == 0
    a, b = stat_frame(df), stat_frame(clean.df)
    assert list(a.columns) == list(b.columns) and "stat.tlb.l2.mpki" in a.columns
    pd.testing.assert_frame_equal(a, b, check_exact=True)

    # A third run reuses every point and runs nothing.
    again = sweep.run(spec, root=root, client=client, progress=False, log=False)
    assert (again.reused, again.ran) == (12, 0)
    pd.testing.assert_frame_equal(stat_frame(again.df), a, check_exact=True)


@needs_sim
def test_ctrl_c_stops_cleanly_and_keeps_finished_points(tmp_path):
    spec = write(tmp_path / "int.toml", """
        name = "int"
        refs = "1M"
        seeds = [1, 2, 3, 4]
        configs = ["skylake"]
        workloads = ["gups:footprint=16M", "gups:footprint=64M"]
    """)
    from xlat_testutil import xlat_exe

    root = tmp_path / "r"
    # Ctrl-C in a terminal signals the whole foreground process group, workers included.
    proc = subprocess.Popen([xlat_exe(), "sweep", str(spec), "--root", str(root), "--workers", "2", "--no-progress"],
                            start_new_session=True, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    store = results.Store("int", root)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and len(store.done_ids()) < 2:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        os.killpg(proc.pid, signal.SIGINT)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err.splitlines()[-1]
    df = results.load("int", root=root)
    assert 2 <= len(df) < 8 and (df["status"] == "ok").all()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # any worker process left?
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("worker processes outlived the interrupted sweep")


@needs_sim
def test_points_of_another_engine_build_are_flagged_and_can_be_rerun(tmp_path, client):
    spec = sweep.load_spec({"name": "b", "refs": 20000, "configs": ["skylake"], "workloads": ["gups:footprint=16M"]})
    task = sweep.prepare(spec)[0]
    old = {**task.meta, "status": "ok", "error": None, "finished_at": 1.0, "engine_build": "0ld0ld0ld0ld",
           "stat.refs": -1}
    results.Store("b", tmp_path).write([old])
    log = io.StringIO()
    r = sweep.run(spec, root=tmp_path, client=client, progress=False, log=log)
    assert (r.reused, r.ran) == (1, 0) and "1 stored points were computed by another build" in log.getvalue()
    r = sweep.run(spec, root=tmp_path, client=client, progress=False, log=False, rerun_stale=True)
    assert (r.reused, r.ran) == (0, 1)
    df = results.load("b", root=tmp_path)
    assert len(df) == 1 and df.iloc[0]["stat.refs"] == 20000 and df.iloc[0]["engine_build"] == sweep.engine_build()


@needs_sim
def test_points_measured_short_are_flagged(tmp_path, client):
    # 1 K GUPS updates are 2 K references: the 20 K window cannot be filled.
    spec = sweep.load_spec({"name": "s", "refs": 20000, "configs": ["skylake"],
                            "workloads": ["gups:footprint=16M,updates=1K", "gups:footprint=16M"]})
    log = io.StringIO()
    r = sweep.run(spec, root=tmp_path, client=client, progress=False, log=log)
    assert r.ok and r.short == 1
    assert "1 of 2 points measured fewer references than asked" in log.getvalue()
    assert "gups on skylake" in log.getvalue()
    assert "1 measured short" in sweep.summary(r)
    assert list(sweep.short_points(r.df)["stat.refs"]) == [2048]


@needs_sim
def test_failed_points_are_recorded_and_the_rest_complete(tmp_path):
    spec = write(tmp_path / "f.toml", """
        name = "fails"
        refs = 20000
        [[configs]]
        preset = "skylake"
        set = { "tlb.l2.entries" = [1536, 1000] }   # 1000 entries in 12 ways: not buildable
        [[workloads]]
        name = "gups"
        params = { footprint = ["16M", "lots"] }    # not a size: the workload rejects it
    """)
    p = run_xlat("sweep", str(spec), "--workers", "2", "--root", str(tmp_path / "r"), "--no-progress", timeout=180)
    assert p.returncode == 1, p.stderr
    assert "Traceback" not in p.stderr
    assert "fails: 3 of 4 points failed" in p.stderr
    df = results.load("fails", root=tmp_path / "r")
    assert len(df) == 4
    ok = df[df["status"] == "ok"]
    assert len(ok) == 1 and ok.iloc[0]["param.footprint"] == "16M" and ok.iloc[0]["stat.refs"] > 0
    bad = df[df["status"] != "ok"].set_index("config_label")
    assert bad["error"].str.contains("tlb.l2.entries").sum() == 2  # the config's own message
    assert bad.loc["skylake tlb.l2.entries=1536", "error"].startswith("WorkloadError")
    assert not bad["error"].str.contains("\n").any()

    p = run_xlat("results", "fails", "--root", str(tmp_path / "r"), "--failed")
    assert p.returncode == 0 and p.stdout.count("error") >= 1 and "3 failed" in p.stderr
    # A rerun retries the failed points (they may have failed for a passing reason) and
    # reuses the finished one.
    p = run_xlat("sweep", str(spec), "--workers", "2", "--root", str(tmp_path / "r"), "--no-progress", timeout=180)
    assert p.returncode == 1 and "1 reused" in p.stderr
    assert len(results.load("fails", root=tmp_path / "r")) == 4


@needs_sim
def test_results_cli_table_csv_and_columns(tmp_path, client):
    spec = write(tmp_path / "t.toml", """
        name = "tbl"
        refs = 20000
        configs = ["skylake"]
        workloads = ["gups:footprint=16M"]
        seeds = [1, 2]
    """)
    sweep.run(spec, root=tmp_path, client=client, progress=False, log=False)
    p = run_xlat("results", "tbl", "--root", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "tlb.l2.mpki" in p.stdout.splitlines()[0] and p.stdout.count("gups") == 2
    out = tmp_path / "x.csv"
    p = run_xlat("results", "tbl", "--root", str(tmp_path), "--csv", str(out), "--columns", "seed", "tlb.l2.*")
    assert p.returncode == 0, p.stderr
    with open(out) as f:
        rows = list(csv.DictReader(f))
    assert [r["seed"] for r in rows] == ["1", "2"]
    assert set(rows[0]) >= {"seed", "stat.tlb.l2.mpki", "stat.tlb.l2.misses"}
    assert_one_line_error(run_xlat("results", "tbl", "--root", str(tmp_path), "--columns", "nosuch"), "nosuch")
    assert_one_line_error(run_xlat("results", "nope", "--root", str(tmp_path)), "nope")
    # An export into the store it exports, or over one of its partitions, is refused; the store
    # keeps every partition.
    parts = sorted((tmp_path / "tbl").glob("part-*.parquet"))
    for dest in (tmp_path / "tbl" / "x.csv", parts[0]):
        assert_one_line_error(run_xlat("results", "tbl", "--root", str(tmp_path), "--csv", str(dest)), "results store")
    assert sorted((tmp_path / "tbl").glob("part-*.parquet")) == parts
    assert run_xlat("results", "tbl", "--root", str(tmp_path)).stdout.count("gups") == 2
    p = run_xlat("results", "--root", str(tmp_path))
    assert p.stdout.split() == ["tbl"]


def test_cli_errors_are_one_line(tmp_path):
    assert_one_line_error(run_xlat("sweep", str(tmp_path / "missing.toml")), "does not exist")
    bad = write(tmp_path / "bad.toml", 'configs = ["skylake"]\nworkloads = ["gups"]\nsedes = [1]\n')
    assert_one_line_error(run_xlat("sweep", str(bad)), "unknown key 'sedes'")
    assert_one_line_error(run_xlat("sweep", str(bad), "--workers", "0"), "at least 1")
    assert_one_line_error(run_xlat("study", "no-such-study"), "unknown study", "skeleton")


def test_slurm_needs_dask_jobqueue(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)  # import fails as if not installed
    with pytest.raises(sweep.SweepError, match=r"pip install 'xlat\[slurm\]'"), sweep._cluster(None, 2, True, {}, 4):
        pass


@needs_sim
def test_sweep_on_an_existing_scheduler(tmp_path, client):
    spec = write(tmp_path / "s.toml", """
        name = "remote"
        refs = 20000
        configs = ["skylake", "zen3"]
        workloads = ["gups:footprint=16M"]
    """)
    p = run_xlat("sweep", str(spec), "--scheduler", client.scheduler.address, "--root", str(tmp_path),
                 "--no-progress")
    assert p.returncode == 0, p.stderr
    assert "all 2 points ok" in p.stderr
    df = results.load("remote", root=tmp_path)
    assert list(df["config_label"]) == ["skylake", "zen3"] and df["config_hash"].is_unique
    assert client.status == "running"  # somebody else's cluster is left running


def test_slurm_job_script_when_dask_jobqueue_is_installed():
    jq = pytest.importorskip("dask_jobqueue")
    cluster = jq.SLURMCluster(**sweep.slurm_cluster_options({"queue": "short", "walltime": "01:00:00"}))
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#SBATCH -p short" in script and "--nthreads 1" in script and "#SBATCH -t 01:00:00" in script


def test_slurm_options_default_to_single_threaded_workers():
    opts = sweep.slurm_cluster_options({"queue": "short", "memory": "8GiB"})
    assert opts == {"queue": "short", "memory": "8GiB", "cores": 1, "processes": 1}


# --- studies and reports --------------------------------------------------------------------


@needs_sim
def test_skeleton_study_renders_report_with_table_and_figure(tmp_path):
    root = tmp_path / "results"
    p = run_xlat("study", "skeleton", "--quick", "--workers", "2", "--root", str(root), "--no-progress",
                 cwd=tmp_path, timeout=180)
    assert p.returncode == 0, p.stderr
    out = root / "skeleton"
    text = (out / "report.md").read_text()
    assert "SKELETON" in text and "## Paper vs xlat" in text
    assert "Left out of the comparison (1):" in text and "- **energy of an L2 TLB lookup, 1536 entries**" in text
    table = [l for l in text.splitlines() if l.startswith("| L2 TLB miss ratio")]
    assert table and all("—" not in l.split("|")[5] for l in table), table  # xlat column filled
    figs = sorted(out.glob("*.png"))
    assert figs and all(f.stat().st_size > 1000 for f in figs)
    assert all(f"]({f.name})" in text for f in figs)
    # Rendering again from the store runs nothing and writes the same report.
    p = run_xlat("study", "skeleton", "--quick", "--render-only", "--root", str(root), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert (out / "report.md").read_text() == text
    # The rows beside the report, and every study's gathered into one table.
    rows = pd.read_csv(out / "paper_vs_xlat.csv")
    assert len(rows) == 3 and set(rows["verdict"]) <= set(report.VERDICTS) and rows["quick"].all()
    p = run_xlat("study", "fidelity", "--quick", "--root", str(root), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    within = int((rows["verdict"] == "within").sum())
    assert f"| skeleton | 3 | 3 | {within} |" in p.stdout, p.stdout
    assert f"| all | 3 | 3 | {within} |" in p.stdout
    assert "not run (no stored points):" in p.stdout and "skeleton," not in p.stdout
    table = (root / "fidelity.md").read_text()
    assert f"**{within} of 3 paper numbers within 25%**" in table and "## skeleton" in table
    assert "left out (reason given)" in table and "xlat counts events and cycles, not energy" in table
    assert len(pd.read_csv(root / "fidelity.csv")) == 3
    # The paper's conclusions, checked on xlat's numbers, in the report and the table.
    concl = pd.read_csv(out / "conclusions.csv")
    assert list(concl["id"]) == ["larger_table_misses_more"] and concl["verdict"][0] in ("reproduced", "unexplained")
    assert "## The paper's conclusions" in text and "A table four times larger misses the L2 TLB" in text
    n = int(concl["verdict"][0] == "reproduced")
    assert f"**{n} of 1 of the papers' conclusions reproduced**" in table
    row = next(l for l in table.splitlines() if l.startswith("| skeleton |"))
    assert row.endswith(f"| 1 | 1 | {n} |"), row  # left out, conclusions, reproduced
    assert len(pd.read_csv(root / "fidelity-conclusions.csv")) == 1


@needs_sim
def test_a_study_whose_report_fails_is_named_and_the_others_counted(tmp_path, monkeypatch):
    """One study's report failing on its stored points (an interrupted run's, say) leaves that
    study out of the fidelity table, named with why, and the others are counted."""
    from xlat import fidelity
    from xlat import results as _results
    from xlat import study as _study

    root = tmp_path / "results"
    p = run_xlat("study", "skeleton", "--quick", "--workers", "2", "--root", str(root), "--no-progress", cwd=tmp_path, timeout=180)
    assert p.returncode == 0, p.stderr
    real_render, real_partitions = _study.render_from_store, _results.Store.partitions

    def render(name, **kw):
        if name == "tcat":
            raise _study.StudyError("study 'tcat': report.py failed: KeyError: 'stat.cycles'")
        return real_render(name, **kw)

    monkeypatch.setattr(_study, "render_from_store", render)
    monkeypatch.setattr(_results.Store, "partitions", lambda self: ["x"] if self.name == "tcat" else real_partitions(self))
    path, table, not_run, failed = fidelity.write(root=root, quick=True)
    assert failed == {"tcat": "study 'tcat': report.py failed: KeyError: 'stat.cycles'"}
    assert "skeleton" in set(table["study"]) and "tcat" not in set(table["study"]) and "tcat" not in not_run
    assert "Not counted: tcat's report could not be rendered from its stored points (study 'tcat': report.py failed" in path.read_text()


def test_markdown_table_and_paper_comparison():
    df = pd.DataFrame({
        "status": ["ok"] * 4, "config_label": ["a", "a", "b", "b"], "seed": [1, 2, 1, 2],
        "param.size": ["1G", "1G", "1G", "1G"], "stat.cycles": [100.0, 110.0, 50.0, 60.0],
    })
    md = report.markdown_table(df, ["config_label", "stat.cycles"], headers=["config", "cycles"])
    assert md.splitlines()[:3] == ["| config | cycles |", "| --- | ---: |", "| a | 100.0 |"]
    entries = [
        {"id": "a", "what": "cycles on a", "paper": 100.0, "metric": "cycles", "where": {"config": "a", "size": "1G"}},
        {"id": "ratio", "paper": 0.5, "metric": "cycles", "where": {"config": "b"}, "relative_to": {"config": "a"}},
        {"id": "given", "paper": 2.0},
        {"id": "missing", "paper": 1.0, "metric": "cycles", "where": {"config": "zzz"}},
        {"id": "none", "paper": 1.0},
    ]
    comp = report.paper_vs_xlat(entries, df, values={"given": 3.0}).set_index("id")
    assert comp.loc["a", "xlat"] == 105.0 and comp.loc["a", "diff"] == 5.0 and comp.loc["a", "rel_diff"] == 0.05
    assert comp.loc["ratio", "xlat"] == pytest.approx(55 / 105)
    assert comp.loc["given", "xlat"] == 3.0 and comp.loc["given", "rel_diff"] == 0.5
    assert pd.isna(comp.loc["missing", "xlat"]) and "no successful point matches" in comp.loc["missing", "note"]
    assert "not computed" in comp.loc["none", "note"]
    md = report.paper_table(comp.reset_index())
    assert "| cycles on a |  |  | 100.0 | 105.0 | +5 | +5.0% |  |" in md


def test_templates_fill_values_and_keep_sections_that_have_them():
    t = "# {{title}}\n{{#virt}}\n## Virtualized\n{{virt}}\n{{/virt}}\n{{^virt}}\n(no VM ran)\n{{/virt}}\nIPC {{ipc}}\n"
    assert report.fill(t, {"title": "T", "virt": "| a |", "ipc": 0.5}) == "# T\n## Virtualized\n| a |\nIPC 0.5\n"
    assert report.fill(t, {"title": "T", "virt": "", "ipc": 1}) == "# T\n(no VM ran)\nIPC 1\n"
    assert report.fill("a {{#x}}b{{/x}} c", {"x": 1}) == "a b c"  # inline sections keep their spacing
    with pytest.raises(report.ReportError, match="no value for '{{ipc}}'"):
        report.fill(t, {"title": "T", "virt": ""}, where="r.md.in")
    with pytest.raises(report.ReportError, match="no value for section 'virt'"):
        report.fill(t, {"title": "T", "ipc": 1})


def test_bounds_and_ranges_are_compared_as_stated(tmp_path):
    entries = report.load_paper(write(tmp_path / "paper.toml", """
        [[numbers]]
        id = "below"
        paper = 1.5
        kind = "upper"
        [[numbers]]
        id = "over"
        paper = 1.5
        kind = "upper"
        [[numbers]]
        id = "inside"
        paper = 1.1
        paper_hi = 1.8
        kind = "range"
        [[numbers]]
        id = "under"
        paper = 1.1
        paper_hi = 1.8
        kind = "range"
        [[numbers]]
        id = "atleast"
        paper = 10
        kind = "lower"
    """))
    values = {"below": 1.2, "over": 1.8, "inside": 1.5, "under": 0.8, "atleast": 7.0}
    comp = report.paper_vs_xlat(entries, values=values).set_index("id")
    assert comp["diff"].to_dict() == pytest.approx({"below": 0.0, "over": 0.3, "inside": 0.0, "under": -0.3, "atleast": -3.0})
    assert comp["paper_text"].to_dict() == {"below": "< 1.5", "over": "< 1.5", "inside": "1.1–1.8", "under": "1.1–1.8", "atleast": "> 10"}
    assert "| over |  |  | < 1.5 | 1.800 | +0.3 | +20.0% |  |" in report.paper_table(comp.reset_index())
    for body, needle in [("kind = 'about'", "'kind' must be one of"), ("kind = 'range'", "a range needs 'paper_hi'"),
                         ("kind = 'range'\npaper_hi = 1.0", "'paper_hi' must be a number above")]:
        write(tmp_path / "bad.toml", f"[[numbers]]\nid = 'x'\npaper = 1.5\n{body}\n")
        with pytest.raises(report.ReportError, match=needle):
            report.load_paper(tmp_path / "bad.toml")


def test_paper_file_formats(tmp_path):
    toml = write(tmp_path / "paper.toml", """
        [[numbers]]
        id = "x"
        paper = 1.5
        metric = "ipc"
        where = { config = "skylake" }
    """)
    assert report.load_paper(toml) == [{"id": "x", "paper": 1.5, "metric": "ipc", "where": {"config": "skylake"}}]
    c = tmp_path / "paper.csv"
    c.write_text("id,paper,unit,metric,where\nx,1.5,,ipc,config=skylake;size=1G\n")
    assert report.load_paper(c) == [{"id": "x", "paper": 1.5, "metric": "ipc",
                                     "where": {"config": "skylake", "size": "1G"}}]
    write(tmp_path / "bad.toml", "[[numbers]]\nid = 'x'\npaper = 'big'\n")
    with pytest.raises(report.ReportError, match="'paper' must be a number"):
        report.load_paper(tmp_path / "bad.toml")


def test_figures_are_png_and_deterministic(tmp_path):
    df = pd.DataFrame({
        "status": ["ok"] * 6, "config_label": ["a", "a", "b", "b", "a", "b"],
        "param.n": [1, 2, 1, 2, 1, 1], "seed": [1, 1, 1, 1, 2, 2], "stat.v": [1.0, 2.0, 3.0, 4.0, 1.5, 2.5],
    })
    for fn in (report.bar_figure, report.line_figure):
        a = fn(df, "n", "v", tmp_path / f"{fn.__name__}.png", hue="config", title="t")
        b = fn(df, "n", "v", tmp_path / f"{fn.__name__}-2.png", hue="config", title="t")
        assert a.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert a.read_bytes() == b.read_bytes()
    assert report.figure_md(tmp_path / "f" / "x.png", tmp_path, "cap").startswith("![cap](f/x.png)")
    assert not list(tmp_path.glob(".*"))  # no temporary files left


def test_unknown_preset_is_a_spec_error(tmp_path):
    with pytest.raises(sweep.SpecError, match="unknown preset 'skylak'.*skylake"):
        sweep.load_spec({"configs": ["skylak"], "workloads": ["gups"], "name": "x"})
    with pytest.raises(sweep.SpecError, match="does not exist"):
        sweep.load_spec(write(tmp_path / "s.toml", 'configs = ["mine.toml"]\nworkloads = ["gups"]\n'))
    (tmp_path / "mine.toml").write_text('base = "skylake"\n')
    spec = sweep.load_spec(tmp_path / "s.toml")  # paths are relative to the spec
    assert spec.points[0].config.base == str(tmp_path / "mine.toml")
    assert spec.points[0].config.label == "mine"


def test_study_report_lists_failures_and_survives_a_study_with_no_success(tmp_path, monkeypatch):
    from xlat import study

    d = tmp_path / "studies" / "toy"
    d.mkdir(parents=True)
    write(d / "sweep.toml", 'configs = ["skylake"]\nworkloads = ["gups"]\n')
    write(d / "report.py", "def render(df, out_dir, quick):\n    raise RuntimeError('never called')\n")
    write(d / "paper.csv", "id,paper,metric\nx,1.0,ipc\n")
    monkeypatch.setenv("XLAT_STUDIES", str(tmp_path / "studies"))
    s = study.load("toy")
    df = pd.DataFrame([{"status": "error", "config_label": "skylake", "workload": "gups", "params": "{}",
                        "seed": 1, "error": "SimulationError: out of simulated memory"}])
    text = study.render(s, df, tmp_path / "out", quick=False).read_text()
    assert "No point succeeded" in text and "out of simulated memory" in text
    assert "| x |" in text and "no successful point matches" in text
    write(d / "report.py", "def render(df, out_dir, quick):\n    return df['nope']\n")
    ok = df.assign(status="ok", error=None)
    with pytest.raises(study.StudyError, match="report.py failed: KeyError"):
        study.render(study.load("toy"), ok, tmp_path / "out", quick=False)


def test_a_study_traces_while_its_other_points_run(tmp_path, monkeypatch):
    """prepare.py runs beside the points that need no trace: here it waits for the kernel's
    point to be stored before it makes its trace, which only an overlapped run allows."""
    from xlat import study

    d = tmp_path / "studies" / "toy"
    d.mkdir(parents=True)
    write(d / "sweep.toml", 'configs = ["skylake"]\nworkloads = ["gups:footprint=64M"]\nrefs = 20000\nprefault = true\n')
    write(d / "report.py", "def render(df, out_dir, quick):\n    return ' '.join(sorted(df['workload']))\n")
    write(d / "prepare.py", textwrap.dedent("""
        import time
        from pathlib import Path
        from xlat import _core


        def traces(out_dir, quick):
            deadline = time.monotonic() + 120
            while not list(Path(out_dir).glob("*.parquet")):
                if time.monotonic() > deadline:
                    raise RuntimeError("the kernel's point never ran beside the tracing")
                time.sleep(0.2)
            trace = Path(out_dir) / "toy.xtr"
            _core.record("random:footprint=16M,reads=20000", str(trace), None, 1)
            return [{"path": str(trace), "label": "toy"}]
    """))
    monkeypatch.setenv("XLAT_STUDIES", str(tmp_path / "studies"))
    res = study.run("toy", workers=1, root=tmp_path / "results", progress=False)
    assert res.sweep.failed == 0 and res.sweep.total == 2 and res.sweep.reused == 1
    assert res.report.read_text().count("gups") == 1 and "trace" in res.report.read_text()


@needs_sim
def test_a_report_from_the_store_traces_nothing(tmp_path, monkeypatch):
    """Rendering from the store (--render-only, xlat study fidelity) asks prepare.py for the
    traces already made, and never starts a tracing; a trace that is there still counts."""
    from xlat import study

    d = tmp_path / "studies" / "toy"
    d.mkdir(parents=True)
    write(d / "sweep.toml", 'configs = ["skylake"]\nworkloads = ["gups:footprint=64M"]\nrefs = 20000\nprefault = true\n')
    write(d / "report.py", "def render(df, out_dir, quick):\n    return ' '.join(sorted(df['workload']))\n")
    write(d / "prepare.py", textwrap.dedent("""
        from pathlib import Path
        from xlat import _core


        def traces(out_dir, quick, make=True):
            trace = Path(out_dir) / "toy.xtr"
            if make:
                Path(out_dir).mkdir(parents=True, exist_ok=True)
                (Path(out_dir) / "made").write_text("x")
                _core.record("random:footprint=16M,reads=20000", str(trace), None, 1)
            return [{"path": str(trace), "label": "toy"}] if trace.is_file() else []
    """))
    monkeypatch.setenv("XLAT_STUDIES", str(tmp_path / "studies"))
    root = tmp_path / "results"
    res = study.run("toy", workers=1, root=root, progress=False)
    assert res.sweep.total == 2 and "trace" in res.report.read_text()
    made = root / "toy" / "made"
    made.unlink()
    path = study.render_from_store("toy", root=root)
    assert not made.exists() and "trace" in path.read_text() and "gups" in path.read_text()
    # With the trace gone, the report is the points that need none, and nothing is traced.
    (root / "toy" / "toy.xtr").unlink()
    path = study.render_from_store("toy", root=root)
    assert not made.exists() and path.read_text().count("trace") == 0 and "gups" in path.read_text()


def test_a_misspelt_kernel_or_parameter_fails_when_the_spec_is_read():
    from xlat.sweep import SpecError, load_spec

    base = {"name": "s", "configs": [{"preset": "skylake"}]}
    with pytest.raises(SpecError, match="workload random has no parameter 'refs'"):
        load_spec({**base, "workloads": [{"name": "random", "params": {"refs": "1M"}}]})
    with pytest.raises(SpecError, match="unknown workload 'gpus'"):
        load_spec({**base, "workloads": ["gpus:footprint=1G"]})


@pytest.mark.parametrize("study", sorted(p.parent.name for p in (TESTS.parent / "studies").glob("*/sweep.toml")))
def test_every_study_spec_reads_full_and_quick(study):
    from xlat.sweep import load_spec

    for quick in (False, True):
        assert load_spec(TESTS.parent / "studies" / study / "sweep.toml", quick=quick).points


def test_a_workload_may_name_the_configs_it_runs_on(tmp_path):
    body = textwrap.dedent("""
        name = "x"
        refs = 1000
        [[configs]]
        preset = "skylake"
        label = "one"
        [[configs]]
        preset = "skylake4"
        label = "four"
        [[workloads]]
        name = "gups"
        params = { threads = 1 }
        configs = ["one"]
        [[workloads]]
        name = "gups"
        params = { threads = 4 }
        configs = ["four"]
    """)
    spec = sweep.load_spec(write(tmp_path / "s.toml", body))
    assert [(p.config.label, dict(p.params)["threads"]) for p in spec.points] == [("one", 1), ("four", 4)]
    with pytest.raises(sweep.SpecError, match="config 'eight' is not a label"):
        sweep.load_spec(write(tmp_path / "t.toml", body.replace('configs = ["four"]', 'configs = ["eight"]')))


def test_the_fidelity_count_compares_ratios_as_gains():
    from xlat import report

    entries = [
        {"id": "speedup", "paper": 1.068, "unit": "ratio"},  # xlat 1.30: 4.4x the gain, not 22 % more
        {"id": "close", "paper": 1.25, "unit": "ratio"},  # 1.30: a gain of 0.30 against 0.25, within
        {"id": "walks", "paper": 97, "unit": "%"},  # 93: 4 % off
        {"id": "bound", "paper": 6, "unit": "ratio", "kind": "lower"},  # 7 is above: within
        {"id": "missing", "paper": 2.0, "unit": "ratio"},
    ]
    comp = report.paper_vs_xlat(entries, values={"speedup": 1.30, "close": 1.30, "walks": 93, "bound": 7.0, "missing": None})
    assert report.fidelity(comp) == (5, 4, 3)
    assert "**3 within 25%**" in report.fidelity_line(comp)
    assert not report.within("ratio", 1.068, 1.30 - 1.068)
    assert list(comp["verdict"]) == ["unexplained", "within", "within", "within", "no value"]
    assert report.within("%", 97, -4)


def test_numbers_outside_are_sorted_by_what_explains_them(tmp_path):
    entries = [
        {"id": "shown", "what": "gain A", "paper": 1.07, "unit": "ratio", "cause": "walks exposed 73 % of cycles",
         "shown_by": "xlat run -c skylake -w gups"},
        {"id": "argued", "what": "gain B", "paper": 1.07, "unit": "ratio", "cause": "a smaller input"},
        {"id": "bare", "what": "gain C", "paper": 1.07, "unit": "ratio"},
        {"id": "near", "what": "gain D", "paper": 1.07, "unit": "ratio", "cause": "never shown: within"},
    ]
    comp = report.paper_vs_xlat(entries, values={"shown": 1.3, "argued": 1.3, "bare": 1.3, "near": 1.08})
    assert list(comp["verdict"]) == ["shown", "argued", "unexplained", "within"]
    assert report.verdict_counts(comp) == {"no value": 0, "within": 1, "shown": 1, "argued": 1, "unexplained": 1}
    line = report.fidelity_line(comp)
    assert "**1 within 25%**; of the 3 outside, 1 with a cause shown by a run, 1 with a cause argued, 1 unexplained" in line
    why = "\n".join(report.causes(comp))
    assert "- **gain A**: walks exposed 73 % of cycles. Shown by: `xlat run -c skylake -w gups`." in why
    assert "- **gain B**: a smaller input. (Argued, not shown by a run.)" in why
    assert "gain C" not in why and "gain D" not in why
    # A run that shows nothing, or no cause to show, is refused when the table is read.
    for bad, needle in (('cause = ""', "'cause' must be a non-empty string"),
                        ('shown_by = "xlat run"', "'shown_by' needs the 'cause' it shows")):
        f = tmp_path / "paper.toml"
        f.write_text(f'[[numbers]]\nid = "x"\npaper = 1.0\n{bad}\n')
        with pytest.raises(report.ReportError, match=needle):
            report.load_paper(f)


def test_numbers_left_out_need_a_reason(tmp_path):
    f = tmp_path / "paper.toml"
    f.write_text('[[numbers]]\nid = "x"\npaper = 1.0\n\n[[out_of_scope]]\nwhat = "power"\nsource = "Fig. 9"\n'
                 'paper = "3-8 %"\nreason = "xlat models no power"\n')
    left = report.load_out_of_scope(f)
    assert left == [{"what": "power", "source": "Fig. 9", "paper": "3-8 %", "reason": "xlat models no power"}]
    assert report.out_of_scope_lines(left)[2] == "- **power** (Fig. 9; paper: 3-8 %): xlat models no power."
    assert [e["id"] for e in report.load_paper(f)] == ["x"]  # the numbers compared are unchanged
    for bad, needle in (('reason = ""', "needs a non-empty 'reason'"), ('why = "power"', "unknown field 'why'")):
        f.write_text(f'[[numbers]]\nid = "x"\npaper = 1.0\n[[out_of_scope]]\nwhat = "p"\nsource = "s"\n{bad}\n')
        with pytest.raises(report.ReportError, match=needle):
            report.load_out_of_scope(f)
