"""Every numeric config key, given random values through the API and the CLI, either runs or
fails with one ConfigError line: never a crash, an abort, an overrun or a wrapped count
(issue 27). Small runs and few examples per key keep this to a few seconds."""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xlat
from xlat import _core
from xlat_testutil import run_xlat

WL = "gups:footprint=16M"
NUMERIC = [row[0] for row in _core.config_keys() if row[2] in ("a non-negative integer", "a number")]
ALL_KEYS = [row[0] for row in _core.config_keys()]
BOUNDARIES = [0, 1, 2**16, 2**20, 2**20 + 1, 2**31, 2**32, 2**32 + 1, 2**50 + 1, 2**63, 2**64 - 1, 2**64]

values = st.one_of(
    st.sampled_from(BOUNDARIES),
    st.integers(0, 2**64 - 1),
    st.integers(0, 4096),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from(["1e30", "-1", "1e-300", "nan", "inf"]),
)
FAST = settings(max_examples=int(os.environ.get("XLAT_HYPOTHESIS_EXAMPLES", "4")), deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))


def test_every_numeric_key_documents_its_limit():
    for key, _default, _kind, doc in _core.config_keys():
        if key in NUMERIC:
            assert "(at most " in doc, key


@pytest.mark.parametrize("key", NUMERIC)
@FAST
@given(value=values)
def test_api_runs_or_raises_config_error(key, value):
    try:
        r = xlat.simulate("skylake", WL, refs=300, host_threads=1, **{key: value})
    except xlat.ConfigError as e:
        msg = str(e)
        # One line naming a key: this one, or its partner in a geometry (entries and ways).
        assert "\n" not in msg and msg.startswith("config key '"), msg
        return
    except xlat.SimulationError as e:
        # A machine too small for the workload shows only when it runs out: one line naming
        # the key to change.
        msg = str(e)
        assert "\n" not in msg and any(k in msg for k in ALL_KEYS), msg
        return
    assert r.stats["refs"] == 300
    assert r.stats["cycles"] >= r.stats["instructions"] // 1024  # no wrapped cycle count


@settings(FAST, max_examples=20)
@given(key=st.sampled_from(NUMERIC), value=values)
def test_cli_runs_or_prints_one_config_error_line(key, value):
    p = run_xlat("run", "-w", WL, "--refs", "300", "-q", "--host-threads", "1", "--set", f"{key}={value}")
    if p.returncode == 0:
        return
    lines = p.stderr.splitlines()
    assert p.returncode == 2 and len(lines) == 1, (p.returncode, p.stderr)
    assert lines[0].startswith("xlat: error: config key '") or any(k in lines[0] for k in ALL_KEYS), lines[0]


def test_huge_tlb_entries_are_refused_not_a_segfault():
    p = run_xlat("run", "-w", WL, "--refs", "300", "--set", "tlb.l1d.entries=9223372036854775808")
    assert p.returncode == 2 and "is more than the 1048576 supported" in p.stderr, p.stderr


def test_a_huge_fault_cost_never_gives_fewer_cycles():
    base = xlat.simulate("skylake", WL, refs=2000, host_threads=1)
    big = xlat.simulate("skylake", WL, refs=2000, host_threads=1, **{"os.fault_cycles": 2**32})
    assert big.stats["cycles"] > base.stats["cycles"]
    with pytest.raises(xlat.ConfigError, match="os.fault_cycles"):
        xlat.simulate("skylake", WL, refs=2000, **{"os.fault_cycles": 2**64 - 1})
