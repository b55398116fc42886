#!/usr/bin/env bash
# make test-slurm: the sharded routes of docs/benchmarks.md against the real tools.
#  1. A one-node Slurm cluster started here (tests/slurm/cluster.sh: munged, slurmctld and
#     slurmd on loopback, in a temporary folder): scripts/slurm/submit.sh runs a 4-task
#     array of a short sweep and the merge + report job; the merged file must hold exactly
#     the configurations of an unsharded run (key columns, status and checksum).
#  2. The same again with one shard cancelled mid-run: the merge job must not run, and
#     submit.sh --resume must resubmit that index alone, keep its rows unchanged and measure
#     the rest, after which the merged file again equals the unsharded run.
#  3. A crossover over a 3-task array: the merged rows equal an unsharded run's and the merge
#     job prints the crossovers from them without measuring again.
#  4. A whole-model run (two tiny model files) over a 2-task array: the merged models.csv
#     equals an unsharded run's, and the merge job writes the table, the model crossover and
#     the report from the merged rows without measuring again.
#  5. GNU parallel (parallel --jobs 2) over the same four shards, then longmix merge.
# Every daemon and file it started is stopped and removed on exit, failure or signal.
# Needs root and scripts/install-deps.sh --slurm --parallel (make test-slurm runs both).
set -euo pipefail
cd "$(dirname "$0")/../.."
LONGMIX=${LONGMIX:-build/longmix}
PYTHON=${PYTHON:-/usr/bin/python3}
LONGMIX=$(cd "$(dirname "$LONGMIX")" && pwd)/$(basename "$LONGMIX")
export LONGMIX PYTHON
[ "$(id -u)" -eq 0 ] || { echo "test-slurm: needs root (slurmd runs the jobs)" >&2; exit 2; }
for tool in sbatch slurmctld slurmd munged mungekey parallel; do
  command -v "$tool" >/dev/null || { echo "test-slurm: $tool missing: scripts/install-deps.sh --slurm --parallel" >&2; exit 2; }
done
. tests/slurm/cluster.sh

tmp=$(mktemp -d /tmp/longmix-slurm.XXXXXX)
cleanup() { cluster_stop; rm -rf "$tmp"; }
trap cleanup EXIT
trap 'echo "test-slurm: interrupted" >&2; exit 130' INT TERM
started=$(date +%s)
pass=0
ok() { pass=$((pass + 1)); echo "  ok   $*"; }
fail() { echo "  FAIL $*" >&2; exit 1; }
step() { echo "== $* ($(($(date +%s) - started)) s)"; }

# Twelve configurations of a fraction of a second each on one thread (the affine scan at two
# lengths and six chunk sizes): shard K of 4 gets three.
SWEEP=(--kernel scan_affine --ctx 1024,4096 --chunk 16..512 --threads 1 --reps 3 --no-roofline)
# The same configurations measured long enough (about a second a row) for a shard to be
# cancelled between its rows: the whole shard of SWEEP takes a tenth of a second.
SLOW=("${SWEEP[@]}" --reps 2000)
SUBMIT=scripts/slurm/submit.sh
# A crossover of twelve tiny configurations (2 SSM steps, 2 decodes, 8 prefills).
CROSSOVER=(--threads 1 --isa scalar --heads 2 --kv-heads 1 --head-dim 16 --d-inner 32 --d-state 4
           --d-state-m2 8 --ctx 16,64 --prefill-ctx 16,32 --dtype f32 --reps 1 --no-roofline)

# Six whole-model configurations (two tiny model files, three contexts) of a few ms each.
MODEL=(--model tests/fixtures/models/tiny-attn.json --model tests/fixtures/models/tiny-hybrid.json
       --baseline tiny-attn --ctx 64,256,1024 --threads 1 --reps 1)

rows() { [ -f "$1" ] && echo $(($(wc -l <"$1") - 1)) || echo 0; }

# Same model configurations (key columns), status and checksum in A and B (the outputs of
# synthetic weights: the same on every run), whatever the order.
same_models() {
  "$PYTHON" - "$1" "$2" <<'EOF'
import csv, sys
KEY = "model isa threads cache weights phase n_ctx batch".split()
def load(path):
    rows = list(csv.DictReader(open(path, newline="")))
    return {tuple(r[k] for k in KEY): (r["status"], r["checksum"]) for r in rows}, len(rows)
(a, na), (b, nb) = load(sys.argv[1]), load(sys.argv[2])
if a != b or na != len(a) or nb != len(b):
    sys.exit(f"{sys.argv[1]} ({na} rows) and {sys.argv[2]} ({nb} rows) differ: {a} vs {b}")
if any(s != "ok" for s, _ in a.values()):
    sys.exit(f"{sys.argv[1]}: a row is not ok")
print(len(a))
EOF
}

# Same configurations (key columns), status and checksum in A and B, whatever the order.
same_configs() {
  "$PYTHON" - "$1" "$2" <<'EOF'
import csv, sys
KEY = "kernel isa threads dtype bits n_ctx chunk heads kv_heads head_dim d_inner d_state batch disc".split()
def load(path):
    rows = list(csv.DictReader(open(path, newline="")))
    keys = [tuple(r[k] for k in KEY) for r in rows]
    if len(set(keys)) != len(keys):
        sys.exit(f"{path}: a configuration appears twice")
    return {k: (r["status"], r["checksum"]) for k, r in zip(keys, rows)}
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            print(f"  {'|'.join(k)}: {a.get(k)} vs {b.get(k)}", file=sys.stderr)
    sys.exit(f"{sys.argv[1]} and {sys.argv[2]} differ ({len(a)} vs {len(b)} rows)")
if any(s != "ok" for s, _ in a.values()):
    sys.exit(f"{sys.argv[1]}: a row is not ok")
print(len(a))
EOF
}

# Every row of OLD is in NEW, every column equal (kept, not measured again).
rows_kept() {
  "$PYTHON" - "$1" "$2" <<'EOF'
import csv, sys
old = list(csv.reader(open(sys.argv[1], newline="")))
new = list(csv.reader(open(sys.argv[2], newline="")))
if old[0] != new[0]:
    sys.exit("headers differ")
missing = [r for r in old[1:] if r not in new[1:]]
if missing:
    sys.exit(f"{len(missing)} of the {len(old) - 1} rows before the kill changed or vanished")
EOF
}

# Waits (at most $2 s) until job $1 has left the queue.
wait_job() {
  wait_for "$2" bash -c "[ -z \"\$(squeue -h -j $1 2>/dev/null)\" ]" ||
    { squeue >&2; fail "job $1 still queued after $2 s"; }
}

# The states of job $1's tasks, one a line (scontrol keeps finished jobs for MinJobAge).
job_states() { scontrol -o show job "$1" | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }

step "usage refusals of scripts/slurm/submit.sh (no cluster needed)"
set +e
msg=$("$SUBMIT" --shards 4 --out "$tmp/x" -- roofline --threads 1 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "no --shard K/N and --resume" <<<"$msg" || fail "roofline accepted ($rc): $msg"
ok "a command without --shard/--resume is refused: $msg"
set +e
msg=$("$SUBMIT" --shards 4 --out "$tmp/x" -- sweep --shard 1/2 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "set by the array task" <<<"$msg" || fail "--shard in the command accepted ($rc): $msg"
ok "--shard inside the command is refused"
set +e
msg=$("$SUBMIT" --shards 0 --out "$tmp/x" -- sweep 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] || fail "--shards 0 accepted"
ok "--shards 0 is refused: $msg"

step "unsharded reference run"
"$LONGMIX" sweep "${SWEEP[@]}" --out "$tmp/reference.csv" 2>"$tmp/reference.log" ||
  { cat "$tmp/reference.log" >&2; fail "the reference sweep failed"; }
[ "$(rows "$tmp/reference.csv")" -eq 12 ] || fail "reference has $(rows "$tmp/reference.csv") rows, want 12"
ok "12 configurations in $(($(date +%s) - started)) s"

step "starting the cluster"
cluster_start "$tmp/cluster" || fail "the cluster did not start"
ok "one node: $(sinfo -h -N -o '%N %c CPUs %m MB %T')"

step "a 4-task array and the merge + report job"
read -r array merge < <("$SUBMIT" --shards 4 --out "$tmp/a" --sbatch --time=10 -- sweep "${SWEEP[@]}")
wait_job "$array" 180
wait_job "$merge" 120
states=$(job_states "$array" | sort | uniq -c | xargs)
[ "$states" = "4 COMPLETED" ] || { cat "$tmp"/a/logs/* >&2; fail "array tasks: $states"; }
[ "$(job_states "$merge")" = COMPLETED ] || { cat "$tmp/a/logs/merge.out" >&2; fail "merge job: $(job_states "$merge")"; }
ok "array $array: $states; merge job $merge COMPLETED"
for k in 1 2 3 4; do
  f=$tmp/a/shards/sweep-$k-of-4.csv
  [ "$(rows "$f")" -eq 3 ] && [ "$(cat "$f.done")" = 0 ] || fail "shard $k: $(rows "$f") rows, done marker '$(cat "$f.done" 2>/dev/null)'"
done
ok "each shard file holds its 3 configurations and a done marker"
n=$(same_configs "$tmp/a/sweep.csv" "$tmp/reference.csv") || fail "merged file differs from the unsharded run"
ok "merged sweep.csv = the unsharded run: $n configurations, same status and checksum"
[ -s "$tmp/a/info.json" ] && grep -q '^# longmix report' "$tmp/a/report.md" &&
  grep -q 'sweep.csv' "$tmp/a/report.md" || fail "no report.md naming sweep.csv (or no info.json)"
ok "report.md and info.json written by the merge job"
set +e
msg=$("$SUBMIT" --shards 4 --out "$tmp/a" -- sweep "${SWEEP[@]}" 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "already holds shard files" <<<"$msg" || fail "a fresh submission over shards was accepted ($rc)"
ok "a fresh submission into a folder with shards is refused"
rm "$tmp/a/sweep.csv"
read -r none merge < <("$SUBMIT" --resume --shards 4 --out "$tmp/a" --no-report -- sweep "${SWEEP[@]}" 2>"$tmp/again.log")
[ "$none" = - ] && grep -q "every shard in .* is done; merge job $merge alone" "$tmp/again.log" ||
  fail "--resume with every shard done: '$none $merge' $(cat "$tmp/again.log")"
wait_job "$merge" 60
[ "$(job_states "$merge")" = COMPLETED ] && same_configs "$tmp/a/sweep.csv" "$tmp/reference.csv" >/dev/null ||
  fail "the merge job alone: $(job_states "$merge")"
ok "--resume of a finished submission runs the merge alone (job $merge)"
set +e
msg=$("$SUBMIT" --resume --shards 4 --out "$tmp/a" -- sweep "${SWEEP[@]}" --reps 5 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "different command" <<<"$msg" || fail "--resume with another command: $rc $msg"
ok "--resume with a different command is refused"

step "a shard cancelled mid-run, then resubmitted with --resume"
read -r array merge < <("$SUBMIT" --shards 4 --out "$tmp/b" --no-report --sbatch --time=10 -- sweep "${SLOW[@]}")
f=$tmp/b/shards/sweep-1-of-4.csv
caught=0
for ((i = 0; i < 1200; i++)); do # up to 120 s: cancel as soon as the first row is written
  r=$(rows "$f")
  if [ "$r" -ge 1 ] && [ "$r" -lt 3 ]; then
    scancel "${array}_1"
    caught=$r
    break
  fi
  [ "$r" -lt 3 ] || break
  sleep 0.1
done
[ "$caught" -ge 1 ] || fail "shard 1 was not caught mid-run (it had $(rows "$f") rows)"
wait_job "$array" 180
wait_job "$merge" 60
[ "$(job_states "${array}_1")" = CANCELLED ] || fail "task 1: $(job_states "${array}_1")"
[ ! -e "$tmp/b/sweep.csv" ] || fail "the merge ran although shard 1 was cancelled"
[ ! -e "$f.done" ] || fail "a cancelled shard has a done marker"
kept=$(rows "$f")
[ "$kept" -ge 1 ] && [ "$kept" -lt 3 ] || fail "the cancelled shard holds $kept rows"
cp "$f" "$tmp/before.csv"
ok "task ${array}_1 cancelled with $kept of 3 rows written; merge job $merge did not run ($(job_states "$merge"))"
read -r array merge < <("$SUBMIT" --resume --shards 4 --out "$tmp/b" --no-report --sbatch --time=10 -- sweep "${SLOW[@]}" 2>"$tmp/resubmit.log")
cat "$tmp/resubmit.log"
grep -q "shards 1 of 4" "$tmp/resubmit.log" || fail "--resume did not resubmit shard 1 alone"
wait_job "$array" 180
wait_job "$merge" 60
[ "$(job_states "$array")" = COMPLETED ] && [ "$(job_states "$merge")" = COMPLETED ] ||
  { cat "$tmp"/b/logs/* >&2; fail "resubmission: task $(job_states "$array"), merge $(job_states "$merge")"; }
grep -q "resuming .* ($kept rows kept)" "$tmp/b/logs/shard-1.out" || fail "the task did not resume: $(cat "$tmp/b/logs/shard-1.out")"
grep -q "$((3 - kept)) configurations measured, $kept skipped" "$tmp/b/logs/shard-1.out" ||
  fail "the resumed task did not measure just the rest: $(cat "$tmp/b/logs/shard-1.out")"
rows_kept "$tmp/before.csv" "$f" || fail "the resumed shard rewrote its earlier rows"
[ "$(rows "$f")" -eq 3 ] || fail "the resumed shard holds $(rows "$f") rows"
ok "the resubmitted task kept its $kept rows unchanged and measured $((3 - kept))"
n=$(same_configs "$tmp/b/sweep.csv" "$tmp/reference.csv") || fail "merged file after the resume differs"
ok "merged sweep.csv after the resume = the unsharded run ($n configurations)"

step "a crossover over a 3-task array: the merge job prints the crossovers of the merged rows"
"$LONGMIX" crossover "${CROSSOVER[@]}" --out "$tmp/xref.csv" --summary "$tmp/xref_summary.csv" \
  >/dev/null 2>"$tmp/xref.log" || { cat "$tmp/xref.log" >&2; fail "the unsharded crossover failed"; }
read -r array merge < <("$SUBMIT" --shards 3 --out "$tmp/x" --no-report --sbatch --time=10 -- crossover "${CROSSOVER[@]}")
wait_job "$array" 180
wait_job "$merge" 120
[ "$(job_states "$merge")" = COMPLETED ] || { cat "$tmp"/x/logs/* >&2; fail "crossover merge job: $(job_states "$merge")"; }
n=$(same_configs "$tmp/x/crossover.csv" "$tmp/xref.csv") || fail "the merged crossover rows differ from the unsharded run"
grep -q "0 configurations measured, 12 from" "$tmp/x/logs/merge.out" ||
  fail "the merge job measured again: $(cat "$tmp/x/logs/merge.out")"
[ "$(rows "$tmp/x/crossover_summary.csv")" -eq 5 ] && [ "$(grep -c '^- .*On this CPU, ' "$tmp/x/crossover.md")" -eq 5 ] ||
  fail "crossover_summary.csv or crossover.md lacks the 5 crossovers"
ok "3 crossover shards merged = the unsharded run ($n configurations); 5 crossovers from the merged rows, none measured again"

step "a whole-model run over a 2-task array: the merge job writes the table and crossovers"
"$LONGMIX" model "${MODEL[@]}" --out "$tmp/mref.csv" --crossover-out "$tmp/mref_x.csv" \
  >/dev/null 2>"$tmp/mref.log" || { cat "$tmp/mref.log" >&2; fail "the unsharded model run failed"; }
read -r array merge < <("$SUBMIT" --shards 2 --out "$tmp/m" --sbatch --time=10 -- model "${MODEL[@]}")
wait_job "$array" 180
wait_job "$merge" 120
[ "$(job_states "$merge")" = COMPLETED ] || { cat "$tmp"/m/logs/* >&2; fail "model merge job: $(job_states "$merge")"; }
n=$(same_models "$tmp/m/models.csv" "$tmp/mref.csv") || fail "the merged model rows differ from the unsharded run"
grep -q "0 configurations measured, 6 kept" "$tmp/m/logs/merge.out" ||
  fail "the merge job measured again: $(cat "$tmp/m/logs/merge.out")"
[ "$(rows "$tmp/m/model_crossover.csv")" -eq 1 ] && grep -q "| tiny-hybrid | 1 | 1 |" "$tmp/m/models.md" ||
  fail "model_crossover.csv or models.md lacks the tiny-hybrid crossover"
grep -q "| tiny-hybrid | tiny-attn | 1 | 1 |" "$tmp/m/report.md" || fail "report.md lacks the model crossover"
ok "2 model shards merged = the unsharded run ($n configurations); table, crossover and report from the merged rows"

step "GNU parallel on this machine"
mkdir -p "$tmp/c/shards"
parallel --will-cite --jobs 2 --halt now,fail=1 "$LONGMIX" sweep "${SWEEP[@]}" --shard {}/4 \
  --out "$tmp/c/shards/sweep-{}-of-4.csv" --resume ::: 1 2 3 4 2>"$tmp/parallel.log" ||
  { cat "$tmp/parallel.log" >&2; fail "parallel failed"; }
"$LONGMIX" merge "$tmp"/c/shards/sweep-{1,2,3,4}-of-4.csv --out "$tmp/c/sweep.csv" 2>/dev/null
n=$(same_configs "$tmp/c/sweep.csv" "$tmp/reference.csv") || fail "the parallel merge differs"
ok "parallel --jobs 2 over 4 shards, merged = the unsharded run ($n configurations)"

step "stopping the cluster"
pids=("${CLUSTER_PIDS[@]}")
dir=$CLUSTER_DIR
cluster_stop
for p in "${pids[@]}"; do ! kill -0 "$p" 2>/dev/null || fail "daemon $p still running"; done
[ -z "$(cluster_step_pids "$dir")" ] || fail "job steps left behind: $(cluster_step_pids "$dir")"
[ ! -e "$dir" ] || fail "$dir not removed"
ok "munged, slurmctld and slurmd stopped (pids ${pids[*]})"
echo "test-slurm: $pass checks passed in $(($(date +%s) - started)) s"
