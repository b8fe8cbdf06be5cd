"""The coalescing study's real programs: each traced here with `xlat trace` (valgrind lackey,
instruction fetches included, the program's mappings and its executable's segments in the
`.maps` sidecar) on an input generated here, deterministically. Traces are kept in
`results/coalescing/traces/` and reused; a program this machine lacks (or valgrind) is left
out, and the report says so.

The paper's programs (T3) and what stands in for them:
- Clang compiling SQLite: GCC's `cc1` compiling a generated 4,000-function C file (-O2);
- Node.js: `node` running a generated JavaScript program (objects, maps, JSON, closures),
  whose JIT code lives in anonymous memory;
- sqlite, a Python interpreter and xz, which the issue adds: `sqlite3` building, indexing and
  querying a 200,000-row table, `python3` running a generated script, `xz -6` compressing
  4 MB of generated text.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

#: References left out at the start of each program (its dynamic loading and start-up: traced
#: by valgrind, not written), then references traced: warm-up plus measured references.
SKIP = {False: 40_000_000, True: 2_000_000}
REFS = {False: 30_000_000, True: 3_000_000}
WARMUP = {False: "10M", True: "1M"}
MEASURED = {False: "20M", True: "2M"}


def _c_source() -> str:
    """A C file of many small functions with loops, switches and calls (deterministic)."""
    out = ["#include <stddef.h>", "static unsigned long acc;"]
    for i in range(4000):
        k = (i * 2654435761) % 97
        out.append(f"""
unsigned long f{i}(unsigned long x, const int *v, size_t n) {{
    unsigned long s = x ^ {k}u;
    for (size_t j = 0; j < n; j++) {{
        switch ((v[j] + {i}) & 7) {{
        case 0: s += v[j] * {k + 1}u; break;
        case 1: s ^= s << {1 + i % 13}; break;
        case 2: s -= (unsigned long)v[j] >> {i % 5}; break;
        case 3: if (s & {1 << (i % 16)}u) s = s * 31u + j; break;
        default: s += j * {i % 29 + 3}u;
        }}
    }}
    acc += s;
    return {f"f{i - 1}(s, v, n / 2)" if i % 3 and i else "s"};
}}""")
    return "\n".join(out) + "\n"


def _js_source() -> str:
    return """
const rows = [];
let seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
for (let i = 0; i < 200000; i++) rows.push({ id: i, key: 'k' + (rnd() % 50000), v: rnd() % 1000 });
const groups = new Map();
for (const r of rows) {
  const g = groups.get(r.key) || { n: 0, sum: 0, items: [] };
  g.n += 1; g.sum += r.v; g.items.push(r.id);
  groups.set(r.key, g);
}
const text = JSON.stringify([...groups.entries()].slice(0, 20000));
const back = JSON.parse(text);
const words = text.split(/[^a-z0-9]+/).filter(w => w.length > 2);
const counts = {};
for (const w of words) counts[w] = (counts[w] || 0) + 1;
const top = Object.entries(counts).sort((a, b) => b[1] - a[1]).slice(0, 10);
class Shape { area() { return 0; } }
class Sq extends Shape { constructor(s) { super(); this.s = s; } area() { return this.s * this.s; } }
class Ci extends Shape { constructor(r) { super(); this.r = r; } area() { return 3.14159 * this.r * this.r; } }
let total = 0;
for (let i = 0; i < 2000000; i++) total += (i & 1 ? new Sq(i % 7) : new Ci(i % 5)).area();
console.log(back.length, top.length, total > 0);
"""


def _py_source() -> str:
    return """
import json, re, collections
seed = 12345
def rnd():
    global seed
    seed = (seed * 1103515245 + 12345) % 2147483648
    return seed
rows = [{"id": i, "key": "k%d" % (rnd() % 50000), "v": rnd() % 1000} for i in range(200000)]
groups = collections.defaultdict(list)
for r in rows:
    groups[r["key"]].append(r["v"])
text = json.dumps({k: v for k, v in list(groups.items())[:20000]})
back = json.loads(text)
words = collections.Counter(w for w in re.split(r"[^a-z0-9]+", text) if len(w) > 2)
s = sorted(rows, key=lambda r: (r["v"], r["key"]))
print(len(back), words.most_common(3)[0][1] > 0, s[0]["v"])
"""


def _sql_script() -> str:
    return """
CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200000)
INSERT INTO t(k, v) SELECT 'k' || (i * 7919 % 50000), i * 104729 % 1000 FROM c;
CREATE INDEX tk ON t(k);
SELECT k, count(*), sum(v) FROM t GROUP BY k ORDER BY 3 DESC LIMIT 5;
SELECT count(*) FROM t a JOIN t b ON a.k = b.k WHERE a.v < 10 AND b.v < 10;
"""


def _text(n: int) -> str:
    words = ["page", "table", "walk", "entry", "coalesce", "frame", "reserve", "promote", "linker", "segment"]
    seed, out, size = 12345, [], 0
    while size < n:
        seed = (seed * 1103515245 + 12345) % 2147483648
        w = words[seed % len(words)] + str(seed % 1000)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def _programs(inputs: Path) -> dict[str, list[str]]:
    """Each program's command line (those this machine has), writing its input first."""
    progs: dict[str, list[str]] = {}
    cc = shutil.which("gcc")
    if cc:
        cc1 = subprocess.run([cc, "-print-prog-name=cc1"], check=False, capture_output=True, text=True).stdout.strip()
        if cc1 and os.path.isfile(cc1):
            (inputs / "prog.c").write_text(_c_source())
            progs["cc1"] = [cc1, "-quiet", "-O2", str(inputs / "prog.c"), "-o", os.devnull]
    if shutil.which("node"):
        (inputs / "prog.js").write_text(_js_source())
        progs["node"] = [shutil.which("node"), str(inputs / "prog.js")]
    if shutil.which("sqlite3"):
        (inputs / "prog.sql").write_text(_sql_script())
        progs["sqlite"] = [shutil.which("sqlite3"), ":memory:", f".read {inputs / 'prog.sql'}"]
    py = shutil.which("python3")
    if py:
        # (The interpreter itself, not a launcher script in front of it.)
        real = subprocess.run([py, "-c", "import sys; print(sys.executable)"], check=False, capture_output=True, text=True).stdout.strip()
        (inputs / "prog.py").write_text(_py_source())
        progs["python"] = [os.path.realpath(real or py), "-S", str(inputs / "prog.py")]
    if shutil.which("xz"):
        (inputs / "text.txt").write_text(_text(4 << 20))
        progs["xz"] = [shutil.which("xz"), "-6", "-c", str(inputs / "text.txt")]
    return progs


def traces(out_dir: Path, quick: bool, only: list[str] | None = None, refs: int | None = None) -> list[dict]:
    """Trace the programs (those not traced yet; ``only`` these, if given) into
    ``out_dir/traces`` and return their ``[[traces]]`` tables: the whole trace, its first part
    as warm-up. ``refs`` traces that many references after no start-up (for tests)."""
    if shutil.which("valgrind") is None:
        print("xlat: coalescing: valgrind is not installed, so the study runs without its real programs", file=sys.stderr)
        return []
    tdir = Path(out_dir) / "traces"
    inputs = tdir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    suffix = ".quick" if quick else ""
    if refs is not None:
        suffix = f".{refs}"
    out = []
    for name, cmd in _programs(inputs).items():
        if only is not None and name not in only:
            continue
        trace = tdir / f"{name}{suffix}.xtr"
        if not (trace.is_file() and Path(f"{trace}.maps").is_file()):
            skip, n = (0, refs) if refs is not None else (SKIP[quick], REFS[quick])
            run = [sys.executable, "-c", "from xlat.cli import main; main()", "trace", "-o", str(trace),
                   "--skip", str(skip), "--refs", str(n), "--", *cmd]
            # setarch -R: no address randomization, so that a program traced again lies where it did.
            if shutil.which("setarch"):
                run = ["setarch", "-R", *run]
            p = subprocess.run(run, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=inputs)
            if p.returncode != 0 or not trace.is_file():
                last = (p.stderr.strip().splitlines() or ["no output"])[-1]
                print(f"xlat: coalescing: tracing {name} failed ({last}); the study runs without it", file=sys.stderr)
                continue
        if refs is not None:
            out.append({"path": str(trace), "label": name, "refs": refs // 2, "warmup": refs - refs // 2, "prefault": False})
        else:
            out.append({"path": str(trace), "label": name, "refs": MEASURED[quick], "warmup": WARMUP[quick], "prefault": False})
    return out
