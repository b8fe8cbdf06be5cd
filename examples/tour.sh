#!/usr/bin/env bash
# The README's tour as one script: `bash examples/tour.sh` (with the venv active, or after
# `make install`). Everything it writes goes to a fresh temporary directory it prints.
# XLAT_TOUR_QUICK=1 runs every step with small reference counts (a test does this).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
xlat="${XLAT:-xlat}"
refs=10M warmup=5M quick=()
if [ -n "${XLAT_TOUR_QUICK:-}" ]; then refs=20K warmup=10K quick=(--quick); fi
out="$(mktemp -d "${TMPDIR:-/tmp}/xlat-tour.XXXXXX")"
echo "# writing to $out"
step() { echo; echo "\$ xlat $*"; "$xlat" "$@"; }

step configs                                   # machine presets
step config show "$here/my-machine.toml"       # a machine of your own, every key resolved
step workloads                                 # kernels, their parameters and footprints

# A first run measures demand paging: the summary says so when page faults dominate.
step run --config skylake --workload gups --refs "$refs"
# Steady state: map the footprint first, warm the TLBs and caches, then measure.
step run --config skylake --workload gups --prefault --warmup "$warmup" --refs "$refs"
step run --config skylake --workload gups --prefault --warmup "$warmup" --refs "$refs" --set tlb.perfect=true
step run --config "$here/my-machine.toml" --workload gups --prefault --warmup "$warmup" --refs "$refs" --json "$out/mine.json"
# One run, every size: the L2 TLB's and the L2 page-walk cache's misses at 1..64 ways.
step mrc --config skylake --workload gups --prefault --refs "$refs" -s tlb.l2,pwc.l2
step explain walks tlb.l2.mpki                 # what a statistic counts

# A sweep: 2 machines x 2 PWC sizes, stored (and resumable) under $out/results/pwc-sweep.
step sweep "$here/pwc-sweep.toml" --root "$out/results" --workers 1 --no-progress "${quick[@]}"
step results pwc-sweep --root "$out/results" --csv "$out/pwc.csv"
echo; echo "# done: $out"
