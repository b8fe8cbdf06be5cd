"""Synthetic ChampSim traces for calibration: access patterns no kernel has, written straight as
ChampSim ``input_instr`` records (64 bytes each, xz-compressed), so that both simulators read
the same instructions.

``readstream``: independent 8-byte loads at a 64-byte stride (a new line each) over
``footprint`` bytes, one load every ``every`` instructions; the other instructions touch no
memory and read no register a load wrote. With 4 KB pages the 64 loads of a page wait for its
walk, then miss to DRAM together: the pattern that showed how xlat's DRAM channel and MSHRs
met a burst of misses (docs/timing.md, "Calibration against ChampSim").
"""

from __future__ import annotations

import lzma
import os
import struct
import tempfile
from pathlib import Path

# ip, is_branch, branch_taken, destination_registers[2], source_registers[4],
# destination_memory[2], source_memory[4].
RECORD = struct.Struct("<QBB2B4B2Q4Q")
BASE = 0x10000000
CODE = 0x400000


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1:].upper() in units else int(text)


def parse(spec: str) -> tuple[str, dict[str, int]]:
    """``name:key=value,...`` as (name, {key: int}), sizes with K, M or G."""
    name, _, rest = spec.partition(":")
    params = {}
    for kv in filter(None, rest.split(",")):
        key, eq, value = kv.partition("=")
        if not eq:
            raise ValueError(f"{spec!r}: expected key=value, got {kv!r}")
        params[key] = _size(value)
    return name, params


def readstream(footprint: int = 32 << 20, every: int = 3) -> bytes:
    if every < 1 or footprint < 64:
        raise ValueError("readstream: every >= 1 and footprint >= 64 bytes")
    out = bytearray()
    ip = CODE
    for i in range(footprint // 64):
        # The load writes register 1 from register 2, which no load writes: independent.
        out += RECORD.pack(ip, 0, 0, 1, 0, 2, 0, 0, 0, 0, 0, BASE + 64 * i, 0, 0, 0)
        ip += 4
        for _ in range(every - 1):
            out += RECORD.pack(ip, 0, 0, 3, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            ip += 4
        # (A loop of 4 KB of code: instruction fetches hit.)
        if ip >= CODE + 4096:
            ip = CODE
    return bytes(out)


GENERATORS = {"readstream": readstream}


def write(spec: str, path: Path) -> None:
    """Write the trace ``spec`` names to ``path`` (complete, or not at all)."""
    name, params = parse(spec)
    if name not in GENERATORS:
        raise ValueError(f"unknown synthetic trace {name!r} (known: {', '.join(GENERATORS)})")
    data = GENERATORS[name](**params)
    # (A temporary file of this writer's own: two calibrations recording the same trace at
    # once each rename a whole file.)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as raw, lzma.open(raw, "wb") as f:
            f.write(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
