#!/usr/bin/env bash
# make install, then programs built against the installed copy with nothing but pkg-config:
#   1. a staged install (PREFIX=/usr/local DESTDIR=scratch, read with pkg-config's prefix
#      redefined to the staged copy: longmix.pc is relocatable) and a plain one
#      (PREFIX=scratch/prefix);
#   2. the libraries: liblongmix.a, liblongmix.so.VERSION with SONAME liblongmix.so.0, and the
#      links; every installed header compiles on its own with -Wall -Wextra -Wpedantic -Werror;
#   3. tests/install/consumer.c built with `pkg-config --cflags --libs longmix` by gcc and clang
#      and run against the shared library, and once linked statically (pkg-config --static);
#   4. the example plugin examples/plugins/naive.c built against the installed headers with
#      `pkg-config --cflags longmix` only, and loaded by the installed longmix verify --plugin;
#   5. make uninstall leaves nothing behind.
# Called by `make test-install` (part of `make check`) with MAKE, BUILD and CC set.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
CC=${CC:-gcc}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
passed=0

ok() { echo "PASS install: $*"; passed=$((passed + 1)); }
fail() { echo "FAIL install: $*" >&2; exit 1; }

# The example plugins built here: each a shared object from the installed headers and
# `pkg-config --cflags longmix`, then loaded by the installed longmix verify --plugin.
PLUGIN_SOURCES=(examples/plugins/naive.c)

# check_install DESTDIR PREFIX: everything make install put under DESTDIR + PREFIX, found
# through PKG_CONFIG_PATH (and, when staged, --define-variable=prefix=DESTDIR+PREFIX).
check_install() {
  local dest=$1 prefix=$2 libdir="$1$2/lib"
  local pc=(env PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config)
  [ "$dest" = "" ] || pc+=(--define-variable=prefix="$dest$prefix")
  "${pc[@]}" --exists longmix || fail "pkg-config does not find longmix.pc in $libdir/pkgconfig"
  [ "$("${pc[@]}" --modversion longmix)" = "$(sed -n 's/^VERSION *:= *//p' Makefile)" ] ||
    fail "longmix.pc has the wrong version"
  local cflags libs
  cflags=$("${pc[@]}" --cflags longmix | xargs)  # xargs: without pkgconf's trailing space
  libs=$("${pc[@]}" --libs longmix | xargs)
  [ "$cflags" = "-I$dest$prefix/include/longmix/include" ] || fail "--cflags gave '$cflags'"
  [ -f "$libdir/liblongmix.a" ] && [ -L "$libdir/liblongmix.so" ] || fail "libraries missing"
  local soname
  soname=$(readelf -d "$libdir/liblongmix.so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = liblongmix.so.0 ] || fail "SONAME is '$soname', not liblongmix.so.0"
  [ "$(readlink "$libdir/liblongmix.so.0")" = "liblongmix.so.$(sed -n 's/^VERSION *:= *//p' Makefile)" ] ||
    fail "liblongmix.so.0 does not point at the versioned file"
  # every relocation of the shared library is position-independent (no TEXTREL)
  ! readelf -d "$libdir/liblongmix.so" | grep -q TEXTREL || fail "liblongmix.so has text relocations"
  ok "$dest$prefix: liblongmix.a, liblongmix.so -> so.0 (SONAME liblongmix.so.0), longmix.pc"

  local h
  for h in "$dest$prefix"/include/longmix/include/*.h; do
    echo "#include <$(basename "$h")>" | "$CC" -std=c17 -Wall -Wextra -Wpedantic -Werror \
      -fsyntax-only -x c - $cflags || fail "$(basename "$h") does not compile on its own"
  done
  ok "every installed header compiles on its own: $(cd "$dest$prefix"/include/longmix && find . -name '*.h' | sort | xargs)"

  local cc out compilers=()
  for cc in $(printf '%s\n' "$CC" gcc clang | awk '!seen[$0]++'); do
    command -v "$cc" >/dev/null || continue
    compilers+=("$cc")
    # shellcheck disable=SC2086 # pkg-config output is a list of words
    "$cc" -std=c17 -Wall -Wextra -Werror tests/install/consumer.c $cflags $libs \
      -o "$scratch/consumer" || fail "$cc cannot build consumer.c with pkg-config's flags"
    readelf -d "$scratch/consumer" | grep -q 'NEEDED.*\[liblongmix.so.0\]' ||
      fail "consumer ($cc) does not load liblongmix.so.0"
    out=$(LD_LIBRARY_PATH="$libdir" "$scratch/consumer") || fail "consumer ($cc) failed"
    [[ "$out" == "consumer: ok (isa "* ]] || fail "consumer ($cc) said '$out'"
  done
  ok "consumer.c built by ${compilers[*]} with pkg-config --cflags --libs longmix: $out"

  local static
  static=$("${pc[@]}" --static --libs longmix | xargs)
  # shellcheck disable=SC2086
  "$CC" -std=c17 -Wall -Wextra -Werror tests/install/consumer.c $cflags \
    ${static/-llongmix/-Wl,-Bstatic -llongmix -Wl,-Bdynamic} -o "$scratch/consumer-static" ||
    fail "cannot link consumer.c statically with pkg-config --static --libs longmix"
  ! readelf -d "$scratch/consumer-static" | grep -q 'liblongmix' || fail "static consumer loads liblongmix.so"
  out=$("$scratch/consumer-static") || fail "static consumer failed"
  ok "consumer.c linked statically (pkg-config --static --libs longmix: $static): $out"

  local plugin so summary
  for plugin in "${PLUGIN_SOURCES[@]}"; do
    so="$scratch/$(basename "${plugin%.c}").so"
    # a copy outside the tree, so only the installed headers can be found
    cp "$plugin" examples/plugins/naive_ops.h "$scratch/"
    # shellcheck disable=SC2086
    "$CC" -std=c17 -Wall -Wextra -Wpedantic -Werror -shared -fPIC "$scratch/$(basename "$plugin")" \
      $cflags -o "$so" -lm || fail "cannot build plugin $plugin"
    summary=$("$dest$prefix/bin/longmix" verify --plugin "$so" contracts/kernels.json | tail -1) ||
      fail "the installed longmix verify --plugin failed on $so: $summary"
    [ "$summary" = "354 passed, 0 failed, 0 errors, 10 not provided" ] ||
      fail "verify --plugin $so said '$summary'"
  done
  ok "plugins built with pkg-config --cflags longmix and verified: ${PLUGIN_SOURCES[*]} ($summary)"
  return 0
}

"$MAKE" --no-print-directory -s install BUILD="$BUILD" PREFIX=/usr/local DESTDIR="$scratch/stage" >/dev/null
check_install "$scratch/stage" /usr/local
[ -x "$scratch/stage/usr/local/bin/longmix" ] && "$scratch/stage/usr/local/bin/longmix" --help >/dev/null ||
  fail "bin/longmix not installed or not runnable"
ok "bin/longmix installed and runs"

"$MAKE" --no-print-directory -s install BUILD="$BUILD" PREFIX="$scratch/prefix" >/dev/null
check_install "" "$scratch/prefix"
grep -qx "libdir=\${prefix}/lib" "$scratch/prefix/lib/pkgconfig/longmix.pc" ||
  fail "longmix.pc does not write libdir relative to prefix"

"$MAKE" --no-print-directory -s uninstall BUILD="$BUILD" PREFIX=/usr/local DESTDIR="$scratch/stage"
left=$(find "$scratch/stage" -type f -o -type l)
[ -z "$left" ] || fail "make uninstall left: $left"
ok "make uninstall removes every installed file"
echo "install: $passed passed, 0 failed"
