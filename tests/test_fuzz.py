"""Property-based fuzz of what a user types and feeds (issue 67): workload strings and trace
bytes. Whatever comes in, xlat either runs or raises one XlatError of one line: never a
panic, an abort, a hang or another exception, and it writes nothing.

A quick profile runs in `make test`; `make fuzz` raises the examples per property
(XLAT_HYPOTHESIS_EXAMPLES) for a long run. (Configs and --set values: test_config_limits.py.)
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlat
from xlat import _core

EXAMPLES = int(os.environ.get("XLAT_HYPOTHESIS_EXAMPLES", "25"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 100, suppress_health_check=list(HealthCheck))

# Real specs to mutate, parameter names and values that sit at or past their limits.
KERNELS = ["gups", "random", "bfs", "hashjoin", "xsbench", "kvstore", "canneal", "stream", "pagerank", "churn", "liblinear", "btree"]
PARAMS = ["footprint", "updates", "reads", "scale", "threads", "seed", "keys", "ops", "elements", "build", "probe", "degree", "order", "stride"]
VALUES = ["0", "1", "-1", "16M", "1G", "1T", "1e300", "nan", "inf", "", "=", ",", ":", "18446744073709551616", "0x10", "1.5", "abc", "\x00", "é", "4K"]
# Small enough to build in milliseconds when they do run.
SMALL = {"footprint": "16M", "scale": "10", "keys": "64K", "elements": "4096", "build": "64K", "probe": "64K"}


def one_line(e: Exception) -> None:
    msg = str(e)
    assert msg and "\n" not in msg, repr(msg)


@st.composite
def workload_specs(draw) -> str:
    kernel = draw(st.one_of(st.sampled_from(KERNELS), st.text(max_size=12)))
    pairs = draw(st.lists(st.tuples(st.one_of(st.sampled_from(PARAMS), st.text(max_size=6)), st.one_of(st.sampled_from(VALUES), st.text(max_size=6))), max_size=4))
    params = ",".join(f"{k}={v}" for k, v in pairs)
    spec = f"{kernel}:{params}" if params else kernel
    # (Kept small where it would run: the properties are about the answer, not the size.)
    for k, v in SMALL.items():
        if f"{k}=" not in spec and kernel in ("gups", "random", "kvstore", "canneal", "hashjoin", "bfs", "pagerank"):
            spec += ("," if ":" in spec else ":") + f"{k}={v}"
            break
    return spec


@FUZZ
@given(spec=workload_specs())
def test_any_workload_string_runs_or_is_one_error(spec, tmp_path_factory):
    before = set(os.listdir("."))
    try:
        r = xlat.simulate("skylake", spec, refs=200, host_threads=1)
    except xlat.XlatError as e:
        one_line(e)
    else:
        assert r.stats["refs"] <= 200
    assert set(os.listdir(".")) == before, "a run wrote into the working directory"


def _trace_bytes(tmp_path) -> bytes:
    path = tmp_path / "seed.xtr"
    _core.record("gups:footprint=16M", str(path), 3000, 1)
    return path.read_bytes()


@FUZZ
@given(data=st.data())
def test_any_trace_bytes_run_or_are_one_error(data, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trace")
    good = _trace_bytes(tmp)
    kind = data.draw(st.sampled_from(["flip", "cut", "random", "splice"]))
    if kind == "flip":
        buf = bytearray(good)
        for _ in range(data.draw(st.integers(1, 8))):
            i = data.draw(st.integers(0, len(buf) - 1))
            buf[i] ^= data.draw(st.integers(1, 255))
        blob = bytes(buf)
    elif kind == "cut":
        blob = good[: data.draw(st.integers(0, len(good) - 1))]
    elif kind == "random":
        blob = data.draw(st.binary(max_size=4096))
    else:
        i = data.draw(st.integers(0, len(good)))
        blob = good[:i] + data.draw(st.binary(max_size=64)) + good[i:]
    path = tmp / "fuzzed.xtr"
    path.write_bytes(blob)
    files = set(os.listdir(tmp))
    try:
        r = xlat.simulate("skylake", trace=str(path), refs=5000, host_threads=1)
    except xlat.XlatError as e:
        one_line(e)
    else:
        # A flipped address bit still decodes as a trace; whatever ran was counted.
        assert r.stats["refs"] <= 5000
    assert set(os.listdir(tmp)) == files, "a run wrote beside its trace"
    assert path.read_bytes() == blob, "the trace was changed"
