"""Bad input never crashes, lies or destroys (issue 27): each case driven as a user would,
the CLI through a subprocess and the API through pytest."""
from __future__ import annotations

import json
import math
import os
import stat
import threading
from pathlib import Path

import pytest

import xlat
from xlat_testutil import assert_one_line_error, run_xlat

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


# --- never lie: a run that measured nothing is an error ---------------------------------------

SHORT = "random:footprint=16M,reads=5000"


def test_an_output_never_replaces_an_input_of_the_command(tmp_path):
    # --json over the run's own config or trace, however spelled: refused before the run, in
    # one line, and both files stay as they were.
    cfg = tmp_path / "my.toml"
    cfg.write_text('base = "skylake"\n')
    trace = tmp_path / "t.champsim"
    trace.write_bytes(_champsim_record(0x10000000) * 64)
    before = (cfg.read_bytes(), trace.read_bytes())
    for out in (str(cfg), str(trace), str(tmp_path / "sub" / ".." / "my.toml")):
        p = run_xlat("run", "-c", str(cfg), "--trace", str(trace), "-q", "--json", out)
        assert_one_line_error(p, "is an input of this command")
    (tmp_path / "link.json").symlink_to(cfg)
    p = run_xlat("run", "-c", str(cfg), "-w", WL, "--refs", "2000", "-q", "--json", str(tmp_path / "link.json"))
    assert_one_line_error(p, "is an input of this command")
    assert (cfg.read_bytes(), trace.read_bytes()) == before
    # Another name is written as before.
    p = run_xlat("run", "-c", str(cfg), "--trace", str(trace), "-q", "--json", str(tmp_path / "out.json"))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "out.json").read_text())["stats"]["loads"] == 64


def test_an_output_never_lands_in_a_results_store_or_the_trace_cache(tmp_path, monkeypatch):
    from xlat import _io

    store = tmp_path / "results" / "mystudy"
    store.mkdir(parents=True)
    (store / "part-1-a-b.parquet").write_bytes(b"kept")
    for own in ("part-1-a-b.parquet", "part-2-c-d.parquet", ".lock"):
        with pytest.raises(OSError, match="a file of the results store"), _io.atomic_path(store / own):
            pass
    # (A study's report lives beside its partitions.)
    with _io.atomic_path(store / "report.md") as tmp:
        tmp.write_text("# report")
    cache = tmp_path / "cache"
    (cache / "ab").mkdir(parents=True)
    monkeypatch.setenv("XLAT_CACHE_DIR", str(cache))
    with pytest.raises(OSError, match="inside the trace cache"), _io.atomic_outputs(cache / "ab" / "t.xtr"):
        pass
    assert sorted(p.name for p in store.iterdir()) == ["part-1-a-b.parquet", "report.md"] and list((cache / "ab").iterdir()) == []
    assert (store / "part-1-a-b.parquet").read_bytes() == b"kept"
    with _io.atomic_path(tmp_path / "rows.csv") as tmp:
        tmp.write_text("ok")
    assert (tmp_path / "rows.csv").read_text() == "ok"


@pytest.mark.parametrize(
    "args, needle",
    [
        (("pcc-cost", "--tlb-entry-bytes", "-5"), "--tlb-entry-bytes"),
        (("run", "-w", WL, "--refs", "100", "--set", "core.freq_ghz=1e-300"), "core.freq_ghz"),
        (("run", "-w", "gups:threads=0", "--refs", "100"), "threads"),
        (("reuse", "-w", WL, "--refs", "1000", "--threshold", "-1"), "--threshold"),
        (("mrc", "-w", WL, "--refs", "1000", "-s", ""), "--structure"),
        (("run", "-w", WL, "--refs", "100", "--json", ""), "--json"),
    ],
)
def test_values_that_mean_nothing_are_refused_in_one_line(args, needle):
    # Each once ran (a 0-thread workload, an empty --json writing nothing, a 1e-300 GHz clock) or
    # ended in "internal error".
    assert_one_line_error(run_xlat(*args), needle)


def test_a_config_nested_too_deeply_is_one_line(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 2000 + "]" * 2000 + "\n")
    assert_one_line_error(run_xlat("run", "-c", str(deep), "-w", WL, "--refs", "100"), "nested too deeply")
    assert_one_line_error(run_xlat("sweep", str(deep)), "nested too deeply")


def test_warmup_longer_than_the_workload_is_one_line():
    p = run_xlat("run", "-w", SHORT, "--warmup", "10000", "--refs", "1000")
    assert_one_line_error(p, "warm-up (10000 references)", "ended after 5000")
    # Exactly as long measures nothing too; shorter measures the rest.
    assert_one_line_error(run_xlat("run", "-w", SHORT, "--warmup", "5000"), "warm-up")
    assert xlat.simulate("skylake", SHORT, warmup=4000).stats["refs"] == 1000


def test_warmup_too_long_through_the_api_and_in_a_sweep_row():
    with pytest.raises(xlat.SimulationError, match="warm-up"):
        xlat.simulate("skylake", SHORT, warmup="1M", refs="100K")
    from xlat.sweep import run_task

    row = run_task({}, SHORT, {"refs": 1000, "warmup": 10000}, {"seed": 1})
    assert row["status"] == "error" and "warm-up" in row["error"]


def test_an_empty_trace_is_an_error(tmp_path):
    empty = tmp_path / "empty.xtr"
    p = run_xlat("record", "-w", "random:footprint=16M,reads=0", "-o", str(empty))
    assert p.returncode == 0, p.stderr
    assert_one_line_error(run_xlat("run", "--trace", str(empty)), "no references")
    with pytest.raises(xlat.XlatError, match="no references"):
        xlat.simulate("skylake", trace=str(empty))


def test_undefined_ratios_are_null_in_json_and_parquet_not_zero(tmp_path):
    # A data-only workload never touches the L1I: its miss rate is undefined, not 0.
    r = xlat.simulate("skylake", SHORT, host_threads=1)
    assert r.stats["cache.l1i.accesses"] == 0 and math.isnan(r.stats["cache.l1i.miss_rate"])
    assert r.stats["cache.l1d.accesses"] > 0 and 0 <= r.stats["cache.l1d.miss_rate"] <= 1
    assert json.loads(r.to_json())["stats"]["cache.l1i.miss_rate"] is None
    # Two identical runs still compare equal, undefined ratios and all.
    assert xlat.simulate("skylake", SHORT, host_threads=1).stats == r.stats
    r.to_json(tmp_path / "r.json")
    assert xlat.Result.from_json(tmp_path / "r.json").stats == r.stats

    import pyarrow.parquet as pq

    from xlat.results import rows_to_table
    from xlat.sweep import flatten_stats

    pq.write_table(rows_to_table([flatten_stats(r.stats), flatten_stats(r.stats)]), tmp_path / "p.parquet")
    col = pq.read_table(tmp_path / "p.parquet").column("stat.cache.l1i.miss_rate")
    assert str(col.type) == "double" and col.null_count == 2

    p = run_xlat("run", "-w", SHORT, "--all-stats")
    assert p.returncode == 0 and "nan" not in p.stdout.lower().replace("nanosec", ""), p.stdout


# --- the API and the CLI speak xlat: bad arguments are xlat errors naming the argument -------


@pytest.mark.parametrize(
    "kwargs, error, needle",
    [
        ({"refs": -5}, "ArgumentError", "refs"),
        ({"refs": "lots"}, "ArgumentError", "refs"),
        ({"refs": 1e30}, "ArgumentError", "refs"),
        ({"refs": [1]}, "ArgumentError", "refs"),
        ({"warmup": "1.5"}, "ArgumentError", "warmup"),
        ({"interval": -1}, "ArgumentError", "interval"),
        ({"seed": -1}, "ArgumentError", "seed"),
        ({"seed": 2**64}, "ArgumentError", "seed"),
        ({"seed": "one"}, "ArgumentError", "seed"),
        ({"seed": 1.5}, "ArgumentError", "seed"),
        ({"host_threads": 3}, "ArgumentError", "host_threads"),
        ({"host_threads": 0}, "ArgumentError", "host_threads"),
        ({"host_threads": "2"}, "ArgumentError", "host_threads"),
        ({"threads": 2}, "ArgumentError", "threads"),
        ({"prefault": "no"}, "ArgumentError", "prefault"),
        ({"progress": 5}, "ArgumentError", "progress"),
        ({"workload": 42}, "WorkloadError", "workload"),
        ({"workload": "nosuch"}, "WorkloadError", "nosuch"),
        ({"workload": None, "trace": 42}, "TraceError", "trace"),
        ({"workload": None, "trace": "/nonexistent.xtr"}, "TraceError", "/nonexistent.xtr"),
    ],
)
def test_bad_api_arguments_raise_xlat_errors_naming_them(kwargs, error, needle):
    args = {"workload": WL, "refs": 1000, **kwargs}
    with pytest.raises(getattr(xlat, error)) as e:
        xlat.simulate("skylake", **args)
    assert isinstance(e.value, xlat.XlatError) and needle in str(e.value), str(e.value)
    if error == "ArgumentError":
        assert str(e.value).startswith(needle + ":") and isinstance(e.value, ValueError)


@pytest.mark.parametrize(
    "args, needle",
    [(("--refs", "1e30"), "--refs"), (("--seed", "-1"), "--seed"), (("--seed", "x"), "--seed"),
     (("--warmup", "-3"), "--warmup"), (("--host-threads", "3"), "--host-threads")],
)
def test_bad_cli_options_are_named(args, needle):
    assert_one_line_error(run_xlat("run", "-w", WL, *args), needle)


# --- traces: read by content; a wrong format names the file, the offset and the cause -------


def _champsim_record(addr: int) -> bytes:
    # ip, is_branch, taken, 2 destination registers, 4 source registers, 2 destination and
    # 4 source memory operands (little-endian).
    import struct

    return struct.pack("<QBB2B4B2Q4Q", 0x400000, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, addr, 0, 0, 0)


def test_traces_are_read_by_content_whatever_their_name(tmp_path):
    import gzip

    native = tmp_path / "t.xtr"
    assert run_xlat("record", "-w", SHORT, "--refs", "3000", "-o", str(native)).returncode == 0
    # (Every format under gzip, xz and zstd: the trace reader's own tests.)
    gz_native = tmp_path / "looks-like.txt"
    gz_native.write_bytes(gzip.compress(native.read_bytes()))
    gz = tmp_path / "champsim.log"
    gz.write_bytes(gzip.compress(b"".join(_champsim_record(0x7F00_0000_0000 + 64 * i) for i in range(500))))
    for path, fmt, refs in [(gz_native, "native", 3000), (gz, "champsim", 500)]:
        r = xlat.simulate("skylake", trace=str(path))
        assert r.workload["params"]["format"] == fmt and r.stats["refs"] == refs


def test_a_wrong_trace_format_is_one_line_naming_file_offset_and_cause(tmp_path):
    native = tmp_path / "t.xtr"
    assert run_xlat("record", "-w", SHORT, "--refs", "3000", "-o", str(native)).returncode == 0
    line = assert_one_line_error(run_xlat("run", "--trace", str(native), "--trace-format", "champsim"), str(native), "byte offset 0")
    assert "native trace" in line
    # Addresses a user program cannot have (here 2^50, beyond the 47-bit tables): the file
    # is named, with the format it was read as.
    odd = tmp_path / "odd.bin"
    odd.write_bytes(b"".join(_champsim_record(2**50 + 64 * i) for i in range(10)))
    line = assert_one_line_error(run_xlat("run", "--trace", str(odd)), str(odd), "champsim", "--trace-format")
    with pytest.raises(xlat.TraceError, match="odd.bin"):
        xlat.simulate("skylake", trace=str(odd))


def _v4_native_trace(path: Path, addrs: list[int]) -> None:
    """A version-4 native trace (no block checksums) of 8-byte loads at the ascending `addrs`:
    the header, then one zstd frame of records whose block is stored raw (no compressor needed)."""
    import struct

    def leb(v: int) -> bytes:
        out = bytearray()
        while v >= 0x80:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        return bytes(out + bytes([v]))

    records, prev = bytearray(), 0
    for a in addrs:
        records += b"\x00" + leb((a - prev) << 1)  # (zig-zag of an ascending step)
        prev = a
    records += b"\xff" + leb(len(addrs))
    assert len(records) < 256
    # Frame: magic, single segment with a 1-byte content size, one last raw block.
    frame = b"\x28\xb5\x2f\xfd" + bytes([0x20, len(records)]) + (1 | len(records) << 3).to_bytes(3, "little") + records
    path.write_bytes(b"XLATTRC\0" + struct.pack("<HIIIII", 4, 30, 0, 1, 0, 0) + frame)


def test_a_version_4_native_trace_reads_with_one_note(tmp_path, capsys):
    old = tmp_path / "old.xtr"
    _v4_native_trace(old, [0x7F00_0000_0000 + 64 * i for i in range(40)])
    for _ in range(2):
        assert xlat.simulate("skylake", trace=str(old)).stats["refs"] == 40
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith(f"xlat: note: {old}: native trace version 4 carries no checksums"), err
    # A version-5 trace has none.
    new = tmp_path / "new.xtr"
    xlat._core.record(SHORT, str(new), None, 1)
    assert xlat.simulate("skylake", trace=str(new)).stats["refs"] == 5000
    assert capsys.readouterr().err == ""


def test_a_corrupt_native_block_is_one_line_naming_it(tmp_path):
    t = tmp_path / "t.xtr"
    assert run_xlat("record", "-w", SHORT, "--refs", "3000", "-o", str(t)).returncode == 0
    data = bytearray(t.read_bytes())
    header_len = int.from_bytes(data[10:14], "little")
    data[header_len + 16 + 10] ^= 0x01  # a byte of block 0's payload
    t.write_bytes(bytes(data))
    assert_one_line_error(run_xlat("run", "--trace", str(t)), str(t), "block 0: checksum mismatch", f"at byte offset {header_len}")
    # Cut short inside the block: named too.
    t.write_bytes(bytes(data[:header_len + 16 + 5]))
    assert_one_line_error(run_xlat("run", "--trace", str(t)), str(t), "block 0: truncated: the file ends 5 bytes into its")


def test_a_champsim_trace_prefaults_its_pages_and_fetches_on_request(tmp_path):
    t = tmp_path / "t.champsim"
    t.write_bytes(b"".join(_champsim_record(0x7F00_0000_0000 + 4096 * i) for i in range(300)))
    lazy = xlat.simulate("skylake", trace=str(t))
    pre = xlat.simulate("skylake", trace=str(t), prefault=True)
    assert (lazy["faults"], pre["faults"]) == (300, 0)
    out = tmp_path / "r.json"
    p = run_xlat("run", "-q", "--trace", str(t), "--trace-format", "champsim+fetch", "--prefault", "--json", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["stats"]["faults"] == 0 and doc["stats"]["fetches"] == 300 and doc["workload"]["params"]["fetch"] == "true"
    # A pipe cannot be read twice: prefaulting it is one line saying so.
    fifo = tmp_path / "t.fifo"
    os.mkfifo(fifo)
    with pytest.raises(xlat.TraceError, match="must be a regular file"):
        xlat.simulate("skylake", trace=str(fifo), prefault=True)


def test_a_maps_sidecar_makes_the_touched_mappings_the_regions(tmp_path):
    # 300 pages touched inside a 4 MB mapping; an untouched mapping beside it.
    t = tmp_path / "t.champsim"
    t.write_bytes(b"".join(_champsim_record(0x7F00_0000_0000 + 4096 * i) for i in range(300)))
    pages = xlat.simulate("skylake", trace=str(t), prefault=True)
    (tmp_path / "t.champsim.maps").write_text(
        "7f0000000000-7f0000400000 rw-p 00000000 00:00 0\n"
        "7f0000400000-7f0000800000 rw-p 00000000 00:00 0 [untouched]\n")
    maps = xlat.simulate("skylake", trace=str(t), prefault=True)
    assert (pages["faults"], maps["faults"]) == (0, 0)
    assert (pages["mapped_bytes"], maps["mapped_bytes"]) == (300 * 4096, 4 << 20)
    # A bad sidecar is one line naming it and the line.
    (tmp_path / "t.champsim.maps").write_text("7f0000000000 rw-p\n")
    with pytest.raises(xlat.TraceError, match=r"t\.champsim\.maps.*line 1: no START-END range"):
        xlat.simulate("skylake", trace=str(t), prefault=True)
    p = run_xlat("run", "-q", "--trace", str(t), "--prefault")
    assert_one_line_error(p, "line 1: no START-END range")


def test_a_kernel_recorded_for_champsim_replays_in_the_same_cycles(tmp_path):
    out = tmp_path / "chase.champsim.xz"
    p = run_xlat("record", "-w", "chase:footprint=16M,limit=5000", "-o", str(out), "--format", "champsim")
    assert p.returncode == 0, p.stderr
    replay = xlat.simulate("skylake", trace=str(out))
    kernel = xlat.simulate("skylake", "chase:footprint=16M,limit=5000")
    assert replay.workload["params"]["format"] == "champsim"
    assert (replay["refs"], replay["cycles"]) == (kernel["refs"], kernel["cycles"])
    with pytest.raises(xlat.TraceError, match="cannot record format 'lackey'"):
        xlat._core.record("gups", str(tmp_path / "x"), 10, 1, "lackey")
    # A native trace converted to ChampSim's format replays as the ChampSim recording does.
    native = tmp_path / "chase.xtr"
    xlat._core.record("chase:footprint=16M,limit=5000", str(native), None, 1)
    converted = tmp_path / "converted.champsim"
    assert xlat._core.convert_trace([str(native)], None, str(converted), None, None, "champsim") == kernel["refs"]
    again = xlat.simulate("skylake", trace=str(converted))
    assert (again["refs"], again["cycles"]) == (kernel["refs"], kernel["cycles"])
    with pytest.raises(xlat.TraceError, match="cannot record format 'lackey'"):
        xlat._core.convert_trace([str(native)], None, str(tmp_path / "y"), None, None, "lackey")


# --- stop when asked: Ctrl-C and SIGTERM within a second, exit 130/143, nothing left behind ----

SLOW_SETUP = "bfs:scale=22"  # builds a graph for ~20 s before its first reference


def _stop_after(args: list[str], sig: int, cwd, wait: float = 2.0) -> tuple[int, str, float]:
    import subprocess
    import time

    from xlat_testutil import xlat_exe

    # (The trace cache off: a graph an earlier test left there would load in a moment, and the
    # setup would be over before the signal.)
    proc = subprocess.Popen([xlat_exe(), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env={**os.environ, "XLAT_CACHE_DIR": "off"})
    time.sleep(wait)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    t0 = time.monotonic()
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        pytest.fail(f"{args[0]} did not stop within 30 s of signal {sig}")
    return proc.returncode, err, time.monotonic() - t0


@pytest.mark.parametrize("sig, status", [(2, 130), (15, 143)])
@pytest.mark.parametrize("command", ["run", "record"])
def test_signals_stop_a_slow_setup_within_a_second(tmp_path, command, sig, status):
    out = ["--json", "r.json"] if command == "run" else ["-o", "t.xtr"]
    code, err, took = _stop_after([command, "-w", SLOW_SETUP, "--refs", "1000", *out], sig, tmp_path)
    assert code == status and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert took < 1.5, f"took {took:.1f} s to stop"
    assert os.listdir(tmp_path) == [], "a stopped command left files behind"


def test_sigterm_stops_xlat_trace_and_the_traced_program(tmp_path):
    import shutil

    if shutil.which("valgrind") is None:
        pytest.skip("no valgrind")
    code, err, took = _stop_after(["trace", "-o", "t.xtr", "--", "sleep", "60"], 15, tmp_path, wait=3.0)
    assert code == 143 and err.strip().splitlines()[-1] == "xlat: terminated", err
    assert took < 6  # the traced program gets SIGTERM and up to 5 s to go
    assert os.listdir(tmp_path) == []


def test_ctrl_c_stops_the_api_during_a_slow_setup():
    import _thread
    import threading
    import time

    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        xlat.simulate("skylake", "bfs:scale=23", refs=1000)
    assert time.monotonic() - t0 < 1.5
    # The graph build stops too, rather than finish on its own thread (some 20 s of CPU).
    cpu = time.process_time()
    time.sleep(1.5)
    assert time.process_time() - cpu < 0.5


# --- the results store: checksummed partitions, one sweep at a time ---------------------------


def test_every_single_bit_flip_in_a_partition_is_caught_and_its_points_rerun(tmp_path, capsys):
    from xlat import results

    rows = [{"point_id": f"p{i}", "status": "ok", "stat.ipc": 0.5 + i / 7, "stat.walks": 1000 + i} for i in range(8)]
    store = results.Store("s", tmp_path)
    part = store.write(rows)
    good = part.read_bytes()
    assert store.done_ids() == {f"p{i}" for i in range(8)}
    for k in range(40):
        bit = (k * 7919) % (len(good) * 8)
        bad = bytearray(good)
        bad[bit // 8] ^= 1 << (bit % 8)
        part.write_bytes(bytes(bad))
        assert store.done_ids() == set(), f"bit {bit} flipped went unnoticed"
        assert "corrupt (checksum mismatch)" in capsys.readouterr().err
        aside = tmp_path / "s" / ("corrupt-" + part.name)
        assert aside.exists() and not part.exists()
        aside.unlink()
    part.write_bytes(good)
    assert store.load()["stat.walks"].tolist() == [1000 + i for i in range(8)]


def test_a_second_sweep_on_one_store_waits_for_the_first(tmp_path):
    import subprocess
    import time

    from xlat import results
    from xlat_testutil import xlat_exe

    spec = tmp_path / "two.toml"
    spec.write_text('name = "two"\nrefs = "2K"\nseeds = [1, 2]\nconfigs = ["skylake"]\nworkloads = ["gups:footprint=16M"]\n')
    store = results.Store("two", tmp_path / "r")
    with store.lock():
        proc = subprocess.Popen([xlat_exe(), "sweep", str(spec), "--root", str(tmp_path / "r"), "--workers", "1",
                                 "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(4)  # (the message below proves it reached the lock meanwhile)
        assert proc.poll() is None and store.partitions() == [], "the second sweep did not wait"
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 0, err
    assert "another sweep" in err and "waiting" in err
    assert len(results.load("two", root=tmp_path / "r")) == 2


# --- words ---------------------------------------------------------------------------------


def test_workload_parameters_do_not_reuse_run_option_names_or_internal_names():
    run_options = {"refs", "warmup", "prefault", "interval", "host_threads", "mix", "trace"}
    for w in xlat.workloads():
        names = {p["name"] for p in w["params"]}
        assert not names & run_options, (w["name"], names & run_options)
        for p in w["params"]:
            assert "()" not in p["doc"] and "::" not in p["doc"], (w["name"], p["name"], p["doc"])


def test_user_facing_text_names_the_papers_not_their_spec_files():
    for key, _default, _kind, doc in _core_keys():
        assert "seed 0" not in doc and "seeds/" not in doc and "spec 0" not in doc, (key, doc)


def _core_keys():
    from xlat import _core

    return _core.config_keys()


def test_xlat_trace_keeps_the_programs_output_apart_and_records_what_was_traced(tmp_path):
    import shutil

    if shutil.which("valgrind") is None:
        pytest.skip("no valgrind")
    trace = tmp_path / "echo.xtr"
    p = run_xlat("trace", "-o", str(trace), "--", "/bin/echo", "hello world", timeout=180)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "hello world\n"  # the program's output, and only it
    assert p.stderr.startswith("xlat: wrote ") and str(trace) in p.stderr
    r = xlat.simulate("skylake", trace=str(trace))
    assert r.workload["params"]["workload"] == "/bin/echo 'hello world'"


def test_a_multi_stream_recording_to_a_device_is_refused_not_spread_over_dev(tmp_path):
    before = set(os.listdir("/dev"))
    p = run_xlat("record", "-w", "random:footprint=16M,reads=2000,threads=2", "-o", "/dev/null")
    assert_one_line_error(p, "2 streams", "/dev/null")
    assert set(os.listdir("/dev")) == before


def test_sigterm_stops_a_sweep_with_143_and_keeps_its_points(tmp_path):
    import signal
    import subprocess
    import time

    from xlat import results
    from xlat_testutil import xlat_exe

    spec = tmp_path / "term.toml"
    spec.write_text('name = "term"\nrefs = "1M"\nseeds = [1, 2, 3, 4, 5, 6]\nconfigs = ["skylake"]\n'
                    'workloads = ["gups:footprint=16M", "gups:footprint=64M"]\n')
    root = tmp_path / "r"
    proc = subprocess.Popen([xlat_exe(), "sweep", str(spec), "--root", str(root), "--workers", "1", "--no-progress"],
                            start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    store = results.Store("term", root)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None and not store.done_ids():
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read()
        proc.send_signal(signal.SIGTERM)  # the sweep's own process, as `kill` or a batch system
        t0 = time.monotonic()
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 143, err
    assert "interrupted" in err.splitlines()[-1] and "Traceback" not in err
    assert time.monotonic() - t0 < 15
    assert 1 <= len(results.load("term", root=root)) < 12


def test_every_row_of_the_summary_is_explained():
    from xlat import glossary
    from xlat.cli import SUMMARY_LABELS, summary_rows

    runs = [xlat.simulate("skylake", WL, refs=20000, host_threads=1, **kw)
            for kw in ({}, {"virt.enabled": True}, {"os.page_policy": "thp", "system.cores": 2, "os.processes": 2})]
    for r in runs:
        for label, _ in summary_rows(r.stats):
            names = SUMMARY_LABELS.get(label.lower())
            assert names, f"summary row '{label}' has no statistics to explain it"
            assert all(glossary.lookup(n) for n in names), (label, names)
    p = run_xlat("explain", "page walks", "tlb.l2.mpki")
    assert p.returncode == 0 and "walks.retries" in p.stdout and "dirty bit" in p.stdout and "per thousand" in p.stdout, p.stderr
    assert_one_line_error(run_xlat("explain", "no such thing"), "no such thing")


def test_a_warmup_in_instructions_is_recorded_and_exclusive(tmp_path):
    r = xlat.simulate("skylake", "bfs:scale=12", refs="20K", warmup_instructions="50K")
    assert r["refs"] == 20_000 and r.to_dict()["run"]["warmup_instructions"] == 50_000
    with pytest.raises(xlat.ArgumentError, match="not both"):
        xlat.simulate("skylake", "bfs:scale=12", refs=10, warmup=5, warmup_instructions=5)
    assert_one_line_error(run_xlat("run", "-w", "bfs:scale=10", "--warmup", "5", "--warmup-instructions", "5"), "not both")


def test_an_input_that_is_no_file_is_named_for_what_it_is(tmp_path):
    # /dev/zero and directories were "does not exist"; /dev/zero as a sweep spec filled the
    # host's memory in seconds and ignored SIGTERM.
    assert_one_line_error(run_xlat("run", "-c", "/dev/zero", "-w", WL, "--refs", "100"), "'/dev/zero' is a device")
    assert_one_line_error(run_xlat("run", "-c", str(tmp_path), "-w", WL, "--refs", "100"), "is a directory")
    assert_one_line_error(run_xlat("sweep", "/dev/zero", timeout=30), "'/dev/zero' is a device")
    # A pipe is read, but only up to a size no spec reaches.
    fifo = tmp_path / "spec"
    os.mkfifo(fifo)
    feeder = threading.Thread(target=lambda: _feed(fifo, 80 << 20), daemon=True)
    feeder.start()
    assert_one_line_error(run_xlat("sweep", str(fifo), timeout=60), "larger than 64 MB")


def _feed(path, n: int) -> None:
    try:
        with open(path, "wb") as f:
            f.writelines(b"\0" * (1 << 20) for _ in range(n >> 20))
    except BrokenPipeError:
        pass


def test_a_config_file_without_the_toml_suffix_is_read_and_bad_utf8_is_named(tmp_path):
    mine = tmp_path / "machine.cfg"
    mine.write_text('base = "skylake"\n[tlb.l2]\nentries = 3072\n')
    p = run_xlat("run", "-c", "machine.cfg", "-w", WL, "--refs", "100", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    bad = tmp_path / "bad.toml"
    bad.write_bytes(b'a = "\xff"\n')
    assert_one_line_error(run_xlat("run", "-c", str(bad), "-w", WL, "--refs", "100"), "bad.toml", "not UTF-8", "byte 5")


def test_outputs_that_cannot_be_written_are_named_before_the_run(tmp_path):
    missing = tmp_path / "no" / "such" / "x.json"
    assert_one_line_error(run_xlat("run", "-w", WL, "--refs", "100", "--json", str(missing)), "its directory", "does not exist")
    afile = tmp_path / "f"
    afile.write_text("x")
    assert_one_line_error(run_xlat("run", "-w", WL, "--refs", "100", "--json", str(afile / "x.json")), "is not a directory")
    # An image format and reuse's output directory were checked only after the simulation.
    p = run_xlat("mrc", "-w", WL, "--refs", "1000", "--plot", str(tmp_path / "curve.xyz"))
    assert_one_line_error(p, "unknown image format 'xyz'")
    assert "miss-ratio curves" not in p.stdout
    p = run_xlat("reuse", "-w", WL, "--refs", "1000", "-o", str(afile))
    assert_one_line_error(p, "exists and is not a directory")
    assert p.stdout == ""


def test_a_way_count_of_zero_is_blamed_on_the_ways():
    assert_one_line_error(run_xlat("run", "-w", WL, "--refs", "100", "--set", "tlb.l2.ways=0"), "'tlb.l2.ways'")


def test_a_workload_larger_than_the_host_is_refused_before_it_is_built():
    # Both used to abort with a Rust backtrace (SIGABRT) once the allocation failed.
    line = assert_one_line_error(run_xlat("run", "-w", "kvstore:keys=16G", "--refs", "100"), "host memory", "available")
    assert "materialize" not in line
    assert_one_line_error(run_xlat("run", "-w", "gups:footprint=1T,materialize=yes", "--refs", "100"), "host memory", "materialize=no")
    with pytest.raises(xlat.WorkloadError, match="host memory"):
        xlat.simulate("skylake", "kvstore:keys=16G", refs=100)


def test_an_allocation_the_host_cannot_satisfy_is_one_line_and_exit_2():
    import subprocess
    import sys

    # 1 EB: more than any host maps, whatever its overcommit policy. What the estimate above does not foresee ends
    # the process this way, not in an abort.
    p = subprocess.run([sys.executable, "-c", "import xlat._core as c; c._allocate(1 << 60)"], check=False, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2, (p.returncode, p.stderr)
    assert p.stderr.splitlines() == ["xlat: error: out of host memory: an allocation of 1099511627776 MB failed; make the workload's input or the simulated machine smaller"]


class _Tty:
    def __init__(self):
        self.text = ""

    def isatty(self):
        return True

    def write(self, s):
        self.text += s

    def flush(self):
        pass


def test_the_progress_line_shows_input_building_then_references_rate_and_time_left(monkeypatch):
    import time

    from xlat.cli import ProgressBar

    monkeypatch.setattr(ProgressBar, "DELAY", 0.0)
    monkeypatch.setattr(ProgressBar, "PERIOD", 0.01)
    out = _Tty()

    def shows(needle: str) -> bool:
        # (Polled: the line is drawn by a thread of its own, whenever a loaded host runs it.)
        deadline = time.monotonic() + 10
        while needle not in out.text and time.monotonic() < deadline:
            time.sleep(0.01)
        return needle in out.text

    with ProgressBar("gups", out=out) as bar:
        assert shows("gups: building the input")
        bar(1000, 10_000)
        time.sleep(0.05)
        bar(5000, 10_000)
        assert shows("5k of 10k references (50%)")
        assert shows(" left")
        assert "/s, " in out.text
    # Erased when done: the last thing written blanks the line.
    assert out.text.endswith("\r")
    assert out.text.rstrip("\r").rsplit("\r", 1)[-1].strip() == ""
    # Not a terminal: nothing at all, and no thread.
    class Pipe(_Tty):
        def isatty(self):
            return False

    pipe = Pipe()
    with ProgressBar("gups", out=pipe) as bar:
        bar(5000, 10_000)
    assert pipe.text == "" and bar._thread is None


def test_a_piped_run_prints_what_it_printed_before():
    # The summary on stdout, nothing on stderr but the demand-paging note.
    p = run_xlat("run", "-w", WL, "--refs", "1000")
    assert p.returncode == 0
    assert "\r" not in p.stderr and "\r" not in p.stdout


def test_newcomer_paths(tmp_path):
    import shutil

    root = Path(__file__).resolve().parents[1]
    # A copied example sweep runs on its own (it needed my-machine.toml beside it).
    shutil.copy(root / "examples" / "pwc-sweep.toml", tmp_path)
    p = run_xlat("sweep", "pwc-sweep.toml", "--quick", "--root", str(tmp_path / "r"), "--workers", "1", cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    # Chosen columns keep the columns that tell rows apart.
    p = run_xlat("results", "pwc-sweep", "--root", str(tmp_path / "r"), "-c", "ipc,walks")
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[0].split()
    assert head[:2] == ["config_label", "workload"] and head[-2:] == ["ipc", "walks"]
    # config show wraps its meanings (lines of up to 585 characters before).
    p = run_xlat("config", "show", "skylake")
    assert max(len(line) for line in p.stdout.splitlines()) <= 120


def test_a_device_is_no_trace():
    # `--trace /dev/zero` read zeros (ChampSim records without memory operands) forever.
    assert_one_line_error(run_xlat("run", "--trace", "/dev/zero", "--refs", "1K", timeout=60), "/dev/zero", "is a device")
