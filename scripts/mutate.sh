#!/usr/bin/env bash
# scripts/mutate.sh N [--seed S] [--only REGEX] [--list] [--remap]
# [--rerun-survivors [REGEX]] - mutation testing: N mutants of src/ run, drawn with
# seed S (default 1), each rebuilt and run against the tests that execute
# its line; prints the killed ratio and
# the survivors (build-mut/summary.txt; each result in build-mut/results.jsonl,
# so a run can be resumed).  Needs the coverage tree: runs scripts/coverage.sh
# first if build-cov is missing.  See scripts/mutate.py for the operators.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/mutate.sh N [--seed S] [--only REGEX] [--list] [--remap] [--rerun-survivors [REGEX]]" >&2; exit 2; }
command -v gcov >/dev/null || scripts/deps.sh
[ -d build-cov ] || scripts/coverage.sh >/dev/null
exec python3 scripts/mutate.py "$@"
