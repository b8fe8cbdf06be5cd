"""Reference counts and atomic writes (pure Python, no engine)."""
from __future__ import annotations

import errno
import os
import stat
import threading

import pytest

from xlat._io import atomic_outputs, atomic_path, atomic_write_text, parse_count


@pytest.mark.parametrize(
    "text, n",
    [("1000000", 10**6), ("1_000_000", 10**6), ("1e6", 10**6), ("10M", 10**7), ("2.5k", 2500),
     ("1G", 10**9), ("0", 0), (" 7 ", 7), (12, 12), (1e3, 1000)],
)
def test_counts(text, n):
    assert parse_count(text) == n


@pytest.mark.parametrize("text", ["", "M", "-5", "1.5", "10Q", "1e-3", "nan", "inf", True])
def test_bad_counts(text):
    with pytest.raises(ValueError):
        parse_count(text)


def test_atomic_write_replaces_whole_file_and_leaves_nothing_behind(tmp_path):
    p = tmp_path / "out.json"
    atomic_write_text(p, "old\n")
    atomic_write_text(p, "new\n")
    assert p.read_text() == "new\n"
    assert os.listdir(tmp_path) == ["out.json"]
    # The file gets the usual umask-based mode, not mkstemp's private 0600.
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask


def test_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "out.json"
    p.write_text("old\n")
    with pytest.raises(RuntimeError), atomic_path(p) as tmp:
        tmp.write_text("half of a fi")
        raise RuntimeError("crash mid-write")
    assert p.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.json"]


def test_temporary_name_keeps_the_extension(tmp_path):
    with atomic_path(tmp_path / "trace.xtr.zst") as tmp:
        assert tmp.name.endswith(".xtr.zst") and tmp.parent == tmp_path
        tmp.write_text("x")


def test_missing_directory_names_the_destination(tmp_path):
    with pytest.raises(OSError) as e:
        atomic_write_text(tmp_path / "nodir" / "out.json", "x")
    assert e.value.filename == str(tmp_path / "nodir" / "out.json")


def test_atomic_outputs_moves_every_file_the_writer_made(tmp_path):
    with atomic_outputs(tmp_path / "t.xtr") as (tmp, written):
        assert tmp.name == "t.xtr" and tmp.parent != tmp_path
        (tmp.parent / "t.0.xtr").write_text("a")
        (tmp.parent / "t.1.xtr").write_text("b")
    assert written == [tmp_path / "t.0.xtr", tmp_path / "t.1.xtr"]
    assert sorted(os.listdir(tmp_path)) == ["t.0.xtr", "t.1.xtr"]


def test_atomic_outputs_leaves_nothing_on_failure(tmp_path):
    with pytest.raises(RuntimeError), atomic_outputs(tmp_path / "t.xtr") as (tmp, _):
        tmp.write_text("half")
        raise RuntimeError("writer failed")
    assert os.listdir(tmp_path) == []


def test_a_directory_is_not_a_destination(tmp_path):
    with pytest.raises(IsADirectoryError) as e:
        atomic_write_text(tmp_path, "x")
    assert e.value.filename == str(tmp_path)
    with pytest.raises(IsADirectoryError), atomic_outputs(tmp_path) as _:
        pass
    assert os.listdir(tmp_path) == []


def test_a_symlink_is_followed_and_stays_a_link(tmp_path):
    (tmp_path / "real.json").write_text("old\n")
    (tmp_path / "link.json").symlink_to("real.json")
    atomic_write_text(tmp_path / "link.json", "new\n")
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_text() == "new\n"
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_a_dangling_symlink_creates_the_file_it_names(tmp_path):
    (tmp_path / "link.json").symlink_to("made.json")
    atomic_write_text(tmp_path / "link.json", "x\n")
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "made.json").read_text() == "x\n"


def test_replacing_a_file_keeps_its_mode(tmp_path):
    p = tmp_path / "out.json"
    p.write_text("old\n")
    p.chmod(0o640)
    atomic_write_text(p, "new\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o640


@pytest.mark.parametrize("device", ["/dev/null", "/dev/full"])
def test_a_character_device_is_written_through_not_replaced(device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    before = os.stat(device)
    try:
        atomic_write_text(device, "x\n")
    except OSError as e:
        assert device == "/dev/full" and e.errno == errno.ENOSPC  # the device's own answer
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino and after.st_rdev == before.st_rdev


def test_a_fifo_is_written_through(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write_text(fifo, "through the pipe\n")
    reader.join(timeout=10)
    assert got == ["through the pipe\n"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]
    with atomic_outputs(fifo) as (out, written):
        assert out == fifo
    assert written == [fifo]


def test_a_socket_is_refused(tmp_path):
    import socket

    path = tmp_path / "s"
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(path))
        with pytest.raises(OSError) as e:
            atomic_write_text(path, "x")
    assert e.value.filename == str(path) and stat.S_ISSOCK(os.lstat(path).st_mode)
