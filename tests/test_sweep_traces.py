"""`[[traces]]` in sweep specs: recorded or traced programs as points, identified by their
content (the trace and its `.maps` sidecar), not by where they lie."""
from __future__ import annotations

import shutil

import pytest

from xlat import _core, sweep
from xlat_testutil import has_core

pytestmark = pytest.mark.skipif(not has_core("record", "simulate"), reason="needs the engine")


def _spec(path, **extra):
    return {"name": "t", "refs": 5000, "configs": [{"preset": "skylake", "label": "skl"}],
            "traces": [{"path": str(path), **extra}]}


def test_a_trace_is_a_point_identified_by_its_content(tmp_path):
    trace = tmp_path / "gups.xtr"
    _core.record("gups:footprint=16M", str(trace), refs=20_000, seed=1)
    spec = sweep.load_spec(_spec(trace, label="g"))
    (p,) = spec.points
    assert (p.workload, p.workload_spec) == ("trace", str(trace.resolve()))
    (task,) = sweep.prepare(spec)
    row = sweep.run_task(task.config, p.workload_spec, p.options(), task.meta)
    assert row["status"] == "ok", row["error"]
    assert row["param.label"] == "g" and row["stat.refs"] == 5000
    # Moved elsewhere, the same trace is the same point; a sidecar or new content is another.
    other = tmp_path / "moved"
    other.mkdir()
    shutil.copy(trace, other / "gups.xtr")
    (moved,) = sweep.prepare(sweep.load_spec(_spec(other / "gups.xtr", label="g")))
    assert moved.point_id == task.point_id
    (other / "gups.xtr.maps").write_text("00400000-00401000 r-xp 00000000 08:02 7 /bin/prog\n")
    (with_maps,) = sweep.prepare(sweep.load_spec(_spec(other / "gups.xtr", label="g")))
    assert with_maps.point_id != task.point_id
    # The default label is the file's name; a config may select traces by the name "trace".
    spec = sweep.load_spec({**_spec(trace), "workloads": ["gups"],
                            "configs": [{"preset": "skylake", "label": "skl", "workloads": ["trace"]}]})
    assert [(p.workload, dict(p.params)["label"]) for p in spec.points] == [("trace", "gups")]


def test_a_trace_sets_keys_on_its_own_points_only(tmp_path):
    """A trace's `set` (how to run it, such as loader.fast_forward) goes after each config's
    own keys on the trace's points, under the config's label; a kernel beside it keeps the
    config as it is."""
    trace = tmp_path / "gups.xtr"
    _core.record("gups:footprint=16M", str(trace), refs=20_000, seed=1)
    spec = sweep.load_spec({**_spec(trace, label="g", set={"tlb": {"l1d": {"entries": 32}}, "os.prefault_as": "write"}),
                            "workloads": ["gups:footprint=16M"],
                            "configs": [{"preset": "skylake", "label": "skl", "set": {"tlb.l1d.entries": 128}}]})
    by = {p.workload: p for p in spec.points}
    assert by["trace"].config.label == by["gups"].config.label == "skl"
    assert by["gups"].config.overrides == (("tlb.l1d.entries", 128),)
    assert by["trace"].config.overrides == (("tlb.l1d.entries", 128), ("tlb.l1d.entries", 32), ("os.prefault_as", "write"))
    (task,) = [t for t in sweep.prepare(spec) if t.point.workload == "trace"]
    assert task.config["tlb.l1d.entries"] in (32, "32")
    row = sweep.run_task(task.config, task.point.workload_spec, task.point.options(), task.meta)
    assert row["status"] == "ok", row["error"]


@pytest.mark.parametrize("entry, needle", [
    ({"path": "nosuch.xtr"}, "trace 'nosuch.xtr' does not exist"),
    ({}, "'path' must be the path of a trace file"),
    ({"path": "t.xtr", "cores": 2}, "unknown key 'cores'"),
    ({"path": "t.xtr", "label": ""}, "'label' must be a non-empty string"),
    ({"path": "t.xtr", "set": "x"}, "'set' must be a table of config keys"),
])
def test_bad_trace_entries_get_one_line(tmp_path, entry, needle):
    (tmp_path / "t.xtr").write_bytes(b"")
    spec = tmp_path / "s.toml"
    lines = [f'{k} = "{v}"' if isinstance(v, str) else f"{k} = {v}" for k, v in entry.items()]
    spec.write_text('name = "t"\n[[configs]]\npreset = "skylake"\n[[traces]]\n' + "\n".join(lines) + "\n")
    with pytest.raises(sweep.SpecError, match=needle):
        sweep.load_spec(spec)
