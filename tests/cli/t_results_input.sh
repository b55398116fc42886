# sweep and merge on bad input: option integers, the file --resume continues, the cells
# merge reads, and the temp files of atomic writes.
tiny() { # tiny gemv sweep into $1 with extra args
  local out=$1; shift
  "$LONGMIX" sweep --kernel gemv_rowdot --ctx 16,32,64 --d-inner 16 --reps 2 --isa scalar \
    --no-roofline --out "$out" "$@"
}
# edit_csv IN OUT STATEMENT: rows = the CSV's rows as dicts; STATEMENT edits them.
edit_csv() {
  "$PYTHON" - "$1" "$2" "$3" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
header = list(rows[0].keys())
exec(sys.argv[3])
w = csv.DictWriter(open(sys.argv[2], "w", newline=""), fieldnames=header, lineterminator="\n")
w.writeheader()
w.writerows(rows)
PY
}
# plant_links OUT TARGET: symlinks to TARGET at the old writer's temp names OUT.tmp.<pid>
# for the next 400 pids (made by one process, so the next ones are the command's)
plant_links() {
  "$PYTHON" -c 'import os, sys; [os.symlink(sys.argv[2], "%s.tmp.%d" % (sys.argv[1], p)) for p in range(os.getpid() + 1, os.getpid() + 401)]' "$1" "$2"
}
rows_of() { "$PYTHON" -c 'import csv,sys; print(len(list(csv.DictReader(open(sys.argv[1])))))' "$1"; }

test_option_integers_that_overflow_are_usage_errors() {
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --ctx 18014398509481985k --dry-run
  expect_text err "longmix sweep: --ctx: '18014398509481985k' is too large (at most 1099511627776)"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --ctx 1..9223372036854775807 --dry-run
  expect_text err "--ctx: '9223372036854775807' is too large"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --threads 2147483648 --oversubscribe --dry-run
  expect_text err "--threads: '2147483648' is too large (at most 4096)"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --threads 4294967297 --dry-run
  expect_text err "--threads: '4294967297' is too large (at most 4096)"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --d-inner 99999999999999999999 --dry-run
  expect_text err "--d-inner must be an integer in 1..1099511627776, got '99999999999999999999'"
  expect_exit 2 "$LONGMIX" sweep --kernel attn_decode_q --bits 65 --dry-run
  expect_text err "--bits values must be in 1..64"
  expect_exit 2 "$LONGMIX" sweep --kernel gemv_rowdot --force --dry-run
  expect_text err "--force goes with --resume"
}
test_resume_refuses_a_file_from_another_machine_unless_forced() {
  expect_exit 0 tiny "$WORK/s.csv" --ctx 16,32
  edit_csv "$WORK/s.csv" "$WORK/s.csv" 'rows[1]["cpu_model"] = "Some Other CPU"'
  expect_exit 2 tiny "$WORK/s.csv" --resume
  expect_text err "$WORK/s.csv:3: cpu_model 'Some Other CPU' differs from this machine's"
  expect_text err "(pass --force to resume anyway, or write to a new file and merge)"
  [ "$(rows_of "$WORK/s.csv")" -eq 2 ] # untouched
  edit_csv "$WORK/s.csv" "$WORK/s.csv" 'rows[1]["cpu_model"] = rows[0]["cpu_model"]; rows[0]["git_rev"] = "0000000"'
  expect_exit 2 tiny "$WORK/s.csv" --resume
  expect_text err "$WORK/s.csv:2: git_rev '0000000' differs from this build's"
  expect_exit 0 tiny "$WORK/s.csv" --resume --force
  expect_text err "1 configurations measured, 2 skipped"
}
test_resume_drops_duplicate_rows() {
  expect_exit 0 tiny "$WORK/s.csv"
  edit_csv "$WORK/s.csv" "$WORK/s.csv" 'rows.append(dict(rows[1]))' # 4 rows, 3 configurations
  expect_exit 0 tiny "$WORK/s.csv" --resume
  expect_text err "$WORK/s.csv: 1 duplicate rows dropped, 0 failed rows to measure again"
  expect_text err "0 configurations measured, 3 skipped"
  [ "$(rows_of "$WORK/s.csv")" -eq 3 ]
}
test_resume_measures_failed_rows_again_in_their_place() {
  expect_exit 0 tiny "$WORK/s.csv"
  edit_csv "$WORK/s.csv" "$WORK/s.csv" 'rows[1]["status"] = "error"; rows[1]["note"] = "setup failed"'
  expect_exit 0 tiny "$WORK/s.csv" --resume
  expect_text err "0 duplicate rows dropped, 1 failed rows to measure again"
  expect_text err "1 configurations measured, 2 skipped"
  "$PYTHON" -c 'import csv,sys; r = list(csv.DictReader(open(sys.argv[1]))); assert [x["n_ctx"] for x in r] == ["16", "32", "64"], r; assert all(x["status"] == "ok" for x in r), r' "$WORK/s.csv"
}
test_resume_refuses_garbage_with_its_line_and_column() {
  expect_exit 0 tiny "$WORK/s.csv"
  cp "$WORK/s.csv" "$WORK/keep.csv"
  edit_csv "$WORK/s.csv" "$WORK/s.csv" 'rows[2]["median_s"] = "-1e999"'
  expect_exit 2 tiny "$WORK/s.csv" --resume
  expect_text err "longmix sweep: $WORK/s.csv:4: column median_s '-1e999' is not a finite number >= 0 (or nan)"
  edit_csv "$WORK/keep.csv" "$WORK/s.csv" 'header.append("extra"); [r.update(extra="x") for r in rows]'
  expect_exit 2 tiny "$WORK/s.csv" --resume
  expect_text err "columns where this build writes"
}
test_merge_validates_every_cell() {
  expect_exit 0 tiny "$WORK/a.csv"
  local edit want
  while IFS='|' read -r edit want; do
    edit_csv "$WORK/a.csv" "$WORK/b.csv" "$edit"
    expect_exit 2 "$LONGMIX" merge "$WORK/a.csv" "$WORK/b.csv" --out "$WORK/all.csv"
    expect_text err "$want"
    [ ! -e "$WORK/all.csv" ]
  done <<'CASES'
rows[0]["n_ctx"] = "abc"|b.csv:2: column n_ctx 'abc' is not an integer in [0, 1099511627776]
rows[1]["median_s"] = "-1e999"|b.csv:3: column median_s '-1e999' is not a finite number >= 0 (or nan)
rows[2]["status"] = "garbage"|b.csv:4: column status 'garbage' is not a status (ok, wrong, error, failed)
header[3] = "hostname"; [r.update(hostname=r.pop("host")) for r in rows]|b.csv: column 4 must be 'host'
CASES
}
test_merge_keeps_configurations_whose_names_differ_past_311_characters() {
  expect_exit 0 tiny "$WORK/a.csv" --ctx 16
  edit_csv "$WORK/a.csv" "$WORK/b.csv" 'rows[0]["kernel"] = "k" * 400'
  edit_csv "$WORK/a.csv" "$WORK/c.csv" 'rows[0]["kernel"] = "k" * 350 + "z" * 50'
  expect_exit 0 "$LONGMIX" merge "$WORK/b.csv" "$WORK/c.csv" "$WORK/b.csv" --out "$WORK/all.csv"
  expect_text err "longmix merge: 2 rows from 3 files (1 duplicate rows dropped)"
  [ "$(rows_of "$WORK/all.csv")" -eq 2 ]
}
test_sweep_never_writes_through_a_planted_temp_link() {
  echo precious > "$WORK/victim"
  plant_links "$WORK/s.csv" "$WORK/victim"
  expect_exit 0 tiny "$WORK/s.csv"
  [ "$(cat "$WORK/victim")" = precious ] || { echo "    the victim was overwritten" >&2; return 1; }
  [ "$(rows_of "$WORK/s.csv")" -eq 3 ]
}
test_stale_temp_files_of_dead_runs_are_removed() {
  bash -c 'exit 0' & local dead=$!
  wait "$dead"
  echo partial > "$WORK/.s.csv.tmp-$dead-AbCdEf"
  echo partial > "$WORK/.s.csv.tmp-$$-GhIjKl" # this shell is alive
  expect_exit 0 tiny "$WORK/s.csv" --ctx 16
  [ ! -e "$WORK/.s.csv.tmp-$dead-AbCdEf" ]
  [ -e "$WORK/.s.csv.tmp-$$-GhIjKl" ]
  [ "$(ls -A "$WORK" | grep -c '\.tmp')" -eq 1 ]
}
