"""xlat's valgrind tool (python/xlat/valgrind/xt_main.c): the events lackey records, and a
start-up left out by the tool converting to the references the converter's own skip keeps."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from xlat_testutil import assert_one_line_error, has_core, run_xlat

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None or shutil.which("gcc") is None or not has_core("lackey_to_native"),
                                reason="needs valgrind, gcc and the lackey converter")

#: A program whose accesses are fixed, with the kinds the converter splits: wide stores and loads
#: (fxsave, fxrstor: valgrind records 160 bytes of each, 3 references) and read-modify-writes
#: (a load and a store).
PROGRAM = r"""
#include <stdint.h>
static char area[512] __attribute__((aligned(64)));
static volatile uint64_t counter[64];
int main(void) {
    for (int i = 0; i < 300; i++) {
        __asm__ volatile("fxsave %0" : "=m"(area));
        __asm__ volatile("fxrstor %0" : : "m"(area));
        __asm__ volatile("addq $1, %0" : "+m"(counter[i % 64]));
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    from xlat import valgrind

    d = tmp_path_factory.mktemp("xt")
    (d / "p.c").write_text(PROGRAM)
    subprocess.run(["gcc", "-O1", "-static", "-o", str(d / "p"), str(d / "p.c")], check=True)
    tool = valgrind.tool(shutil.which("valgrind"))
    if not tool.fast:
        pytest.skip(f"xlattrace cannot be built here: {tool.why}")
    return d, tool


def trace(d: Path, tool, name: str, skip: int, fetch: bool) -> Path:
    """The tool's text for the test program. (Every run's arguments have the same length, so
    that valgrind lays out the program's stack alike and the addresses agree.)"""
    from xlat import valgrind

    out = d / name
    cmd = valgrind.command(shutil.which("valgrind"), tool, str(out), [str(d / "p")], 0, fetch)
    cmd = [f"--skip={skip:09d}" if a.startswith("--skip=") else a for a in cmd]
    subprocess.run(cmd, env=tool.env(), check=True)
    return out


def events(path: Path) -> list[tuple[str, int, int]]:
    out = []
    for line in path.read_text().splitlines():
        if line and not line.startswith(("==", "--", "#")):
            addr, size = line[3:].split(",")
            out.append((line[:2].strip(), int(addr, 16), int(size)))
    return out


#: The tool's lines for system calls that change mappings, which lackey does not write.
SYSCALL_KINDS = {"U", "F", "P", "W"}


def starts(evs, fetch: bool) -> dict[str, list[int]]:
    """Where each kind's first reference falls (the converter's count: an instruction one
    reference with fetches, none without; an access one per 64 bytes; a modify two halves; a
    system call one per 65,535 pages)."""
    at, n = {}, 0
    for kind, addr, size in evs:
        if kind in SYSCALL_KINDS:
            n += -(-(((addr + size + 4095) >> 12) - (addr >> 12)) // 65535)
            continue
        pieces = max(1, -(-size // 64))
        at.setdefault((kind, pieces), []).append(n)
        n += (1 if fetch else 0) if kind == "I" else pieces * (2 if kind == "M" else 1)
    return at


def convert(src: Path, out: Path, skip: int, fetch: bool) -> bytes:
    from xlat import _core

    _core.lackey_to_native(str(src), str(out), "p", fetch=fetch, skip=skip, refs=None)
    return out.read_bytes()


def test_the_tool_records_what_lackey_records(env):
    d, tool = env
    lk = d / "lackey.txt"
    # (In the same environment: the program's start-up reads it.)
    subprocess.run(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={lk}", str(d / "p")], env=tool.env(), check=True)
    mine = [e for e in events(trace(d, tool, "all.txt", 0, True)) if e[0] not in SYSCALL_KINDS]
    theirs = events(lk)
    assert len(mine) == len(theirs) > 10_000
    assert [(k, s) for k, _a, s in mine] == [(k, s) for k, _a, s in theirs]
    # (The stack may sit elsewhere: valgrind's own arguments differ. Everything else agrees.)
    off_stack = [(a, b) for (_k, a, _s), (_l, b, _t) in zip(mine, theirs) if a < 1 << 36 and b < 1 << 36]
    assert len(off_stack) > len(mine) // 2 and all(a == b for a, b in off_stack)
    kinds = {k for k, _a, _s in mine}
    assert kinds == {"I", "L", "S", "M"} and any(s == 160 for _k, _a, s in mine)


@pytest.mark.parametrize("fetch", [True, False])
def test_a_skip_in_the_tool_keeps_what_the_converter_keeps(env, fetch):
    d, tool = env
    full = trace(d, tool, "full.txt", 0, fetch)
    at = starts(events(full), fetch)
    wide = [n for (k, p), ns in at.items() if k == "S" and p == 3 for n in ns]
    modify = [n for (k, p), ns in at.items() if k == "M" for n in ns]
    # Ends of the skip: inside a wide store, between a modify's load and store, just after a
    # whole store or modify, just before a store, and none.
    cases = [wide[10] + 1, wide[20] + 2, modify[30] + 1, wide[40] + 3, modify[50] + 2, wide[60], 0]
    for i, n in enumerate(cases):
        cut = trace(d, tool, f"cut{i}.txt", n, fetch)
        assert convert(cut, d / f"cut{i}.xtr", 0, fetch) == convert(full, d / f"ref{i}.xtr", n, fetch), (n, fetch)


def test_the_tool_counts_what_the_converter_writes(env):
    from xlat import _core, valgrind

    d, tool = env
    for fetch in (True, False):
        full = d / ("fetched.txt" if fetch else "datonly.txt")
        cmd = valgrind.command(shutil.which("valgrind"), tool, str(full), [str(d / "p")], 0, fetch)
        cmd.insert(2, "--count=yes")
        p = subprocess.run(cmd, env=tool.env(), check=True, capture_output=True, text=True)
        counted = [line for line in p.stderr.splitlines() if "xlattrace:" in line]
        assert len(counted) == 1, p.stderr
        refs, instrs = (int(w.replace(",", "")) for w in counted[0].split(":")[-1].replace("references,", "").replace("instructions", "").split())
        written = _core.lackey_to_native(str(full), str(d / "counted.xtr"), "p", fetch=fetch, skip=0, refs=None)
        # (Without fetches, instructions after the last access end the trace in a record of
        # their own.)
        lines = full.read_text().splitlines()
        tail = not fetch and lines[-1].startswith("I ")
        assert refs + tail == written > 0
        assert instrs == sum(1 for line in lines if line.startswith("I "))


@pytest.mark.parametrize("fetch", [True, False])
def test_windows_in_one_run_are_the_windows_of_a_whole_trace(env, fetch):
    """--windows=K in one run: window k holds what the whole trace holds from SKIP + k * EVERY
    on, cut at the window's length, whatever event a window's start or end falls in; each
    window has its own file of the code run before it."""
    from xlat import _core, valgrind

    d, tool = env
    vg = shutil.which("valgrind")
    whole = d / f"whole{fetch}.txt"
    subprocess.run(valgrind.command(vg, tool, str(whole), [str(d / "p")], 0, fetch), env=tool.env(), check=True)
    at = starts(events(whole), fetch)
    wide = [n for (k, p), ns in at.items() if k == "S" and p == 3 for n in ns]
    skip, every, length = wide[10] + 1, 3601, 1500
    log = d / f"windows{fetch}.txt"
    cmd = valgrind.command(vg, tool, str(log), [str(d / "p")], skip, fetch, executed=str(d / f"ran{fetch}"), windows=(3, every, length))
    subprocess.run(cmd, env=tool.env(), check=True)
    assert log.read_text().count("# window\n") == 3
    outs = [d / f"w{fetch}{k}.xtr" for k in range(3)]
    assert _core.lackey_windows_to_native(str(log), [str(o) for o in outs], length, "p", fetch=fetch) == 3 * length
    for k, out in enumerate(outs):
        ref = d / f"r{fetch}{k}.xtr"
        _core.lackey_to_native(str(whole), str(ref), "p", fetch=fetch, skip=skip + k * every, refs=length)
        # (The window's description names it: the references compared under one.)
        a, b = d / f"a{fetch}{k}.xtr", d / f"b{fetch}{k}.xtr"
        _core.convert_trace([str(out)], None, str(a), desc="p")
        _core.convert_trace([str(ref)], None, str(b), desc="p")
        assert a.read_bytes() == b.read_bytes(), k
        assert (d / f"ran{fetch}.{k}").read_text().strip(), "each window has its code run"


def test_xlat_trace_writes_windows_with_their_sidecars(env, tmp_path):
    d, _tool = env
    out = tmp_path / "p.xtr"
    p = run_xlat("trace", "-o", str(out), "--skip", "5000", "--refs", "4000", "--windows", "3", "--every", "9000", "--", str(d / "p"), timeout=180)
    assert p.returncode == 0, p.stderr
    assert "wrote 12,000 references in 3 windows" in p.stderr
    assert sorted(f.name for f in tmp_path.iterdir()) == ["p.w0.xtr", "p.w0.xtr.maps", "p.w1.xtr", "p.w1.xtr.maps", "p.w2.xtr", "p.w2.xtr.maps"]
    for k in range(3):
        sidecar = (tmp_path / f"p.w{k}.xtr.maps").read_text()
        assert "# executed " in sidecar and "# resident " in sidecar
    # A program shorter than its windows (which window it ends in depends on its start-up's
    # environment): one line, and no window written.
    bad = tmp_path / "bad"
    bad.mkdir()
    p = run_xlat("trace", "-o", str(bad / "q.xtr"), "--skip", "5000", "--refs", "4000", "--windows", "9", "--every", "9000", "--", str(d / "p"), timeout=180)
    assert_one_line_error(p, "the log ended in window ", " of 9")
    assert list(bad.iterdir()) == []
    assert_one_line_error(run_xlat("trace", "-o", str(bad / "q.xtr"), "--refs", "4000", "--windows", "3", "--", str(d / "p")), "--every P")
    assert_one_line_error(run_xlat("trace", "-o", str(bad / "q.xtr"), "--refs", "4000", "--windows", "3", "--every", "5000", "--", str(d / "p")),
                          "at least --refs + 2,048")
    assert_one_line_error(run_xlat("trace", "-o", str(bad / "q.xtr"), "--every", "5000", "--", str(d / "p")), "give --windows K")


def test_xlat_trace_counts_a_whole_run(env, tmp_path):
    d, _tool = env
    p = run_xlat("trace", "--count", "--", str(d / "p"), timeout=180)
    assert p.returncode == 0, p.stderr
    words = p.stderr.split()
    refs = int(words[words.index("references,") - 1].replace(",", ""))
    # The same program traced whole holds as many.
    p = run_xlat("trace", "-o", str(tmp_path / "p.xtr"), "--", str(d / "p"), timeout=180)
    assert p.returncode == 0, p.stderr
    assert f"wrote {refs:,} references" in p.stderr
    assert_one_line_error(run_xlat("trace", "--", str(d / "p")), "-o FILE")


#: A program that touches the first half of a 16 MB array, then reads only that half.
TOUCHER = r"""
#include <stdio.h>
static char big[16 << 20];
int main(void) {
    printf("%lx\n", (unsigned long)big);
    fflush(stdout);
    for (long i = 0; i < (8 << 20); i += 4096) big[i] = 1;
    volatile unsigned long s = 0;
    for (long k = 0; k < 400000000; k++) s += big[(k * 64) & ((8 << 20) - 1)];
    return 0;
}
"""


def test_the_sidecar_records_the_pages_resident_when_the_window_began(env, tmp_path):
    """`# resident` lines: the pages the program had touched before the first traced
    reference (the touched half of the array, not the other half), the same in every
    tracing."""
    (tmp_path / "t.c").write_text(TOUCHER)
    subprocess.run(["gcc", "-O1", "-static", "-o", str(tmp_path / "t"), str(tmp_path / "t.c")], check=True)
    out = tmp_path / "t.xtr"
    p = run_xlat("trace", "-o", str(out), "--skip", "500000", "--refs", "3000000", "--", str(tmp_path / "t"), timeout=300)
    assert p.returncode == 0, p.stderr
    big = int(p.stdout.split()[0], 16)
    runs = []
    for line in (tmp_path / "t.xtr.maps").read_text().splitlines():
        if line.startswith("# resident "):
            a, b = (int(x, 16) for x in line.split()[2:4])
            runs.append((a, b))
    assert runs, "no resident pages recorded"

    def resident(va: int) -> bool:
        return any(a <= va < b for a, b in runs)

    assert all(resident(big + i) for i in range(0, 8 << 20, 4096)), "the touched half"
    assert not any(resident(big + i) for i in range(8 << 20, 16 << 20, 4096)), "the untouched half"
    # Read by the tool at the window's first reference: the same pages of the program's own
    # memory in another tracing. (A file's pages are another matter: which neighbours a fault
    # maps depends on the page cache and its readahead.)
    again = tmp_path / "again.xtr"
    p = run_xlat("trace", "-o", str(again), "--skip", "500000", "--refs", "3000000", "--", str(tmp_path / "t"), timeout=300)
    assert p.returncode == 0, p.stderr
    big_again = int(p.stdout.split()[0], 16)

    def pages(path, base):
        out = set()
        for x in path.read_text().splitlines():
            if x.startswith("# resident "):
                a, b = (int(v, 16) for v in x.split()[2:4])
                out |= {va - base for va in range(max(a, base), min(b, base + (16 << 20)), 4096)}
        return out

    assert pages(tmp_path / "t.xtr.maps", big) == pages(again.parent / "again.xtr.maps", big_again)


#: A program that runs `early` before the window and `late` only in it, each alone on its page.
RUNNER = r"""
#include <stdio.h>
#define PAGE __attribute__((noinline, aligned(4096)))
PAGE int early(int x) { return x * 3 + 1; }
PAGE int pad1(int x) { return x - 7; }
PAGE int late(int x) { return x * 5 + 2; }
PAGE int pad2(int x) { return x - 9; }
int main(void) {
    printf("%lx %lx\n", (unsigned long)early, (unsigned long)late);
    fflush(stdout);
    volatile int s = 0;
    for (long k = 0; k < 400000; k++) s += early(k);
    for (long k = 0; k < 4000000; k++) s += late(k);
    return 0;
}
"""


def test_the_sidecar_records_the_code_run_before_the_window(env, tmp_path):
    """`# executed` lines: the code pages the program had run before the first traced
    reference (`early`'s), not those it first runs inside the window (`late`'s)."""
    (tmp_path / "r.c").write_text(RUNNER)
    subprocess.run(["gcc", "-O1", "-static", "-o", str(tmp_path / "r"), str(tmp_path / "r.c")], check=True)
    out = tmp_path / "r.xtr"
    p = run_xlat("trace", "-o", str(out), "--skip", "2000000", "--refs", "1000000", "--", str(tmp_path / "r"), timeout=300)
    assert p.returncode == 0, p.stderr
    early, late = (int(x, 16) for x in p.stdout.split()[:2])
    runs = [tuple(int(x, 16) for x in line.split()[2:4])
            for line in (tmp_path / "r.xtr.maps").read_text().splitlines() if line.startswith("# executed ")]

    def executed(va: int) -> bool:
        return any(a <= va < b for a, b in runs)

    assert executed(early), "early ran before the window"
    assert not executed(late), "late ran only in it"


#: A program that, in the window, maps 16 pages, writes them, makes them read-only, writable
#: again, frees 4 (MADV_FREE), drops 4 (MADV_DONTNEED) and unmaps them all.
SYSCALLS = r"""
#include <stdio.h>
#include <sys/mman.h>
int main(void) {
    volatile unsigned long s = 0;
    for (long k = 0; k < 300000; k++) s += k;
    char *p = mmap(0, 16 << 12, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < 16; i++) p[i << 12] = 1;
    mprotect(p, 16 << 12, PROT_READ);
    mprotect(p, 16 << 12, PROT_READ | PROT_WRITE);
    madvise(p, 4 << 12, MADV_FREE);
    madvise(p + (4 << 12), 4 << 12, MADV_DONTNEED);
    munmap(p, 16 << 12);
    printf("%lx\n", (unsigned long)p);
    return 0;
}
"""


def test_the_window_carries_the_system_calls_that_change_mappings(env, tmp_path):
    """munmap, madvise (MADV_FREE, MADV_DONTNEED) and mprotect in the window reach the trace and
    the simulated OS: 16 pages protected and unprotected, 4 freed, 4 dropped and the 12 left
    unmapped; the start-up's calls, left out with its references, do not."""
    import xlat

    (tmp_path / "s.c").write_text(SYSCALLS)
    subprocess.run(["gcc", "-O1", "-static", "-o", str(tmp_path / "s"), str(tmp_path / "s.c")], check=True)
    out = tmp_path / "s.xtr"
    p = run_xlat("trace", "-o", str(out), "--skip", "1000000", "--", str(tmp_path / "s"), timeout=300)
    assert p.returncode == 0, p.stderr
    s = xlat.simulate("skylake", trace=str(out)).stats
    assert (s["os.protected_pages"], s["os.freed_pages"], s["os.unmapped_pages"]) == (32, 4, 16)
