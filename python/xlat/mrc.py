"""One-pass miss-ratio curves: a structure's misses at every associativity from one run.

``xlat.simulate(..., curves=["tlb.l2", "pwc"])`` profiles the named translation structures
with Mattson's stack algorithm, per set (``crates/xlat-core/src/mrc.rs``): ``Result.curves``
then holds one :class:`Curve` each, whose ``misses(w)`` is what a run with ``w`` ways (and
the same sets) would count. ``xlat mrc`` prints and plots them.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Curve:
    """One structure's curve, summed over cores.

    Attributes:
        structure: ``tlb.l1d``, ``tlb.l2``, ``pwc.l2``, ``cache.l1d`` ... (its statistics'
            prefix).
        arrays: ``(sets, ways)`` of each of its arrays as configured; the curve varies the
            ways of each, keeping the sets (a TLB level's 1 GB array too).
        exact: whether every point equals a separate run's count (not for an upper
            page-walk-cache level, filled only when the levels below missed; a cache that
            write-backs, prefetches or victims reached; a policy other than LRU).
        depths: ``depths[d]`` lookups whose entry was at stack depth ``d`` of its set (the
            last: deeper than the curve goes, or absent).
    """

    structure: str
    arrays: tuple[tuple[int, int], ...]
    exact: bool
    depths: tuple[int, ...]

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Curve:
        return cls(str(d["structure"]), tuple((int(s), int(w)) for s, w in d["arrays"]), bool(d["exact"]), tuple(int(x) for x in d["depths"]))

    def to_dict(self) -> dict[str, Any]:
        return {"structure": self.structure, "arrays": [list(a) for a in self.arrays], "exact": self.exact, "depths": list(self.depths)}

    @property
    def max_ways(self) -> int:
        return len(self.depths) - 1

    @property
    def ways(self) -> int:
        """The configured ways (of the first array)."""
        return self.arrays[0][1]

    @property
    def lookups(self) -> int:
        return sum(self.depths)

    def misses(self, ways: int) -> int:
        """Misses with ``ways`` ways in each array (1 .. ``max_ways``)."""
        if not 1 <= ways <= self.max_ways:
            raise ValueError(f"{self.structure}: the curve goes from 1 to {self.max_ways} ways, not {ways}")
        return sum(self.depths[ways:])

    def entries(self, ways: int) -> int:
        """Entries of the structure with ``ways`` ways in each array."""
        return sum(sets * ways for sets, _ in self.arrays)

    def points(self) -> list[tuple[int, int, int]]:
        """``(ways, entries, misses)`` for every associativity of the curve."""
        return [(w, self.entries(w), self.misses(w)) for w in range(1, self.max_ways + 1)]


def plot(curves: Sequence[Curve], path: str, instructions: float | None = None, title: str = "") -> None:
    """One panel per structure: misses (per kilo-instruction when ``instructions`` is given)
    against entries, the configured size marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ._io import atomic_path

    n = len(curves)
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.3 * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    for ax, c in zip(axes.flat, curves):
        pts = c.points()
        scale = 1000.0 / instructions if instructions else 1.0
        ax.plot([e for _, e, _ in pts], [m * scale for _, _, m in pts], marker=".", ms=3)
        ax.axvline(c.entries(c.ways), color="grey", ls=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("entries (" + ", ".join(f"{s} set{'s' if s != 1 else ''}" for s, _ in c.arrays) + ")")
        ax.set_ylabel("MPKI" if instructions else "misses")
        ax.set_title(c.structure + ("" if c.exact else " (approximate)"), fontsize=10)
        ax.set_ylim(bottom=0)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.rsplit(".", 1)[-1] if "." in path else "png", dpi=110)
    plt.close(fig)
