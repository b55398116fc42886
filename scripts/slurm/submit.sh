#!/usr/bin/env bash
# Spread one longmix invocation over a Slurm job array, then merge the shards and report.
#
#   scripts/slurm/submit.sh --shards N --out DIR [options] -- SUBCOMMAND [ARGS...]
#
# Submits an array of N tasks (scripts/slurm/shard.sbatch): task K runs
#   longmix SUBCOMMAND ARGS... --shard K/N --out DIR/shards/SUBCOMMAND-K-of-N.csv
# and a job that starts after every task succeeded (scripts/slurm/merge.sbatch): it joins
# the shards into DIR/SUBCOMMAND.csv (DIR/models.csv for model) with longmix merge, writes
# DIR/info.json and builds DIR/report.md with scripts/report.py. Logs go to DIR/logs/.
#
# options:
#   --shards N       number of array tasks (shards), N >= 1
#   --out DIR        results folder (created); DIR/command records the invocation
#   --resume [LIST]  finish an earlier submission into DIR: resubmit the array indexes LIST
#                    (e.g. 2 or 1,3), by default every shard without its .done marker; each
#                    task continues its shard file with --resume (rows kept, the rest
#                    measured). With every shard done, submits the merge job alone.
#   --sbatch OPT     pass OPT to both sbatch calls (repeatable, one --name=value each),
#                    e.g. --sbatch --partition=p --sbatch --time=02:00:00
#   --shard-sbatch OPT  pass OPT to the array only, e.g. --shard-sbatch --cpus-per-task=8
#   --no-report      merge only, no report.md
#   --longmix PATH   the longmix binary the tasks run (default: $LONGMIX or build/longmix
#                    of this checkout); it must be reachable from the compute nodes
#   --dry-run        print the sbatch commands, submit nothing
# SUBCOMMAND must accept --shard and --resume (longmix sweep, crossover and model do; the
# merge job of a crossover or model run also computes its crossovers from the merged rows). A fresh submission into
# a DIR that already holds shard files is refused (pass --resume or choose another DIR).
# Exit: 0 submitted, 2 bad usage. Prints "ARRAY_JOB_ID MERGE_JOB_ID" on stdout ("-" for no
# array; what it did on stderr); watch them with squeue.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

usage() { sed -n '2,30p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
die() { echo "slurm/submit.sh: $*" >&2; exit 2; }

shards="" out="" resume=0 resume_list="" report=1 dry=0
longmix=${LONGMIX:-$root/build/longmix}
both_opts=() shard_opts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --shards) [ $# -ge 2 ] || die "--shards needs a value"; shards=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || die "--out needs a value"; out=$2; shift 2 ;;
    --resume)
      resume=1; shift
      if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+(,[0-9]+)*$ ]]; then resume_list=$1; shift; fi ;;
    --sbatch) [ $# -ge 2 ] || die "--sbatch needs a value"; both_opts+=("$2"); shift 2 ;;
    --shard-sbatch) [ $# -ge 2 ] || die "--shard-sbatch needs a value"; shard_opts+=("$2"); shift 2 ;;
    --no-report) report=0; shift ;;
    --longmix) [ $# -ge 2 ] || die "--longmix needs a value"; longmix=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h|--help) usage; exit 0 ;;
    --) shift; break ;;
    *) die "unknown option '$1' (the longmix command goes after --; try --help)" ;;
  esac
done
[ $# -ge 1 ] || die "no longmix command after -- (e.g. -- sweep --preset smoke)"
[ -n "$shards" ] || die "--shards N is required"
[[ $shards =~ ^[1-9][0-9]*$ ]] || die "--shards must be a positive integer, got '$shards'"
[ -n "$out" ] || die "--out DIR is required"
sub=$1
shift
for a in "$@"; do
  case "$a" in
    --shard|--shard=*|--out|--out=*|--resume) die "'$a' is set by the array task; leave it out of the command" ;;
  esac
done
[ -x "$longmix" ] || die "longmix binary '$longmix' not found or not executable (build it, or pass --longmix)"
longmix=$(cd "$(dirname "$longmix")" && pwd)/$(basename "$longmix")
help=$("$longmix" "$sub" --help 2>&1) || die "'longmix $sub --help' failed: is '$sub' a longmix command?"
grep -q -- '--shard' <<<"$help" && grep -q -- '--resume' <<<"$help" ||
  die "longmix $sub has no --shard K/N and --resume, so it cannot be spread over an array (longmix sweep, crossover and model can)"

mkdir -p "$out/shards" "$out/logs"
out=$(cd "$out" && pwd)
# The invocation, one word a line: a --resume must finish the same command.
command_text=$(printf '%s\n' "shards $shards" "$sub" "$@")
if [ "$resume" -eq 1 ]; then
  [ -f "$out/command" ] || die "$out/command is missing: nothing to resume there"
  if [ "$(cat "$out/command")" != "$command_text" ]; then
    diff <(cat "$out/command") <(echo "$command_text") >&2 || true
    die "--resume with a different command or shard count than $out/command (above: < recorded, > given)"
  fi
  if [ -z "$resume_list" ]; then
    for k in $(seq 1 "$shards"); do
      [ -f "$out/shards/$sub-$k-of-$shards.csv.done" ] || resume_list+=${resume_list:+,}$k
    done
  fi
  for k in ${resume_list//,/ }; do
    [ "$k" -ge 1 ] && [ "$k" -le "$shards" ] || die "--resume index $k is outside 1..$shards"
  done
  array=$resume_list
else
  existing=$(find "$out/shards" -maxdepth 1 -name '*.csv' | head -3)
  [ -z "$existing" ] || die "$out/shards already holds shard files ($(echo $existing)); pass --resume to finish them, or choose another --out"
  array=1-$shards
fi

export_vars="ALL,LONGMIX_BIN=$longmix,LONGMIX_OUT=$out,LONGMIX_ROOT=$root,LONGMIX_REPORT=$report"
shard_cmd=(sbatch --parsable --array="$array" --job-name="longmix-$sub"
           --output="$out/logs/shard-%a.out" --export="$export_vars"
           "${both_opts[@]}" "${shard_opts[@]}" "$here/shard.sbatch" "$shards" "$sub" "$@")
merge_cmd=(sbatch --parsable --job-name="longmix-$sub-merge" --kill-on-invalid-dep=yes
           --output="$out/logs/merge.out" --export="$export_vars" "${both_opts[@]}")
if [ -z "$array" ]; then # --resume with every shard done: the merge alone
  [ "$dry" -eq 1 ] && { printf '%q ' "${merge_cmd[@]}" "$here/merge.sbatch" "$shards" "$sub"; echo; exit 0; }
  command -v sbatch >/dev/null || die "sbatch not found (scripts/install-deps.sh --slurm installs Slurm)"
  merge_id=$("${merge_cmd[@]}" "$here/merge.sbatch" "$shards" "$sub")
  merge_id=${merge_id%%;*}
  echo "slurm/submit.sh: every shard in $out/shards is done; merge job $merge_id alone" >&2
  echo "- $merge_id"
  exit 0
fi
if [ "$dry" -eq 1 ]; then
  printf '%q ' "${shard_cmd[@]}"; echo
  printf '%q ' "${merge_cmd[@]}" --dependency=afterok:ARRAY_JOB_ID "$here/merge.sbatch" "$shards" "$sub"; echo
  exit 0
fi
command -v sbatch >/dev/null || die "sbatch not found (scripts/install-deps.sh --slurm installs Slurm)"
[ "$resume" -eq 1 ] || echo "$command_text" > "$out/command"
array_id=$("${shard_cmd[@]}")
array_id=${array_id%%;*}
merge_id=$("${merge_cmd[@]}" --dependency="afterok:$array_id" "$here/merge.sbatch" "$shards" "$sub")
merge_id=${merge_id%%;*}
echo "slurm/submit.sh: array job $array_id (shards $array of $shards: longmix $sub), merge job $merge_id after it" >&2
merged=$out/$sub.csv
[ "$sub" != model ] || merged=$out/models.csv # as merge.sbatch names it
echo "slurm/submit.sh: shards in $out/shards, merged file $merged$([ "$report" -eq 0 ] || echo ", report $out/report.md"), logs in $out/logs" >&2
echo "$array_id $merge_id"
