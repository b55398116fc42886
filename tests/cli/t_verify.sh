# `longmix verify`, generic behaviour: pins, formats, exit codes, bad input.
# (Per-schema end-to-end tests live in t_verify_m8.sh, t_verify_primer.sh, t_verify_kernels.sh.)
m8_pin=28cbfd26cb5163eff23dd9ac6fd3084a325ee3a5efcb96192edd9562ae9b7387

test_default_run_passes_and_ends_with_summary() {
  expect_exit 0 "$LONGMIX" verify
  tail -n 1 "$WORK/out" | grep -qE '^[0-9]+ passed, 0 failed, 0 errors$'
  expect_text out "PASS contracts/m8.json: pin/sha256"
}
test_pin_mismatch_fails_and_prints_both_digests() {
  sed 's/"seed":11/"seed":12/' contracts/m8.json > "$WORK/m8.json"
  expect_exit 1 "$LONGMIX" verify --sha256 $m8_pin "$WORK/m8.json"
  expect_text err "pinned $m8_pin"
  expect_text err "$(sha256sum "$WORK/m8.json" | cut -d' ' -f1)"
  tail -n 1 "$WORK/out" | grep -qE '^0 passed, 1 failed, 0 errors$'
}
test_one_flipped_digit_is_caught() {
  # flip one digit of an expected value; re-pin so only the recomputation can catch it
  sed 's/"output_checksum":2.5500288962870172/"output_checksum":2.5500288962870173/' contracts/m8.json > "$WORK/m8.json"
  sed 's/"output_checksum":2.5500288962870172/"output_checksum":2.5500298962870172/' contracts/m8.json > "$WORK/m8b.json"
  expect_exit 1 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/m8b.json" | cut -d' ' -f1)" "$WORK/m8b.json"
  expect_text out "FAIL $WORK/m8b.json: affine_scan/"
}
test_pin_beside_the_file_is_used() {
  cp contracts/m8.json "$WORK/m8.json"
  (cd "$WORK" && sha256sum m8.json > SHA256SUMS)
  expect_exit 0 "$LONGMIX" verify "$WORK/m8.json"
}
test_file_without_pin_is_usage_error() {
  cp contracts/m8.json "$WORK/m8.json"
  expect_exit 2 "$LONGMIX" verify "$WORK/m8.json"
  expect_text err "has no pin"
}
test_malformed_json_names_line_and_column() {
  printf '{"schema_version": 2,\n "zoh": [1, 2,,]}' > "$WORK/bad.json"
  expect_exit 2 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/bad.json" | cut -d' ' -f1)" "$WORK/bad.json"
  expect_text err "$WORK/bad.json:2:"
  expect_text err "malformed JSON"
}
test_duplicate_keys_are_rejected() {
  printf '{"schema_version": 2, "schema_version": 2}' > "$WORK/dup.json"
  expect_exit 2 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/dup.json" | cut -d' ' -f1)" "$WORK/dup.json"
  expect_text err "duplicate"
}
test_unknown_schema_is_usage_error() {
  printf '{"schema": "something/9"}' > "$WORK/s.json"
  expect_exit 2 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/s.json" | cut -d' ' -f1)" "$WORK/s.json"
  expect_text err "unknown schema 'something/9'"
}
test_missing_field_names_its_path() {
  "$PYTHON" -c 'import json,sys; d=json.load(open("contracts/m8.json")); del d["zoh"]["deltas"]; sys.stdout.write(json.dumps(d))' > "$WORK/m.json"
  expect_exit 2 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/m.json" | cut -d' ' -f1)" "$WORK/m.json"
  expect_text err "zoh.deltas"
}
test_boolean_where_integer_is_required_is_rejected() {
  sed 's/"seed":11/"seed":true/' contracts/m8.json > "$WORK/b.json"
  expect_exit 2 "$LONGMIX" verify --sha256 "$(sha256sum "$WORK/b.json" | cut -d' ' -f1)" "$WORK/b.json"
  expect_text err "affine_scan.seed must be an integer, got a boolean"
}
test_missing_file_is_usage_error() {
  expect_exit 2 "$LONGMIX" verify --sha256 $m8_pin "$WORK/nope.json"
  expect_text err "nope.json: cannot open"
}
test_bad_flags_are_usage_errors() {
  expect_exit 2 "$LONGMIX" verify --format yaml
  expect_text err "--format must be text, tap, junit or json"
  expect_exit 2 "$LONGMIX" verify --sha256 1234 contracts/m8.json
  expect_exit 2 "$LONGMIX" verify --bogus
  expect_exit 2 "$LONGMIX" verify --sha256 $m8_pin contracts/m8.json contracts/m8.json
}
test_help_explains() {
  expect_exit 0 "$LONGMIX" verify --help
  expect_text out "exit status"
}
test_formats_are_well_formed() {
  expect_exit 0 "$LONGMIX" verify --format json contracts/m8.json
  "$PYTHON" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["failed"]==0 and d["passed"]==len(d["checks"])>0' "$WORK/out"
  expect_exit 0 "$LONGMIX" verify --format junit contracts/m8.json
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); assert r.tag=="testsuites" and int(r.get("failures"))==0 and int(r.get("tests"))>0' "$WORK/out"
  expect_exit 0 "$LONGMIX" verify --format tap contracts/m8.json
  head -n 2 "$WORK/out" | grep -q '^1\.\.[0-9]'
  ! grep -q '^not ok' "$WORK/out"
}
test_junit_records_failures() {
  sed 's/"output_checksum":2.5500288962870172/"output_checksum":2.5500298962870172/' contracts/m8.json > "$WORK/m8b.json"
  expect_exit 1 "$LONGMIX" verify --format junit --sha256 "$(sha256sum "$WORK/m8b.json" | cut -d' ' -f1)" "$WORK/m8b.json"
  "$PYTHON" -c 'import sys, xml.etree.ElementTree as E; r=E.parse(sys.argv[1]).getroot(); assert int(r.get("failures"))>=1' "$WORK/out"
}
