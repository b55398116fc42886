#!/usr/bin/python3
"""results/*.csv -> results/report.md with PNG figures (make report).

usage: scripts/report.py [RESULTS_DIR]   (default: results)

Reads every results CSV in RESULTS_DIR (the DESIGN.md columns: sweep, crossover, roofline,
gbench), crossover_summary.csv, info.json (longmix info --format json) and lesson/*.csv
(longmix lesson --csv), and writes RESULTS_DIR/report.md with fig_*.png beside it. It only
formats and plots what longmix measured or computed.
"""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import plot  # noqa: E402

REQUIRED = ("run_id,timestamp,git_rev,host,cpu_model,isa,threads,kernel,dtype,bits,n_ctx,chunk,"
            "heads,kv_heads,head_dim,d_inner,d_state,batch,reps,median_s,min_s,p25_s,p75_s,gflops,"
            "gbps,roofline_frac,checksum,status").split(",")


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def is_results(path):
    with open(path, newline="") as f:
        header = next(csv.reader(f), [])
    return header[: len(REQUIRED)] == REQUIRED


def fmt_time(s):
    s = float(s)
    if s <= 0:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    if s < 1:
        return f"{s * 1e3:.2f} ms"
    return f"{s:.2f} s"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def main():
    results = sys.argv[1] if len(sys.argv) > 1 else "results"
    files = sorted(f for f in os.listdir(results) if f.endswith(".csv"))
    by_file = {f: read_csv(os.path.join(results, f)) for f in files
               if is_results(os.path.join(results, f))}
    roof = by_file.get("roofline.csv", [])
    cross = by_file.get("crossover.csv", [])
    measured = [r for f, rows in by_file.items() if f != "roofline.csv" for r in rows]
    summary_path = os.path.join(results, "crossover_summary.csv")
    summary = read_csv(summary_path) if os.path.exists(summary_path) else []
    lesson_dir = os.path.join(results, "lesson")
    lesson = {}
    if os.path.isdir(lesson_dir):
        for f in os.listdir(lesson_dir):
            if f.endswith(".csv"):
                lesson[f[:-4]] = read_csv(os.path.join(lesson_dir, f))
    md = ["# longmix report", ""]
    info_path = os.path.join(results, "info.json")
    if os.path.exists(info_path):
        info = json.load(open(info_path))
        topo = info.get("topology", {})
        md += ["## Machine", "",
               f"- CPU: {info.get('cpu_model')} ({topo.get('packages')} package, {topo.get('cores')} cores, "
               f"{topo.get('pus')} PUs; L1d {topo.get('l1d_bytes', 0) // 1024} KiB, L2 {topo.get('l2_bytes', 0) // 1024} KiB, "
               f"L3 {topo.get('l3_bytes', 0) // 2**20} MiB x {topo.get('l3_count')}; "
               f"{topo.get('numa_nodes')} NUMA node(s), {topo.get('total_memory_bytes', 0) / 2**30:.1f} GiB)",
               f"- ISA path: {info.get('isa', {}).get('active')} ({info.get('isa', {}).get('why')}); "
               f"available: {', '.join(info.get('isa', {}).get('available', []))}",
               f"- OpenMP: {info.get('openmp', {}).get('max_threads')} threads, proc_bind "
               f"{info.get('openmp', {}).get('proc_bind')}, places {info.get('openmp', {}).get('omp_places')}",
               f"- Build: {info.get('compiler')}, git {info.get('git_rev')}", ""]
    elif measured:
        r = measured[0]
        md += ["## Machine", "", f"- CPU: {r['cpu_model']}, host {r['host']}, git {r['git_rev']}", ""]

    md += ["## Roofline (same-run limits)", ""]
    if roof:
        rows = []
        triad = {r["threads"]: float(r["gbps"]) for r in roof if r["kernel"] == "stream_triad"}
        for r in roof:
            if r["kernel"] == "peak_fma":
                bw = triad.get(r["threads"], 0.0)
                rows.append((r["threads"], r["isa"], f"{float(r['gflops']):.1f}", f"{bw:.2f}",
                             f"{float(r['gflops']) / bw:.1f}" if bw else "-"))
        md += [table(("threads", "isa", "peak GFLOP/s (f32 FMA)", "STREAM triad GB/s", "ridge FLOP/byte"), rows), ""]
        dot = [r for r in roof if r["kernel"] == "peak_dot_i8" and r.get("status", "ok") == "ok"]
        if dot:  # the compute roof of the quantized KV decode (VPDPBUSD: 128 operations each)
            md += ["int8 dot-product peak (AVX512-VNNI, the quantized decode's compute roof): " +
                   ", ".join(f"{float(r['gflops']):.0f} GOP/s = {float(r['gflops']) / 128:.1f} G "
                             f"VPDPBUSD/s on {r['threads']} thread(s)" for r in dot) + ".", ""]
    else:
        md += ["(no results/roofline.csv: run `longmix roofline`)", ""]
    fig = plot.roofline(roof, measured, os.path.join(results, "fig_roofline.png"))
    if fig:
        md += [f"![roofline]({os.path.basename(fig)})", ""]

    md += ["## SSM vs attention crossover", ""]
    if summary:
        rows = []
        for s in summary:
            n = s["n_star"]
            measured_n = {"found": f"**{float(n):.0f}**", "below_grid": f"<= {float(n):.0f}",
                          "above_grid": f"> {float(n):.0f}"}.get(s["found"], "no data")
            bracket = (f"n={s['lo_n']}: {fmt_time(s['lo_a_s'])} vs {fmt_time(s['lo_b_s'])}"
                       f"{'; next n=' + s['hi_n'] if s['found'] == 'found' else ''}")
            rows.append((s["phase"], f"{s['method_a']} vs {s['method_b']}", s["dtype"], s["isa"],
                         s["threads"], measured_n, bracket,
                         s["memory_n"] if float(s["memory_n"] or 0) > 0 else "-",
                         f"{float(s['flop_n']):.0f}" if float(s["flop_n"] or 0) > 0 else "-"))
        md += [table(("phase", "comparison", "KV dtype", "isa", "threads", "measured n*",
                      "lower bracketing measurement (a vs b)", "memory n*", "FLOP n*"), rows), "",
               "Measured n*: log-log interpolation between the two grid points where attention's time "
               "passes the other method's (per layer; the layer count cancels). Memory n*: where the KV "
               "cache reaches the recurrent state (kernels/arith, 80 and 528.5 for the M8 geometry). "
               "FLOP n*: where the kernels' own flop counts cross.", ""]
    else:
        md += ["(no crossover_summary.csv: run `longmix crossover`)", ""]
    fig = plot.time_vs_context(cross or measured, summary, os.path.join(results, "fig_time_vs_context.png"))
    if fig:
        md += [f"![time vs context]({os.path.basename(fig)})", ""]

    md += ["## Fraction of the roofline", ""]
    fig = plot.roofline_fraction(measured, os.path.join(results, "fig_roofline_fraction.png"))
    md += [f"![roofline fraction]({os.path.basename(fig)})" if fig else "(no row carries a roofline fraction)", ""]

    md += ["## Quantization error vs bits", ""]
    fig = plot.quant_error(lesson.get("kv_quant_error", []), measured,
                           os.path.join(results, "fig_quant_error.png"))
    md += [f"![quantization error]({os.path.basename(fig)})" if fig else "(no data)", ""]

    md += ["## Chunk size vs time", ""]
    fig = plot.chunk_vs_time(measured, os.path.join(results, "fig_chunk.png"))
    md += [f"![chunk vs time]({os.path.basename(fig)})" if fig else
           "(no chunked kernel measured: `longmix sweep --preset chunk-size`)", ""]

    md += ["## The lesson's eight figures (data from `longmix lesson --csv`)", ""]
    for name, draw, caption in plot.LESSON_FIGURES:
        if name in lesson and lesson[name]:
            path = draw(lesson[name], os.path.join(results, f"fig_lesson_{name}.png"))
            md += [f"### {caption}", "", f"![{name}]({os.path.basename(path)})", ""]
        else:
            md += [f"### {caption}", "", "(missing: run `longmix lesson --csv results/lesson`)", ""]

    md += ["## Every measurement", ""]
    rows = []
    for f, file_rows in sorted(by_file.items()):
        for r in file_rows:
            rows.append((f, r["kernel"], r["isa"], r["threads"], r["dtype"], r["n_ctx"],
                         r["chunk"], r["d_state"], fmt_time(r["median_s"]),
                         f"{float(r['gflops']):.2f}", f"{float(r['gbps']):.2f}",
                         f"{float(r['roofline_frac']):.2f}", r["status"]))
    md += [table(("file", "kernel", "isa", "threads", "dtype", "n_ctx", "chunk", "d_state", "median",
                  "GFLOP/s", "GB/s", "roofline", "status"), rows), ""]
    failed = [r for rows in by_file.values() for r in rows if r["status"] != "ok"]
    if failed:
        md += [f"**{len(failed)} failed rows** (status wrong = output differs from the float64 reference):", ""]
        md += [f"- {r['kernel']} {r['isa']} t{r['threads']} {r['dtype']} n={r['n_ctx']}: {r['status']}: {r.get('note', '')}"
               for r in failed]
        md += [""]
    out = os.path.join(results, "report.md")
    with open(out + ".tmp", "w") as f:
        f.write("\n".join(md))
    os.replace(out + ".tmp", out)
    print(f"report: {out} ({len(by_file)} results files, "
          f"{sum(1 for _ in os.listdir(results) if _.startswith('fig_'))} figures)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
