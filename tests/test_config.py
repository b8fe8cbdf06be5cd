"""Presets and the config loader: every preset resolves in the engine, base chains and
override precedence behave, and every failure is an xlat.ConfigError with a useful line."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import xlat
from xlat import _core
from xlat import config as C
from xlat_testutil import REPO

PRESETS = sorted(p.stem for p in (REPO / "configs").glob("*.toml"))


def test_the_required_presets_exist():
    assert {"skylake", "zen3", "haswell", "csalt8"} <= set(PRESETS)
    assert set(C.presets()) >= set(PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_resolves_in_the_engine(name):
    resolved = C.resolve(name)
    engine_keys = [row[0] for row in _core.config_keys()]
    assert list(resolved) == engine_keys
    # Every key the file sets must be an engine key (resolve would raise otherwise), and the
    # loader's own keys must not leak through.
    for key, _ in C.file_pairs(name):
        assert key in engine_keys
        assert key not in C.LOADER_KEYS


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_has_a_description_and_cites_a_seed(name):
    path = C.presets()[name]
    assert C.description(path), f"{name} has no description"
    assert "seeds/" in path.read_text(), f"{name} does not cite the seed it comes from"


def test_skylake_matches_flattening_table_1():
    r = xlat.resolve_config("skylake")
    expect = {
        "core.freq_ghz": 2.0,
        "tlb.l1d.entries": 64, "tlb.l1d.ways": 4, "tlb.l1d.entries_2m": 32, "tlb.l1d.ways_2m": 4,
        "tlb.l1d.latency": 1,
        "tlb.l2.entries": 1536, "tlb.l2.ways": 12, "tlb.l2.latency": 9,
        "pwc.l4.entries": 4, "pwc.l3.entries": 4, "pwc.l2.entries": 24, "pwc.latency": 1,
        "walker.port": "l1d",
        "cache.l1d.size_kb": 32, "cache.l1d.ways": 8, "cache.l1d.latency": 4,
        "cache.l2.size_kb": 256, "cache.l2.ways": 8, "cache.l2.latency": 12,
        "cache.llc.size_kb": 16384, "cache.llc.ways": 8, "cache.llc.latency": 42,
    }
    assert {k: r[k] for k in expect} == expect


def test_zen3_matches_ptbaker_and_coalescing_tables():
    r = xlat.resolve_config("zen3")
    expect = {
        "tlb.l1d.unified": True, "tlb.l1d.entries": 64, "tlb.l1d.ways": 64,
        "tlb.l2.entries": 2048, "tlb.l2.ways": 16, "tlb.l2i.entries": 512, "tlb.l2i.ways": 8,
        "tlb.coalescing": "none",
        "walker.port": "l2", "core.walkers": 6,
        "cache.l2.size_kb": 512, "cache.llc.size_kb": 32768, "cache.llc.ways": 16,
        "dram.bandwidth_gbps": 64.0,
    }
    assert {k: r[k] for k in expect} == expect


def test_zen4_and_zen5_match_amds_figures():
    # zen4: EPYC 9004, one CCD (AMD's Zen 4 figures, this machine's CPUID: 72-entry L1 DTLB,
    # 3072-entry L2 DTLB, 1 MB L2, 32 MB L3); zen5 inherits it and changes what Zen 5 changed.
    z4, z5 = xlat.resolve_config("zen4"), xlat.resolve_config("zen5")
    expect4 = {
        "system.cores": 8, "core.freq_ghz": 3.7, "core.width": 6, "core.rob": 320, "core.store_buffer": 64,
        "tlb.l1d.unified": True, "tlb.l1d.entries": 72, "tlb.l1d.ways": 72,
        "tlb.l2.entries": 3072, "tlb.l2.ways": 12, "tlb.l2.latency": 7, "tlb.l2.pdes": True, "tlb.l2.entries_1g": 0,
        "tlb.l2i.entries": 512, "tlb.coalescing": "none", "walker.port": "l2",
        "cache.l1d.size_kb": 32, "cache.l1d.ways": 8, "cache.l2.size_kb": 1024, "cache.l2.ways": 8, "cache.l2.latency": 14,
        "cache.llc.size_kb": 32768, "cache.llc.ways": 16, "cache.llc.fill": "victim",
        "dram.bandwidth_gbps": 38.4, "dram.banks": 64,
    }
    assert {k: z4[k] for k in expect4} == expect4
    expect5 = {
        "core.freq_ghz": 4.5, "core.width": 8, "core.rob": 448, "tlb.l1d.entries": 96, "tlb.l1d.ways": 96,
        "tlb.l2.entries": 4096, "tlb.l2i.entries": 2048, "cache.l1d.size_kb": 48, "cache.l1d.ways": 12,
        "cache.l2.ways": 16, "dram.bandwidth_gbps": 48.0,
    }
    assert {k: z5[k] for k in expect5} == expect5
    # What Zen 5 did not change is zen4's.
    assert all(z5[k] == z4[k] for k in ("system.cores", "tlb.l2.latency", "tlb.l2.pdes", "walker.port", "cache.llc.size_kb", "dram.banks"))


def test_haswell_and_csalt8_tables():
    h = xlat.resolve_config("haswell")
    assert (h["tlb.l2.entries"], h["tlb.l2.ways"], h["core.freq_ghz"], h["tlb.l1d.entries_1g"]) == (1024, 8, 3.2, 4)
    c = xlat.resolve_config("csalt8")
    assert (c["system.cores"], c["core.freq_ghz"], c["cache.l2.ways"], c["cache.llc.size_kb"]) == (8, 4.0, 4, 8192)
    assert (c["pwc.l4.entries"], c["pwc.l3.entries"], c["pwc.l2.entries"], c["tlb.l2.latency"]) == (2, 4, 32, 17)


def test_base_chain_inherits_and_overrides():
    sky, sky4 = xlat.resolve_config("skylake"), xlat.resolve_config("skylake4")
    assert sky4["system.cores"] == 4 and sky4["cache.llc.size_kb"] == 32768
    assert sky4["tlb.l2.entries"] == sky["tlb.l2.entries"] == 1536
    zp = xlat.resolve_config("zenplus")
    assert zp["walker.port"] == "l2" and zp["tlb.l2.entries"] == 1536 and zp["tlb.l2i.entries"] == 512


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_file_chain_and_precedence(tmp_path):
    write(tmp_path / "a.toml", 'base = "skylake"\ndescription = "a"\n[tlb.l2]\nentries = 2048\nways = 16\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    # A relative base is relative to the file that names it, not to the working directory.
    b = write(sub / "b.toml", 'base = "../a.toml"\n[tlb.l2]\nways = 8\n')
    r = C.resolve(b)
    assert r["tlb.l2.entries"] == "2048"        # from a
    assert r["tlb.l2.ways"] == "8"              # b beats a
    assert r["tlb.l2.latency"] == "9"           # from skylake
    # Overrides beat every file, and later overrides beat earlier ones.
    r = C.resolve(b, [("tlb.l2.ways", "4"), ("tlb.l2.ways", "16")])
    assert r["tlb.l2.ways"] == "16"


def test_dotted_keys_inside_tables_and_flat_files(tmp_path):
    f = write(tmp_path / "m.toml", '"tlb.l2.entries" = 2048\n[pwc]\nl4.entries = 8\n[tlb]\nl2.ways = 16\n')
    r = C.resolve(f)
    assert (r["tlb.l2.entries"], r["tlb.l2.ways"], r["pwc.l4.entries"]) == ("2048", "16", "8")


def test_dict_configs_flat_nested_and_with_base():
    r = xlat.resolve_config({"base": "skylake", "tlb": {"l2": {"entries": 2048}}, "tlb.l2.ways": 16})
    assert (r["tlb.l2.entries"], r["tlb.l2.ways"], r["tlb.l2.latency"]) == (2048, 16, 9)
    r = xlat.resolve_config("skylake", tlb__l2__entries=3072, core__walkers=4)
    assert (r["tlb.l2.entries"], r["core.walkers"]) == (3072, 4)
    assert xlat.resolve_config(None) == xlat.resolve_config({})


def test_python_values_become_engine_text():
    assert C.value_text("k", True) == "true"
    assert C.value_text("k", 2048) == "2048"
    assert C.value_text("k", 2.5) == "2.5"
    assert C.value_text("k", "lru") == "lru"
    with pytest.raises(xlat.ConfigError, match="'k'"):
        C.value_text("k", [1, 2])


def test_typed_values():
    r = xlat.resolve_config("zen3")
    assert isinstance(r["tlb.l2.entries"], int) and not isinstance(r["tlb.l2.entries"], bool)
    assert isinstance(r["core.freq_ghz"], float)
    assert r["tlb.l1d.unified"] is True
    assert r["walker.port"] == "l2"


def test_unknown_preset_lists_the_available_ones():
    with pytest.raises(xlat.ConfigError) as e:
        C.resolve("nosuch")
    msg = str(e.value)
    assert "nosuch" in msg and "skylake" in msg and "zen3" in msg and "\n" not in msg


def test_missing_file():
    with pytest.raises(xlat.ConfigError, match="does not exist"):
        C.resolve("no/such/file.toml")


def test_base_loop_is_an_error(tmp_path):
    write(tmp_path / "a.toml", 'base = "b.toml"\n')
    write(tmp_path / "b.toml", 'base = "a.toml"\n')
    with pytest.raises(xlat.ConfigError, match="loops"):
        C.resolve(tmp_path / "a.toml")


def test_bad_toml_names_the_file(tmp_path):
    f = write(tmp_path / "bad.toml", "[tlb.l2\nentries = 3\n")
    with pytest.raises(xlat.ConfigError, match="bad.toml"):
        C.resolve(f)


def test_unknown_key_in_a_file_names_the_key(tmp_path):
    f = write(tmp_path / "k.toml", "[tlb.l2]\nentires = 2048\n")
    with pytest.raises(xlat.ConfigError, match="tlb.l2.entires"):
        C.resolve(f)


@pytest.mark.parametrize(
    "pairs, needle",
    [
        ([("tlb.l2.entries", "0")], "tlb.l2.entries"),
        ([("tlb.l2.entries", "1200")], "power of two"),   # 1200 / 12 ways = 100 sets
        ([("cache.llc.ways", "0")], "cache.llc"),
        ([("cache.llc.policy", "plru")], "lru|srrip"),
        ([("tlb.l2.entries", "many")], "tlb.l2.entries"),
    ],
)
def test_impossible_values_are_config_errors(pairs, needle):
    with pytest.raises(xlat.ConfigError, match=needle.replace("|", r"\|")):
        C.resolve("skylake", pairs)


def test_config_hash_depends_on_values_not_order():
    a = C.resolve("skylake")
    b = dict(reversed(list(a.items())))
    assert C.config_hash(a) == C.config_hash(b)
    assert C.config_hash(a) != C.config_hash(C.resolve("skylake", [("tlb.l2.entries", "2048"), ("tlb.l2.ways", "16")]))
    # Two spellings of the same machine resolve to the same text, so to the same hash.
    assert C.config_hash(C.resolve("skylake", [("tlb.l2.entries", "1_536")])) == C.config_hash(a)


def test_presets_are_found_beside_the_package_as_in_a_wheel(tmp_path, monkeypatch):
    # maturin's `include` puts configs/*.toml at the wheel root: site-packages/configs beside
    # site-packages/xlat. Fake that layout and check the lookup finds them there.
    site = tmp_path / "site-packages"
    (site / "xlat").mkdir(parents=True)
    shutil.copytree(REPO / "configs", site / "configs")
    monkeypatch.setattr(C, "_PKG_DIR", site / "xlat")
    assert C.preset_dirs()[0] == (site / "configs").resolve()
    assert C.presets()["skylake"] == (site / "configs" / "skylake.toml")


def test_preset_path_environment_shadows_builtin_presets(tmp_path, monkeypatch):
    write(tmp_path / "skylake.toml", 'description = "mine"\n[tlb.l2]\nentries = 3072\n')
    write(tmp_path / "mybox.toml", 'base = "zen3"\n')
    monkeypatch.setenv(C.PRESET_PATH_ENV, str(tmp_path))
    assert C.resolve("skylake")["tlb.l2.entries"] == "3072"
    assert C.resolve("mybox")["walker.port"] == "l2"
    assert C.description(C.presets()["skylake"]) == "mine"


def test_a_switched_off_key_added_later_leaves_the_fingerprint_alone():
    """Stored points are keyed by the resolved configuration's hash: adding a key whose default
    is the machine from before (a mechanism switched off) must not make every point stale,
    while any other value of it must."""
    from xlat import config as cfg

    r = cfg.resolve("zen3")
    # (timing.pools: the machine from before is the exact resource model, and the default is
    # now the fast one, whose points are made anew.)
    changed = {"timing.pools"}
    assert all(r[k] == v for k, v in cfg.NEUTRAL.items() if k not in changed), "neutral values are the defaults"
    before = {k: v for k, v in r.items() if k not in cfg.NEUTRAL}
    exact = {**r, "timing.pools": "exact"}
    assert cfg.config_hash(exact) == cfg.config_hash(before)
    assert cfg.config_hash(r) != cfg.config_hash(before), "the fast model's points are not the exact one's"
    assert cfg.config_hash({**exact, "dram.write_batch": "8"}) != cfg.config_hash(exact)
