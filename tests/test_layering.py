"""The engine crate's layering (docs/architecture.md, "Who knows whom"), checked on its sources.

A file imports another when it names a path under `crate::` (or `super::`) that resolves to
the other's module; comments and `#[cfg(test)] mod tests` blocks do not count. A child module
naming its parent (`machine/stats.rs` and `machine.rs`) is the parent split into files, so
parent-child pairs are not counted as a circle.
"""

import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "crates" / "xlat-core" / "src"


def _modules():
    mods = {}
    for path in SRC.rglob("*.rs"):
        rel = path.relative_to(SRC).with_suffix("").as_posix()
        name = rel.removesuffix("/mod").replace("/", "::")
        mods["" if name == "lib" else name] = path
    return mods


def _resolve(mods, path):
    parts = path.split("::")
    for i in range(len(parts), 0, -1):
        name = "::".join(parts[:i])
        if name in mods:
            return name
    return None


def _strip(text):
    text = re.sub(r"(?s)#\[cfg\(test\)\]\s*mod tests\b.*", "", text)
    return re.sub(r"//.*", "", text)


def import_graph():
    mods = _modules()
    edges = {m: set() for m in mods}
    for m, path in mods.items():
        text = _strip(path.read_text())
        parent = m.rsplit("::", 1)[0] if "::" in m else ""
        found = [p.rstrip(":") for p in re.findall(r"crate::([A-Za-z_][\w:]*)", text)]
        for group in re.findall(r"crate::\{([^}]*)\}", text):
            found += [item.strip().split("::{")[0] for item in group.split(",")]
        found += [f"{parent}::{p}" if parent else p for p in re.findall(r"\bsuper::([\w:]+)", text)]
        for p in found:
            t = _resolve(mods, p)
            if t and t != m:
                edges[m].add(t)
    return edges


def _family(a, b):
    return a.startswith(b + "::") or b.startswith(a + "::") or a == "" or b == ""


def circles(edges):
    """Strongly connected groups of more than one module (Tarjan), parent-child edges left out."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if _family(v, w):
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def _under(m, floor):
    return m == floor or m.startswith(floor + "::")


def test_no_two_files_of_the_engine_import_each_other():
    assert circles(import_graph()) == []


def test_the_os_is_beside_the_translator_and_mechanisms_apart_from_it():
    edges = import_graph()
    bad = [(a, b) for a, bs in edges.items() for b in bs
           if (_under(a, "os") and (_under(b, "translate") or _under(b, "mech")))
           or (_under(a, "mech") and _under(b, "os"))]
    assert bad == []


def test_the_floors_import_nothing_of_the_model():
    edges = import_graph()
    floors = ("arch", "stats", "glossary", "rng", "param")
    bad = [(a, b) for a, bs in edges.items() for b in bs
           if any(_under(a, f) for f in floors) and not any(_under(b, f) for f in floors)]
    assert bad == []


def test_the_memory_side_knows_nothing_of_translation():
    edges = import_graph()
    bad = [(a, b) for a, bs in edges.items() for b in bs
           if (_under(a, "memory") or _under(a, "timing"))
           and any(_under(b, f) for f in ("translate", "os", "mech"))]
    assert bad == []


def test_the_checker_finds_a_circle():
    # (A check that cannot fail proves nothing: two modules naming each other are found.)
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e::f": {"e"}, "e": {"e::f"}}
    assert circles(edges) == [["a", "b", "c"]]


def test_only_the_mount_table_and_the_machine_see_the_whole_configuration():
    # (Components are built from their own parameters: `config.rs` mounts them and hands
    # each aggregate its part, the machine (`machine.rs`, `machine/`, and the crate's entry
    # points in `lib.rs`) keeps the whole.)
    allowed = ("config", "machine", "")
    bad = [m for m, path in _modules().items()
           if re.search(r"\bConfig\b", _strip(path.read_text())) and not any(_under(m, a) if a else m == a for a in allowed)]
    assert bad == []
