#!/usr/bin/env bash
# Rebuild the contracts with their builders under every arithmetic NumPy can be given on
# this machine and compare bytes: each BLAS installed (every libblas.so.3 alternative, put
# first on LD_LIBRARY_PATH for the run only: the machine's choice is not touched), NumPy
# with its AVX-512 and then also its AVX2/FMA loops disabled, and glibc's FMA and AVX2
# variants masked. Each run must find contracts/kernels.json and primer.json "up to date"
# and write the same M8 variant bytes. Exit 0 when every run agrees (a few minutes).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-/usr/bin/python3}
case "${1:-}" in
  -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
  "") ;;
  *) echo "check-rebuild.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$(uname -m)-linux-gnu")
blas_dirs=()
while read -r lib; do
  [ -n "$lib" ] && blas_dirs+=("$(dirname "$lib")")
done < <(update-alternatives --list "libblas.so.3-$triplet" 2>/dev/null)
[ "${#blas_dirs[@]}" -gt 0 ] || blas_dirs=("")
no512=AVX512F,AVX512CD,AVX512_SKX,AVX512_CLX,AVX512_CNL,AVX512_ICL
configs=()
for dir in "${blas_dirs[@]}"; do
  configs+=("${dir:+LD_LIBRARY_PATH=$dir}")
done
configs+=("NPY_DISABLE_CPU_FEATURES=$no512")
configs+=("${blas_dirs[-1]:+LD_LIBRARY_PATH=${blas_dirs[-1]} }NPY_DISABLE_CPU_FEATURES=$no512,AVX2,FMA3 GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA,-AVX512F")
[ "${#blas_dirs[@]}" -gt 1 ] || echo "check-rebuild: one BLAS installed (${blas_dirs[0]:-none found}); install another (libopenblas0-pthread) to compare two" >&2

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0 ref=
for config in "${configs[@]}"; do
  echo "== ${config:-this machine as it is}"
  run() { env $config "$PYTHON" "$@"; }
  run -c 'import numpy as np; a = np.ones((64, 64)); a @ a
import sys; from numpy.core._multiarray_umath import __cpu_features__ as c
blas = sorted({l.split()[-1] for l in open("/proc/self/maps") if "libblas" in l or "openblas" in l})
print("   BLAS:", ", ".join(blas) or "?", "| NumPy AVX512F:", c["AVX512F"], "AVX2:", c["AVX2"])' 2>/dev/null
  for builder in build_kernel_contract build_primer_contract; do
    out=$(run scripts/$builder.py --check 2>&1) || failed=1
    echo "   $out"
  done
  run scripts/build_m8_contract.py --seed-offset 3 --out "$work/m8.json" 2>"$work/digest" || failed=1
  digest=$(tail -1 "$work/digest")
  ref=${ref:-$digest}
  if [ "$digest" = "$ref" ]; then echo "   M8 variant 3: $digest"
  else echo "   M8 variant 3: $digest DIFFERS from $ref"; failed=1
  fi
done
[ "$failed" = 0 ] && echo "check-rebuild: the same bytes under ${#configs[@]} arithmetic setups" \
                  || echo "check-rebuild: FAILED: a builder's output depends on the machine"
exit "$failed"
