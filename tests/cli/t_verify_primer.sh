# `longmix verify` on contracts/primer.json (schema longmix-primer/1): the lesson's numbers,
# a generated variant with other seeds and sizes, and perturbed or malformed entries.
primer_pin() { sha256sum "$1" | cut -d' ' -f1; }

test_primer_passes_with_one_check_per_number() {
  expect_exit 0 "$LONGMIX" verify contracts/primer.json
  tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 errors$'
  # one check per number plus the pin
  numbers=$("$PYTHON" -c 'import json; print(json.load(open("contracts/primer.json"))["numbers"])')
  checks=$(grep -c '^PASS contracts/primer.json: ' "$WORK/out")
  [ "$checks" -eq $((numbers + 1)) ]
  expect_text out "PASS contracts/primer.json: window/window.pairs: expected 21, got 21"
  expect_text out "PASS contracts/primer.json: kvquant/kvquant.codes[1]: expected -3, got -3"
}
test_generated_variant_passes() {
  "$PYTHON" scripts/build_primer_contract.py --variant 3 -o "$WORK/v.json" 2>/dev/null
  expect_exit 0 "$LONGMIX" verify --sha256 "$(primer_pin "$WORK/v.json")" "$WORK/v.json"
  tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 errors$'
}
test_perturbed_variant_fails() {
  "$PYTHON" scripts/build_primer_contract.py --variant 4 -o "$WORK/v.json" 2>/dev/null
  # change one expected number and one parameter, re-pin so only recomputation catches them
  "$PYTHON" - "$WORK/v.json" <<'PY'
import json, sys
path = sys.argv[1]
d = json.load(open(path))
for e in d["entries"]:
    if e["id"] == "sparse.global_pairs":
        e["expected"] += 1
    if e["id"] == "linear.random_output_sum":
        e["args"]["seed"] += 1
open(path, "w").write(json.dumps(d))
PY
  expect_exit 1 "$LONGMIX" verify --sha256 "$(primer_pin "$WORK/v.json")" "$WORK/v.json"
  expect_text out "FAIL $WORK/v.json: sparse/sparse.global_pairs"
  expect_text out "FAIL $WORK/v.json: linear/linear.random_output_sum"
}
test_unknown_function_is_schema_error_naming_the_entry() {
  "$PYTHON" -c 'import json; d=json.load(open("contracts/primer.json")); d["entries"][3]["function"]="frobnicate"; open("'"$WORK"'/u.json","w").write(json.dumps(d))'
  expect_exit 2 "$LONGMIX" verify --sha256 "$(primer_pin "$WORK/u.json")" "$WORK/u.json"
  expect_text err "unknown function 'frobnicate'"
  expect_text err "entry bill.kv_bytes_per_token"
}
test_missing_argument_names_entry_and_field() {
  "$PYTHON" -c 'import json; d=json.load(open("contracts/primer.json")); e=[e for e in d["entries"] if e["id"]=="window.pairs"][0]; del e["args"]["w"]; open("'"$WORK"'/m.json","w").write(json.dumps(d))'
  expect_exit 2 "$LONGMIX" verify --sha256 "$(primer_pin "$WORK/m.json")" "$WORK/m.json"
  expect_text err "entry window.pairs"
  expect_text err "w"
}
test_boolean_argument_is_type_error() {
  "$PYTHON" -c 'import json; d=json.load(open("contracts/primer.json")); e=[e for e in d["entries"] if e["id"]=="window.pairs"][0]; e["args"]["n"]=True; open("'"$WORK"'/b.json","w").write(json.dumps(d))'
  expect_exit 2 "$LONGMIX" verify --sha256 "$(primer_pin "$WORK/b.json")" "$WORK/b.json"
  expect_text err "entry window.pairs"
}
test_reference_rejection_is_a_failed_check() {
  # a positive SSM mode is outside the lesson's model: the reference refuses, the check fails
  "$PYTHON" -c 'import json; d=json.load(open("contracts/primer.json")); e=[e for e in d["entries"] if e["id"]=="ssm.discretize_0.1_a_bar"][0]; e["args"]["a"]=1.0; open("'"$WORK"'/r.json","w").write(json.dumps(d))'
  expect_exit 1 "$LONGMIX" verify --sha256 "$(primer_pin "$WORK/r.json")" "$WORK/r.json"
  expect_text out "FAIL $WORK/r.json: ssm/ssm.discretize_0.1_a_bar"
  expect_text out "a must be negative"
}
