"""Bad input never crashes, lies or destroys (issue 27): each case driven as a user would,
the CLI through a subprocess and the API through pytest."""
from __future__ import annotations

import json
import os
import stat
import threading

import pytest

from xlat_testutil import run_xlat

WL = "gups:footprint=64M"


# --- output paths: never replace what is not a regular file ----------------------------------


def test_run_json_to_dev_null_keeps_the_device():
    before = os.stat("/dev/null")
    p = run_xlat("run", "-w", WL, "--refs", "2000", "-q", "--json", "/dev/null")
    assert p.returncode == 0, p.stderr
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_run_json_to_dev_full_says_the_disk_is_full():
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    p = run_xlat("run", "-w", WL, "--refs", "2000", "-q", "--json", "/dev/full")
    assert p.returncode == 2 and "/dev/full" in p.stderr and len(p.stderr.splitlines()) == 1, p.stderr
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_run_json_through_a_symlink_and_a_fifo(tmp_path):
    (tmp_path / "link.json").symlink_to("real.json")
    p = run_xlat("run", "-w", WL, "--refs", "2000", "-q", "--json", str(tmp_path / "link.json"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads((tmp_path / "real.json").read_text())["stats"]["refs"] == 2000

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    p = run_xlat("run", "-w", WL, "--refs", "2000", "-q", "--json", str(fifo))
    reader.join(timeout=30)
    assert p.returncode == 0, p.stderr
    assert json.loads(got[0])["stats"]["refs"] == 2000
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["link.json", "pipe", "real.json"]


def test_record_to_dev_null_and_through_a_symlink(tmp_path):
    before = os.stat("/dev/null")
    p = run_xlat("record", "-w", WL, "--refs", "3000", "-o", "/dev/null")
    assert p.returncode == 0, p.stderr
    assert "3,000 references to /dev/null" in p.stdout
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_ino == before.st_ino

    (tmp_path / "t.xtr").symlink_to("real.xtr")
    p = run_xlat("record", "-w", WL, "--refs", "3000", "-o", str(tmp_path / "t.xtr"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "t.xtr").is_symlink() and (tmp_path / "real.xtr").stat().st_size > 0
    assert sorted(os.listdir(tmp_path)) == ["real.xtr", "t.xtr"]
