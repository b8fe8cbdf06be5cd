"""The results store: one row per simulated point, as Parquet partitions under ``results/NAME/``.

Layout (see docs/experiments.md)::

    results/NAME/part-<time_ns>-<random>-<sha>.parquet  finished points, one or more rows each
    results/NAME/.part-<random>.parquet.tmp        a partition being written (never read)
    results/NAME/corrupt-part-*.parquet            a partition whose checksum failed (never read)
    results/NAME/.lock                             held by the sweep writing to the store
    results/NAME/report.md, *.png                  what `xlat study` renders

Every partition is written to a temporary name in the same directory, flushed to disk and
then renamed over its final name with ``os.replace`` (atomic on POSIX), so a reader sees a
partition whole or not at all: a killed sweep can leave a temporary file, never a
half-written partition. Readers ignore anything that is not ``part-*.parquet`` and skip (with
a warning) a partition that does not parse, whose points then simply run again. A
partition's name carries the first 16 hex digits of the SHA-256 of its bytes; one whose bytes
no longer match is reported, renamed ``corrupt-...`` and its points run again. A sweep holds
the store's lock (``flock`` on ``.lock``) while it runs, so a second sweep on the same store
waits for it and then reuses its points.

A point may appear in several partitions (a failed point retried, two sweeps sharing a store,
a compaction interrupted before it removed its inputs). :func:`load` shows each point once:
its latest successful row if it has one, else its latest failure. Points are identified
by ``point_id``, a hash of everything that determines the result (see ``xlat.sweep``).
"""
from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import math
import os
import re
import sys
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from . import _core

#: Environment variable naming the results root (default: ``results/`` in the current directory).
RESULTS_ENV = "XLAT_RESULTS"

PART_GLOB = "part-*.parquet"
TMP_SUFFIX = ".tmp"
# A temporary file older than this belongs to a writer that died: no write takes this long.
STALE_TMP_SECONDS = 3600.0

#: Columns every row has, in display order. Statistics are ``stat.<name>``, resolved config
#: values ``cfg.<key>``, swept overrides ``set.<key>`` and workload parameters ``param.<name>``.
#: Points swept with an ``interval`` also have ``interval`` and ``series`` (the statistics
#: over time as JSON text: read it with :func:`series_of` or :func:`series_frame`).
META_COLUMNS = [
    "point_id", "status", "error", "config_label", "config_base", "config_hash", "workload",
    "params", "seed", "refs", "warmup", "prefault", "xlat_version", "engine_build", "wall_s", "finished_at",
    "host", "sweep", "config", "overrides", "workload_resolved",
]

# Ordering of rows in `load`: meaningful to a reader and independent of when points finished.
SORT_COLUMNS = ["config_label", "workload", "params", "seed", "refs", "warmup", "prefault", "point_id"]


class ResultsError(_core.XlatError):
    """A results store is missing or unusable."""


def default_root() -> Path:
    """``$XLAT_RESULTS`` if set, else ``results/`` under the current directory."""
    env = os.environ.get(RESULTS_ENV)
    return Path(env) if env else Path.cwd() / "results"


def check_name(name: str) -> str:
    """A store name is one path component: it becomes a directory under the root."""
    if not isinstance(name, str) or not name or name in (".", "..") or name.startswith(".") \
            or "/" in name or os.sep in name or "\0" in name:
        raise ResultsError(f"invalid results name {name!r}: use letters, digits, '-', '_' or '.' (no '/')")
    return name


class Store:
    """The partitions of one named results store."""

    def __init__(self, name: str, root: str | os.PathLike | None = None):
        self.name = check_name(name)
        self.root = Path(root) if root is not None else default_root()
        self.path = self.root / self.name

    def __repr__(self) -> str:
        return f"Store({self.name!r}, root={str(self.root)!r})"

    def exists(self) -> bool:
        return self.path.is_dir()

    def partitions(self) -> list[Path]:
        """Finished partitions, oldest first (names start with the write time)."""
        if not self.path.is_dir():
            return []
        return sorted(p for p in self.path.glob(PART_GLOB) if p.is_file())

    # -- writing -----------------------------------------------------------------------------

    def write(self, rows: Sequence[Mapping]) -> Path | None:
        """Write rows as one new partition, atomically. Returns its path (None if no rows)."""
        if not rows:
            return None
        import pyarrow.parquet as pq

        self.path.mkdir(parents=True, exist_ok=True)
        table = rows_to_table(rows)
        token = uuid.uuid4().hex[:12]
        tmp = self.path / f".part-{token}.parquet{TMP_SUFFIX}"
        try:
            pq.write_table(table, tmp)
            _fsync_file(tmp)
            # The file's checksum goes into its name: a partition whose bytes changed since
            # (a flipped bit on disk) is caught on reading, not read as different statistics.
            final = self.path / f"part-{time.time_ns():020d}-{token}-{_checksum(tmp.read_bytes())}.parquet"
            os.replace(tmp, final)
        except BaseException:
            # Includes KeyboardInterrupt: the partition is not there, so its points rerun.
            try:
                tmp.unlink()
            except OSError:
                pass
            raise
        _fsync_dir(self.path)
        return final

    def quarantine(self, part: Path) -> Path | None:
        """Move a corrupt partition aside as ``corrupt-<name>`` (ignored by readers); None if
        another reader moved it first."""
        aside = part.with_name("corrupt-" + part.name)
        try:
            os.replace(part, aside)
        except FileNotFoundError:
            return None
        return aside

    def lock(self, log=None) -> contextlib.AbstractContextManager:
        """Hold the store's sweep lock (``.lock`` in its directory) for a ``with`` block: a
        second sweep on the same store says so on ``log`` and waits, then reuses what the
        first one stored instead of running every point again. Readers take no lock."""
        return _StoreLock(self, log)

    def remove_stale_temporaries(self, older_than: float = STALE_TMP_SECONDS) -> int:
        """Delete temporary files left by writers that died; young ones may be in use."""
        if not self.path.is_dir():
            return 0
        n = 0
        now = time.time()
        for p in self.path.glob(f".*{TMP_SUFFIX}"):
            try:
                if now - p.stat().st_mtime > older_than:
                    p.unlink()
                    n += 1
            except OSError:
                pass
        return n

    # -- reading -----------------------------------------------------------------------------

    def read_raw(self, columns: Sequence[str] | None = None, warn: bool = True):
        """Every row of every readable partition (duplicates included), as a DataFrame.

        Returns ``(df, files)``: the partitions actually read.
        """
        import pandas as pd
        import pyarrow as pa
        import pyarrow.parquet as pq

        for _attempt in range(5):
            parts = self.partitions()
            frames, used, vanished = [], [], False
            for p in parts:
                try:
                    data = p.read_bytes()
                except FileNotFoundError:
                    # A compaction merged it into a newer partition: list again.
                    vanished = True
                    break
                except OSError as e:
                    if warn:
                        print(f"xlat: warning: skipping unreadable results partition {p}: {_one_line(e)}", file=sys.stderr)
                    continue
                if not _checksum_ok(p, data):
                    # Reported and moved aside (kept for inspection, never read again): its
                    # points count as not done, so the next sweep runs them again.
                    aside = self.quarantine(p)
                    print(f"xlat: warning: results partition {p.name} is corrupt (checksum mismatch); "
                          f"moved it to {aside.name if aside else '(already moved)'}, its points will run again",
                          file=sys.stderr)
                    continue
                try:
                    buf = pa.BufferReader(data)
                    t = pq.read_table(buf, columns=_present(data, columns) if columns else None)
                except Exception as e:  # noqa: BLE001 - any unreadable file is skipped alike
                    if warn:
                        print(f"xlat: warning: skipping unreadable results partition {p}: {_one_line(e)}", file=sys.stderr)
                    continue
                frames.append(t.to_pandas())
                used.append(p)
            if not vanished:
                break
        frames = [f for f in frames if len(f)]
        if not frames:
            return pd.DataFrame(columns=list(columns) if columns else META_COLUMNS), used
        df = pd.concat(frames, ignore_index=True, sort=False)
        return df, used

    def load(self, columns: Sequence[str] | None = None, warn: bool = True):
        """Each point once (see module doc), sorted by config, workload, params and seed."""
        need = None
        if columns is not None:
            need = list(dict.fromkeys(["point_id", "status", "finished_at", *SORT_COLUMNS, *columns]))
        df, _ = self.read_raw(need, warn=warn)
        df = dedupe(df)
        if columns is not None:
            df = df[[c for c in columns if c in df.columns]]
        return df

    def done_ids(self, engine_build: str | None = None) -> set[str]:
        """Point ids with a successful row: a sweep reuses these instead of running them.
        With ``engine_build``, only rows computed by that build of the engine count."""
        df, _ = self.read_raw(["point_id", "status", "engine_build"], warn=False)
        if not len(df):
            return set()
        ok = df["status"] == "ok"
        if engine_build is not None:
            ok &= df["engine_build"] == engine_build if "engine_build" in df.columns else False
        return set(df.loc[ok, "point_id"].astype(str))

    def compact(self) -> Path | None:
        """Merge all partitions into one (each point once), then remove the merged ones.

        Safe against a crash at any step: the merged partition is written atomically before
        anything is removed, and duplicates left by a crash in between are hidden by
        :func:`dedupe`. Partitions written meanwhile by another sweep are left alone.
        """
        df, used = self.read_raw(warn=False)
        if len(used) <= 1:
            return None
        df = dedupe(df, sort=False)
        rows = df.to_dict("records")
        rows = [{k: _from_pandas(v) for k, v in r.items()} for r in rows]
        out = self.write(rows)
        for p in used:
            try:
                p.unlink()
            except OSError:
                pass
        _fsync_dir(self.path)
        return out


def load(name: str, root: str | os.PathLike | None = None, columns: Sequence[str] | None = None):
    """The results of sweep or study ``name`` as a pandas DataFrame, one row per point.

    ``root`` defaults to ``$XLAT_RESULTS`` or ``results/`` under the current directory.
    Failed points are included with ``status == "error"`` and their ``error`` line.
    """
    store = Store(name, root)
    if not store.exists():
        raise ResultsError(f"no results named '{name}' under {store.root}")
    return store.load(columns=columns)


def names(root: str | os.PathLike | None = None) -> list[str]:
    """Stores under ``root`` that hold at least one partition."""
    r = Path(root) if root is not None else default_root()
    if not r.is_dir():
        return []
    return sorted(d.name for d in r.iterdir() if d.is_dir() and any(d.glob(PART_GLOB)))


def dedupe(df, sort: bool = True):
    """Each ``point_id`` once: its latest ``ok`` row, else its latest failed row.

    Successful rows of one point agree (the engine is deterministic) unless they come from
    different builds, and then the latest is the one a rerun asked for.
    """
    import pandas as pd

    if not len(df) or "point_id" not in df.columns:
        return df.reset_index(drop=True)
    # Ordered through a separate Series, not a helper column: a frame concatenated from many
    # partitions is fragmented, and inserting a column into it is slow (pandas warns).
    df = df.reset_index(drop=True)
    t = df["finished_at"] if "finished_at" in df.columns else pd.Series(range(len(df)))
    is_ok = df["status"] == "ok"
    ok = df.loc[t[is_ok].sort_values(kind="stable").index].drop_duplicates("point_id", keep="last")
    is_bad = ~is_ok & ~df["point_id"].isin(ok["point_id"])
    bad = df.loc[t[is_bad].sort_values(kind="stable").index].drop_duplicates("point_id", keep="last")
    out = pd.concat([ok, bad], ignore_index=True, sort=False)
    if sort:
        keys = [c for c in SORT_COLUMNS if c in out.columns]
        # Sorting on mixed-type columns (a parameter given as 1 in one point and "1G" in
        # another) must not fail: sort on the text form.
        out = out.sort_values(keys, key=_sort_key, kind="stable") if keys else out
    return out.reset_index(drop=True)


def _sort_key(s):
    import pandas as pd

    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return s
    return s.astype(str)


# -- statistics over time ---------------------------------------------------------------------

def series_text(series: Sequence[Mapping]) -> str:
    """A run's statistics over time (``Result.series``) as the JSON text of a row's ``series``
    column (an undefined ratio, NaN, becomes null)."""
    import json
    import math

    def safe(v):
        return None if isinstance(v, float) and not math.isfinite(v) else v

    return json.dumps([{k: safe(v) for k, v in iv.items()} for iv in series], separators=(",", ":"), allow_nan=False)


def series_of(value) -> list[dict]:
    """A row's ``series`` cell back as ``Result.series``: one dict per interval with the
    interval's changes and derived ratios (``xlat.api.interval_ratios``). A row without one
    (no interval, or a failed point) gives ``[]``."""
    import json

    from .api import interval_ratios

    if not isinstance(value, (str, bytes)) or not value:
        return []
    return [interval_ratios({k: v for k, v in iv.items() if v is not None}) for iv in json.loads(value)]


def curves_of(value) -> list:
    """A row's ``curves`` cell back as ``Result.curves`` (:class:`xlat.mrc.Curve`), for a
    point whose config asked for miss-ratio curves (``curves = [...]`` in the sweep spec); a
    row without one gives ``[]``."""
    import json

    from .mrc import Curve

    if not isinstance(value, (str, bytes)) or not value:
        return []
    return [Curve.from_dict(c) for c in json.loads(value)]


def series_frame(df, keys: Sequence[str] = ("point_id", "config_label", "workload", "params", "seed")):
    """The statistics over time of a results frame's points, long: one row per (point,
    interval), with ``keys`` of the point, ``interval`` (0, 1, ...), ``end_instructions`` (from
    the end of warm-up to the end of the interval) and every entry of the interval. Points
    without a series are left out."""
    import pandas as pd

    keys = [k for k in keys if k in df.columns]
    rows = []
    if "series" in df.columns:
        for rec in df[[*keys, "series"]].to_dict("records"):
            end = 0
            for i, iv in enumerate(series_of(rec["series"])):
                end += int(iv.get("instructions", 0))
                rows.append({**{k: rec[k] for k in keys}, "interval": i, "end_instructions": end, **iv})
    return pd.DataFrame(rows, columns=None if rows else [*keys, "interval", "end_instructions"])


def stat_columns(df) -> list[str]:
    """The ``stat.*`` columns of a results frame."""
    return [c for c in df.columns if str(c).startswith("stat.")]


def select_columns(df, patterns: Iterable[str]) -> list[str]:
    """Columns matching each pattern in turn (exact name, ``fnmatch`` glob, or a statistic's
    name without its ``stat.`` prefix). An unmatched pattern is an error naming it."""
    cols = [str(c) for c in df.columns]
    out: list[str] = []
    for pat in patterns:
        found = [c for c in cols if c == pat] or [c for c in cols if fnmatch.fnmatchcase(c, pat)] \
            or [c for c in cols if c == f"stat.{pat}"] or [c for c in cols if fnmatch.fnmatchcase(c, f"stat.{pat}")]
        if not found:
            raise ResultsError(f"no column matches '{pat}' (columns: {', '.join(cols[:12])}{', ...' if len(cols) > 12 else ''})")
        out += [c for c in found if c not in out]
    return out


# -- rows to Arrow --------------------------------------------------------------------------

def rows_to_table(rows: Sequence[Mapping]):
    """Arrow table from row dicts whose keys may differ (a failed row has no statistics).

    A column whose values mix types beyond int/float (a parameter given as 1 in one point and
    "1G" in another) is stored as text, so one odd value cannot make a batch unwritable.
    """
    import pyarrow as pa

    columns: dict[str, None] = {}
    for r in rows:
        for k in r:
            columns.setdefault(k, None)
    arrays, fields = [], []
    for name in columns:
        values = [r.get(name) for r in rows]
        # An undefined ratio (NaN) is stored as null, as in JSON; a column of them stays float.
        undefined = any(isinstance(v, float) and math.isnan(v) for v in values)
        if undefined:
            values = [None if isinstance(v, float) and math.isnan(v) else v for v in values]
        kinds = {_kind(v) for v in values if v is not None}
        if len(kinds) > 1 and kinds != {"int", "float"}:
            values = [None if v is None else _text(v) for v in values]
        elif kinds == {"int", "float"}:
            values = [None if v is None else float(v) for v in values]
        try:
            arr = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            arr = pa.array([None if v is None else _text(v) for v in values])
        if pa.types.is_null(arr.type):
            arr = arr.cast(pa.float64() if undefined else pa.string())
        arrays.append(arr)
        fields.append(name)
    return pa.Table.from_arrays(arrays, names=fields)


def _kind(v) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "str"
    return type(v).__name__


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _from_pandas(v):
    """pandas/numpy scalars back to Python values (NaN and NA become None)."""
    import pandas as pd

    if v is None:
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v.item() if hasattr(v, "item") else v


def _present(data: bytes, columns: Sequence[str]) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    have = set(pq.read_schema(pa.BufferReader(data)).names)
    return [c for c in columns if c in have]


_CHECKSUMMED = re.compile(r"part-\d+-[0-9a-f]+-([0-9a-f]{16})\.parquet")


def _checksum(data: bytes) -> str:
    """The first 16 hex digits of the SHA-256 of a partition's bytes."""
    return hashlib.sha256(data).hexdigest()[:16]


def _checksum_ok(path: Path, data: bytes) -> bool:
    """Whether a partition's bytes match the checksum in its name (names without one, from
    stores written before partitions carried checksums, pass)."""
    m = _CHECKSUMMED.fullmatch(path.name)
    return m is None or m.group(1) == _checksum(data)


class _StoreLock:
    """An exclusive ``flock`` on ``STORE/.lock``, released when the process ends in any way."""

    def __init__(self, store: Store, log):
        self.store, self.log, self.fd = store, log, -1

    def __enter__(self) -> None:
        import fcntl

        self.store.path.mkdir(parents=True, exist_ok=True)
        path = self.store.path / ".lock"
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(self.fd, 64, 0).decode(errors="replace").strip() or "?"
            if self.log is not None:
                print(f"{self.store.name}: another sweep (pid {holder}) is using {self.store.path}; "
                      f"waiting for it to finish", file=self.log, flush=True)
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX)  # Ctrl-C interrupts the wait
            except BaseException:
                os.close(self.fd)
                raise
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, f"{os.getpid()}\n".encode(), 0)

    def __exit__(self, *exc) -> None:
        os.close(self.fd)  # closing the descriptor releases the lock


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    # Makes the rename itself durable; some filesystems refuse to fsync a directory.
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
