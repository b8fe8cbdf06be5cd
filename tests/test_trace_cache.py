"""The trace cache: a ChampSim trace is decoded once; later runs read the native copy and
give the same statistics as reading the trace itself."""
from __future__ import annotations

import json

from xlat_testutil import assert_one_line_error, run_xlat


def _run(trace, out, cache_dir):
    return run_xlat("run", "-c", "skylake", "--trace", str(trace), "-n", "200k", "--quiet", "--json", str(out),
                    env={"XLAT_CACHE_DIR": str(cache_dir)})


def test_a_champsim_trace_is_decoded_once_and_runs_alike(tmp_path):
    trace = tmp_path / "gups.champsim.xz"
    rec = run_xlat("record", "-w", "gups:footprint=64M", "-n", "300k", "--format", "champsim", "-o", str(trace))
    assert rec.returncode == 0, rec.stderr
    cache = tmp_path / "cache"
    first = _run(trace, tmp_path / "a.json", cache)
    assert first.returncode == 0, first.stderr
    assert "1 copy" in run_xlat("cache", env={"XLAT_CACHE_DIR": str(cache)}).stdout
    second = _run(trace, tmp_path / "b.json", cache)
    assert second.returncode == 0 and second.stderr == "", second.stderr
    off = _run(trace, tmp_path / "c.json", "off")
    assert off.returncode == 0 and off.stderr == "", off.stderr
    assert not (tmp_path / "off").exists()
    a, b, c = (json.loads((tmp_path / f"{n}.json").read_text()) for n in "abc")
    assert a["stats"] == b["stats"] == c["stats"]
    assert a["workload"] == c["workload"] and a["workload"]["params"]["format"] == "champsim"

    listed = run_xlat("cache", env={"XLAT_CACHE_DIR": str(cache)})
    assert listed.returncode == 0, listed.stderr
    assert "1 copy" in listed.stdout and "champsim" in listed.stdout and str(trace) in listed.stdout
    # A native trace needs no copy; --add of the same trace finds it in the cache.
    added = run_xlat("cache", "--add", str(trace), env={"XLAT_CACHE_DIR": str(cache)})
    assert "in the cache already" in added.stdout, added.stdout
    # Clearing and adding at once is refused whole: nothing is removed.
    assert_one_line_error(run_xlat("cache", "--clear", "--add", str(trace), env={"XLAT_CACHE_DIR": str(cache)}), "do not go together")
    assert "1 copy" in run_xlat("cache", env={"XLAT_CACHE_DIR": str(cache)}).stdout
    cleared = run_xlat("cache", "--clear", env={"XLAT_CACHE_DIR": str(cache)})
    assert cleared.returncode == 0 and "removed 2 files" in cleared.stdout, cleared.stdout
    assert "0 copies" in run_xlat("cache", env={"XLAT_CACHE_DIR": str(cache)}).stdout
    assert "is off" in run_xlat("cache", env={"XLAT_CACHE_DIR": "off"}).stdout


def test_a_corrupt_trace_is_one_line_and_leaves_no_copy(tmp_path):
    trace = tmp_path / "cut.champsim"
    rec = run_xlat("record", "-w", "gups:footprint=64M", "-n", "20k", "--format", "champsim", "-o", str(trace))
    assert rec.returncode == 0, rec.stderr
    data = trace.read_bytes()
    trace.write_bytes(data[: len(data) // 2 + 17])
    cache = tmp_path / "cache"
    p = _run(trace, tmp_path / "a.json", cache)
    assert p.returncode == 2 and len(p.stderr.splitlines()) == 1 and str(trace) in p.stderr, p.stderr
    assert not (tmp_path / "a.json").exists()
    assert [f.name for f in cache.iterdir()] == [] if cache.exists() else True
