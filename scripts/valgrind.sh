#!/usr/bin/env bash
# scripts/valgrind.sh [REGEX] - valgrind memcheck over the unit and
# conformance tests (those whose name matches REGEX; default all).
#   Valgrind cannot run rseq critical sections, so the tests run in the
#   per-CPU lock mode (MCG_RSEQ=0), the path every build has as fallback.
#   Builds the release tree (build) first.  Each test runs under memcheck with
#   full leak checking; any error (invalid access, uninitialised value,
#   definite or indirect leak) fails it; scripts/valgrind.supp lists what is
#   not an error, each with its reason.  Logs: build/valgrind/TEST.log.PID.
#   Prints "N passed, N failed" and exits non-zero on any failure.
#   VALGRIND_JOBS=N runs N at once (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || scripts/deps.sh
filter=${1:-.}
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCG_WERROR=ON >/dev/null
cmake --build build -j 2 >/dev/null
mkdir -p build/valgrind
tests=$(cd build/tests && ls | grep -E '^(unit|conformance)_test_' | grep -E -- "$filter" || true)
[ -n "$tests" ] || { echo "valgrind.sh: no test matches '$filter'" >&2; exit 2; }

run_one() {
	local t=$1 log=build/valgrind/$1.log
	# The tests read these as ctest gives them (tests/CMakeLists.txt).
	# MCG_TEST_LOCKED: the tests check the locked mode's expectations and do
	# not run themselves again for it; MCG_TEST_SLOWDOWN: their time bounds
	# scale for memcheck's pace.  Children the tests start from the system
	# (promtool, curl: not memcg's code; promtool is Go, which memcheck
	# cannot follow) run natively; the tests' own re-executions are traced.
	if env MCG_RSEQ=0 MCG_TEST_LOCKED=1 MCG_TEST_SLOWDOWN=30 MCG_REAP_MS=0 MCG_SOURCE_DIR="$PWD" MCG_BIN="$PWD/build/memcg" \
		valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
		--trace-children=yes --trace-children-skip="/usr/*,/bin/*" --track-origins=yes --fair-sched=yes \
		--suppressions="$PWD/scripts/valgrind.supp" \
		--log-file="$log.%p" "build/tests/$t" >"$log.out" 2>&1; then
		echo "ok   $t"
	else
		local rc=$?
		[ $rc -eq 77 ] && { echo "skip $t"; return 0; }
		echo "FAIL $t (exit $rc; build/valgrind/$t.log.*)"
		grep -h -A8 -E "Invalid|uninitialised|definitely lost|indirectly lost|Mismatched" \
			"$log".[0-9]* | head -40
		return 1
	fi
}
export -f run_one
rm -f build/valgrind/*.log.*
results=$(printf '%s\n' $tests | xargs -P "${VALGRIND_JOBS:-2}" -I{} bash -c 'run_one {}' || true)
echo "$results"
errors=$(grep -h 'ERROR SUMMARY' build/valgrind/*.log.[0-9]* | awk '{s+=$4} END {print s+0}')
procs=$(ls build/valgrind/*.log.[0-9]* | wc -l)
passed=$(grep -c '^ok' <<<"$results" || true)
failed=$(grep -c '^FAIL' <<<"$results" || true)
echo "valgrind: $errors errors in $procs processes"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$errors" -eq 0 ]
