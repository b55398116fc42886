#!/usr/bin/env bash
# End-to-end tests of the real longmix binary. Each tests/cli/t_*.sh is sourced in a
# subshell with $LONGMIX, $PYTHON, $WORK (a scratch folder) and the helpers below.
# Prints one line per test and closes with "cli: N passed, N failed".
#   bash tests/cli/run.sh [t_FILE.sh...]   only those files (default: every t_*.sh)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
LONGMIX=${LONGMIX:-$root/build/longmix}
case "$LONGMIX" in /*) ;; *) LONGMIX=$root/$LONGMIX ;; esac
PYTHON=${PYTHON:-/usr/bin/python3}
export LONGMIX PYTHON
cd "$root"

passed=0 failed=0
# expect_exit CODE CMD...: runs CMD, fails the test when its exit status is not CODE.
expect_exit() {
  local want=$1; shift
  local got=0
  "$@" >"$WORK/out" 2>"$WORK/err" || got=$?
  if [ "$got" -ne "$want" ]; then
    echo "    expected exit $want, got $got: $*" >&2
    sed 's/^/    | /' "$WORK/out" "$WORK/err" | tail -20 >&2
    return 1
  fi
}
# expect_text FILE TEXT: FILE (out or err in $WORK) contains TEXT.
expect_text() {
  grep -qF -- "$2" "$WORK/$1" || { echo "    '$2' not in $1:" >&2; sed 's/^/    | /' "$WORK/$1" | tail -20 >&2; return 1; }
}
export -f expect_exit expect_text

files=("$here"/t_*.sh)
[ $# -eq 0 ] || files=("${@/#/$here/}")
for file in "${files[@]}"; do
  [ -e "$file" ] || continue
  while IFS= read -r name; do
    WORK=$(mktemp -d) && export WORK
    # a plain statement, not an `if` condition: set -e stays in force inside the test
    (set -e; source "$file"; "$name") </dev/null
    if [ $? -eq 0 ]; then
      echo "PASS ${file##*/}: $name"; passed=$((passed + 1))
    else
      echo "FAIL ${file##*/}: $name"; failed=$((failed + 1))
    fi
    rm -rf "$WORK"
  done < <(grep -oE '^test_[a-z0-9_]+' "$file")
done
echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
