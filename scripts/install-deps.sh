#!/usr/bin/env bash
# Install longmix's dependencies from Debian 12 packages (docs/dependencies.md says why each).
#   scripts/install-deps.sh [SET...]   SET: host (default), neon, fresh, slurm, parallel,
#                                      figures, latex; --neon = host neon, --SET = SET
#     host   toolchains (gcc, clang + libomp + sanitizer runtimes), libraries, Python tools:
#            everything `make run`, `make test` (but its NEON step), bench and report need
#     neon   the arm64 cross toolchain, the :arm64 libraries and qemu-user (make test-neon)
#     fresh  debootstrap, for `make test-fresh`
#     slurm  Slurm and munge (make test-slurm, scripts/slurm/)
#     parallel  GNU parallel (shards on a workstation)
#     figures   poppler-utils (pdftoppm: look at report PDFs)
#     latex     pdflatex and booktabs (make test-report)
#   --list      print the packages of the SETs, one a line, and exit
#   --missing   print the packages of the SETs that are not installed, and exit
# Idempotent: one dpkg query, and nothing printed, when every package is there. Otherwise it
# names the missing packages, runs apt-get with a progress line every few seconds on stderr
# (the full apt log goes to a file, kept and shown when apt fails), waits up to 10 minutes
# for a dpkg lock held by someone else, and says how long it took. Needs root (or sudo).
set -euo pipefail

# One package a line; a new dependency is one more line (and a row in docs/dependencies.md).
host_pkgs=(
  make
  gcc                  # the build (C17)
  g++                  # the Google Benchmark shim only
  pkg-config
  git                  # the revision in `longmix info` and every results file
  clang                # make test-clang, make test-tsan (clang 14)
  libomp-14-dev        # clang's OpenMP: omp.h, libomp, and Archer (OpenMP under TSan)
  libclang-rt-14-dev   # clang's sanitizer runtimes (-fsanitize=thread|address|undefined) and libFuzzer
  libgomp1             # gcc's OpenMP runtime (gcc's libasan8/libubsan1 come with gcc-12)
  libhwloc-dev
  libjansson-dev
  nettle-dev
  libsleef-dev
  libdnnl-dev          # oneDNN 2.6: the prefill GEMM (kernels/gemm): bf16 matmul, faster than OpenBLAS here (docs/dependencies.md)
  libbenchmark-dev
  libcriterion-dev
  python3
  python3-numpy        # contract builders, fixtures
  python3-matplotlib   # make report figures
)
neon_pkgs=(
  gcc-aarch64-linux-gnu
  libc6-dev-arm64-cross
  qemu-user
  libgomp1:arm64
  libsleef-dev:arm64
  libjansson-dev:arm64
  nettle-dev:arm64
  libhwloc-dev:arm64
)
fresh_pkgs=(
  debootstrap          # make test-fresh: a Debian 12 root from the mirror apt uses
)
slurm_pkgs=(
  slurm-wlm            # make test-slurm: a one-node cluster on loopback
  munge                # Slurm's authentication
)
parallel_pkgs=(
  parallel             # GNU parallel: shards on a workstation
)
figures_pkgs=(
  poppler-utils        # pdftoppm: report PDFs rendered to look at
)
latex_pkgs=(
  texlive-latex-recommended  # make test-report: tables and figures typeset in a paper
)

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
say() { echo "install-deps: $*" >&2; }

sets=() mode=install
for arg in "$@"; do
  case "$arg" in
    host|neon|fresh|slurm|parallel|figures|latex) sets+=("$arg") ;;
    --neon) sets+=(host neon) ;;
    --slurm|--parallel|--figures|--latex) sets+=("${arg#--}") ;;
    --list) mode=list ;;
    --missing) mode=missing ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install-deps.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
[ "${#sets[@]}" -gt 0 ] || sets=(host)

wanted=()
for set in "${sets[@]}"; do
  declare -n list="${set}_pkgs"
  for p in "${list[@]}"; do
    case " ${wanted[*]} " in *" $p "*) ;; *) wanted+=("$p") ;; esac
  done
  unset -n list
done

if [ "$mode" = list ]; then printf '%s\n' "${wanted[@]}"; exit 0; fi

native=$(dpkg --print-architecture)
missing() {  # prints the packages of "$@" that dpkg does not report installed (one query)
  local -A have=()
  local status name
  while read -r status name; do
    [ "$status" = ii ] && have[${name%:"$native"}]=1
  done < <(dpkg-query -W -f='${db:Status-Abbrev} ${binary:Package}\n' "$@" 2>/dev/null || true)
  local p
  for p in "$@"; do
    [ -n "${have[$p]:-}" ] || echo "$p"
  done
}

need=($(missing "${wanted[@]}"))
if [ "$mode" = missing ]; then [ "${#need[@]}" -eq 0 ] || printf '%s\n' "${need[@]}"; exit 0; fi
[ "${#need[@]}" -eq 0 ] && exit 0

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo "$@"
  else say "not root and no sudo: install as root: apt-get install ${need[*]}"; exit 1
  fi
}

log=$(mktemp "${TMPDIR:-/tmp}/longmix-install-deps.XXXXXX.log")
t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 )) s"; }
fail() {
  say "FAILED: $*; the last lines of the apt log ($log, kept):"
  tail -n 25 "$log" | sed 's/^/    | /' >&2
  exit 1
}

# apt-get's machine-readable status goes to fd 3, opened on the progress pipe inside the root
# shell (sudo closes descriptors above 2); its stdout, where maintainer scripts write, goes
# straight to the log. With the status on fd 1 instead, texlive-base's postinst failed with
# "Unable to flush stdout: Bad file descriptor". Every line goes to the log; progress is
# printed when it moves by 10 % or every 15 s.
progress() {  # label
  local label=$1 line kind was= pct what shown=-10 last=0 now
  while IFS= read -r line; do
    printf '%s\n' "$line" >>"$log"
    case "$line" in
      dlstatus:*) kind=downloading ;;
      pmstatus:*) kind=installing ;;
      *"Waiting for cache lock"*|*"Could not get lock"*)
        now=$(date +%s)
        if [ $((now - last)) -ge 30 ]; then say "waiting for the dpkg lock (another apt is running)"; last=$now; fi
        continue ;;
      *) continue ;;
    esac
    IFS=: read -r _ _ pct what <<<"$line"
    pct=${pct%%.*}
    [ -n "$pct" ] || continue
    now=$(date +%s)
    [ "$kind" = "$was" ] || shown=-10 was=$kind
    if [ $((pct - shown)) -ge 10 ] || [ $((now - last)) -ge 15 ]; then
      say "$label: $kind $pct % ($what) [$(elapsed)]"
      shown=$pct last=$now
    fi
  done
}
apt() {  # label, apt-get arguments...
  local label=$1; shift
  as_root env DEBIAN_FRONTEND=noninteractive LM_APT_LOG="$log" sh -c \
    'exec 3>&1 >>"$LM_APT_LOG"; exec apt-get -o APT::Status-Fd=3 "$@"' apt-get \
    -o DPkg::Lock::Timeout=600 -o Dpkg::Use-Pty=0 "$@" 2>&1 | progress "$label"
  return "${PIPESTATUS[0]}"
}

for p in "${need[@]}"; do
  case "$p" in
    *:arm64)
      if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        say "adding the arm64 architecture (dpkg --add-architecture arm64)"
        as_root dpkg --add-architecture arm64
      fi
      break ;;
  esac
done

say "missing ${#need[@]} package(s) for ${sets[*]}: ${need[*]}"
say "apt-get update (log: $log)"
# a broken third-party source fails the update but not necessarily the install
keep_log=0
apt update update -q || { say "apt-get update failed (log: $log, kept); installing from the lists there are"; keep_log=1; }
say "apt-get install ${#need[@]} package(s) and their dependencies [$(elapsed)]"
apt install install -y -q --no-install-recommends "${need[@]}" || fail "apt-get install"
still=($(missing "${need[@]}"))
[ "${#still[@]}" -eq 0 ] || fail "still not installed: ${still[*]}"
[ "$keep_log" = 1 ] || rm -f "$log"
say "done: ${need[*]} installed in $(elapsed)"
