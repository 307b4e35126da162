#!/usr/bin/env bash
# scripts/fuzz.sh TARGET SECONDS [libFuzzer args...] - run one fuzz target
# (tests/fuzz/fuzz_TARGET.c: text, api, ...) for SECONDS seconds.
#   Builds the fuzz tree (build-fuzz: clang, libFuzzer, ASan+UBSan) first.
#   Starts from the seed corpus tests/fuzz/corpus/TARGET; new inputs go to
#   build-fuzz/corpus-TARGET (kept between runs, never into the seeds), and
#   a crashing input to build-fuzz/crash-TARGET-*.  Prints libFuzzer's final
#   statistics (number_of_executed_units: the inputs run).
#   FUZZ_JOBS=N runs N processes (default 1: the machines have 2 cores).
#   To add the inputs found to the seeds, minimised:
#     build-fuzz/tests/fuzz/fuzz_TARGET -merge=1 tests/fuzz/corpus/TARGET build-fuzz/corpus-TARGET
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
	echo "usage: scripts/fuzz.sh TARGET SECONDS [libFuzzer args...]" >&2
	ls tests/fuzz/fuzz_*.c | sed 's/.*fuzz_\(.*\)\.c/  \1/' >&2
	exit 2
fi
target=$1 secs=$2
shift 2
[ -f "tests/fuzz/fuzz_$target.c" ] || { echo "fuzz.sh: no target tests/fuzz/fuzz_$target.c" >&2; exit 2; }
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DMCG_WERROR=ON -DMCG_SANITIZE=address,undefined -DMCG_FUZZ=ON >/dev/null
cmake --build build-fuzz -j 2 --target "fuzz_$target"
mkdir -p "build-fuzz/corpus-$target"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
jobs=${FUZZ_JOBS:-1}
extra=()
[ "$jobs" -gt 1 ] && extra=(-jobs="$jobs" -workers="$jobs")
exec "build-fuzz/tests/fuzz/fuzz_$target" -max_total_time="$secs" -print_final_stats=1 \
	-artifact_prefix="build-fuzz/crash-$target-" "${extra[@]}" "$@" \
	"build-fuzz/corpus-$target" "tests/fuzz/corpus/$target"
