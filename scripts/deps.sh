#!/usr/bin/env bash
# scripts/deps.sh - install what memcg needs to build, test and benchmark, if
# missing (Debian 12; run as root, or with sudo available).
#   build:      gcc, make, cmake, pkg-config
#   tests:      python3, perl, git (real programs under the malloc shim), clang-format
#   baselines:  libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4 (benchmarks)
#   programs:   sqlite3, xz-utils, gnuplot-nox: `memcg bench programs` runs
#               sqlite3, xz, sort, gcc, perl and python3 on every malloc and
#               draws its churn case with gnuplot (--plot)
#   kvcache:    redis-server, redis-tools (redis-cli, redis-benchmark): the
#               example server's tests, demo and benchmark talk to it with
#               real clients and compare it with a real redis-server
set -euo pipefail

pkgs=(build-essential cmake pkg-config python3 perl git clang-format
      libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 redis-server redis-tools
      sqlite3 xz-utils gnuplot-nox)
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
# Installing redis-server would start its service on port 6379 where init
# scripts may run.  Nothing here uses that service (the tests start their
# own servers on free ports): keep apt from starting any, for this install.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
	printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
	$sudo chmod +x "$policy"
	trap '$sudo rm -f "$policy"' EXIT
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
