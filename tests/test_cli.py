"""The `xlat` command, driven as a user drives it: one-line errors with status 2, --help
everywhere, atomic --json, determinism, Ctrl-C."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from xlat import _core
from xlat_testutil import assert_one_line_error, has_config_key, has_core, run_xlat, xlat_exe

needs_sim = pytest.mark.skipif(not has_core("simulate", "resolve_config"), reason="engine has no simulate() yet")
WL = "gups:footprint=1G"


# --- errors: exactly one line, exit status 2 -------------------------------------------------


def test_no_command():
    assert_one_line_error(run_xlat(), "COMMAND")


def test_unknown_command():
    assert_one_line_error(run_xlat("frobnicate"), "frobnicate")


def test_unknown_preset_lists_presets():
    p = run_xlat("run", "--config", "nosuch", "--workload", "gups", "--refs", "1000")
    assert_one_line_error(p, "nosuch", "skylake", "zen3")


@needs_sim
def test_zero_entry_tlb():
    p = run_xlat("run", "--config", "skylake", "--workload", WL, "--refs", "1000", "--set", "tlb.l2.entries=0")
    assert_one_line_error(p, "tlb.l2.entries")


@needs_sim
def test_unknown_key_suggests_neighbours():
    p = run_xlat("run", "--workload", WL, "--refs", "1000", "--set", "tlb.l2.entires=2048")
    assert_one_line_error(p, "tlb.l2.entires", "tlb.l2.entries")


@needs_sim
def test_non_power_of_two_sets():
    p = run_xlat("run", "--workload", WL, "--refs", "1000", "--set", "tlb.l2.entries=1200")
    assert_one_line_error(p, "tlb.l2.entries", "power of two")


@needs_sim
def test_unknown_workload():
    assert_one_line_error(run_xlat("run", "--workload", "nosuch", "--refs", "1000"), "nosuch")


@needs_sim
def test_bad_workload_parameter():
    assert_one_line_error(run_xlat("run", "--workload", "gups:nosuchparam=3", "--refs", "1000"), "nosuchparam")


@pytest.mark.parametrize(
    "args, needle",
    [
        (("run", "--workload", "gups", "--refs", "10Q"), "10Q"),
        (("run", "--workload", "gups", "--set", "novalue"), "novalue"),
        (("run", "--refs", "1000"), "--workload"),
        (("run", "--workload", "gups", "--trace-format", "elf"), "elf"),
        (("run", "--trace", "/no/such/trace.xtr"), "/no/such/trace.xtr"),
        (("run", "--workload", "gups", "--trace", "/no/such/trace.xtr"), "not --workload and --trace"),
        (("config", "show", "nosuch"), "nosuch"),
        (("config",), "SUBCOMMAND"),
        (("record", "--workload", "gups"), "--output"),
        (("run", "--workload", "gups", "--host-threads", "3"), "--host-threads"),
        (("run", "--workload", "gups", "--threads", "1"), "--threads is now --host-threads"),
        (("run", "--workload", "gups", "--interval", "abc"), "--interval"),
        (("run", "--workload", "gups", "--interval", "-1M"), "--interval"),
    ],
)
def test_usage_errors(args, needle):
    assert_one_line_error(run_xlat(*args), needle)


@needs_sim
def test_unwritable_json_destination_fails_before_the_run(tmp_path):
    dest = tmp_path / "nodir" / "out.json"
    t0 = time.monotonic()
    p = run_xlat("run", "--workload", WL, "--refs", "100M", "--json", str(dest))
    assert_one_line_error(p, str(dest))
    assert time.monotonic() - t0 < 30, "the run started although its output could not be written"


def test_trace_without_valgrind_says_so(tmp_path):
    # The script's shebang is absolute, so an empty PATH only hides valgrind.
    p = run_xlat("trace", "-o", str(tmp_path / "t.xtr"), "--", "ls", env={"PATH": str(tmp_path)})
    assert_one_line_error(p, "valgrind")
    assert not (tmp_path / "t.xtr").exists()


# --- help ------------------------------------------------------------------------------------

COMMANDS = [(), ("run",), ("configs",), ("config",), ("config", "show"), ("workloads",), ("record",),
            ("trace",), ("demo",), ("probe",), ("bake",)]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: " ".join(c) or "xlat")
def test_help_everywhere(cmd):
    p = run_xlat(*cmd, "--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: xlat") and not p.stderr


def test_reserved_experiment_commands_are_registered():
    # experiments.register() owns sweep/results/study; once it adds them, each has --help.
    from xlat import cli

    sub = next(a for a in cli.build_parser()._actions if a.dest == "command")
    for name in ("sweep", "results", "study"):
        if name in sub.choices:
            assert run_xlat(name, "--help").returncode == 0


def test_version():
    p = run_xlat("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"xlat {_core.version()}"


# --- listings --------------------------------------------------------------------------------


def test_configs_lists_every_preset_with_a_description():
    p = run_xlat("configs")
    assert p.returncode == 0, p.stderr
    for name in ("skylake", "zen3", "haswell", "csalt8"):
        line = next(l for l in p.stdout.splitlines() if l.split()[:1] == [name])
        assert len(line.split()) > 3


@needs_sim
def test_config_show_resolves_with_overrides():
    p = run_xlat("config", "show", "skylake", "--set", "tlb.l2.entries=2048", "--set", "tlb.l2.ways=16")
    assert p.returncode == 0, p.stderr
    line = next(l for l in p.stdout.splitlines() if l.startswith("tlb.l2.entries "))
    assert "2048*" in line and "L2 TLB" in line
    keys = [row[0] for row in _core.config_keys()]
    # (A meaning's continuation lines start with spaces.)
    assert sum(1 for l in p.stdout.splitlines() if l[:1].strip() and l.split()[0] in keys) == len(keys)


@pytest.mark.skipif(not has_core("workloads"), reason="engine has no workloads() yet")
def test_workloads_lists_kernels_and_defaults():
    p = run_xlat("workloads")
    assert p.returncode == 0, p.stderr
    assert "gups" in p.stdout and "footprint=" in p.stdout


# --- run -------------------------------------------------------------------------------------


@needs_sim
def test_run_prints_a_summary_and_writes_json(tmp_path):
    out = tmp_path / "r.json"
    p = run_xlat("run", "--config", "skylake", "--workload", WL, "--refs", "20k", "--seed", "3",
                 "--set", "tlb.l2.entries=2048", "--set", "tlb.l2.ways=16", "--json", str(out))
    assert p.returncode == 0, p.stderr
    for label in ("IPC", "L2 TLB misses (MPKI)", "PTE reads per walk", "PTE reads served by", "LLC miss rate"):
        assert label in p.stdout, p.stdout
    assert os.listdir(tmp_path) == ["r.json"], "temporary files left behind"
    doc = json.loads(out.read_text())
    assert {"xlat_version", "config", "workload", "stats"} <= set(doc)
    assert doc["xlat_version"] == _core.version()
    assert list(doc["config"]) == [row[0] for row in _core.config_keys()]  # fully resolved
    assert doc["config"]["tlb.l2.entries"] == 2048
    assert doc["workload"]["name"] == "gups"
    assert doc["run"]["seed"] == 3 and doc["run"]["refs"] == 20_000
    for k in ("refs", "instructions", "cycles", "ipc", "tlb.l2.mpki", "walks", "walk_steps_per_walk",
              "pte_served.dram", "faults"):
        assert k in doc["stats"], k
    assert doc["stats"]["refs"] == 20_000


@needs_sim
def test_run_interval_prints_the_series_and_writes_it_to_json(tmp_path):
    out = tmp_path / "r.json"
    p = run_xlat("run", "--workload", "gups:footprint=64M,updates=200K", "--interval", "200K", "--json", str(out))
    assert p.returncode == 0, p.stderr
    head, _, table = p.stdout.partition("over time, every 200,000 instructions")
    assert "L2 TLB misses (MPKI)" in head and table  # the usual summary, then the table
    lines = table.splitlines()[1:]
    assert lines[0].split() == ["interval", "instructions", "IPC", "L2", "TLB", "MPKI", "walks"]
    rows = [line.split() for line in lines[2:]]
    doc = json.loads(out.read_text())
    assert doc["run"]["interval"] == 200_000
    # (409,600 references of 6.5 instructions: 2.7 M, 13 intervals and the rest.)
    assert len(rows) == len(doc["series"]) == 14
    for i, (row, iv) in enumerate(zip(rows, doc["series"])):
        assert row == [str(i), f"{iv['instructions']:,}", f"{iv['ipc']:.3f}", f"{iv['tlb.l2.mpki']:.2f}", f"{iv['walks']:,}"]
    assert sum(iv["walks"] for iv in doc["series"]) == doc["stats"]["walks"]
    # Without --interval: no table, no series.
    p = run_xlat("run", "--workload", "gups:footprint=64M,updates=200K", "--refs", "1000", "--json", str(out))
    assert p.returncode == 0 and "over time" not in p.stdout
    assert "series" not in json.loads(out.read_text())


def test_run_rejects_a_bad_interval_in_one_line():
    line = assert_one_line_error(run_xlat("run", "--workload", "gups", "--interval", "abc"), "--interval", "abc")
    assert "is not a count" in line


@needs_sim
def test_same_seed_same_json(tmp_path):
    docs = []
    # (Host threads change how fast, not what: the same JSON on one thread or two.)
    for name, threads in (("a.json", "1"), ("b.json", "2")):
        p = run_xlat("run", "-q", "--workload", WL, "--refs", "20000", "--host-threads", threads, "--json", str(tmp_path / name))
        assert p.returncode == 0 and p.stdout == "", p.stderr
        docs.append(json.loads((tmp_path / name).read_text()))
    assert docs[0] == docs[1]


@needs_sim
def test_failed_run_leaves_an_existing_json_untouched(tmp_path):
    out = tmp_path / "r.json"
    out.write_text('{"old": true}\n')
    p = run_xlat("run", "--workload", "nosuch", "--refs", "1000", "--json", str(out))
    assert p.returncode == 2
    assert out.read_text() == '{"old": true}\n'
    assert os.listdir(tmp_path) == ["r.json"]


@needs_sim
def test_ctrl_c_exits_130_with_one_line(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.Popen([xlat_exe(), "run", "--workload", "gups", "--refs", "1G", "--json", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("xlat did not stop within 30 s of Ctrl-C")
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["xlat: interrupted"]
    assert os.listdir(tmp_path) == [], "an interrupted run left a file behind"


# --- record / trace --------------------------------------------------------------------------


@pytest.mark.skipif(not has_core("record", "simulate"), reason="engine has no record() yet")
def test_record_then_replay(tmp_path):
    trace = tmp_path / "gups.xtr"
    p = run_xlat("record", "--workload", "gups:footprint=64M", "-o", str(trace), "--refs", "5000")
    assert p.returncode == 0, p.stderr
    assert trace.exists() and os.listdir(tmp_path) == ["gups.xtr"]
    p = run_xlat("run", "--trace", str(trace), "--json", str(tmp_path / "r.json"), "-q")
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "r.json").read_text())["stats"]["refs"] == 5000


@pytest.mark.skipif(not has_core("record", "simulate"), reason="engine has no record() yet")
def test_record_a_multithreaded_kernel_writes_one_file_per_stream(tmp_path):
    p = run_xlat("record", "--workload", "random:footprint=64M,threads=2,reads=4000", "-o", str(tmp_path / "r.xtr"))
    assert p.returncode == 0, p.stderr
    assert sorted(os.listdir(tmp_path)) == ["r.0.xtr", "r.1.xtr"]
    traces = f"{tmp_path / 'r.0.xtr'},{tmp_path / 'r.1.xtr'}"
    p = run_xlat("run", "--config", "skylake4", "--trace", traces, "-q", "--json", str(tmp_path / "j.json"))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "j.json").read_text())["stats"]["refs"] == 4000


@pytest.mark.skipif(shutil.which("valgrind") is None or not has_core("lackey_to_native", "simulate"),
                    reason="needs valgrind and the lackey converter")
def test_trace_a_real_program(tmp_path):
    trace = tmp_path / "true.xtr"
    p = run_xlat("trace", "-o", str(trace), "--", "/bin/true", timeout=180)
    assert p.returncode == 0, p.stderr
    assert "wrote" in p.stderr and p.stdout == "" and trace.exists()
    p = run_xlat("run", "--trace", str(trace), "-q", "--json", str(tmp_path / "r.json"))
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "r.json").read_text())["stats"]["refs"] > 1000
    # The program's mappings came along; prefaulting maps the ones it touched, whole (other
    # regions than the runs of touched pages it maps without them).
    maps = tmp_path / "true.xtr.maps"
    assert "/bin/true" in maps.read_text() or "/usr/bin/true" in maps.read_text()
    # Its files' sizes and the executable's segments came too: the program's text is mapped
    # through the page cache, and the executable can be relinked (loader.max_page_size).
    assert "# file-size " in maps.read_text() and "# elf-load " in maps.read_text()
    # And its shared objects' (the C library's), which loader.library_base places.
    assert "# elf-lib " in maps.read_text() and "libc.so" in maps.read_text()
    stats = json.loads((tmp_path / "r.json").read_text())["stats"]
    assert stats["os.page_cache_reads"] > 0 and stats["tlb.l1i.accesses"] > 0
    fetched = []
    for size in ("4k", "2m"):
        p = run_xlat("run", "--trace", str(trace), "-q", "--set", f"loader.max_page_size={size}", "--json", str(tmp_path / "l.json"))
        assert p.returncode == 0, p.stderr
        fetched.append(json.loads((tmp_path / "l.json").read_text())["stats"]["tlb.l1i.accesses"])
    assert fetched[0] == fetched[1] == stats["tlb.l1i.accesses"], "relinking moves references, it drops none"
    mapped = []
    for sidecar in (True, False):
        if not sidecar:
            maps.unlink()
        p = run_xlat("run", "--trace", str(trace), "-q", "--prefault", "--json", str(tmp_path / "p.json"))
        assert p.returncode == 0, p.stderr
        stats = json.loads((tmp_path / "p.json").read_text())["stats"]
        assert stats["faults"] == 0
        mapped.append(stats["mapped_bytes"])
    assert mapped[0] != mapped[1], mapped


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind")
def test_trace_of_a_missing_program(tmp_path):
    p = run_xlat("trace", "-o", str(tmp_path / "t.xtr"), "--", "/no/such/program")
    assert_one_line_error(p, "/no/such/program")
    assert os.listdir(tmp_path) == []


# --- demo ------------------------------------------------------------------------------------


@needs_sim
@pytest.mark.skipif(not has_core("workloads"), reason="engine has no workloads() yet")
def test_demo_writes_report_figure_and_json(tmp_path):
    p = run_xlat("demo", "--refs", "20000", "--out", str(tmp_path / "demo"), timeout=300)
    assert p.returncode == 0, p.stderr
    files = sorted(os.listdir(tmp_path / "demo"))
    assert files == ["demo.png", "report.md", "results.json"], files
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "| workload | machine | IPC |" in report and "skylake" in report and "zen3" in report
    doc = json.loads((tmp_path / "demo" / "results.json").read_text())
    names = {r["machine"] for r in doc["runs"]}
    assert {"skylake", "zen3"} <= names
    if has_config_key("tlb.perfect"):
        assert "skylake, perfect TLB" in names
        sky = next(r for r in doc["runs"] if r["machine"] == "skylake")
        assert sky["overhead"] is not None and 0 <= sky["overhead"] < 1
    # The printed table is the report's table.
    assert "workload" in p.stdout and "PTE reads/walk" in p.stdout


def test_run_warns_when_the_workload_ends_early():
    # GUPS with 1,000 updates (2,000 references) ends long before 10 M references.
    p = run_xlat("run", "--config", "skylake", "--workload", "gups:footprint=64M,updates=1000", "--refs", "10M", "--quiet")
    assert p.returncode == 0, p.stderr
    assert "warning: the workload ended after" in p.stderr and "of the 10,000,000 references" in p.stderr
