#!/usr/bin/env bash
# make test-report: the report's tables and figures pasted into a two-column paper.
# Builds the report of the newest results/examples/ run that holds a sweep and a crossover
# (plus the newest targets run as targets/), then typesets every table (tables/*.tex) and
# every figure (fig_*.pdf) at its natural size in a two-column article (letter paper,
# 0.7 in margins: 3.43 in columns, 7.1 in text width; a figure up to 3.45 in goes in a
# column, wider ones across both) with pdflatex, and checks:
#  - pdflatex succeeds, with no overfull box (a table or figure wider than its place) and
#    no float too large for the page;
#  - every figure PDF embeds its fonts and none is Type 3;
#  - --format latex and --format csv print the tables, and the report's top names the
#    machine, the dates, the git revision and its files;
#  - pdftoppm renders the pages (KEEP_PAGES=DIR keeps them there as PNG, to look at).
# Needs scripts/install-deps.sh --latex --figures (make test-report runs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
for tool in pdflatex pdftoppm pdffonts pdfinfo; do
  command -v "$tool" >/dev/null || { echo "test-report: $tool missing: scripts/install-deps.sh --latex --figures" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/longmix-paper.XXXXXX)
trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
fail() { echo "  FAIL $*" >&2; exit 1; }
ok() { echo "  ok   $*"; }

run=""
for d in $(ls -d results/examples/*/ | sort -r); do
  [ -f "$d/sweep.csv" ] && [ -f "$d/crossover_summary.csv" ] && { run=$d; break; }
done
[ -n "$run" ] || fail "no results/examples/ run with sweep.csv and crossover_summary.csv"
targets=""   # the current targets run (results/examples/targets/), when there is one
[ -f results/examples/targets/targets.md ] && targets=results/examples/targets/
res=$tmp/results
mkdir -p "$res"
cp "$run"/*.csv "$res"/
cp -r "$run/lesson" "$res"/ 2>/dev/null || true
[ -f "$run/info.json" ] && cp "$run/info.json" "$res"/
[ -n "$targets" ] && cp -r "$targets" "$res/targets"
"$PYTHON" scripts/report.py "$res" >"$tmp/top.txt" 2>"$tmp/report.log" || { cat "$tmp/report.log" >&2; fail "report.py"; }
ok "report of $run${targets:+ with $targets as targets/}"
grep -q "^- Machine: " "$tmp/top.txt" && grep -q "^- Measured: " "$tmp/top.txt" &&
  grep -q "^- Git revision of the measurements: " "$tmp/top.txt" && grep -q "sweep.csv" "$tmp/top.txt" ||
  fail "the report's top lacks machine, dates, revision or files: $(cat "$tmp/top.txt")"
head -8 "$res/report.md" | grep -q "^- Results files read from " || fail "report.md does not start with its sources"
ok "report.md and make report's output start with machine, dates, git revision and files"

"$PYTHON" scripts/report.py "$res" --format latex --table roofline >"$tmp/roof.tex" 2>/dev/null
grep -q '^\\toprule$' "$tmp/roof.tex" && grep -q 'longmix git ' "$tmp/roof.tex" || fail "--format latex"
"$PYTHON" scripts/report.py "$res" --format csv --table crossover >"$tmp/cross.csv" 2>/dev/null
head -1 "$tmp/cross.csv" | grep -qF 'phase,attention vs,KV,threads,measured n*,between n,attention (s),other (s)' || fail "--format csv: $(head -1 "$tmp/cross.csv")"
set +e
"$PYTHON" scripts/report.py "$res" --format docx >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -eq 2 ] && grep -q "one of markdown, latex, csv" "$tmp/err" || fail "--format docx accepted ($rc)"
ok "--format latex / csv print a table; a bad format exits 2"

{
  echo '\documentclass[twocolumn,10pt]{article}'
  echo '\usepackage[letterpaper,margin=0.7in,columnsep=0.25in]{geometry}'
  echo '\usepackage[T1]{fontenc}'
  echo '\usepackage{booktabs,graphicx}'
  echo '\hfuzz=1pt \setcounter{totalnumber}{6}\renewcommand{\textfraction}{0}'
  echo '\begin{document}'
  for t in "$res"/tables/*.tex; do
    [ "$(basename "$t")" = measurements.tex ] && continue  # every row: a data dump, not a float for a page
    echo "\\input{$t}"
    echo '\clearpage'
  done
  for f in "$res"/fig_*.pdf; do
    w=$(pdfinfo "$f" | awk '/Page size/{print $3 / 72}')
    env=figure
    awk -v w="$w" 'BEGIN{exit !(w > 3.45)}' && env='figure*'
    echo "\\begin{$env}[t]\\centering\\includegraphics{$f}\\caption{$(basename "$f" .pdf | sed 's/_/\\_/g'), ${w} in}\\end{$env}"
  done
  echo '\end{document}'
} >"$tmp/paper.tex"
(cd "$tmp" && pdflatex -interaction=nonstopmode -halt-on-error paper.tex >paper.out 2>&1) ||
  { tail -30 "$tmp/paper.out" >&2; fail "pdflatex failed"; }
if grep -E "Overfull \\\\hbox|Float too large" "$tmp/paper.log" >"$tmp/overfull"; then
  cat "$tmp/overfull" >&2
  fail "something does not fit its column or page (above)"
fi
pages=$(pdfinfo "$tmp/paper.pdf" | awk '/^Pages/{print $2}')
ok "pdflatex: $(ls "$res"/tables/*.tex | wc -l) tables (less measurements) and $(ls "$res"/fig_*.pdf | wc -l) figures on $pages pages, nothing overfull"

for f in "$res"/fig_*.pdf; do
  fonts=$(pdffonts "$f" | tail -n +3)
  [ -n "$fonts" ] || continue   # text drawn as paths only
  ! grep -q "Type 3" <<<"$fonts" || fail "$(basename "$f") has Type 3 fonts"
  ! awk '{ if ($(NF-4) != "yes") exit 0; } END { exit 1 }' <<<"$fonts" || fail "$(basename "$f") does not embed a font"
done
ok "every figure PDF embeds TrueType fonts (no Type 3)"

pdftoppm -png -r 100 "$tmp/paper.pdf" "$tmp/page"
n=$(ls "$tmp"/page*.png | wc -l)
[ "$n" -eq "$pages" ] || fail "pdftoppm rendered $n of $pages pages"
if [ -n "${KEEP_PAGES:-}" ]; then
  mkdir -p "$KEEP_PAGES" && cp "$tmp"/page*.png "$tmp/paper.pdf" "$KEEP_PAGES"/
fi
ok "pdftoppm rendered the $pages pages"
echo "test-report: passed"
