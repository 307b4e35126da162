#!/usr/bin/env bash
# scripts/test.sh - build and run every test, as CI does:
#   1. release build: every test (unit, conformance, stress, fault, real
#      programs under the malloc shim, benchmark smoke runs), warnings as errors;
#   2. ASan+UBSan build: every test but the programs and benchmarks;
#   3. TSan build: the concurrency tests (per-CPU lock path: TSan cannot see rseq);
#   4. the fuzz build (clang, libFuzzer, ASan+UBSan): each target of tests/fuzz
#      for a few thousand inputs from its seed corpus;
#   5. the formatting check (clang-format).
# Usage: scripts/test.sh [ctest args...]   (e.g. -L unit, -R cache)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh

jobs=$(nproc 2>/dev/null || echo 2)
[ "$jobs" -gt 2 ] && jobs=2  # sized for the 2-core machines this runs on

run() {
	local dir=$1 san=$2
	shift 2
	echo "=== build $dir (sanitize: ${san:-none}) ==="
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCG_WERROR=ON \
		-DMCG_SANITIZE="$san" >/dev/null
	cmake --build "$dir" -j "$jobs"
	echo "=== test $dir ==="
	(cd "$dir" && ctest --output-on-failure -j "$jobs" "$@")
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

run build "" "$@"
run build-asan "address,undefined" "$@"
run build-tsan "thread" "$@"

echo "=== build build-fuzz (clang libFuzzer, sanitize: address,undefined) ==="
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DMCG_WERROR=ON -DMCG_SANITIZE=address,undefined -DMCG_FUZZ=ON >/dev/null
cmake --build build-fuzz -j "$jobs"
echo "=== test build-fuzz ==="
(cd build-fuzz && ctest --output-on-failure -j "$jobs" "$@")

echo "=== format check ==="
cmake --build build --target format-check
echo "all test builds passed"
