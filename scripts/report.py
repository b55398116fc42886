#!/usr/bin/python3
"""results/*.csv -> results/report.md, its tables in three formats and its figures (make report).

usage: scripts/report.py [RESULTS_DIR] [--format markdown|latex|csv] [--table NAME]

Reads every results CSV at the top of RESULTS_DIR (default: results; the results columns of docs/benchmarks.md:
sweep, crossover, roofline, gbench, merged shards), crossover_summary.csv, info.json
(longmix info --format json), lesson/*.csv (longmix lesson --csv) and targets/*.csv
(make targets), and writes
  RESULTS_DIR/report.md                  the report; its top names the machine, the dates,
                                         the git revisions and every file it read
  RESULTS_DIR/tables/NAME.{md,tex,csv}   each table of the report as Markdown, LaTeX
                                         (booktabs, plain numbers, a caption naming the
                                         machine and git revision) and CSV (raw values)
  RESULTS_DIR/fig_*.{png,pdf,svg}        the figures, sized for a two-column paper
--format FMT prints every table (or the one named by --table) to stdout in FMT instead, and
rewrites tables/ alone (quick: nothing is drawn; report.md and the figures stay as they are).
It only formats and plots what longmix measured or computed.

The report is PRODUCERS, in order: each takes the Results and returns a list of items,
Markdown lines (str) and tables (tables.Table), or [] to say nothing. A new section, e.g.
the model tables and figures of `longmix model`, is one function added to PRODUCERS (it may
live in a module of its own); its tables get the LaTeX and CSV forms with no more code.
"""
import csv
import datetime
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402
from kernel_names import canonical  # noqa: E402
import tables  # noqa: E402
from tables import Col, Table  # noqa: E402

REQUIRED = ("run_id,timestamp,git_rev,host,cpu_model,isa,threads,kernel,dtype,bits,n_ctx,chunk,"
            "heads,kv_heads,head_dim,d_inner,d_state,batch,reps,median_s,min_s,p25_s,p75_s,gflops,"
            "gbps,roofline_frac,checksum,status").split(",")


def read_csv(path):
    with open(path, newline="") as f:
        return [canonical(r) for r in csv.DictReader(f)]


def is_results(path):
    with open(path, newline="") as f:
        header = next(csv.reader(f), [])
    return header[: len(REQUIRED)] == REQUIRED


def num(row, key):
    try:
        return float(row.get(key) or 0)
    except ValueError:
        return 0.0


def tree_revision():
    """The git revision of the scripts drawing the report (+dirty), or "unknown"."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        rev = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Results:
    """Everything report.py read from one results folder, and where it came from."""

    def __init__(self, directory, figures=True):
        self.dir = directory
        self.figures = figures  # False: tables only, nothing drawn
        self.used = []  # (file, what), for the report's top
        self.files = {}
        for f in sorted(os.listdir(directory)):
            path = os.path.join(directory, f)
            if f == "models.csv" and os.path.isfile(path):
                continue  # whole-model rows: model_section, not the kernel sections
            if f.endswith(".csv") and os.path.isfile(path) and is_results(path):
                rows = read_csv(path)
                for r in rows:
                    r["_file"] = f
                self.files[f] = rows
                self.used.append((f, f"{len(rows)} rows"))
        self.roof = self.files.get("roofline.csv", [])
        self.cross = self.files.get("crossover.csv", [])
        self.measured = [r for f, rows in self.files.items() if f != "roofline.csv" for r in rows]
        self.summary = self._optional_csv("crossover_summary.csv")
        # decode rows and crossovers, and the prefill ones of `longmix model --prompt`
        # (phase prefill; files without the column are decode)
        model_rows = self._optional_csv("models.csv")
        model_cross = self._optional_csv("model_crossover.csv")
        self.models = [r for r in model_rows if r.get("phase", "decode") == "decode"]
        self.model_cross = [r for r in model_cross if r.get("phase", "decode") == "decode"]
        self.prefills = [r for r in model_rows if r.get("phase") == "prefill"]
        self.prefill_cross = [r for r in model_cross if r.get("phase") == "prefill"]
        self.info = None
        info_path = os.path.join(directory, "info.json")
        if os.path.exists(info_path):
            with open(info_path) as f:
                self.info = json.load(f)
            self.used.append(("info.json", "longmix info"))
        self.lesson = {}
        lesson_dir = os.path.join(directory, "lesson")
        if os.path.isdir(lesson_dir):
            for f in sorted(os.listdir(lesson_dir)):
                if f.endswith(".csv"):
                    self.lesson[f[:-4]] = read_csv(os.path.join(lesson_dir, f))
            self.used.append(("lesson/", f"{len(self.lesson)} files"))
        self.targets_dir = os.path.join(directory, "targets")
        targets = sorted(f for f in os.listdir(self.targets_dir) if f.endswith(".csv")) \
            if os.path.isdir(self.targets_dir) else []
        if targets:
            self.used.append(("targets/", f"{len(targets)} files: {', '.join(targets)}"))
        else:
            self.targets_dir = None
        self.all_rows = [r for rows in self.files.values() for r in rows]

    def draw(self, plotter, *args):
        """plotter(*args) (a plot.py function: the PNG path or None), unless tables only."""
        return plotter(*args) if self.figures else None

    def _optional_csv(self, name):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            return []
        rows = read_csv(path)
        self.used.append((name, f"{len(rows)} rows"))
        return rows

    def machine(self):
        """("CPU model", "host", cores) of the rows (or info.json)."""
        if self.all_rows:
            r = self.all_rows[0]
            return r["cpu_model"], r["host"], r.get("cores", "?")
        if self.info:
            return self.info.get("cpu_model", "?"), "?", self.info.get("topology", {}).get("cores", "?")
        return "unknown CPU", "?", "?"

    def revisions(self):
        revs = sorted({r["git_rev"] for r in self.all_rows})
        if not revs and self.info:
            revs = [self.info.get("git_rev", "unknown")]
        return revs or ["unknown"]

    def measured_between(self):
        stamps = sorted(r["timestamp"] for r in self.all_rows if r.get("timestamp"))
        return (stamps[0], stamps[-1]) if stamps else None

    def caption(self):
        """What a pasted table says about its source: machine, host, git revision, date."""
        cpu, host, _ = self.machine()
        span = self.measured_between()
        date = f", measured {span[0][:10]}" if span else ""
        return f"{cpu} (host {host}), longmix git {', '.join(self.revisions())}{date}"


def figure(path, alt):
    """The Markdown of a drawn figure (path None: nothing drawn, []) naming its PDF and SVG."""
    if not path:
        return []
    stem = os.path.splitext(os.path.basename(path))[0]
    return [f"![{alt}]({os.path.basename(path)})", "", f"({stem}.pdf and {stem}.svg beside it.)", ""]


# ---- producers -----------------------------------------------------------------------------

def top(res):
    cpu, host, cores = res.machine()
    span = res.measured_between()
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    isas = sorted({r["isa"] for r in res.measured})
    return (["# longmix report", "",
            f"- Machine: {cpu}, host {host}, {cores} cores" + (f"; ISA path {', '.join(isas)}" if isas else ""),
            f"- Measured: {span[0]} to {span[1]}" if span else "- Measured: (no rows)",
            f"- Git revision of the measurements: {', '.join(res.revisions())}; report drawn at "
            f"{tree_revision()} on {now}",
            f"- Results files read from {res.dir}: " + "; ".join(f"{f} ({what})" for f, what in res.used),
            "- Tables also in tables/ as .md, .tex (booktabs) and .csv; figures as .png, .pdf, .svg"]
            + busy_lines(res) + [""])


def unsteady(r):
    """(p75 - min) / median above 20 % (harness/busy.h LM_UNSTEADY_SPREAD)."""
    median = num(r, "median_s")
    return r.get("status") == "ok" and median > 0 and (num(r, "p75_s") - num(r, "min_s")) / median > 0.20


def busy_lines(res):
    """The report's warning when rows were measured on a busy machine or spread (else [])."""
    rows = res.measured
    disturbed = sum(r.get("disturbed") == "1" for r in rows)
    spread = sum(unsteady(r) for r in rows)
    unknown = sum(r.get("disturbed", "") == "" for r in rows)
    if not rows or not (disturbed or spread):
        return []
    return [f"- **Not all rows are findings**: {disturbed} of {len(rows)} rows were measured while "
            f"other processes kept the CPUs their threads needed busy (`disturbed` = 1), {spread} "
            "are unsteady ((p75 - min) / median > 20 %)" +
            (f", {unknown} do not say (written before the busy columns)" if unknown else "") +
            "; measure them again on a quiet machine"]


def machine_details(res):
    info = res.info
    if not info:
        return []
    topo = info.get("topology", {})
    isa = info.get("isa", {})
    omp = info.get("openmp", {})
    return ["## Machine", "",
            f"- CPU: {info.get('cpu_model')} ({topo.get('packages')} package, {topo.get('cores')} cores, "
            f"{topo.get('pus')} PUs; L1d {topo.get('l1d_bytes', 0) // 1024} KiB, L2 {topo.get('l2_bytes', 0) // 1024} KiB, "
            f"L3 {topo.get('l3_bytes', 0) // 2**20} MiB x {topo.get('l3_count')}; "
            f"{topo.get('numa_nodes')} NUMA node(s), {topo.get('total_memory_bytes', 0) / 2**30:.1f} GiB)",
            f"- ISA path: {isa.get('active')} ({isa.get('why')}); available: {', '.join(isa.get('available', []))}",
            f"- OpenMP: {omp.get('max_threads')} threads, proc_bind {omp.get('proc_bind')}, places {omp.get('omp_places')}",
            f"- Build: {info.get('compiler')}, git {info.get('git_rev')}", ""]


def roofline_section(res):
    out = ["## Roofline (same-run limits)", ""]
    roof = res.roof
    if not roof:
        out += ["(no roofline.csv: run `longmix roofline`)", ""]
    else:
        triad = {r["threads"]: num(r, "gbps") for r in roof if r["kernel"] == "stream_triad"}
        rows = []
        for r in roof:
            if r["kernel"] == "peak_fma":
                bw = triad.get(r["threads"], 0.0)
                rows.append([int(num(r, "threads")), r["isa"], num(r, "gflops"), bw or None,
                             num(r, "gflops") / bw if bw else None])
        out += [Table("roofline", "Peak f32 FMA per ISA path and STREAM triad bandwidth per thread count",
                      [Col("threads", "int"), Col("ISA"), Col("peak GFLOP/s", "num", 1),
                       Col("triad GB/s", "num", 2), Col("ridge", "num", 1)], rows,
                      "Peak: f32 FMA chains in registers. Triad: STREAM a = b + 3c on float64. "
                      "Ridge: peak / triad (FLOP per byte), the arithmetic intensity where a kernel stops being "
                      "bound by memory."), ""]
        dot = [r for r in roof if r["kernel"] == "peak_dot_i8" and r.get("status", "ok") == "ok"]
        if dot:  # the compute roof of the quantized KV decode (VPDPBUSD: 128 operations each)
            out += ["int8 dot-product peak (AVX512-VNNI, the quantized decode's compute roof): " +
                    ", ".join(f"{num(r, 'gflops'):.0f} GOP/s = {num(r, 'gflops') / 128:.1f} G "
                              f"VPDPBUSD/s on {r['threads']} thread(s)" for r in dot) + ".", ""]
    out += figure(res.draw(plot.roofline, roof, res.measured, os.path.join(res.dir, "fig_roofline.png")), "roofline")
    return out


OPEN_ENDED = {"below_grid": "already faster at the smallest n measured: extend the grid down",
              "above_grid": "not crossed within the grid: extend it up"}


def crossover_section(res):
    out = ["## SSM vs attention crossover", ""]
    summary = res.summary
    if not summary:
        out += ["(no crossover_summary.csv: run `longmix crossover`)", ""]
    else:
        isas = sorted({s["isa"] for s in summary})
        rows, open_ended = [], []
        for s in summary:
            found = s["found"]
            n_star = {"found": f"{num(s, 'n_star'):.0f}", "below_grid": f"<= {num(s, 'n_star'):.0f}",
                      "above_grid": f"> {num(s, 'n_star'):.0f}"}.get(found, "no data")
            if s.get("trust", "ok") not in ("ok", "failed"):  # disturbed or unsteady rows behind it
                n_star += " *"
            if found in OPEN_ENDED:
                open_ended.append(f"{s['phase']} {s['method_a']} vs {s['method_b']} ({s['dtype']}, "
                                  f"{s['threads']} thread(s)): {n_star}, {OPEN_ENDED[found]}")
            bracket = (f"{num(s, 'lo_n'):.0f}–{num(s, 'hi_n'):.0f}" if found == "found" else
                       f"{num(s, 'lo_n'):.0f}" if num(s, "lo_n") > 0 else None)
            rows.append([s["phase"], s["method_b"], s["dtype"]] + ([s["isa"]] if len(isas) > 1 else []) +
                        [int(num(s, "threads")), n_star, bracket, num(s, "lo_a_s") or None,
                         num(s, "lo_b_s") or None, num(s, "memory_n") or None, num(s, "flop_n") or None])
        cols = ([Col("phase"), Col("attention vs"), Col("KV")] +
                ([Col("ISA")] if len(isas) > 1 else []) +
                [Col("threads", "int"), Col("measured n*", right=True),
                 Col("between n", right=True),
                 Col("attention", "time"), Col("other", "time"),
                 Col("memory n*", "num", 1), Col("FLOP n*", "int")])
        note = ("Measured n*: the context where attention's time reaches the other method's, "
                "log-log interpolated between the two grid points around it, listed under between n "
                "(per layer; the layer count cancels). Attention, other: their times at the lower "
                "grid point. "
                "Memory n*: where the KV cache in the row's dtype reaches the recurrent state "
                "(kernels/arith: 80 and 528.5 for the M8 geometry's 2-byte caches, 40 and 264.25 "
                "for f32). FLOP n*: where the kernels' own flop counts cross, where two kernels at "
                "equal FLOP/s would; the measured n* is later because decode attention runs at "
                "memory bandwidth while the SSM step spends an exponential per state element. "
                "A * after n*: not trusted, a measurement behind it was taken on a busy machine or "
                "was unsteady (its sentence below says which).")
        out += [Table("crossover", "Measured SSM-vs-attention crossover per layer" +
                      (f" ({isas[0]})" if len(isas) == 1 else ""), cols, rows, note, wide=True), ""]
        if open_ended:
            out += ["Outside the measured grid:", ""] + [f"- {t}" for t in open_ended] + [""]
        sentences = [s["sentence"] for s in summary if s.get("sentence")]
        if sentences:
            out += ["In words:", ""] + [f"- {t}" for t in sentences] + [""]
    fig = res.draw(plot.time_vs_context, res.cross or res.measured, summary,
                   os.path.join(res.dir, "fig_time_vs_context.png"))
    out += figure(fig, "time vs context")
    return out


def model_row_trust(r):
    """Why a whole-model row is not a finding ("busy", "unsteady", "over the stream"), or None."""
    if r.get("disturbed") == "1":
        return "busy"
    if unsteady(r):
        return "unsteady"
    if num(r, "stream_frac") > 1.0:
        return "over the stream"
    return None


def prefill_row_trust(r):
    """Why a prefill row is not a finding ("busy", "unsteady", "over the peak"), or None."""
    if r.get("disturbed") == "1":
        return "busy"
    if unsteady(r):
        return "unsteady"
    if num(r, "gemm_peak_frac") > 1.0:
        return "over the peak"
    return None


def crossover_trust(c, models, trust=model_row_trust):
    """A model crossover's trust: "ok", or how many of the rows behind it are not findings."""
    behind = [r for r in models if r["model"] in (c["model"], c["baseline"]) and
              r["threads"] == c["threads"] and r["batch"] == c["batch"]]
    bad = sum(trust(r) is not None for r in behind)
    return f"not a finding: {bad} of {len(behind)} rows" if bad else "ok"


# The kernel-level decode comparison of `longmix crossover` that matches a model's recurrent
# mixer (its method_b in crossover_summary.csv).
KERNEL_OF_MIXER = {"mamba1": "Mamba-1 step", "mamba2": "Mamba-2 SSD step"}


def model_mixers(name):
    """The mixer kinds of a preset (models/NAME.json, or $LONGMIX_MODELS), or set()."""
    folder = os.environ.get("LONGMIX_MODELS") or os.path.join(
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models")
    try:
        with open(os.path.join(folder, name + ".json")) as f:
            return set(json.load(f).get("mixers", []))
    except (OSError, ValueError):
        return set()


def kernel_nstar(c, summary):
    """The kernel-level decode n* beside a model crossover: one attention layer against one
    layer of the model's recurrent mixer, same cache dtype and threads ("1157", "<= 64",
    "> 16384"), or None when crossover_summary.csv has no such row."""
    kinds = [KERNEL_OF_MIXER[m] for m in sorted(model_mixers(c["model"])) if m in KERNEL_OF_MIXER]
    for s in summary:
        if (s["phase"] == "decode" and s["method_a"] == "attention" and s["method_b"] in kinds
                and s["dtype"] == c["cache"] and s["threads"] == c["threads"]):
            n = int(round(num(s, "n_star")))
            return {"found": str(n), "below_grid": f"<= {n}", "above_grid": f"> {n}"}.get(s["found"])
    return None


def model_section(res):
    """Whole models (longmix model): ms/token at each context, the split by component, the
    model-level crossover, and the ms/token-vs-context figure."""
    if not res.models:
        return []
    out = ["## Whole models: decode per token", ""]
    rows = []
    for r in sorted(res.models, key=lambda r: (r["model"], int(num(r, "threads")), int(num(r, "batch")),
                                               int(num(r, "n_ctx")))):
        rows.append([r["model"], r["cache"], r["weights"], int(num(r, "threads")), int(num(r, "batch")),
                     int(num(r, "n_ctx")), num(r, "ms_per_token"), num(r, "tokens_per_s"),
                     num(r, "proj_ms"), num(r, "mixing_ms"), num(r, "mlp_ms"), num(r, "head_ms"),
                     100 * num(r, "stream_frac"), num(r, "mem_batch_bytes") / 2 ** 30,
                     model_row_trust(r) or "ok"])
    cols = [Col("model"), Col("cache"), Col("weights"), Col("threads", "int"), Col("batch", "int"),
            Col("ctx", "int"), Col("ms/token", "num", 1), Col("tokens/s", "num", 2),
            Col("proj ms", "num", 1), Col("mixing ms", "num", 1), Col("MLP ms", "num", 1),
            Col("head ms", "num", 1), Col("% stream", "num", 0), Col("GiB batch", "num", 2),
            Col("measured")]
    note = ("A decode step: one token for each sequence of the batch. Units (each layer kind, the "
            "LM head) measured at full size over copies past 2 x LLC and multiplied by their counts "
            "(docs/models.md). % stream: bytes read per step (weights, caches, state) / time, over "
            "the same minute's read-only stream. Measured: ok, or why the row is not a finding: busy "
            "(other processes held the cores its threads needed), unsteady (passes spread over 20 %), "
            "over the stream (more than 100 % of a stream limit measured in disturbed minutes).")
    untrusted = sum(model_row_trust(r) is not None for r in res.models)
    if untrusted:
        out += [f"- **Not all rows are findings**: {untrusted} of {len(res.models)} model rows were "
                "measured on a busy machine, were unsteady or exceed their stream limit (the "
                "measured column says which); measure them again on a quiet machine", ""]
    out += [Table("models", "Whole-model decode", cols, rows, note, wide=True, page_rows=22), ""]
    if res.model_cross:
        crows = [[c["model"], c["baseline"], int(num(c, "threads")), int(num(c, "batch")), c["verdict"],
                  num(c, "nstar_ctx") or None, num(c, "lower_ctx") or None, num(c, "upper_ctx") or None,
                  num(c, "memory_nstar_cache") or None, num(c, "memory_nstar_total") or None,
                  kernel_nstar(c, res.summary), crossover_trust(c, res.models)]
                 for c in res.model_cross]
        ccols = [Col("model"), Col("vs"), Col("threads", "int"), Col("batch", "int"), Col("verdict"),
                 Col("decode n*", "int"), Col("bracket low", "int"), Col("bracket high", "int"),
                 Col("memory n* caches", "int"), Col("memory n* with weights", "int"),
                 Col("kernel n*"), Col("trust")]
        cnote = ("Decode n*: the context where the model's step becomes faster than the baseline's, "
                 "log-log between the bracketing measured contexts. Memory n*: where the baseline's "
                 "caches for the batch (then caches plus weights) exceed the model's, by arithmetic. "
                 "Kernel n*: where one attention layer's decode over the same cache dtype becomes "
                 "slower than one layer of the model's recurrent mixer (longmix crossover, same "
                 "threads; '-' without that run or for other mixers). The two differ because a "
                 "whole model's step also reads its weights (projections, MLP, LM head), which "
                 "the kernel comparison leaves out. Verdict tie: within 5 % of the baseline at "
                 "every measured context, the longest given as the bracket's low end. "
                 "Trust: ok, or not a finding when any row of the two models at that threads and "
                 "batch is not (the models table's measured column).")
        out += [Table("model_crossover", "Model-level crossover", ccols, crows, cnote, wide=True,
                        page_rows=22), ""]
    fig = res.draw(plot.model_decode_vs_context, res.models, res.model_cross,
                   os.path.join(res.dir, "fig_model_decode_vs_context.png"))
    out += figure(fig, "whole-model decode ms/token vs context")
    fig = res.draw(plot.model_components, res.models,
                   os.path.join(res.dir, "fig_model_components.png"))
    if fig:
        out += ["Where each model's token goes (batch 1, the largest thread count, the measured "
                "contexts nearest 4 k and 128 k): the MLP and projections read the weights, "
                "mixing reads the caches and states.", ""]
        out += figure(fig, "whole-model decode time by component")
    return out


def prefill_section(res):
    """Whole models' prefill (longmix model --prompt): the time to the first token per
    prompt length, by component, the GEMMs against the same run's peak, the prefill
    crossover, and the TTFT-vs-prompt figure."""
    if not res.prefills:
        return []
    out = ["## Whole models: prefill (time to the first token)", ""]
    rows = []
    for r in sorted(res.prefills, key=lambda r: (r["model"], int(num(r, "threads")),
                                                 int(num(r, "batch")), int(num(r, "n_ctx")))):
        rows.append([r["model"], r["weights"], int(num(r, "threads")), int(num(r, "batch")),
                     int(num(r, "n_ctx")), num(r, "ttft_ms"), num(r, "proj_ms"),
                     num(r, "mixing_ms"), num(r, "mlp_ms"), num(r, "head_ms"),
                     num(r, "gemm_gflops"), 100 * num(r, "gemm_peak_frac"),
                     prefill_row_trust(r) or "ok"])
    cols = [Col("model"), Col("weights"), Col("threads", "int"), Col("batch", "int"),
            Col("prompt", "int"), Col("TTFT ms", "num", 1), Col("proj ms", "num", 1),
            Col("mixing ms", "num", 1), Col("MLP ms", "num", 1), Col("head ms", "num", 1),
            Col("GEMM GFLOP/s", "num", 1), Col("% of peak", "num", 0), Col("measured")]
    note = ("Each unit kind measured once over the whole prompt (the projections and MLP "
            "through the oneDNN GEMM, the mixing through the prefill kernels), multiplied by "
            "its count (docs/models.md). % of peak: the GEMMs' rate over the same run's peak of "
            "the weights' dtype (bf16 dot products where the CPU has them). measured: ok, or "
            "busy, unsteady or over the peak (not a finding).")
    out += [Table("prefill", "Whole-model prefill", cols, rows, note, wide=True, page_rows=22), ""]
    if res.prefill_cross:
        crows = [[c["model"], c["baseline"], int(num(c, "threads")), int(num(c, "batch")),
                  c["verdict"], num(c, "nstar_ctx") or None, num(c, "lower_ctx") or None,
                  num(c, "upper_ctx") or None,
                  crossover_trust(c, res.prefills, prefill_row_trust)]
                 for c in res.prefill_cross]
        ccols = [Col("model"), Col("vs"), Col("threads", "int"), Col("batch", "int"),
                 Col("verdict"), Col("prefill n*", "int"), Col("bracket low", "int"),
                 Col("bracket high", "int"), Col("trust")]
        cnote = ("Prefill n*: the prompt length where the model's time to the first token "
                 "becomes shorter than the baseline's, log-log between the bracketing measured "
                 "prompts; faster / slower at every prompt when the measured prompts do not "
                 "bracket it; tie when within 5 % of the baseline at every measured prompt.")
        out += [Table("prefill_crossover", "Model-level prefill crossover", ccols, crows, cnote,
                      wide=True, page_rows=22), ""]
    fig = res.draw(plot.model_prefill_vs_prompt, res.prefills,
                   os.path.join(res.dir, "fig_model_prefill_vs_prompt.png"))
    out += figure(fig, "whole-model time to the first token vs prompt length")
    return out


def fraction_section(res):
    fig = res.draw(plot.roofline_fraction, res.measured, os.path.join(res.dir, "fig_roofline_fraction.png"))
    return ["## Fraction of the roofline", ""] + (figure(fig, "roofline fraction") if fig else
                                                   ["(no row carries a roofline fraction)", ""])


def quant_section(res):
    fig = res.draw(plot.quant_error, res.lesson.get("kv_quant_error", []), res.measured,
                           os.path.join(res.dir, "fig_quant_error.png"))
    return ["## Quantization error vs bits", ""] + (figure(fig, "quantization error") or ["(no data)", ""])


def chunk_section(res):
    fig = res.draw(plot.chunk_vs_time, res.measured, os.path.join(res.dir, "fig_chunk.png"))
    return ["## Chunk size vs time", ""] + (figure(fig, "chunk vs time") or
                                            ["(no chunked kernel measured at two chunk lengths: "
                                             "`longmix sweep --preset chunk-size`)", ""])


def targets_section(res):
    if res.targets_dir is None:
        return []
    import targets  # noqa: E402 (scripts/targets.py: the verdicts of make targets)
    rows = targets.load(res.targets_dir)
    if not rows:
        return []
    t, unsteady = targets.evaluate(rows)
    return ["## Speed targets (targets/, make targets)", "",
            f"{t.met} met, {t.missed} missed, {t.unmeasured} not measured"
            + (f"; {unsteady} rows had unsteady repetitions (targets/targets.md lists them)" if unsteady else "")
            + ".", "",
            Table("targets", "Speed targets of the attention and recurrent families",
                  [Col("family"), Col("target", width=0.46), Col("measured (median)", width=0.27, brief=True),
                   Col("verdict")], [list(r) for r in t.rows], wide=True, page_rows=22), ""]


def lesson_section(res):
    out = ["## The lesson's eight figures (data from `longmix lesson --csv`)", ""]
    for name, draw, caption in plot.LESSON_FIGURES:
        out += [f"### {caption}", ""]
        if res.lesson.get(name):
            out += figure(res.draw(draw, res.lesson[name], os.path.join(res.dir, f"fig_lesson_{name}.png")), name)
        else:
            out += ["(missing: run `longmix lesson --csv results/lesson`)", ""]
    return out


def measurements_section(res):
    rows = [[f, r["kernel"], r["isa"], int(num(r, "threads")), r["dtype"], int(num(r, "n_ctx")),
             int(num(r, "chunk")), int(num(r, "d_state")), num(r, "median_s"), num(r, "gflops"),
             num(r, "gbps"), num(r, "roofline_frac"), r["status"]]
            for f, file_rows in sorted(res.files.items()) for r in file_rows]
    out = ["## Every measurement", "",
           Table("measurements", "Every measured row",
                 [Col("file"), Col("kernel"), Col("ISA"), Col("threads", "int"), Col("dtype"),
                  Col("n_ctx", "int"), Col("chunk", "int"), Col("d_state", "int"), Col("median", "time"),
                  Col("GFLOP/s", "num", 2), Col("GB/s", "num", 2), Col("roofline", "num", 2),
                  Col("status")], rows, wide=True), ""]
    failed = [r for r in res.all_rows if r["status"] != "ok"]
    if failed:
        out += [f"**{len(failed)} failed rows** (status wrong = output differs from the float64 reference):", ""]
        out += [f"- {r['kernel']} {r['isa']} t{r['threads']} {r['dtype']} n={r['n_ctx']}: {r['status']}: "
                f"{r.get('note', '')}" for r in failed] + [""]
    return out


PRODUCERS = [top, machine_details, roofline_section, crossover_section, model_section,
             prefill_section, fraction_section,
             quant_section, chunk_section, targets_section, lesson_section, measurements_section]


# ---- writing -------------------------------------------------------------------------------

def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def build(res):
    """Runs the producers: (the report's Markdown, its tables in order)."""
    md, found = [], []
    for produce in PRODUCERS:
        for item in produce(res):
            if isinstance(item, Table):
                found.append(item)
                md.append(tables.markdown(item))
            else:
                md.append(item)
    return "\n".join(md), found


def parse_args(argv):
    results, fmt, only = "results", None, None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(__doc__)
            sys.exit(0)
        elif a in ("--format", "--table"):
            if i + 1 >= len(argv):
                sys.exit(f"report.py: {a} needs a value")
            if a == "--format":
                fmt = argv[i + 1]
                if fmt not in tables.FORMATS:
                    sys.stderr.write(f"report.py: --format must be one of {', '.join(tables.FORMATS)}, got '{fmt}'\n")
                    sys.exit(2)
            else:
                only = argv[i + 1]
            i += 2
            continue
        elif a.startswith("-"):
            sys.stderr.write(f"report.py: unknown option '{a}' (try --help)\n")
            sys.exit(2)
        else:
            results = a
        i += 1
    if only is not None and fmt is None:
        fmt = "markdown"
    return results, fmt, only


def main(argv):
    results, fmt, only = parse_args(argv)
    if not os.path.isdir(results):
        sys.stderr.write(f"report.py: {results} is not a folder\n")
        return 2
    res = Results(results, figures=fmt is None)
    md, found = build(res)
    if only is not None and only not in [t.name for t in found]:
        sys.stderr.write(f"report.py: no table '{only}' in this report (tables: "
                         f"{', '.join(t.name for t in found)})\n")
        return 2
    if fmt is None:
        write_atomic(os.path.join(results, "report.md"), md)
    table_dir = os.path.join(results, "tables")
    os.makedirs(table_dir, exist_ok=True)
    caption = res.caption()
    for t in found:
        for ext, form in (("md", "markdown"), ("tex", "latex"), ("csv", "csv")):
            write_atomic(os.path.join(table_dir, f"{t.name}.{ext}"), tables.render(t, form, caption) + "\n")
    if fmt is not None:
        for t in found:
            if only is None or t.name == only:
                print(tables.render(t, fmt, caption))
                print()
        print(f"report: {len(found)} tables in {table_dir}/ (report.md and the figures left as "
              "they were: run without --format to redraw them)", file=sys.stderr)
        return 0
    print("\n".join(line for line in top(res)[2:] if line))  # the report's top
    sys.stdout.flush()
    figures = sorted(f for f in os.listdir(results) if f.startswith("fig_") and f.endswith(".png"))
    print(f"report: {os.path.join(results, 'report.md')} ({len(res.files)} results files, "
          f"{len(found)} tables in {table_dir}/, {len(figures)} figures as PNG, PDF and SVG)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
