"""The valgrind tool behind ``xlat trace``: ``xlattrace`` (``valgrind/xt_main.c`` beside this
file) writes what valgrind's lackey writes, a megabyte at a time instead of a write(2) per
access, and leaves a program's start-up out itself (``--skip``) instead of formatting it.

It is built on first use against the installed valgrind's tool headers and static libraries
(Debian's and Fedora's valgrind packages ship them) into ``$XDG_CACHE_HOME/xlat/valgrind/KEY``
(else ``~/.cache/...``), KEY a digest of the source and of valgrind's version and files, beside
links to valgrind's own tools directory, which valgrind then runs from (``VALGRIND_LIB``).
Where it cannot be built (no compiler, no headers, another platform), :func:`tool` says why
and ``xlat trace`` uses lackey, which gives the same trace more slowly.
``XLAT_TRACE_TOOL=lackey`` asks for lackey.
"""
from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SOURCE = Path(__file__).with_name("valgrind") / "xt_main.c"
NAME = "xlattrace"
#: Where valgrind keeps its tools (``lackey-PLATFORM``), its tool headers and its static
#: libraries, by distribution.
_TOOL_DIRS = ("/usr/libexec/valgrind", "/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib64/valgrind", "/usr/lib/valgrind",
              "/usr/local/libexec/valgrind", "/usr/local/lib/valgrind")
_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu/valgrind", "/usr/lib64/valgrind", "/usr/lib/valgrind", "/usr/libexec/valgrind",
             "/usr/local/lib/valgrind", "/usr/local/libexec/valgrind")
_INCLUDE_DIRS = ("/usr/include/valgrind", "/usr/local/include/valgrind")
#: valgrind's tool build for amd64 Linux (its Makefile.tool.am): the tool is a static
#: executable loaded at valgrind's address, linked with valgrind's core and VEX.
_PLATFORM = "amd64-linux"
_CFLAGS = ["-O2", "-m64", "-fno-stack-protector", "-fno-builtin", "-fno-strict-aliasing", "-fno-pic", "-fno-pie",
           "-fomit-frame-pointer", "-DVGA_amd64=1", "-DVGO_linux=1", "-DVGP_amd64_linux=1", "-DVGPV_amd64_linux_vanilla=1"]
_LDFLAGS = ["-m64", "-static", "-nodefaultlibs", "-nostartfiles", "-u", "_start", "-Wl,--build-id=none",
            "-Wl,-Ttext-segment=0x58000000", "-no-pie"]


@dataclass(frozen=True)
class Tool:
    """How to run the tracer: valgrind's ``--tool`` name and, for xlattrace, the directory
    to give valgrind as ``VALGRIND_LIB``; ``why`` says why lackey when it is lackey."""

    name: str
    lib: Path | None = None
    why: str = ""

    @property
    def fast(self) -> bool:
        return self.name == NAME

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.lib is not None:
            env["VALGRIND_LIB"] = str(self.lib)
        return env


def _first(dirs: tuple[str, ...], name: str) -> Path | None:
    for d in dirs:
        if (Path(d) / name).exists():
            return Path(d)
    return None


def _cache_base() -> Path | None:
    base = os.environ.get("XDG_CACHE_HOME") or (os.path.join(os.path.expanduser("~"), ".cache") if os.path.expanduser("~") != "~" else "")
    return Path(base) / "xlat" / "valgrind" if base else None


def _key(valgrind: str, tools: Path, libs: Path, include: Path) -> str:
    h = hashlib.sha256(SOURCE.read_bytes())
    version = subprocess.run([valgrind, "--version"], capture_output=True, text=True, check=False).stdout.strip()
    h.update(version.encode())
    for f in (tools / f"lackey-{_PLATFORM}", libs / f"libcoregrind-{_PLATFORM}.a", include / "pub_tool_basics.h"):
        st = f.stat()
        h.update(f"{f}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _build(into: Path, tools: Path, libs: Path, include: Path) -> None:
    """Compile and link the tool into `into`, with links to valgrind's tools beside it."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise RuntimeError("no C compiler (gcc or cc)")
    obj = into / "xt_main.o"
    exe = into / f"{NAME}-{_PLATFORM}"
    steps = [
        [cc, *_CFLAGS, f"-I{include}", "-c", str(SOURCE), "-o", str(obj)],
        [cc, "-o", str(exe), str(obj), *_LDFLAGS, str(libs / f"libcoregrind-{_PLATFORM}.a"), str(libs / f"libvex-{_PLATFORM}.a"),
         str(libs / f"libgcc-sup-{_PLATFORM}.a"), "-lgcc"],
    ]
    for cmd in steps:
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if r.returncode != 0:
            last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise RuntimeError(f"building it failed: {last}")
    obj.unlink()
    # valgrind finds its preloads, suppressions and the other tools in VALGRIND_LIB.
    for f in tools.iterdir():
        link = into / f.name
        if not link.exists():
            link.symlink_to(f)


def tool(valgrind: str) -> Tool:
    """The tracer to run under `valgrind`: xlattrace, built now if it is not yet, else lackey
    and why."""
    if os.environ.get("XLAT_TRACE_TOOL", "").strip().lower() == "lackey":
        return Tool("lackey", why="XLAT_TRACE_TOOL=lackey")
    tools = _first(_TOOL_DIRS, f"lackey-{_PLATFORM}")
    libs = _first(_LIB_DIRS, f"libcoregrind-{_PLATFORM}.a")
    include = _first(_INCLUDE_DIRS, "pub_tool_basics.h")
    if tools is None or libs is None or include is None:
        return Tool("lackey", why=f"valgrind's tool headers and libraries for {_PLATFORM} are not installed")
    exe = f"{NAME}-{_PLATFORM}"
    try:
        key = _key(valgrind, tools, libs, include)
        base = _cache_base()
        done = base / key if base is not None else None
        if done is not None and (done / exe).exists():
            return Tool(NAME, done)
        try:
            if base is None:
                raise OSError("no cache directory")
            base.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=base))
        except OSError:
            # (No cache to keep it in: built for this run, in a temporary directory removed
            # when the process ends.)
            tmp = Path(tempfile.mkdtemp(prefix="xlat-valgrind-"))
            atexit.register(shutil.rmtree, tmp, True)
            done = None
        try:
            _build(tmp, tools, libs, include)
            if done is None:
                return Tool(NAME, tmp)
            # (Made whole under another name, then renamed: a tool half built is never used.)
            os.rename(tmp, done)
            # Builds of other sources or another valgrind are stale: rebuilt in a second if
            # ever needed again.
            for old in base.iterdir():
                if old != done and not old.name.startswith("."):
                    shutil.rmtree(old, ignore_errors=True)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if done is None or not (done / exe).exists():
                raise
            # (Another process built it first.)
        except RuntimeError:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return Tool(NAME, done)
    except (OSError, RuntimeError) as e:
        return Tool("lackey", why=f"xlattrace could not be built ({e})")


def command(valgrind: str, t: Tool, out: str, program: list[str], skip: int, fetch: bool,
            executed: str | None = None, resident: str | None = None,
            windows: tuple[int, int, int] | None = None) -> list[str]:
    """valgrind's command line tracing `program` into `out` (a file or FIFO). With lackey,
    valgrind's own messages go to `out` too and the reader skips them; with xlattrace they
    go to stderr (-q: only errors), the tool leaves `skip` references out and, given
    `executed` and `resident`, writes there the code pages run before the window and the
    pages resident when it begins (lackey cannot). `windows` (xlattrace only): (K, every,
    length), K windows in one run, each file then `PATH.k`."""
    if t.fast:
        more = [f"--executed={executed}"] if executed is not None else []
        more += [f"--resident={resident}"] if resident is not None else []
        if windows is not None:
            k, every, length = windows
            more += [f"--windows={k}", f"--every={every}", f"--window={length}"]
        return [valgrind, "-q", f"--tool={NAME}", f"--out={out}", f"--skip={skip}", f"--fetch={'yes' if fetch else 'no'}", *more, *program]
    return [valgrind, "--tool=lackey", "--trace-mem=yes", f"--log-file={out}", *program]
