#!/usr/bin/env bash
# scripts/deps.sh - install what memcg needs to build, test and benchmark, if
# missing (Debian 12; run as root, or with sudo available).
#   build:      gcc, make, cmake, pkg-config, libmicrohttpd-dev (the metrics
#               server's header; the library is loaded when a server starts)
#   tests:      python3, perl, git (real programs under the malloc shim),
#               clang-format, curl (scrapes /metrics), prometheus (promtool
#               checks the metrics), util-linux and bsdutils (setpriv runs a
#               client as another user; script gives memcg top a terminal)
#   baselines:  libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4 (benchmarks)
#   plots:      gnuplot-nox (memcg bench dirty --plot, memcg bench programs --plot)
#   programs:   sqlite3, xz-utils: `memcg bench programs` runs sqlite3, xz,
#               sort, gcc, perl and python3 on every malloc
#   proof:      clang, libclang-rt-14-dev (libFuzzer and its sanitizer runtimes:
#               tests/fuzz, scripts/fuzz.sh), valgrind (scripts/valgrind.sh),
#               gcovr (scripts/coverage.sh, scripts/mutate.sh), ninja-build
#               (scripts/mutate.sh builds each mutant with Ninja)
#   kvcache:    redis-server, redis-tools (redis-cli, redis-benchmark): the
#               example server's tests, demo and benchmark talk to it with
#               real clients and compare it with a real redis-server
set -euo pipefail

pkgs=(build-essential cmake pkg-config python3 perl git clang-format
      clang libclang-rt-14-dev valgrind gcovr ninja-build
      libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 redis-server redis-tools
      libmicrohttpd-dev curl prometheus util-linux bsdutils gnuplot-nox
      sqlite3 xz-utils)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "memcg: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
# redis-server and prometheus ship services (redis on port 6379); nothing here
# uses them (the tests start their own servers on free ports, and only
# promtool is wanted): keep apt from starting any, for this install.
policy=/usr/sbin/policy-rc.d
added_policy=""
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
	$sudo chmod 755 "$policy"
	added_policy=1
fi
status=0
$sudo apt-get update -qq || status=$?
[ $status -eq 0 ] && { $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" \
	>/dev/null || status=$?; }
[ -n "$added_policy" ] && $sudo rm -f "$policy"
[ $status -eq 0 ] || exit $status
promtool --version >/dev/null 2>&1 || { echo "memcg: promtool does not run" >&2; exit 1; }
