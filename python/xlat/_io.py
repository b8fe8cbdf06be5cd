"""Small file helpers shared by the API and the CLI."""
from __future__ import annotations

import contextlib
import errno
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)


def _check_dest(dest: Path) -> None:
    # Refuse before any work is done: renaming over a directory fails only at the very end.
    if dest.is_dir():
        raise IsADirectoryError(errno.EISDIR, "is a directory, not a file name", str(dest))


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it over ``path``.

    The temporary file lives in the destination directory so that ``os.replace`` is a rename
    on one filesystem (atomic), and is removed if the body raises: a reader sees the old file
    or the complete new one, never half of one.
    """
    dest = Path(path)
    _check_dest(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    # Keep the destination's extensions last: writers that pick a format or compression from
    # the file name (".json", ".zst") see the same name they would for the real file.
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=".tmp" + "".join(dest.suffixes), dir=parent)
    except OSError as e:
        # Report the file the user named, not our temporary name.
        raise OSError(e.errno, e.strerror, str(dest)) from None
    os.close(fd)
    try:
        # mkstemp makes the file private (0600); give the result the usual umask-based mode.
        os.chmod(tmp, 0o666 & ~_UMASK)
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
    """
    dest = Path(path)
    _check_dest(dest)
    parent = dest.parent if str(dest.parent) else Path(".")
    try:
        tmpdir = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".tmp", dir=parent))
    except OSError as e:
        raise OSError(e.errno, e.strerror, str(dest)) from None
    written: list[Path] = []
    try:
        yield tmpdir / dest.name, written
        for f in sorted(tmpdir.iterdir()):
            os.chmod(f, 0o666 & ~_UMASK)
            final = parent / f.name
            os.replace(f, final)
            written.append(final)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_path`)."""
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


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
    return int(value)
