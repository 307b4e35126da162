#!/usr/bin/env bash
# scripts/coverage.sh [ctest args...] - line and branch coverage of src/ by
# the test suite, per file (gcov, gcovr).
#   Builds build-cov (gcc --coverage, -O0, the debug checks on as in the
#   sanitizer builds, no sanitizers), runs every test of
#   the release suite there (ctest args narrow it, e.g. -L unit), and prints
#   one line per file of src/: lines and branches covered, then the totals.
#   Branches the compiler made that no source can take (gcovr's
#   --exclude-unreachable-branches) are left out, and so are the failing
#   branches of MCG_BUG_ON() (a bug check no correct run fails) and the
#   branches on a compile-time constant (`if (mcg_config_debug)`,
#   `if (likely(mcg_percpu_sections()))`: one side is dead in any one
#   build); so are lines marked
#   GCOVR_EXCL_LINE / GCOVR_EXCL_START..STOP, each with its reason beside it.
#   Writes build-cov/coverage.json (gcovr's summary), the lines not run
#   (build-cov/coverage-missing.txt) and, with COVERAGE_HTML=1,
#   build-cov/coverage/index.html.
#   COVERAGE_MIN="98 92 90 80" (total lines, total branches, each file's
#   lines, each file's branches, in %) makes it fail below those figures.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v gcovr >/dev/null || scripts/deps.sh
cmake -S . -B build-cov -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMCG_WERROR=ON -DMCG_COVERAGE=ON \
	-DMCG_DEBUG=ON >/dev/null
cmake --build build-cov -j 2
find build-cov -name '*.gcda' -delete
(cd build-cov && ctest -j 2 --timeout 900 "$@" >ctest.log 2>&1) ||
	{ tail -30 build-cov/ctest.log; echo "coverage.sh: tests failed (build-cov/ctest.log)" >&2; exit 1; }
# A bug check's failing branch is a bug in memcg: no correct run takes it.
# `if (mcg_config_debug)` and the like test a compile-time constant
# (base/compiler.h): in any one build one side is dead code, which gcc at -O0
# still branches over; so does a test of mcg_percpu_sections() alone (a
# constant of the build: the rseq sections are built, or not under TSan).
gcov_args=(-r . --filter 'src/' --exclude-unreachable-branches --gcov-ignore-parse-errors -j 2
	--exclude-branches-by-pattern '.*(\bMCG_BUG_ON\(|\bif \(!?mcg_config_\w+\)|\bif \((un)?likely\(!?mcg_percpu_sections\(\)\)\)).*')
gcovr "${gcov_args[@]}" --json-summary-pretty -o build-cov/coverage.json build-cov >/dev/null
# Each file's lines no test ran, for the tests still to write.
gcovr "${gcov_args[@]}" --txt -o build-cov/coverage-missing.txt build-cov >/dev/null
if [ "${COVERAGE_HTML:-0}" = 1 ]; then
	mkdir -p build-cov/coverage
	gcovr "${gcov_args[@]}" --html-details -o build-cov/coverage/index.html build-cov >/dev/null
fi
python3 - build-cov/coverage.json "${COVERAGE_MIN:-}" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
mins = [float(x) for x in sys.argv[2].split()] if sys.argv[2] else None
def pct(c, t): return 100.0 * c / t if t else 100.0
print(f"{'file':34} {'lines':>15} {'%':>6}  {'branches':>13} {'%':>6}")
low = []
for f in sorted(d["files"], key=lambda f: f["filename"]):
    lp = pct(f["line_covered"], f["line_total"]); bp = pct(f["branch_covered"], f["branch_total"])
    print(f"{f['filename']:34} {f['line_covered']:>7}/{f['line_total']:<7} {lp:6.1f}  "
          f"{f['branch_covered']:>6}/{f['branch_total']:<6} {bp:6.1f}")
    if mins and (lp < mins[2] or bp < mins[3]): low.append(f["filename"])
lp = pct(d["line_covered"], d["line_total"]); bp = pct(d["branch_covered"], d["branch_total"])
print(f"{'TOTAL':34} {d['line_covered']:>7}/{d['line_total']:<7} {lp:6.1f}  "
      f"{d['branch_covered']:>6}/{d['branch_total']:<6} {bp:6.1f}")
if mins:
    bad = lp < mins[0] or bp < mins[1] or low
    if bad:
        print(f"below COVERAGE_MIN {sys.argv[2]}: total {lp:.1f}/{bp:.1f}; files: {' '.join(low) or '-'}")
        sys.exit(1)
PY
