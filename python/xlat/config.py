"""Machine configurations: presets, TOML files, `base` chains and `--set` overrides.

A preset is a TOML file whose nested tables flatten to the engine's dotted keys
(``[tlb.l2] entries = 1536`` is ``tlb.l2.entries=1536``). Two top-level keys belong to this
loader, not to the engine, and are stripped before resolving:

- ``base = "skylake"``: start from another preset (or a TOML path, relative to this file);
  chains may be any depth.
- ``description = "..."``: the one-liner ``xlat configs`` shows.

The engine (``_core.resolve_config``) owns defaults and validation, so every error about a
key or a value carries the engine's message; this module only decides which pairs to send and
in which order (base first, then the file, then overrides: later wins).
"""
from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from . import _core, _io

ConfigError = _core.ConfigError

#: Top-level preset keys consumed by this loader rather than the engine.
LOADER_KEYS = ("base", "description")

#: Environment variable naming extra preset directories (os.pathsep-separated), searched first.
PRESET_PATH_ENV = "XLAT_PRESET_PATH"

_PKG_DIR = Path(__file__).resolve().parent


def preset_dirs() -> list[Path]:
    """Directories searched for presets, in priority order (existing ones only).

    Development install: ``<repo>/configs`` (the package is imported from ``<repo>/python``).
    Wheel: maturin's ``include`` puts ``configs/*.toml`` at the wheel root, i.e. beside the
    package in site-packages; a copy inside the package is accepted too, so a repackager may
    move them there.
    """
    dirs: list[Path] = []
    env = os.environ.get(PRESET_PATH_ENV)
    if env:
        dirs += [Path(p) for p in env.split(os.pathsep) if p]
    dirs += [_PKG_DIR / "configs", _PKG_DIR.parent / "configs", _PKG_DIR.parent.parent / "configs"]
    seen: set[Path] = set()
    out = []
    for d in dirs:
        d = d.resolve()
        if d not in seen and d.is_dir():
            seen.add(d)
            out.append(d)
    return out


def presets() -> dict[str, Path]:
    """Every preset name with its file; an earlier directory shadows a later one."""
    found: dict[str, Path] = {}
    for d in preset_dirs():
        for p in sorted(d.glob("*.toml")):
            found.setdefault(p.stem, p)
    return dict(sorted(found.items()))


def _unknown_preset(name: str) -> ConfigError:
    names = ", ".join(presets()) or "none found; set " + PRESET_PATH_ENV
    return ConfigError(f"unknown preset '{name}' (available: {names})")


def _looks_like_path(spec: str) -> bool:
    return spec.endswith(".toml") or os.sep in spec or "/" in spec


def find(spec: str | os.PathLike, relative_to: Path | None = None) -> Path:
    """The TOML file for a preset name or a path (relative paths against ``relative_to``)."""
    text = os.fspath(spec)
    # A name that is no preset but an existing file (one not ending in .toml) is the user's.
    if _looks_like_path(text) or (text not in presets() and os.path.lexists(text)):
        p = Path(text).expanduser()
        if not p.is_absolute() and relative_to is not None:
            p = relative_to / p
        why = _io.not_a_file(p)
        if why is not None:
            raise ConfigError(f"config file '{text}' {why}")
        return p
    found = presets().get(text)
    if found is None:
        raise _unknown_preset(text)
    return found


def read_toml(path: Path, what: str = "config file", error: type[Exception] = ConfigError) -> dict[str, Any]:
    """A TOML file the user named, every failure one ``error`` naming it (see
    :func:`xlat._io.read_text_input`)."""
    text = _io.read_text_input(path, what, error)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{what} '{path}': {e}") from None
    except RecursionError:
        raise error(f"{what} '{path}': arrays or tables nested too deeply to read") from None


def value_text(key: str, value: Any) -> str:
    """The text form the engine parses. Booleans are checked first: ``True`` is an int too."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict)):  # numpy scalars
        return value_text(key, value.item())
    raise ConfigError(f"config key '{key}': {type(value).__name__} value {value!r} is not a number, boolean or string")


def flatten(table: Mapping[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Nested tables to (dotted key, text) pairs, in file order."""
    out: list[tuple[str, str]] = []
    for k, v in table.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out += flatten(v, key + ".")
        else:
            out.append((key, value_text(key, v)))
    return out


def description(path: Path) -> str:
    """A preset's ``description``, or else its first comment line."""
    try:
        doc = read_toml(path).get("description")
    except ConfigError:
        doc = None
    if isinstance(doc, str) and doc.strip():
        return doc.strip()
    try:
        for line in path.read_text().splitlines():
            line = line.strip()
            if line.startswith("#") and line.lstrip("# ").strip():
                return line.lstrip("# ").strip()
    except OSError:
        pass
    return ""


def file_pairs(spec: str | os.PathLike, relative_to: Path | None = None, _chain: tuple[Path, ...] = ()) -> list[tuple[str, str]]:
    """The pairs a preset or file contributes, its ``base`` chain first."""
    path = find(spec, relative_to).resolve()
    if path in _chain:
        cycle = " -> ".join(p.stem for p in (*_chain, path))
        raise ConfigError(f"config file '{path}': base chain loops ({cycle})")
    doc = read_toml(path)
    pairs: list[tuple[str, str]] = []
    base = doc.get("base")
    if base is not None:
        if not isinstance(base, str) or not base:
            raise ConfigError(f"config file '{path}': 'base' must be a preset name or a path")
        pairs += file_pairs(base, path.parent, (*_chain, path))
    desc = doc.get("description")
    if desc is not None and not isinstance(desc, str):
        raise ConfigError(f"config file '{path}': 'description' must be a string")
    pairs += flatten({k: v for k, v in doc.items() if k not in LOADER_KEYS})
    return pairs


def parse_set(item: str) -> tuple[str, str]:
    """``key=value`` (from ``--set``) to a pair."""
    key, sep, value = item.partition("=")
    key, value = key.strip(), value.strip()
    if not sep or not key:
        raise ConfigError(f"--set '{item}': expected key=value, e.g. tlb.l2.entries=2048")
    return key, value


def override_key(name: str) -> str:
    """Python keyword form to dotted key: ``tlb__l2__entries`` is ``tlb.l2.entries``."""
    return name.replace("__", ".")


def source_pairs(config: Any = None) -> list[tuple[str, str]]:
    """Pairs for a config given as None (engine defaults), a preset name, a path or a mapping.

    A mapping may be flat (``{"tlb.l2.entries": 2048}``), nested (``{"tlb": {"l2": ...}}``)
    or a mix, and may carry ``base`` like a file.
    """
    if config is None:
        return []
    if isinstance(config, (str, os.PathLike)):
        return file_pairs(config)
    if isinstance(config, Mapping):
        pairs: list[tuple[str, str]] = []
        base = config.get("base")
        if base is not None:
            pairs += file_pairs(base)
        pairs += flatten({k: v for k, v in config.items() if k not in LOADER_KEYS})
        return pairs
    raise ConfigError(f"config must be a preset name, a TOML path or a dict, not {type(config).__name__}")


def resolve(config: Any = None, overrides: Iterable[tuple[str, Any]] | Mapping[str, Any] = ()) -> dict[str, str]:
    """The fully resolved configuration: every engine key with its value as text.

    ``overrides`` (pairs or a mapping) apply last; their values may be text or Python scalars.
    """
    pairs = source_pairs(config)
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    pairs += [(k, value_text(k, v)) for k, v in items]
    return dict(_core.resolve_config(pairs))


def keys() -> list[dict[str, str]]:
    """The engine's schema: one dict per key with ``key``, ``default``, ``expected``, ``doc``."""
    return [dict(zip(("key", "default", "expected", "doc"), row)) for row in _core.config_keys()]


def typed(resolved: Mapping[str, str]) -> dict[str, Any]:
    """Resolved text values as Python values (int, float, bool, str), using the schema's types."""
    kinds = {row[0]: row[2] for row in _core.config_keys()}
    return {k: _typed_value(v, kinds.get(k, "")) for k, v in resolved.items()}


def _typed_value(text: str, expected: str) -> Any:
    try:
        if expected == "a non-negative integer":
            return int(text)
        if expected == "a number":
            return float(text)
        if expected == "true or false":
            return text.strip().lower() in ("true", "1", "yes", "on")
    except ValueError:
        pass
    return text


# Keys added after results were first stored, with the value that is the machine from before
# they existed (a mechanism switched off). At that value a key is left out of the fingerprint,
# so adding a switched-off mechanism does not make every stored point of every study stale.
NEUTRAL: dict[str, str] = {
    "dram.write_batch": "0",
    "dram.turnaround_ns": "0",
    "pwc.policy": "lru",
    "virt.host_pwc.policy": "lru",
    "tlb.prefetcher": "none",
    "tlb.prefetch_buffer": "16",
    # (Results made before the fast resource model were made with the exact one.)
    "timing.pools": "exact",
    # (No trace stored before it recorded its shared objects' segments, which superpage
    # moves: every stored point ran as superpage runs it.)
    "loader.library_base": "superpage",
    "loader.fast_forward": "none",
    "csalt.ptp": "false",
}


def config_hash(resolved: Mapping[str, str]) -> str:
    """A short, order-independent fingerprint of a resolved configuration.

    Give it the engine's text forms (what :func:`resolve` returns): the engine prints each
    value canonically, so two spellings of one machine hash alike. Keys of :data:`NEUTRAL`
    at their neutral value are left out.
    """
    h = hashlib.sha256()
    for k in sorted(resolved):
        v = value_text(k, resolved[k])
        if NEUTRAL.get(k) == v:
            continue
        h.update(f"{k}={v}\n".encode())
    return h.hexdigest()[:12]
