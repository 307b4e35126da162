#!/bin/sh
# Install memcg into a temporary prefix, then build and run a consumer with
# CMake's find_package and with pkg-config.
# Usage: check_install.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
libdir=$(ls -d "$tmp"/prefix/lib* | head -n1)
test -f "$tmp/prefix/include/memcg/slab.h"
test -x "$tmp/prefix/bin/memcg"
ls "$libdir"/libmemcg-preload.so >/dev/null
# memcg bench programs finds its cache-server program in libexec/memcg
test -x "$tmp/prefix/libexec/memcg/memcg-churn"
"$tmp/prefix/bin/memcg" bench programs --smoke --case churn 2>/dev/null |
	grep -q "^churn "
if [ -e "$build/memcg-kvcache" ]; then # built with MCG_BUILD_EXAMPLES
	"$tmp/prefix/bin/memcg-kvcache" --help | grep -q "usage: memcg-kvcache"
fi

cmake -S "$src/tests/install/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cm" >/dev/null
LD_LIBRARY_PATH="$libdir" "$tmp/cm/consumer" | grep -q "installed memcg works"

export PKG_CONFIG_PATH="$libdir/pkgconfig"
cc "$src/tests/install/consumer/main.c" -o "$tmp/pc" $(pkg-config --cflags --libs memcg)
LD_LIBRARY_PATH="$libdir" "$tmp/pc" | grep -q "installed memcg works"
echo "install: find_package and pkg-config consumers work"
