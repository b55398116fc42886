#!/usr/bin/env bash
# The README's two commands on a fresh Debian 12, as a new user runs them: builds a minimal
# root with debootstrap (minbase + make, git, ca-certificates) from the Debian mirror this
# machine's apt uses, copies a clean clone of the current commit in, and runs `make run`
# then `make test` inside it (chroot, as root), timing each. Everything else the two
# commands need they must install themselves. Then, briefly, `make bench`, `sweep` and
# `report` (their dependencies too), and, in the same root, the contract builders' bytes
# under OpenBLAS and the reference BLAS (scripts/check-rebuild.sh).
#   scripts/test-fresh.sh [--keep] [--dir DIR] [--mirror URL] [--rev REV] [--suite NAME]
#     --dir DIR     where the root and the logs go (default build/fresh; needs ~6 GB)
#     --mirror URL  Debian mirror (default: the one serving SUITE in /etc/apt/sources*)
#     --rev REV     the commit to test (default HEAD; uncommitted changes are not tested)
#     --suite NAME  default bookworm (Debian 12)
#     --keep        keep the root afterwards (unmounted) to look inside
# Logs: DIR/debootstrap.log, DIR/make-{run,test,bench,sweep,report}.log, check-rebuild.log;
# DIR/summary.txt holds the times and results. Exit 0 when all pass. Needs root; 30-60 min.
# The root's mounts are undone and its processes stopped on every exit (error, Ctrl-C).
set -euo pipefail
# The whole script is one brace group, parsed before it runs: an edit of this file during
# the hour it takes cannot change what the running copy does next.
{

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
say() { echo "test-fresh: $*" >&2; }

repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
dir=$repo/build/fresh mirror= rev=HEAD suite=bookworm keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --dir) dir=$2; shift ;;
    --mirror) mirror=$2; shift ;;
    --rev) rev=$2; shift ;;
    --suite) suite=$2; shift ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "test-fresh.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$(id -u)" -eq 0 ] || { say "needs root (debootstrap, mount, chroot)"; exit 2; }
command -v debootstrap >/dev/null || { say "debootstrap missing: scripts/install-deps.sh fresh"; exit 2; }
commit=$(git -C "$repo" rev-parse --verify "$rev^{commit}") || { say "no commit '$rev'"; exit 2; }
if [ "$rev" = HEAD ] && [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  say "note: uncommitted changes are not tested (a clean clone of $commit is)"
fi

# apt's Debian entries as "URI SUITE" lines, from one-line lists and deb822 .sources files
apt_entries() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -nE 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([^[:space:]]+)[[:space:]]+([^[:space:]]+).*/\2 \3/p' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'function flush() { if (types ~ /(^| )deb( |$)/ && enabled != "no")
                              for (u in uris) for (s in suites) print uris[u], suites[s]
                            delete uris; delete suites; types = ""; enabled = "" }
         /^[[:space:]]*$/ { flush(); next }
         /^#/ { next }
         { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^ /, "") }
         key == "types" { types = $0 }
         key == "enabled" { enabled = tolower($0) }
         key == "uris" { split($0, uris, " ") }
         key == "suites" { split($0, suites, " ") }
         END { flush() }' "$f"
  done
}
entries=$(apt_entries)
if [ -z "$mirror" ]; then
  mirror=$(awk -v s="$suite" '$2 == s { print $1; exit }' <<<"$entries")
  [ -n "$mirror" ] || { say "no apt source serves '$suite' (use --mirror URL)"; exit 2; }
fi
mirror=${mirror%/}
security=$(awk -v s="$suite-security" '$2 == s { print $1; exit }' <<<"$entries")

mkdir -p "$dir"
dir=$(cd "$dir" && pwd -P)
root=$dir/root
if [ -e "$root" ]; then say "$root exists (a previous --keep?): remove it first"; exit 2; fi
summary=$dir/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary" >&2; }

mounted=()
cleanup() {
  local rc=$? p i
  trap - EXIT INT TERM
  set +e
  # processes still running inside the root (a hung test): stop them, by pid
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ] && kill -KILL "${p#/proc/}" 2>/dev/null
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || say "could not unmount ${mounted[i]}"
  done
  if grep -qF " $root/" /proc/mounts; then
    say "mounts remain under $root; NOT removing it:"; grep -F " $root/" /proc/mounts >&2
  elif [ "$keep" = 1 ]; then
    say "kept $root (unmounted)"
  elif [ -d "$root" ]; then
    rm -rf --one-file-system "$root" && say "removed $root"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mount_in() {  # fstype source target [options]
  mkdir -p "$root$3"
  mount -t "$1" ${4:+-o "$4"} "$2" "$root$3"
  mounted+=("$root$3")
}

df -h "$dir" | tail -1 | awk '{ print "test-fresh: free space at the root: " $4 }' >&2
note "commit $commit; $suite from $mirror${security:+, security from $security}"
say "debootstrap --variant=minbase $suite (log: $dir/debootstrap.log)"
t=$(date +%s)
debootstrap --variant=minbase --include=make,git,ca-certificates "$suite" "$root" "$mirror" \
  >"$dir/debootstrap.log" 2>&1 || { tail -20 "$dir/debootstrap.log" >&2; say "debootstrap failed"; exit 1; }
note "debootstrap: $(( $(date +%s) - t )) s"
{
  echo "deb $mirror $suite main"
  echo "deb $mirror $suite-updates main"
  [ -z "$security" ] || echo "deb $security $suite-security main"
} >"$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount_in proc proc /proc
mount_in sysfs sys /sys
mount_in devtmpfs udev /dev
mount_in devpts devpts /dev/pts gid=5,mode=620
mount_in tmpfs shm /dev/shm

git clone --quiet --no-hardlinks "$repo" "$root/root/longmix"
git -C "$root/root/longmix" checkout --quiet --detach "$commit"

inside() {  # a command line run in the root, as a login shell of root would
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c "cd /root/longmix && $1"
}
status=0
# make_in NAME ARGS: `make ARGS` in the root, timed, its log in DIR/make-NAME.log
make_in() {
  local name=$1 args=$2 t rc=0 secs
  say "make $args (log: $dir/make-$name.log)"
  t=$(date +%s)
  inside "make $args" >"$dir/make-$name.log" 2>&1 || rc=$?
  secs=$(( $(date +%s) - t ))
  if [ "$rc" -eq 0 ]; then
    note "make $args: passed in $secs s ($((secs / 60)) min $((secs % 60)) s)"
  else
    note "make $args: FAILED (exit $rc) after $secs s; the end of its log:"
    tail -n 30 "$dir/make-$name.log" | sed 's/^/    | /' | tee -a "$summary" >&2
    grep -E '^(FAIL|not ok)|error:|Error [0-9]' "$dir/make-$name.log" | head -20 \
      | sed 's/^/    ! /' | tee -a "$summary" >&2 || true
    status=1
  fi
}
make_in run run
make_in test test
# the other targets' dependencies, briefly (not part of the two commands' times)
make_in bench "bench BENCH_ARGS='--benchmark_min_time=0.01 --benchmark_filter=gemv_rowdot'"
make_in sweep "sweep SWEEP_ARGS='--preset smoke --threads 1 --reps 1 --no-roofline'"
make_in report report
note "packages in the root: $(inside "dpkg-query -W | wc -l" 2>/dev/null || echo '?')"
# The root's NumPy runs on OpenBLAS (python3-matplotlib pulls it in); with the reference
# BLAS beside it, the builders' bytes are compared under both (scripts/check-rebuild.sh).
say "contract rebuilds under each BLAS (log: $dir/check-rebuild.log)"
if inside "DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends libblas3 \
             && scripts/check-rebuild.sh" >"$dir/check-rebuild.log" 2>&1; then
  note "check-rebuild: $(tail -1 "$dir/check-rebuild.log")"
  grep -E '^== |BLAS:' "$dir/check-rebuild.log" | sed 's/^/    /' | tee -a "$summary" >&2
else
  note "check-rebuild: FAILED; the end of its log:"
  tail -n 20 "$dir/check-rebuild.log" | sed 's/^/    | /' | tee -a "$summary" >&2
  status=1
fi
[ "$status" -eq 0 ] && note "test-fresh: make run and make test pass on a fresh $suite" \
                    || note "test-fresh: FAILED (logs in $dir)"
exit "$status"
}
exit
