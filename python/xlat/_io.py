"""Small file helpers shared by the API and the CLI."""
from __future__ import annotations

import contextlib
import errno
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)


# The files the running command reads (``protect``): no output of it may replace one.
_INPUTS: set[Path] = set()


def protect(*paths: str | os.PathLike | None) -> None:
    """Name the files the running command reads (a trace, a config file), in place of any
    named before: :func:`atomic_path` and :func:`atomic_outputs` then refuse to write over any
    of them, before any work is done. Names that are not existing files (a preset name, None)
    are skipped."""
    _INPUTS.clear()
    for p in paths:
        if p is not None and os.path.isfile(p):
            _INPUTS.add(Path(os.path.realpath(p)))


def _inside(path: Path, directory: Path) -> bool:
    try:
        path.relative_to(os.path.realpath(directory))
        return True
    except ValueError:
        return False


def _refuse_destroying(dest: Path, path: str | os.PathLike) -> None:
    """Refuse an output that would replace what the command reads or what xlat keeps: an input
    of the command (:func:`protect`), a file in the trace cache, a results store's own files
    (its partitions and lock; a study's report beside them is fine)."""
    from . import tracecache
    from .results import PART_GLOB

    real = Path(os.path.realpath(dest))
    if real in _INPUTS:
        raise OSError(errno.EINVAL, "is an input of this command: refusing to write over it", str(path))
    cache = tracecache.directory()
    if cache is not None and _inside(real, cache):
        raise OSError(errno.EINVAL, f"is inside the trace cache ({cache}): refusing to write there", str(path))
    own = real.match(PART_GLOB) or real.name in (".lock",) or real.name.startswith("corrupt-")
    if own and real.parent.is_dir() and next(real.parent.glob(PART_GLOB), None) is not None:
        raise OSError(errno.EINVAL, f"is a file of the results store {real.parent}: refusing to write over it", str(path))


def _check_directory(dest: Path, path: str | os.PathLike) -> None:
    """A new file is made beside ``dest`` and renamed over it: its directory must exist and be
    writable. Said in those words, before any work, not as the "No such file or directory" or
    "File exists" of the write at the end."""
    parent = dest.parent if str(dest.parent) else Path(".")
    if not parent.exists():
        raise OSError(errno.ENOENT, f"cannot write it: its directory '{parent}' does not exist", str(path))
    if not parent.is_dir():
        raise OSError(errno.ENOTDIR, f"cannot write it: '{parent}' is not a directory", str(path))
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(errno.EACCES, f"cannot write it: its directory '{parent}' is not writable", str(path))


def _target(path: str | os.PathLike) -> tuple[Path, bool]:
    """The file a write to ``path`` changes, and whether to write through it in place.

    One rule for every output xlat writes (``--json``, ``--csv``, ``record -o``, ``trace -o``,
    ``Result.to_json``, reports): a symbolic link is followed to the file it names (the link
    stays a link); a regular file or a missing name is replaced by a temporary file renamed over
    it (atomic); a character device (``/dev/null``, a terminal) or a FIFO is written in place,
    since renaming over it would replace the device node or pipe with a regular file. Anything
    else (a directory, a block device, a socket) is refused before any work is done.
    """
    dest = Path(path)
    if dest.is_symlink():
        dest = Path(os.path.realpath(dest))
    try:
        mode = os.stat(dest).st_mode
    except (FileNotFoundError, NotADirectoryError):
        _refuse_destroying(dest, path)
        _check_directory(dest, path)
        return dest, False
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    if stat.S_ISREG(mode):
        _refuse_destroying(dest, path)
        _check_directory(dest, path)
        return dest, False
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return dest, True
    if stat.S_ISDIR(mode):
        # Renaming over a directory would fail only at the very end, after all the work.
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file name", str(path))
    raise OSError(errno.EINVAL, "is not a regular file, character device or FIFO", str(path))


def check_output(path: str | os.PathLike) -> None:
    """Fail now, in one OSError naming ``path``, if an output could not be written there later
    (see :func:`_target`): checked before a simulation, not after it."""
    _target(path)


def check_image_output(path: str | os.PathLike) -> None:
    """:func:`check_output`, and the file name's extension an image format matplotlib writes."""
    check_output(path)
    from matplotlib.backend_bases import FigureCanvasBase

    known = FigureCanvasBase.get_supported_filetypes()
    ext = Path(path).suffix.lower().lstrip(".")
    if ext not in known:
        raise OSError(errno.EINVAL, f"unknown image format '{ext or '(none)'}' (known: {', '.join(sorted(known))})", str(path))


def check_output_directory(path: str | os.PathLike) -> None:
    """A directory an output may create (``reuse -o DIR``): not an existing file, and its
    nearest existing ancestor writable."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OSError(errno.EEXIST, "exists and is not a directory", str(path))
    up = p if p.exists() else next((a for a in p.absolute().parents if a.exists()), Path("/"))
    if not up.is_dir():
        raise OSError(errno.ENOTDIR, f"'{up}' is not a directory", str(path))
    if not os.access(up, os.W_OK | os.X_OK):
        raise OSError(errno.EACCES, f"cannot write in '{up}'", str(path))


def is_stream_target(path: str | os.PathLike) -> bool:
    """Whether writes to ``path`` go through in place (a character device or FIFO, after
    following symbolic links): such a target can take one output, not a family of files."""
    try:
        return _target(path)[1]
    except OSError:
        return False


def _mode_for(dest: Path) -> int:
    """The mode the new file gets: the replaced file's, else the usual umask-based one."""
    try:
        return stat.S_IMODE(os.stat(dest).st_mode)
    except OSError:
        return 0o666 & ~_UMASK


@contextlib.contextmanager
def _naming(path: str | os.PathLike) -> Iterator[None]:
    """An OSError without a file name (a failed write: "No space left on device") names the
    file the user gave, not the temporary one."""
    try:
        yield
    except OSError as e:
        if e.filename is None and e.errno is not None:
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield the path a writer should write to; on success it holds the new content at ``path``.

    For a regular file (or a new name) that is a temporary file beside the destination,
    renamed over it on success, so that ``os.replace`` is a rename on one filesystem (atomic),
    and removed if the body raises: a reader sees the old file or the complete new one, never
    half of one. For a character device or FIFO it is the destination itself (see
    :func:`_target`).
    """
    dest, through = _target(path)
    if through:
        with _naming(path):
            yield dest
        return
    parent = dest.parent if str(dest.parent) else Path(".")
    # Keep the extensions of the name the user gave last: writers that pick a format or
    # compression from the file name (".json", ".zst") see the same name they would for it.
    suffixes = "".join(Path(path).suffixes)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp" + suffixes, dir=parent)
    except OSError as e:
        # Report the file the user named, not our temporary name.
        raise OSError(e.errno, e.strerror, str(path)) from None
    os.close(fd)
    try:
        # mkstemp makes the file private (0600).
        os.chmod(tmp, _mode_for(dest))
        with _naming(path):
            yield Path(tmp)
            os.replace(tmp, dest)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def atomic_outputs(path: str | os.PathLike) -> Iterator[tuple[Path, list[Path]]]:
    """For writers that may produce several files from one name (a multi-stream trace is
    ``stem.0.ext``, ``stem.1.ext``, ...): yield ``(tmp, written)`` where ``tmp`` has the
    destination's name inside a hidden temporary directory beside it. On success every file
    the writer created is renamed into the destination directory (each rename atomic) and
    listed in ``written``; on failure the temporary directory goes, and nothing else changes.
    A character device or FIFO destination is written in place (see :func:`_target`).
    """
    dest, through = _target(path)
    if through:
        written: list[Path] = []
        with _naming(path):
            yield dest, written
        written.append(dest)
        return
    parent = dest.parent if str(dest.parent) else Path(".")
    try:
        tmpdir = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=parent))
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(path)) from None
    written = []
    try:
        yield tmpdir / dest.name, written
        for f in sorted(tmpdir.iterdir()):
            final = parent / f.name
            os.chmod(f, _mode_for(final))
            os.replace(f, final)
            written.append(final)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        if stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            os.fsync(f.fileno())


# A config, sweep spec or paper table is text a person wrote: far below this. Beyond it the
# file is not one (``/dev/zero``, a trace named by mistake), and reading on would fill memory.
TEXT_LIMIT = 64 << 20


def not_a_file(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be read as an input file (``"does not exist"``, ``"is a
    directory"``, ...), or None if it is a regular file or a pipe (``<(...)``)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a part of its path is a file, not a directory)"
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory, not a file"
    return "is a device or socket, not a file"


def read_text_input(path: str | os.PathLike, what: str, error: type[Exception], limit: int = TEXT_LIMIT) -> str:
    """The UTF-8 text of an input file the user named, such as a config (``what`` names it in
    messages: ``"config file"``). Every failure is one ``error`` naming the file: missing, a
    directory or device, unreadable, over ``limit`` bytes, not UTF-8. It reads in pieces, so a
    pipe that never ends is refused at ``limit`` and a signal stops the read between pieces."""
    why = not_a_file(path)
    if why is not None:
        raise error(f"{what} '{path}' {why}")
    parts, size = [], 0
    try:
        with open(path, "rb") as f:
            while piece := f.read(1 << 20):
                size += len(piece)
                if size > limit:
                    raise error(f"{what} '{path}' is larger than {limit >> 20} MB: not a {what}")
                parts.append(piece)
    except OSError as e:
        raise error(f"{what} '{path}': {e.strerror or e}") from None
    try:
        return b"".join(parts).decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{what} '{path}': not UTF-8 text (byte {e.start} is 0x{e.object[e.start]:02x})") from None


def parse_count(text: str | float) -> int:
    """A reference count: ``1000000``, ``1_000_000``, ``1e6``, ``10M``, ``2.5k``, ``1G``.

    Suffixes are decimal (k = 10^3, M = 10^6, G = 10^9, T = 10^12); the result must be a
    non-negative whole number.
    """
    if isinstance(text, bool):
        # A ValueError like every other rejected count: the callers (the CLI, simulate()) catch that one.
        raise ValueError(f"'{text}' is not a count")  # noqa: TRY004
    if isinstance(text, int):
        value: float = text
    elif isinstance(text, float):
        value = text
    elif not isinstance(text, str):
        raise ValueError(f"{text!r} is not a count (try 1000000, 1e6 or 10M)")  # noqa: TRY004 - callers catch ValueError
    else:
        s = text.strip().replace("_", "")
        mult = 1
        scale = {"k": 10**3, "K": 10**3, "m": 10**6, "M": 10**6, "g": 10**9, "G": 10**9, "t": 10**12, "T": 10**12}
        if s and s[-1] in scale:
            mult = scale[s[-1]]
            s = s[:-1]
        try:
            value = int(s) * mult if s.isdigit() else float(s) * mult
        except ValueError:
            raise ValueError(f"'{text}' is not a count (try 1000000, 1e6 or 10M)") from None
    # An int can be too large for a float, so only floats are asked whether they are finite.
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0 or value != int(value):
        raise ValueError(f"'{text}' is not a non-negative whole number")
    if value > COUNT_MAX:
        raise ValueError(f"'{text}' is more than the largest count, {COUNT_MAX:,} (2^64-1)")
    return int(value)


COUNT_MAX = 2**64 - 1
