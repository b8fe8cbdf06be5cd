"""Record ChampSim's steady simulation rate on a GUPS ChampSim trace, for `make bench` to compare.

    .venv/bin/python benches/champsim_rate.py --champsim /path/to/champsim_skylake_base

Runs a locally built ChampSim binary (calibration/README.md says how to build one from its
public source; this script only runs it) on the calibration GUPS trace
(``results/calibration/gups.champsim.xz``, recorded by ``calibration/run.py``), over the
instructions after its warm-up, and writes ``benches/champsim.json``: the references it
simulated a second after the warm-up (its own clock: ``Simulation time`` at warm-up's end and at
the end), with the command, the date and the host's CPU. `make bench` prints xlat's trace rate
against it. ChampSim runs one trace on one core and is deterministic, so one run is the rate;
the host is shared, so record it in a quiet moment, alone.
"""

from __future__ import annotations

import argparse
import datetime
import json
import lzma
import platform
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# ChampSim's input record (trace_instr_format.h): ip, is_branch, branch_taken, 2 destination and
# 4 source registers, 2 destination and 4 source memory addresses.
RECORD = 64
MEMORY = slice(16, 64)

TIME = re.compile(r"(Warmup|Simulation) complete CPU 0 instructions: (\d+) .*Simulation time: (\d+) hr (\d+) min (\d+) sec")


def memory_refs_per_instruction(trace: Path, instructions: int) -> float:
    """Memory operands per instruction over the trace's first ``instructions`` records."""
    refs = n = 0
    with lzma.open(trace, "rb") as f:
        while n < instructions:
            rec = f.read(RECORD)
            if len(rec) < RECORD:
                break
            mem = rec[MEMORY]
            refs += sum(1 for i in range(0, len(mem), 8) if int.from_bytes(mem[i : i + 8], "little"))
            n += 1
    return refs / n if n else 0.0


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--champsim", type=Path, required=True, metavar="BINARY", help="a ChampSim binary (e.g. champsim_skylake_base)")
    ap.add_argument("--trace", type=Path, default=ROOT / "results" / "calibration" / "gups.champsim.xz", help="a ChampSim trace of GUPS")
    ap.add_argument("--warmup", type=int, default=200_000, help="warm-up instructions (default 200000)")
    ap.add_argument("--instructions", type=int, default=1_000_000, help="simulated instructions after it (default 1000000)")
    ap.add_argument("--out", type=Path, default=HERE / "champsim.json", help="where to write the record")
    args = ap.parse_args()
    if not args.champsim.is_file():
        ap.error(f"--champsim {args.champsim}: no such file")
    if not args.trace.is_file():
        ap.error(f"--trace {args.trace}: no such file (calibration/run.py records it)")
    cmd = [str(args.champsim), "--warmup-instructions", str(args.warmup), "--simulation-instructions", str(args.instructions), str(args.trace)]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if out.returncode != 0:
        print(f"champsim_rate: ChampSim exited {out.returncode}: {(out.stderr or out.stdout).strip().splitlines()[-1:]}", file=sys.stderr)
        return 1
    marks = {m.group(1): (int(m.group(2)), 3600 * int(m.group(3)) + 60 * int(m.group(4)) + int(m.group(5))) for m in TIME.finditer(out.stdout)}
    if set(marks) != {"Warmup", "Simulation"}:
        print("champsim_rate: ChampSim's output has no warm-up and simulation times", file=sys.stderr)
        return 1
    seconds = marks["Simulation"][1] - marks["Warmup"][1]
    instructions = marks["Simulation"][0]
    per = memory_refs_per_instruction(args.trace, args.warmup + instructions)
    doc = {
        "refs_per_s": instructions * per / seconds,
        "instructions_per_s": instructions / seconds,
        "instructions": instructions,
        "seconds": seconds,
        "refs_per_instruction": per,
        "trace": str(args.trace.relative_to(ROOT)) if args.trace.is_relative_to(ROOT) else str(args.trace),
        "binary": args.champsim.name,
        "date": datetime.date.today().isoformat(),
        "cpu": cpu_name(),
        "command": " ".join([Path(cmd[0]).name, *cmd[1:-1], args.trace.name]),
    }
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(args.out)
    print(f"ChampSim: {instructions} instructions in {seconds} s after the warm-up: {doc['instructions_per_s']:.0f} instructions/s, "
          f"{doc['refs_per_s']:.0f} refs/s ({per:.3f} refs an instruction); written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
