# What a newcomer meets in the first minutes: the version, option errors that say which
# mistake it was, a missing file named as missing, a dry run with a header, the kernel
# list of `sweep --list` against docs/benchmarks.md, the roofline's triad row.
test_version_names_version_and_revision() {
  expect_exit 0 "$LONGMIX" --version
  grep -qE '^longmix [0-9]+\.[0-9]+\.[0-9]+ \(git [0-9a-f]{7,}(\+dirty)?, ' "$WORK/out" ||
    { echo "    unexpected: $(cat "$WORK/out")" >&2; return 1; }
  local version
  version=$(sed -n 's/^VERSION *:= *//p' Makefile)
  expect_text out "longmix $version "
}
test_help_mentions_version() {
  expect_exit 0 "$LONGMIX" --help
  expect_text out "longmix --version"
}
test_sweep_option_without_value_says_so() {
  expect_exit 2 "$LONGMIX" sweep --kernel
  expect_text err "longmix sweep: --kernel needs a value"
  if grep -q "unknown" "$WORK/err"; then echo "    a known option called unknown" >&2; return 1; fi
  expect_exit 2 "$LONGMIX" sweep --reps
  expect_text err "longmix sweep: --reps needs a value"
}
test_sweep_unknown_last_option_says_unknown() {
  expect_exit 2 "$LONGMIX" sweep --frobnicate
  expect_text err "longmix sweep: unknown option '--frobnicate'"
  if grep -q "needs a value" "$WORK/err"; then echo "    an unknown option said to need a value" >&2; return 1; fi
  expect_exit 2 "$LONGMIX" sweep --frobnicate 3
  expect_text err "longmix sweep: unknown option '--frobnicate'"
}
test_crossover_option_without_value_or_unknown_says_which() {
  expect_exit 2 "$LONGMIX" crossover --ctx
  expect_text err "longmix crossover: --ctx needs a value"
  expect_exit 2 "$LONGMIX" crossover --reps
  expect_text err "longmix crossover: --reps needs a value"
  expect_exit 2 "$LONGMIX" crossover --frobnicate
  expect_text err "longmix crossover: unknown option '--frobnicate'"
  if grep -q "needs a value" "$WORK/err"; then echo "    an unknown option said to need a value" >&2; return 1; fi
}
test_verify_missing_file_says_missing_not_pin() {
  # a folder with no SHA256SUMS: the missing file comes first, not its missing pin
  mkdir "$WORK/empty"
  (cd "$WORK/empty" && expect_exit 2 "$LONGMIX" verify "$WORK/empty/nope.json")
  expect_text err "$WORK/empty/nope.json: cannot open: No such file or directory"
  if grep -qi "pin\|SHA256SUMS" "$WORK/err" "$WORK/out"; then
    echo "    a missing file was reported as unpinned:" >&2; cat "$WORK/err" >&2; return 1
  fi
  expect_text out "0 passed, 0 failed, 1 errors"
}
test_sweep_dry_run_prints_header_then_keys() {
  expect_exit 0 "$LONGMIX" sweep --kernel attn_decode --ctx 256,512 --dry-run --out "$WORK/none.csv"
  [ "$(sed -n 1p "$WORK/out")" = "kernel|isa|threads|dtype|bits|n_ctx|chunk|heads|kv_heads|head_dim|d_inner|d_state|batch|disc" ] ||
    { echo "    first line: $(sed -n 1p "$WORK/out")" >&2; return 1; }
  [ "$(sed -n 2p "$WORK/out" | cut -d'|' -f1,6)" = "attn_decode|256" ]
  [ "$(sed -n 3p "$WORK/out" | cut -d'|' -f1,6)" = "attn_decode|512" ]
  expect_text out "2 configurations (0 already in $WORK/none.csv)"
  [ ! -e "$WORK/none.csv" ]
}
test_sweep_list_matches_docs_benchmarks_table() {
  expect_exit 0 "$LONGMIX" sweep --list
  awk '{ print $1, $2 }' "$WORK/out" | sort > "$WORK/listed"
  # the registry table of docs/benchmarks.md: "| `word` (old ...) | role | ..." rows
  awk '/^\| kernel \| role \(crossover\)/ { on = 1; next }
       on && /^\|---/ { next }
       on && /^\|/ { split($0, c, "|"); w = c[2]; sub(/^ *`/, "", w); sub(/`.*/, "", w);
                     r = c[3]; gsub(/ /, "", r); print w, r; next }
       on { exit }' docs/benchmarks.md | sort > "$WORK/documented"
  [ "$(wc -l < "$WORK/listed")" -ge 20 ]
  diff "$WORK/listed" "$WORK/documented" >&2 ||
    { echo "    sweep --list (<) and docs/benchmarks.md (>) disagree" >&2; return 1; }
}
test_roofline_triad_row_has_no_context() {
  expect_exit 0 "$LONGMIX" roofline --threads 1 --isa scalar --size 65536 --reps 2 --out "$WORK/r.csv"
  "$PYTHON" - "$WORK/r.csv" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["kernel"] == "stream_triad"]
assert len(rows) == 1, rows
r = rows[0]
assert r["n_ctx"] == "0", r["n_ctx"]
assert float(r["bytes"]) == 3 * 65536, r["bytes"]
assert "8192 elements (65536 bytes each)" in r["note"], r["note"]
EOF
}
test_verify_summary_one_line_per_contract_full_report_in_file() {
  expect_exit 0 "$LONGMIX" verify --summary --output "$WORK/verify.txt"
  [ "$(wc -l < "$WORK/out")" -eq 4 ] || { cat "$WORK/out" >&2; return 1; }
  local m8
  m8=$(grep -c '^PASS contracts/m8.json: ' "$WORK/verify.txt")
  expect_text out "PASS contracts/m8.json: $m8 checks, $m8 passed, 0 failed"
  expect_text out "PASS contracts/primer.json: "
  expect_text out "PASS contracts/kernels.json: "
  local total
  total=$(grep -c '^PASS ' "$WORK/verify.txt")
  [ "$(tail -n 1 "$WORK/out")" = "$total passed, 0 failed, 0 errors" ]
  [ "$(tail -n 1 "$WORK/verify.txt")" = "$total passed, 0 failed, 0 errors" ]
  [ ! -s "$WORK/err" ]
}
test_verify_summary_names_first_failure_and_missing_file() {
  # one expected number changed and the file pinned as it now is: a failed check, not a pin
  sed 's/"crossover_tokens_exact":80.0,/"crossover_tokens_exact":82.0,/' contracts/m8.json > "$WORK/m8.json"
  local pin
  pin=$(sha256sum "$WORK/m8.json" | cut -c1-64)
  expect_exit 1 "$LONGMIX" verify --summary --sha256 "$pin" "$WORK/m8.json"
  expect_text out "FAIL $WORK/m8.json: "
  expect_text out ", 1 failed; first failure memory/mamba1.crossover_tokens_exact: expected 82, got 80"
  expect_exit 2 "$LONGMIX" verify --summary "$WORK/nope.json"
  expect_text out "ERROR $WORK/nope.json: not checked: cannot open: No such file or directory"
  expect_text out "0 passed, 0 failed, 1 errors"
}
