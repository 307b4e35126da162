#!/usr/bin/env bash
# scripts/deps.sh - install what memcg needs to build, test and benchmark, if
# missing (Debian 12; run as root, or with sudo available).
#   build:      gcc, make, cmake, pkg-config
#   tests:      python3, perl, git (real programs under the malloc shim), clang-format
#   baselines:  libjemalloc2, libmimalloc2.0, libtcmalloc-minimal4 (benchmarks)
#   plots:      gnuplot-nox (memcg bench dirty --plot)
set -euo pipefail

pkgs=(build-essential cmake pkg-config python3 perl git clang-format
      libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 gnuplot-nox)
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
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
