"""Property-based fuzz of what a user types and feeds (issue 67): workload strings, trace
bytes, config files and `--set` text for every key, through the API and the command line.
Whatever comes in, xlat either runs or raises one XlatError of one line (at the command line:
one `xlat: error:` line and exit status 2): never a panic, an abort, a hang or another
exception, and it writes nothing but the output the command names.

A quick profile runs in `make test`; `make fuzz` raises the examples per property
(XLAT_HYPOTHESIS_EXAMPLES) for a long run. (Numeric keys at their limits: test_config_limits.py.)
"""
from __future__ import annotations

import inspect
import os
from pathlib import Path

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import xlat
from xlat import _core
from xlat_testutil import REPO, run_xlat

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


# --- config files ----------------------------------------------------------------------------

PRESET_TEXT = (REPO / "configs" / "skylake.toml").read_text()
KEYS = [row[0] for row in _core.config_keys()]
# TOML values of every kind, and text that is not TOML.
TOML_VALUES = ["0", "-1", "1e300", "nan", "inf", "true", '"lru"', '"never"', '""', "[1, 2]", "{ a = 1 }", "18446744073709551616", "'x'", '"\\u0000"', "[[[[[[[[1]]]]]]]]", "=", "\"unterminated"]


@st.composite
def config_texts(draw) -> str:
    """A preset's text, mutated: lines dropped or duplicated, values replaced, keys and sections
    renamed, random text or a deep nesting spliced in."""
    lines = PRESET_TEXT.splitlines()
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["drop", "dup", "value", "key", "section", "text", "nest", "base"]))
        i = draw(st.integers(0, len(lines) - 1))
        if kind == "drop":
            del lines[i]
        elif kind == "dup":
            lines.insert(i, lines[i])
        elif kind == "value" and "=" in lines[i]:
            lines[i] = lines[i].split("=", 1)[0] + "= " + draw(st.one_of(st.sampled_from(TOML_VALUES), st.text(max_size=8)))
        elif kind == "key":
            lines.insert(i, f"{draw(st.one_of(st.sampled_from(KEYS), st.text(max_size=10)))} = {draw(st.sampled_from(TOML_VALUES))}")
        elif kind == "section":
            lines.insert(i, f"[{draw(st.one_of(st.sampled_from(['core', 'tlb.l2', 'dram', 'cache.llc', 'x']), st.text(max_size=8)))}]")
        elif kind == "text":
            lines.insert(i, draw(st.text(max_size=40)))
        elif kind == "nest":
            depth = draw(st.integers(1, 2000))
            lines.insert(i, "deep = " + "[" * depth + "]" * depth)
        elif kind == "base":
            lines.insert(0, "base = " + draw(st.sampled_from(['"skylake"', '"nosuch"', '"/dev/zero"', '"."', '"fuzz.toml"', "3"])))
        if not lines:
            lines = [""]
    return "\n".join(lines) + "\n"


@FUZZ
@given(text=config_texts())
def test_any_config_file_runs_or_is_one_error(text, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("config")
    path = tmp / "fuzz.toml"
    path.write_bytes(text.encode())
    files = set(os.listdir(tmp))
    try:
        r = xlat.simulate(str(path), "gups:footprint=16M", refs=200, host_threads=1)
    except xlat.XlatError as e:
        one_line(e)
    else:
        assert r.stats["refs"] == 200
    assert set(os.listdir(tmp)) == files, "a run wrote beside its config"
    assert path.read_bytes() == text.encode(), "the config was changed"


# --- --set text for every key ------------------------------------------------------------------

SIMULATE_ARGS = set(inspect.signature(xlat.simulate).parameters)
SET_VALUES = ["0", "1", "-1", "true", "false", "yes", "lru", "ptp", "none", "never", "always", "radix4", "fpt", "l2", "1e300", "nan", "", " ", "=", "1,2", "\x00", "é"]


@FUZZ
@given(key=st.one_of(st.sampled_from(KEYS), st.text(max_size=12)), value=st.one_of(st.sampled_from(SET_VALUES), st.text(max_size=10)))
def test_any_set_value_of_any_key_runs_or_is_one_error(key, value):
    # (A name of simulate()'s own, such as refs, is an argument, not a config key.)
    assume(key not in SIMULATE_ARGS)
    try:
        r = xlat.simulate("skylake", "gups:footprint=16M", refs=200, host_threads=1, **{key: value})
    except xlat.XlatError as e:
        one_line(e)
    else:
        assert r.stats["refs"] == 200


# --- the command line: one line, exit 2, nothing touched but the named output ---------------------

# Each command's output options; the fuzz points them at new files, at the run's own inputs and
# at other files already there, and checks which files changed.
CLI_EXAMPLES = max(4, EXAMPLES // 5)


@settings(FUZZ, max_examples=CLI_EXAMPLES)
@given(
    spec=workload_specs(),
    sets=st.lists(st.tuples(st.one_of(st.sampled_from(KEYS), st.text(max_size=8)), st.one_of(st.sampled_from(SET_VALUES), st.text(max_size=8))), max_size=2),
    out=st.sampled_from(["new.json", "config.toml", "other.txt", "sub/new.json", "", "."]),
    refs=st.sampled_from(["300", "0", "-5", "1e3", "abc"]),
)
def test_cli_run_is_one_line_and_touches_only_its_output(spec, sets, out, refs, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cli")
    (tmp / "config.toml").write_text('base = "skylake"\n')
    (tmp / "other.txt").write_text("keep me\n")
    before = {p.name: p.read_bytes() for p in tmp.iterdir()}
    args = ["run", "-c", "config.toml", "-w", spec, "--refs", refs, "-q", "--host-threads", "1", "--json", out]
    for k, v in sets:
        args += ["--set", f"{k}={v}"]
    # (A command line cannot hold a NUL: the OS refuses it before xlat sees it.)
    assume(all("\x00" not in a for a in args))
    p = run_xlat(*args, cwd=tmp, timeout=60)
    if p.returncode == 0:
        # The named output alone is written (an existing file the user names is theirs to
        # replace); the run's own config never is.
        assert out != "config.toml", "--json overwrote the run's config"
        after = {q.name: q.read_bytes() for q in tmp.iterdir()}
        assert {n: b for n, b in after.items() if n in before and n != out} == {n: b for n, b in before.items() if n != out}
        assert set(after) - set(before) <= {Path(out).parts[0]}
    else:
        lines = p.stderr.splitlines()
        assert p.returncode == 2 and len(lines) == 1 and lines[0].startswith("xlat: error: "), (p.returncode, p.stderr)
        assert {q.name: q.read_bytes() for q in tmp.iterdir()} == before, "a failed run left a file or changed one"
