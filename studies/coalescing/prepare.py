"""The coalescing study's real programs: each traced here with `xlat trace` (under valgrind,
instruction fetches included, the program's mappings and its executable's and shared objects'
segments in the `.maps` sidecar) on an input generated here, deterministically (Clang's
input, SQLite, and Node.js's React are fetched once and pinned by their digests). Traces are kept in
`results/coalescing/traces/` and reused; a program this machine lacks (or valgrind) is left
out, and the report says so.

The paper's programs (T3) and what stands in for them:
- Clang compiling SQLite: the paper's program and input, Clang (the distribution's, 14 on
  Debian 12, against the paper's 16.0.6) compiling SQLite's amalgamation (3.44.2, from the
  package registry's `sqlite3` 5.1.7 package, against the paper's 3.42.0) with the paper's
  flags, sampled in eight windows spread over the compile (`WINDOWS_FULL`);
- Node.js (the paper runs a React server-side-rendering benchmark): `node` (the
  distribution's, 20 on this machine, against the paper's 18.16.1) with React 18.2.0's own
  `renderToString` turning pages of a generated product catalog into HTML through function
  components, its JIT code in anonymous memory; traced past its start-up, React's loading,
  the catalog's build and V8's compiling of the renderer, in four windows of the rendering's
  steady state (`SKIP_FULL`, `WINDOWS_FULL`);
- sqlite, a Python interpreter and xz, which the issue adds: `sqlite3` building, indexing and
  querying a 200,000-row table, `python3` running a generated script, `xz -6` compressing
  4 MB of generated text.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

#: References left out at the start of each program (its dynamic loading and start-up: traced
#: by valgrind, not written), then references traced: warm-up plus measured references.
SKIP = {False: 40_000_000, True: 2_000_000}
REFS = {False: 30_000_000, True: 3_000_000}
WARMUP = {False: "10M", True: "1M"}
MEASURED = {False: "20M", True: "2M"}
#: Programs whose start-up is longer, in the full study: where their first window begins. node: `xlat trace --count` of the
#: program with 40 and 200 pages (`_js_source(pages)`), in the traces' directory and
#: environment (`_trace`), counts 1.354 and 2.059 G references: node's and React's start-up,
#: the catalog's build and the first pages, while V8 compiles the renderer (in a shell's
#: environment, with its locale, 10 M references a page up to the 40th, 1.915 G by then), then
#: 4.4 M a page; the first window begins after 1.43 G (about the 58th page). clang: the whole
#: compile makes 183.9 G references, 130.0 G instructions (`xlat trace --count -- clang-14 -c
#: FLAGS sqlite3.c -o /dev/null`, 17 min), LLVM's optimization and code generation 98.9 % of its
#: time (`-ftime-report`); the first window begins a sixteenth in.
#: `xlat trace` leaves them out inside valgrind (node's in about 30 s, clang's in minutes;
#: lackey wrote every one: node's took 16 minutes); the programs trace two at a time, while
#: the kernels' points run (`xlat.study.run`).
SKIP_FULL = {"node": 1_430_000_000, "clang": 11_500_000_000}
#: The paper's programs, sampled in the full study: (K, P), K windows of REFS, each P references
#: after the one before (`xlat trace --windows K --every P`, in one run). One window is one
#: sample: Clang's L1 ITLB rate is 0.39 to 5.58 per 1000 instructions in windows a quarter of
#: its compile apart. clang: eight windows spread evenly over the compile (every 23 G of its
#: 183.9 G references from 11.5 G), the paper's counts being of the whole run (four, 46 G apart,
#: left an interval as wide as the estimate: 2.79 ± 3.45 L1 ITLB misses per 1000 instructions
#: under F5-noresv). node: four in the
#: rendering's steady state, 100 M references (about 23 pages) apart, up to the 126th of its
#: 200 pages (the paper's benchmark renders for longer than it starts).
WINDOWS_FULL = {"clang": (8, 23_000_000_000), "node": (4, 100_000_000)}

#: The paper's Clang input (§4.2, T3): SQLite's amalgamation compiled with these flags. The
#: amalgamation comes from the package registry's `sqlite3` package, which bundles it (npm
#: pack; its digest pins the file), and is kept with the other inputs (`INPUTS`).
SQLITE_PACKAGE = "sqlite3@5.1.7"
#: The paper's Node.js runs a React server-side-rendering benchmark (§4.2, T3; its
#: `react-ssr-benchmarks` is not in the package registry): React's own packages of the paper's
#: time (18.2.0, 2022; the paper's Node.js 18.16.1 is of 2023), fetched once with npm pack and
#: pinned by the digests of their tarballs.
REACT_PACKAGES = {
    "react@18.2.0": "a151f7caec911760e42b7a6f6f1dfcaba141fd11ff49e2af901a2eee0366297c",
    "react-dom@18.2.0": "20a71e86b691f860c781f3732a85c7b3c63c4d3d9a803dca9dfe6ed0eb30e2ef",
}
SQLITE_MEMBER = ("package/deps/sqlite-autoconf-3440200.tar.gz", "sqlite-autoconf-3440200/sqlite3.c")
SQLITE_SHA256 = "16e8a29fc022b8e80a6ebb376250a1b8e786b839b44840b0fe86e94159b84ae6"
CLANG_FLAGS = ["-O2", "-DSQLITE_ENABLE_FTS3", "-DSQLITE_ENABLE_RTREE", "-DSQLITE_ENABLE_DBSTAT_VTAB",
               "-DSQLITE_ENABLE_RBU", "-DSQLITE_ENABLE_SESSION"]


def _npm_pack(spec: str, what: str) -> tuple[bytes | None, str | None]:
    """The package tarball `npm pack SPEC` fetches from the registry, or why not in one line
    (`what`: what the package is for)."""
    import tempfile

    npm = shutil.which("npm")
    if npm is None:
        return None, f"npm, which fetches {what}, is not installed"
    with tempfile.TemporaryDirectory() as tmp:
        p = subprocess.run([npm, "pack", spec, "--silent"], check=False, capture_output=True, text=True, cwd=tmp)
        packed = [f for f in Path(tmp).iterdir() if f.suffix == ".tgz"]
        if p.returncode != 0 or not packed:
            return None, f"npm pack {spec} failed: " + ((p.stderr.strip().splitlines() or ["no output"])[-1])
        return packed[0].read_bytes(), None


#: Where the programs' inputs are written and the programs run: one fixed path, the same for every
#: store, because a program reads where it runs (its working directory, its inputs' paths) and a
#: compile's allocations, hash tables and so the window at its middle move with them; so do they
#: with the environment, which is fixed too (`_trace`). The inputs are the same bytes in every
#: store (generated deterministically, or fetched and pinned), so studies sharing it agree.
INPUTS = Path("/tmp/xlat-coalescing-inputs")


def _put(path: Path, text: str) -> None:
    """Write `text` at `path` unless it holds it already, whole (another study may be reading
    it: the same bytes, renamed into place)."""
    try:
        if path.read_text() == text:
            return
    except (OSError, UnicodeDecodeError):
        pass
    part = path.with_name(f".{path.name}.{os.getpid()}")
    part.write_text(text)
    part.replace(path)


def _sqlite_amalgamation(inputs: Path) -> str | None:
    """Put SQLite's amalgamation at ``inputs/sqlite3.c`` (fetched once); why not, in one line."""
    import io
    import tarfile

    dest = inputs / "sqlite3.c"
    if dest.is_file() and hashlib.sha256(dest.read_bytes()).hexdigest() == SQLITE_SHA256:
        return None
    package, why = _npm_pack(SQLITE_PACKAGE, "SQLite's amalgamation")
    if package is None:
        return why
    try:
        with tarfile.open(fileobj=io.BytesIO(package)) as outer:
            inner = outer.extractfile(SQLITE_MEMBER[0])
            with tarfile.open(fileobj=io.BytesIO(inner.read())) as tar:
                data = tar.extractfile(SQLITE_MEMBER[1]).read()
    except (tarfile.TarError, KeyError, AttributeError, OSError) as e:
        return f"the package of {SQLITE_PACKAGE} holds no {SQLITE_MEMBER[1]} ({e})"
    if hashlib.sha256(data).hexdigest() != SQLITE_SHA256:
        return f"the {SQLITE_MEMBER[1]} of {SQLITE_PACKAGE} is not the one this study pins"
    part = dest.with_name(f".{dest.name}.{os.getpid()}")
    part.write_bytes(data)
    part.replace(dest)
    return None


def _react(inputs: Path) -> str | None:
    """Unpack React's packages (``REACT_PACKAGES``, each fetched once and checked against its
    digest) into ``inputs/node_modules``, where the node program finds them; why not, in one
    line."""
    import io
    import tarfile

    for spec, digest in REACT_PACKAGES.items():
        name = spec.rsplit("@", 1)[0]
        dest = inputs / "node_modules" / name
        stamp = dest / ".sha256"
        if stamp.is_file() and stamp.read_text() == digest:
            continue
        package, why = _npm_pack(spec, "React")
        if package is None:
            return why
        if hashlib.sha256(package).hexdigest() != digest:
            return f"the package npm pack {spec} fetched is not the one this study pins"
        # (Unpacked whole beside it, then renamed: a half-unpacked package is never used.)
        part = dest.with_name(f".{name}.{os.getpid()}")
        shutil.rmtree(part, ignore_errors=True)
        try:
            with tarfile.open(fileobj=io.BytesIO(package)) as tar:
                tar.extractall(part, filter="data")
        except (tarfile.TarError, OSError) as e:
            shutil.rmtree(part, ignore_errors=True)
            return f"the package of {spec} cannot be unpacked ({e})"
        (part / "package" / ".sha256").write_text(digest)
        shutil.rmtree(dest, ignore_errors=True)
        try:
            (part / "package").rename(dest)
        except OSError:
            pass  # (another study put the same package there first)
        shutil.rmtree(part, ignore_errors=True)
    return None


def _clang() -> str | None:
    """The C compiler driver `clang`, or the newest `clang-N` on the PATH."""
    if shutil.which("clang"):
        return shutil.which("clang")
    found = []
    for d in os.environ.get("PATH", "").split(os.pathsep):
        try:
            names = os.listdir(d)
        except OSError:
            continue
        found += [(int(n[6:]), os.path.join(d, n)) for n in names if n.startswith("clang-") and n[6:].isdigit()]
    return max(found)[1] if found else None


def _js_source(pages: int = 200) -> str:
    """The paper's React server-side-rendering benchmark (§4.2, T3), in the small: React's own
    renderToString (the packages of ``REACT_PACKAGES``, production builds) turning a catalog
    into HTML pages, ``pages`` of them."""
    versions = ", ".join(REACT_PACKAGES)
    return f"""
'use strict';
// React ({versions}) server-side rendering: function components turn a catalog of 20,000
// products (14 MB of objects) into element trees, rendered to HTML by react-dom/server's
// renderToString, a page of 24 random products a request.
process.env.NODE_ENV = 'production';
const React = require('react');
const {{ renderToString }} = require('react-dom/server');
const PRODUCTS = 20000, PAGES = {pages};
let seed = 12345;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
const words = ['page', 'table', 'walk', 'entry', 'frame', 'coalesce', 'reserve', 'promote', 'linker', 'segment', '<b>', '&amp', '"q"'];
const text = n => {{ let s = ''; for (let i = 0; i < n; i++) s += words[rnd() % words.length] + ' '; return s; }};
// Strings from small pools, so that building the catalog costs little beside the rendering.
const names = Array.from({{ length: 400 }}, () => text(3));
const descriptions = Array.from({{ length: 400 }}, () => text(20));
const bodies = Array.from({{ length: 400 }}, () => text(8));
function product(i) {{
  const tags = [], reviews = [];
  for (let k = 1 + rnd() % 5; k > 0; k--) tags.push(words[rnd() % words.length]);
  for (let k = rnd() % 6; k > 0; k--) reviews.push({{ user: 'u' + (rnd() % 5000), stars: 1 + rnd() % 5, body: bodies[rnd() % 400] }});
  return {{ id: i, name: names[rnd() % 400], description: descriptions[rnd() % 400], price: (rnd() % 100000) / 100, tags, reviews }};
}}
const catalog = [];
for (let i = 0; i < PRODUCTS; i++) catalog.push(product(i));
const h = React.createElement;
const Stars = ({{ n }}) => h('span', {{ className: 'stars', title: n + ' of 5' }}, '*'.repeat(n));
const Review = ({{ r }}) => h('li', {{ className: 'review' }}, h('b', null, r.user), h(Stars, {{ n: r.stars }}), h('p', null, r.body));
const Tag = ({{ t }}) => h('a', {{ href: '/tag/' + t, className: 'tag' }}, t);
const Product = ({{ p }}) => h('article', {{ className: 'product', id: 'p' + p.id }},
  h('h2', null, p.name), h('p', {{ className: 'price' }}, '$' + p.price.toFixed(2)), h('p', null, p.description),
  h('div', {{ className: 'tags' }}, p.tags.map((t, i) => h(Tag, {{ t, key: i }}))),
  p.reviews.length ? h('ul', null, p.reviews.map((r, i) => h(Review, {{ r, key: i }}))) : null);
const Page = ({{ items, n }}) => h('html', null, h('head', null, h('title', null, 'Catalog page ' + n)),
  h('body', null, h('nav', null, [1, 2, 3, 4, 5].map(k => h('a', {{ href: '/page/' + (n + k), key: k }}, 'next ' + k))),
    h('main', null, items.map(p => h(Product, {{ p, key: p.id }})))));
let bytes = 0;
for (let n = 0; n < PAGES; n++) {{
  const items = [];
  for (let i = 0; i < 24; i++) items.push(catalog[rnd() % catalog.length]);
  bytes += renderToString(h(Page, {{ items, n }})).length;
}}
console.log(catalog.length, bytes);
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
    clang = _clang()
    why = "clang is not installed (apt-get install clang)" if clang is None else _sqlite_amalgamation(inputs)
    if why is None:
        # (Clang runs its compiler in its own process, which valgrind traces.)
        progs["clang"] = [clang, "-c", *CLANG_FLAGS, str(inputs / "sqlite3.c"), "-o", os.devnull]
    else:
        print(f"xlat: coalescing: {why}, so the study runs without the paper's Clang", file=sys.stderr)
    why = "node is not installed" if shutil.which("node") is None else _react(inputs)
    if why is not None:
        print(f"xlat: coalescing: {why}, so the study runs without Node.js", file=sys.stderr)
    else:
        _put(inputs / "prog.js", _js_source())
        # --single-threaded: V8's garbage collection and compilation on the program's one thread
        # (the paper's Node.js runs one), not on helper threads whose references valgrind would
        # interleave with its own, in an order that depends on the host's timing.
        progs["node"] = [shutil.which("node"), "--single-threaded", str(inputs / "prog.js")]
    if shutil.which("sqlite3"):
        _put(inputs / "prog.sql", _sql_script())
        progs["sqlite"] = [shutil.which("sqlite3"), ":memory:", f".read {inputs / 'prog.sql'}"]
    py = shutil.which("python3")
    if py:
        # (The interpreter itself, not a launcher script in front of it.)
        real = subprocess.run([py, "-c", "import sys; print(sys.executable)"], check=False, capture_output=True, text=True).stdout.strip()
        _put(inputs / "prog.py", _py_source())
        progs["python"] = [os.path.realpath(real or py), "-S", str(inputs / "prog.py")]
    if shutil.which("xz"):
        _put(inputs / "text.txt", _text(4 << 20))
        progs["xz"] = [shutil.which("xz"), "-6", "-c", str(inputs / "text.txt")]
    return progs


def _skip(name: str, quick: bool, refs: int | None) -> int:
    """The references of ``name``'s start-up left out of its trace."""
    if refs is not None:
        return 0
    if quick:
        return SKIP[True]
    return SKIP_FULL.get(name, SKIP[False])


def _windows(name: str, quick: bool, refs: int | None) -> tuple[int, int]:
    """``name``'s windows: (K, P), K windows P references apart ((1, 0): one)."""
    if quick or refs is not None:
        return 1, 0
    return WINDOWS_FULL.get(name, (1, 0))


def _recipe(cmd: list[str], skip: int, refs: int, windows: tuple[int, int] = (1, 0)) -> str:
    """A digest of what makes a trace (the command, its input files' contents, the references
    left out and kept, its windows), naming the file: a trace made another way is not reused."""
    # (The sidecar's version too: from v2 it records the shared objects' segments, from v3
    # the code run before the window, from v4 the system calls that change mappings; from v5
    # traced in a fixed directory and environment; from v6 the resident pages read by the
    # tool at the window's first reference.)
    h = hashlib.sha256(f"{skip} {refs} sidecar-v6".encode() + (f" windows {windows[0]} {windows[1]}".encode() if windows[0] > 1 else b""))
    for arg in cmd:
        # (Paths by their names and contents: where the store lies does not matter. An input
        # may sit inside an argument, as sqlite's `.read FILE`.)
        for word in arg.split(" "):
            h.update(b"\0" + os.path.basename(word).encode())
            if os.path.isfile(word) and not os.access(word, os.X_OK):
                h.update(Path(word).read_bytes())
    return h.hexdigest()[:10]


def _length(quick: bool, refs: int | None) -> int:
    """The references of a trace (after its start-up)."""
    return refs if refs is not None else REFS[quick]


def _files(trace: Path, windows: tuple[int, int]) -> list[Path]:
    """The files of a trace to ``trace`` in ``windows`` (K, P): one per window."""
    from xlat.cli import window_path

    return [trace] if windows[0] == 1 else [window_path(trace, i) for i in range(windows[0])]


def _trace(name: str, cmd: list[str], trace: Path, quick: bool, refs: int | None, inputs: Path, windows: tuple[int, int]) -> str | None:
    """Trace one program into ``trace`` in ``windows`` (K, P); the reason in one line if it failed."""
    k, every = windows
    more = ["--windows", str(k), "--every", str(every)] if k > 1 else []
    run = [sys.executable, "-c", "from xlat.cli import main; main()", "trace", "-o", str(trace),
           "--skip", str(_skip(name, quick, refs)), "--refs", str(_length(quick, refs)), *more, "--", *cmd]
    # setarch -R: no address randomization, so that a program traced again lies where it did.
    if shutil.which("setarch"):
        run = ["setarch", "-R", *run]
    # (A fixed environment and directory: the program's stack and heap, and so what it does
    # by the window, move with them; `PWD` names the directory as it is reached, and HOME is
    # it too, so that valgrind's tool, which the environment names, lies at one path.)
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(inputs), "LANG": "C", "PWD": str(inputs)}
    p = subprocess.run(run, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=inputs, env=env)
    if p.returncode != 0 or not all(f.is_file() for f in _files(trace, windows)):
        return (p.stderr.strip().splitlines() or ["no output"])[-1]
    return None


def traces(out_dir: Path, quick: bool, only: list[str] | None = None, refs: int | None = None,
           windows: tuple[int, int] | None = None, make: bool = True) -> list[dict]:
    """Trace the programs (those not traced yet; ``only`` these, if given) into
    ``out_dir/traces`` and return their ``[[traces]]`` tables, one per window: the whole trace,
    its first part as warm-up. ``refs`` traces that many references after no start-up, and
    ``windows`` (K, P) so many windows of every program (for tests). With ``make=False``
    nothing is traced: the tables of the programs already traced (a report from the store)."""
    if shutil.which("valgrind") is None:
        print("xlat: coalescing: valgrind is not installed, so the study runs without its real programs", file=sys.stderr)
        return []
    tdir = Path(out_dir) / "traces"
    inputs = INPUTS
    inputs.mkdir(parents=True, exist_ok=True)
    tdir.mkdir(parents=True, exist_ok=True)
    progs = {name: cmd for name, cmd in _programs(inputs).items() if only is None or name in only}
    plan = {name: windows or _windows(name, quick, refs) for name in progs}
    path = {name: tdir / f"{name}.{_recipe(cmd, _skip(name, quick, refs), _length(quick, refs), plan[name])}.xtr" for name, cmd in progs.items()}
    files = {name: _files(path[name], plan[name]) for name in progs}
    missing = [name for name in progs if not all(f.is_file() and Path(f"{f}.maps").is_file() for f in files[name])]
    todo = missing if make else []
    # valgrind runs a program on one core, so two trace at a time, the longest first.
    # (How long a tracing takes: where its last window begins.)
    todo.sort(key=lambda name: -(_skip(name, quick, refs) + (plan[name][0] - 1) * plan[name][1]))
    with ThreadPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1))) as pool:
        failed = {name: err for name, err in zip(todo, pool.map(lambda name: _trace(name, progs[name], path[name], quick, refs, inputs, plan[name]), todo)) if err}
    out = []
    for name in progs:
        if not make and name in missing:
            continue
        if name in failed:
            print(f"xlat: coalescing: tracing {name} failed ({failed[name]}); the study runs without it", file=sys.stderr)
        else:
            # (Each window starts with the pages the program had touched: the code it had run
            # and the pages it had resident, touched first.)
            # (A program's windows are points of one label: the report sums them.)
            run = {"refs": refs // 2, "warmup": refs - refs // 2} if refs is not None else {"refs": MEASURED[quick], "warmup": WARMUP[quick]}
            out += [{"path": str(f), "label": name, **run, "prefault": False, "set": {"loader.fast_forward": "resident"}} for f in files[name]]
    return out
