"""The combine study's real program: `xz -6` compressing 4 MB of generated text, traced with
`xlat trace` past its start-up by the coalescing study's recipe (studies/coalescing/prepare.py:
the same command, input and window), into `results/combine/traces/`, and reused. The full study
measures 2 M of its references after 2 M of warm-up, natively; `--quick` runs no trace.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

COALESCING = Path(__file__).resolve().parent.parent / "coalescing" / "prepare.py"
PROGRAM = "xz"


def _coalescing():
    spec = importlib.util.spec_from_file_location("xlat_combine_coalescing_prepare", COALESCING)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def traces(out_dir: Path, quick: bool, make: bool = True) -> list[dict]:
    if quick:
        return []
    tables = _coalescing().traces(out_dir, quick, only=[PROGRAM], make=make)
    return [{**t, "refs": "2M", "warmup": "2M"} for t in tables]
