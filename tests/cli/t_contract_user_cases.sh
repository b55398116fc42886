# Cases at the user's own shapes: scripts/build_kernel_contract.py --cases writes a new
# kernel contract (inputs by the recipes, expected statistics from the float64 reference)
# and its SHA256SUMS line; longmix verifies it, and fails it once an expected value is nudged.
build_user_contract() { # $WORK/c/mine.json with three cases, and its pin
  mkdir -p "$WORK/c"
  "$PYTHON" scripts/build_kernel_contract.py --out "$WORK/c/mine.json" \
    --cases attention_decode:batch=1,heads=6,kv_heads=2,head_dim=40,capacity=333 \
    --cases ssm_mamba1_scan:batch=1,length=100,channels=24,state=12,seed=5,exact_zoh=true \
    --cases conv_causal:batch=2,length=17,channels=10,width=3,bias=true,tail=false,silu=true \
    > "$WORK/build.out"
}

test_user_cases_verify_and_pin() {
  build_user_contract
  grep -qx "wrote $WORK/c/mine.json: 3 cases" "$WORK/build.out"
  local line; line="$(sha256sum "$WORK/c/mine.json" | cut -d' ' -f1)  mine.json"
  grep -qxF "$line" "$WORK/build.out"            # the pin line, printed
  grep -qxF "$line" "$WORK/c/SHA256SUMS"         # and written beside the file
  "$PYTHON" - "$WORK/c/mine.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
assert [c["id"] for c in cases] == [
    "attention_decode.f32.user_batch1_heads6_kv_heads2_head_dim40_capacity333_seed0",
    "ssm_mamba1_scan.f32.user_batch1_length100_channels24_state12_exact_zoh_true_seed5",
    "conv_causal.f32.user_batch2_length17_channels10_width3_bias_true_tail_false_silu_true_seed0"], cases
assert cases[0]["shape"] == {"batch": 1, "heads": 6, "kv_heads": 2, "head_dim": 40, "capacity": 333}
assert cases[1]["options"] == {"exact_zoh": True} and cases[1]["seed"] == 5
assert cases[0]["expected"]["count"] == 6 * 40 and cases[2]["expected"]["count"] == 2 * 17 * 10 + 2 * 2 * 10
PY
  expect_exit 0 "$LONGMIX" verify "$WORK/c/mine.json"
  expect_text out " passed, 0 failed, 0 errors"
  expect_text out "PASS $WORK/c/mine.json: kernels/attention_decode.f32.user_batch1_heads6_kv_heads2_head_dim40_capacity333_seed0/"
  # a plugin is checked on them too
  local build; build=$(dirname "$LONGMIX")
  make --no-print-directory -s plugins BUILD="${build#"$PWD"/}" >/dev/null
  expect_exit 0 "$LONGMIX" verify --plugin "$build/plugins/naive.so" "$WORK/c/mine.json"
  [ "$(tail -1 "$WORK/out")" = "34 passed, 0 failed, 0 errors" ]   # the plugin has all three
  expect_text out "PASS $WORK/c/mine.json: plugin:naive/mamba1_scan_f32/ssm_mamba1_scan.f32.user_"
  expect_text out "PASS $WORK/c/mine.json: plugin:naive/attn_decode_f32/attention_decode.f32.user_"
  expect_text out "PASS $WORK/c/mine.json: plugin:naive/conv_causal_f32/conv_causal.f32.user_"
}

test_user_cases_nudged_value_fails() {
  build_user_contract
  # the mamba1 case's sum moved by 100 tolerances, the file re-pinned: the pin passes, the value fails
  "$PYTHON" - "$WORK/c/mine.json" <<'PY'
import json, sys
path = sys.argv[1]
contract = json.load(open(path))
case = contract["cases"][1]
s, t = case["expected"]["sum"], case["tolerance"]
s["value"] += 100 * (t["atol"] + t["rtol"] * s["scale"])
open(path, "w").write(json.dumps(contract, indent=1) + "\n")
PY
  (cd "$WORK/c" && sha256sum mine.json > SHA256SUMS)
  expect_exit 1 "$LONGMIX" verify "$WORK/c/mine.json"
  expect_text out "PASS $WORK/c/mine.json: pin/sha256"
  expect_text out "FAIL $WORK/c/mine.json: kernels/ssm_mamba1_scan.f32.user_batch1_length100_channels24_state12_exact_zoh_true_seed5/"
  [ "$(grep '^FAIL' "$WORK/out" | grep -vc '/sum: ')" -eq 0 ]   # only the nudged statistic
}

test_user_cases_bad_spec_is_usage_error() {
  expect_exit 2 "$PYTHON" scripts/build_kernel_contract.py --out "$WORK/x.json" --cases nosuch:n=3
  expect_text err "unknown kernel 'nosuch' (one of: "
  expect_exit 2 "$PYTHON" scripts/build_kernel_contract.py --out "$WORK/x.json" --cases gemv_rowdot:n=3
  expect_text err "kernel gemv_rowdot needs shape field(s) d"
  expect_exit 2 "$PYTHON" scripts/build_kernel_contract.py --out "$WORK/x.json" \
    --cases ssm_mamba1_scan:batch=1,length=10,channels=4,state=4,exact_zho=true
  expect_text err "kernel ssm_mamba1_scan has no field or option 'exact_zho' (one of: batch, bias, channels, dtype, exact_zoh, gate, h0, id, length, positive_a, seed, skip, state, zero_modes)"
  expect_exit 2 "$PYTHON" scripts/build_kernel_contract.py --cases gemv_rowdot:n=3,d=4
  expect_text err "--cases writes a new file: give --out FILE"
  [ ! -e "$WORK/x.json" ]
}
