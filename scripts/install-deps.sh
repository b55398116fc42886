#!/usr/bin/env bash
# Install longmix's build, test and plotting dependencies from Debian 12 packages.
# Idempotent: checks each package with dpkg-query and installs only what is missing;
# prints nothing when everything is already there. Needs root (or sudo) to install.
#   scripts/install-deps.sh          host toolchain + libraries + Python tools
#   scripts/install-deps.sh --neon   also the arm64 cross toolchain, libraries and qemu-user
#   scripts/install-deps.sh --slurm  also Slurm and munge (make test-slurm, scripts/slurm/)
#   scripts/install-deps.sh --parallel  also GNU parallel (shards on a workstation)
#   scripts/install-deps.sh --figures   also poppler-utils (pdftoppm: look at report PDFs)
#   scripts/install-deps.sh --latex     also pdflatex and booktabs (make test-report)
# Options combine; each optional list is installed only when asked for.
set -euo pipefail

host_pkgs=(gcc g++ make clang pkg-config libgomp1 libhwloc-dev libjansson-dev nettle-dev
           libsleef-dev libbenchmark-dev libcriterion-dev python3 python3-numpy python3-matplotlib)
neon_pkgs=(gcc-aarch64-linux-gnu qemu-user libgomp1:arm64 libsleef-dev:arm64 libjansson-dev:arm64
           nettle-dev:arm64 libhwloc-dev:arm64 libc6-dev-arm64-cross)
# Optional lists, one package a line.
slurm_pkgs=(
  slurm-wlm
  munge
)
parallel_pkgs=(
  parallel
)
figures_pkgs=(
  poppler-utils
)
latex_pkgs=(
  texlive-latex-recommended
)

want_neon=0
optional=()
for arg in "$@"; do
  case "$arg" in
    --neon) want_neon=1 ;;
    --slurm) optional+=("${slurm_pkgs[@]}") ;;
    --parallel) optional+=("${parallel_pkgs[@]}") ;;
    --figures) optional+=("${figures_pkgs[@]}") ;;
    --latex) optional+=("${latex_pkgs[@]}") ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "install-deps.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

missing() {  # prints the packages of "$@" that dpkg does not report as installed
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || echo "$p"
  done
}

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

need=($(missing "${host_pkgs[@]}"))
if [ "$want_neon" -eq 1 ]; then
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    as_root dpkg --add-architecture arm64
    need+=("${neon_pkgs[@]}")
  else
    need+=($(missing "${neon_pkgs[@]}"))
  fi
fi
[ "${#optional[@]}" -eq 0 ] || need+=($(missing "${optional[@]}"))
[ "${#need[@]}" -eq 0 ] && exit 0

echo "install-deps: installing ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
as_root apt-get update -qq
as_root apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "install-deps: done" >&2
