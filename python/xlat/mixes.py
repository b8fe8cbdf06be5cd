"""Mixes of programs and their weighted speedup.

A mix runs several programs side by side, each in its own address space on cores of its own
(``xlat.simulate(mix=...)``, ``xlat run --mix``). How well the machine runs them together is
judged against each program alone on the same machine:

    weighted speedup = sum over programs of IPC(program, in the mix) / IPC(program, alone)

(Snavely and Tullsen's metric, as the flattening paper's 4-core mixes use it): N for N programs
that do not disturb each other, less as they compete for the LLC, DRAM and memory.

``run_mix`` runs the mix, then each program alone: the same machine and seed, the program on
the same cores (the others idle), for the references it ran in the mix, so both IPCs are over
the same work. Alone runs are cached by everything that determines them, so mixes that share a
program run it alone once.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import _core
from . import config as _config


def weighted_speedup(shared_ipc: Sequence[float], alone_ipc: Sequence[float]) -> float:
    """Sum of each program's IPC in the mix over its IPC alone; NaN if any is undefined."""
    if len(shared_ipc) != len(alone_ipc) or not shared_ipc:
        raise ValueError(f"weighted_speedup: {len(shared_ipc)} shared IPCs but {len(alone_ipc)} alone")
    total = 0.0
    for s, a in zip(shared_ipc, alone_ipc):
        if not (isinstance(s, (int, float)) and isinstance(a, (int, float))) or not a > 0 or math.isnan(s):
            return math.nan
        total += s / a
    return total


def programs_of(result) -> list[dict]:
    """The programs of a mix's result: ``[{"key": "prog0", "spec", "cores", "refs", "ipc"}]``,
    in the order of the mix (``spec`` is the resolved one, seed included)."""
    wl = result.workload or {}
    if wl.get("name") != "mix":
        raise ValueError("not the result of a mix (run one with xlat.simulate(mix=...))")
    out = []
    for key, text in (wl.get("params") or {}).items():
        spec, _, cores = text.rpartition("@")
        out.append({"key": key, "spec": spec, "cores": cores,
                    "refs": result.stats.get(f"{key}.refs"), "ipc": result.stats.get(f"{key}.ipc")})
    return out


@dataclass
class MixResult:
    """A mix, each of its programs alone, and the weighted speedup."""

    shared: Any                 # the mix's xlat.Result
    alone: list                 # each program's xlat.Result alone, in the mix's order
    programs: list[dict]        # per program: key, spec, cores, refs, ipc_shared, ipc_alone, speedup
    weighted_speedup: float

    def table(self) -> list[tuple]:
        """Rows (program, cores, IPC in the mix, IPC alone, ratio) for printing."""
        return [(p["key"] + " " + p["spec"].split(":")[0], p["cores"], p["ipc_shared"], p["ipc_alone"], p["speedup"])
                for p in self.programs]


_ALONE: dict[tuple, Any] = {}


def run_mix(config: Any = "skylake", mix: str | Sequence[str] = "", refs: int | str | None = None, seed: int = 1,
            warmup: int | str = 0, prefault: bool = False, cache: Mapping | None = None, **overrides: Any) -> MixResult:
    """Run ``mix`` on ``config``, then each program alone, and return the weighted speedup.

    The arguments are ``xlat.simulate``'s. ``refs`` counts the mix's references (all cores);
    each alone run replays the references its program ran in the mix, and a share of the
    warm-up in proportion. ``cache`` (a dict, default: one kept for this process) holds alone
    runs by configuration, program, cores, references, warm-up, prefault and seed.
    """
    from .api import _count, simulate

    shared = simulate(config, refs=refs, seed=seed, warmup=warmup, prefault=prefault, mix=mix, **overrides)
    progs = programs_of(shared)
    resolved = _config.resolve(config, [(_config.override_key(k), v) for k, v in overrides.items()])
    chash = _config.config_hash(resolved)
    total = sum(p["refs"] or 0 for p in progs)
    n_warm = _count("warmup", warmup)
    store = _ALONE if cache is None else cache
    alone, rows = [], []
    if "prog0.instructions" not in shared.stats:
        raise _core.SimulationError("weighted speedup: programs that share cores (time-sliced as VMs) have no statistics of their own")
    for p in progs:
        if not p["refs"]:
            raise _core.SimulationError(f"{p['key']} ({p['spec']}) ran no references in the mix: nothing to compare")
        warm = round(n_warm * p["refs"] / total) if total else 0
        key = (chash, p["spec"], p["cores"], p["refs"], warm, prefault, seed)
        if key not in store:
            store[key] = simulate(config, refs=p["refs"], seed=seed, warmup=warm, prefault=prefault,
                                  mix=f"{p['spec']}@{p['cores']}", **overrides)
        a = store[key]
        alone.append(a)
        ipc_alone = a.stats.get("prog0.ipc", a.stats.get("ipc"))
        rows.append({**p, "ipc_shared": p["ipc"], "ipc_alone": ipc_alone,
                     "speedup": weighted_speedup([p["ipc"]], [ipc_alone])})
    ws = weighted_speedup([r["ipc_shared"] for r in rows], [r["ipc_alone"] for r in rows])
    return MixResult(shared=shared, alone=alone, programs=rows, weighted_speedup=ws)
