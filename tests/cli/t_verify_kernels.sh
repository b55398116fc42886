# longmix verify on contracts/kernels.json (schema longmix-kernels/1).
test_kernels_contract_verifies() {
  expect_exit 0 "$LONGMIX" verify contracts/kernels.json
  expect_text out "kernels/gemv_rowdot.f32.n7_d37/"
  expect_text out " 0 failed, 0 errors"
}
test_kernels_contract_runs_each_path_when_not_forced() {
  LONGMIX_ISA= expect_exit 0 "$LONGMIX" verify contracts/kernels.json
  expect_text out "kernels/gemv_rowdot.f32.n7_d37/scalar/sum"
}
test_kernels_contract_forced_path_runs_only_that_path() {
  LONGMIX_ISA=scalar expect_exit 0 "$LONGMIX" verify contracts/kernels.json
  expect_text out "gemv_rowdot.f32.n7_d37/scalar/sum"
  if grep -qE 'gemv_rowdot\.f32\.n7_d37/(avx2|avx512|neon)/' "$WORK/out"; then
    echo "    LONGMIX_ISA=scalar ran another path" >&2; return 1
  fi
}
# A perturbed expected value, pinned with --sha256 so only the numbers can fail.
test_kernels_contract_perturbed_value_fails() {
  "$PYTHON" - contracts/kernels.json "$WORK/bad.json" <<'PY'
import json, sys
contract = json.load(open(sys.argv[1]))
case = next(c for c in contract["cases"] if c["id"] == "gemv_rowdot.f32.n7_d37")
sample = case["expected"]["samples"][0]
sample["value"] += 1.0  # far beyond atol + rtol * scale
json.dump(contract, open(sys.argv[2], "w"), indent=1)
PY
  local pin; pin=$(sha256sum "$WORK/bad.json" | cut -d' ' -f1)
  expect_exit 1 "$LONGMIX" verify --sha256 "$pin" "$WORK/bad.json"
  expect_text out "FAIL"
  expect_text out "gemv_rowdot.f32.n7_d37/"
  expect_text out "/at[0]"
}
test_kernels_contract_unknown_kernel_is_bad_input() {
  "$PYTHON" - contracts/kernels.json "$WORK/unknown.json" <<'PY'
import json, sys
contract = json.load(open(sys.argv[1]))
contract["cases"][0]["kernel"] = "no_such_kernel"
json.dump(contract, open(sys.argv[2], "w"), indent=1)
PY
  local pin; pin=$(sha256sum "$WORK/unknown.json" | cut -d' ' -f1)
  expect_exit 2 "$LONGMIX" verify --sha256 "$pin" "$WORK/unknown.json"
  expect_text err "no_such_kernel"
}
test_kernels_contract_is_what_the_builder_writes() {
  expect_exit 0 "$PYTHON" scripts/build_kernel_contract.py --check
}
