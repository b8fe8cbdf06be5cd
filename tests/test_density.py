"""calibration/density.toml: every kernel is a point its study's sweep.toml runs at the baseline
named (same machine, same workload, same warm-up), every paper number has a source, and
density.py reads its numbers from statistics a run reports."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest

import xlat
from xlat import _core
from xlat import sweep as _sweep
from xlat_testutil import REPO

SEEDS = Path("/work/shared/seeds")


@pytest.fixture(scope="module")
def density():
    sys.path.insert(0, str(REPO / "calibration"))
    try:
        yield importlib.import_module("density")
    finally:
        sys.path.remove(str(REPO / "calibration"))


@pytest.fixture(scope="module")
def spec(density):
    return density.load(REPO / "calibration" / "density.toml")


def test_every_study_names_its_sweep_and_window(density, spec):
    studies, kernels = spec
    assert {k["study"] for k in kernels} == set(studies)
    for name, s in studies.items():
        assert (REPO / s["sweep"]).is_file(), name
        assert s["baseline"] and s["config"], name
        density.count(s["warmup"]), density.count(s["refs"])


def test_every_kernel_is_a_point_of_its_studys_baseline(spec):
    studies, kernels = spec
    # (Mixes and traces are not kernels of density.toml.)
    points = {name: [p for p in _sweep.load_spec(REPO / s["sweep"]).points if p.workload not in ("mix", "trace")] for name, s in studies.items()}
    for k in kernels:
        s = studies[k["study"]]
        label = k.get("baseline", s["baseline"])
        # The spec parses, and resolves as the sweep's point does (defaults filled in).
        want = _core.workload_params(k["workload"])
        runs = [p for p in points[k["study"]] if p.config.label == label and _core.workload_params(p.workload_spec) == want]
        assert runs, f"{k['study']}: no {label} point runs {k['workload']}"
        p = runs[0]
        base = s["config"] if not s["config"].endswith(".toml") else str((REPO / s["config"]).resolve())
        assert p.config.base == base, k["workload"]
        assert dict(p.config.overrides) == {**s.get("set", {}), **k.get("set", {})}, k["workload"]
        assert p.warmup == _sweep.parse_count(k.get("warmup", s["warmup"])), k["workload"]
        assert p.skip == _sweep.parse_count(k.get("skip", 0)), k["workload"]


def test_every_paper_number_has_a_source(density, spec):
    _, kernels = spec
    assert any(k.get("paper") for k in kernels)
    for k in kernels:
        for p in k.get("paper", []):
            assert p["metric"] in density.LABELS, p
            assert isinstance(p["value"], (int, float)) and p["value"] > 0, p
            assert p["kind"] in ("stated", "derived", "approximate"), p
            m = re.match(r"(\d{3}_\w+\.spec\.md) §\d", p["source"])
            assert m, f"{k['workload']}: source {p['source']!r} should name a spec and its section"
            if SEEDS.is_dir():
                assert (SEEDS / m[1]).is_file(), p["source"]


def test_a_row_comes_from_a_runs_statistics(density, spec):
    _, kernels = spec
    r = xlat.simulate("zen3", workload="gups:footprint=64M", refs=2000, prefault=True)
    m = density.metrics(r.stats)
    assert m["instructions_per_ref"] == r.stats["instructions"] / r.stats["refs"]
    assert m["walks_pki"] == pytest.approx(r.stats["walks"] / r.stats["instructions"] * 1000)
    k = next(k for k in kernels if any(p["metric"] == "l2_tlb_mpki" for p in k.get("paper", [])))
    line = density.row(k, m, (0, 0, 2000))
    assert line.count("|") == 14 and "—" not in line.split("|")[8]
    assert density.table([line]).count("\n") == 2
