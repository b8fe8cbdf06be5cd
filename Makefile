# The README's commands. Everything the project needs is installed by `make install`.
SHELL := /bin/bash
VENV := $(CURDIR)/.venv
PY := $(VENV)/bin/python
SOURCES := $(shell find crates python -name '*.rs' -o -name '*.py' -o -name 'Cargo.toml' 2>/dev/null) Cargo.toml pyproject.toml

.PHONY: install demo test test-quick lint test-rust test-python test-c bench fuzz fuzz-rust clean

install: $(VENV)/.installed

# Rebuild when the extension module is missing even if the stamp says otherwise.
ifeq ($(wildcard python/xlat/_core*.so),)
.PHONY: $(VENV)/.installed
endif

$(VENV)/.installed: $(SOURCES)
	@command -v cargo >/dev/null || { echo "error: cargo (Rust) is required: install it with rustup" >&2; exit 2; }
	@command -v valgrind >/dev/null || (apt-get update -qq && apt-get install -y -qq valgrind >/dev/null) || echo "warning: could not install valgrind; 'xlat trace' needs it" >&2
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip 'maturin>=1.5,<2'
	VIRTUAL_ENV=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/maturin develop --release -q -E test
	@touch $@

demo: install
	$(VENV)/bin/xlat demo

test: install lint test-rust test-c test-python

# The inner loop: lint, the Rust crates' unit tests and the Python tests that run no whole
# study (tests/conftest.py marks those `slow`); no integration-test binaries.
test-quick: install lint
	cargo test --workspace --exclude xlat-py --lib --profile release-tests -q
	$(PY) -m pytest tests -n 2 -m "not slow"

# Clippy lints allowed for a while, as `-A clippy::NAME` flags (say why, and drop them soon):
# none now, and keep it that way.
CLIPPY_ALLOW :=

# Formatting and lints, Rust and Python; `make test` runs it before the test suites.
lint: install
	@{ cargo clippy --version && cargo fmt --version; } >/dev/null 2>&1 || rustup component add clippy rustfmt >/dev/null 2>&1 || true
	@{ cargo clippy --version && cargo fmt --version; } >/dev/null 2>&1 || { echo "error: make lint needs clippy and rustfmt, and 'rustup component add clippy rustfmt' could not install them" >&2; exit 2; }
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --release -q -- -D warnings $(CLIPPY_ALLOW)
	$(VENV)/bin/ruff check python tests benches studies

test-rust:
	cargo test --workspace --exclude xlat-py --profile release-tests

# The PT-Baker runtime's C ABI: a C program built against include/xlat_bake.h and the static
# library, run over every mode.
test-c:
	cargo build --release -q -p xlat-host
	$${CC:-cc} -Wall -Wextra -Werror -O2 -I crates/xlat-host/include tests/c/bake_test.c target/release/libxlat_host.a -lpthread -ldl -lm -o target/bake_test
	target/bake_test

# Two test processes: the suite is mostly small simulations, one core each (7 min in one
# process on this 2-core machine, 5 in two).
test-python: install
	$(PY) -m pytest tests -n 2 --durations=20

bench: install
	$(PY) benches/run.py

# Trace-parser fuzzing (needs nightly Rust and cargo-fuzz); CI covers the parsers with the
# random-input tests in xlat-workloads instead.
# The trace readers under cargo-fuzz (needs a nightly toolchain and cargo-fuzz).
fuzz-rust:
	cd crates/xlat-workloads/fuzz && for t in native champsim lackey; do cargo +nightly fuzz run $$t -- -max_total_time=60 || exit 1; done

clean:
	rm -rf target $(VENV) results

# The long fuzz profile (issue 67): 5,000 examples for each API property of tests/test_fuzz.py
# (workload strings, trace bytes, config files, --set text) and 1,000 xlat command lines: 21,000
# cases. `make test` runs the same properties with a few examples each.
fuzz: install
	XLAT_HYPOTHESIS_EXAMPLES=5000 $(PY) -m pytest tests/test_fuzz.py -n 2 --hypothesis-show-statistics
	XLAT_HYPOTHESIS_EXAMPLES=40 $(PY) -m pytest tests/test_config_limits.py -n 2
