#!/usr/bin/python3
"""Figures of the longmix report, drawn from the CSV files longmix writes (matplotlib, Agg).

Every function takes already-parsed rows (lists of dicts of strings, as csv.DictReader
gives; measurement rows carry "_file", the results file they came from) and a PNG path,
draws, saves the figure as PNG, PDF and SVG beside each other and returns the PNG path (or
None when there is nothing to draw). No function computes model math: the lesson figures
plot `longmix lesson --csv` output, the measurement figures plot sweep / crossover /
roofline rows.

Sizes are those of print: COLUMN (3.4 in, one column of a two-column paper) or PAGE (7 in,
both columns), fonts 7-8.5 pt at that size, so a figure placed at its width keeps them.
PDFs embed TrueType fonts (pdf.fonttype 42; many publishers refuse Type 3).
"""
import math
import os
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator  # noqa: E402

COLUMN, PAGE = 3.4, 7.0  # inches
plt.rcParams.update({
    "font.size": 8, "axes.titlesize": 8.5, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "figure.titlesize": 9,
    "lines.linewidth": 1.2, "lines.markersize": 4, "axes.linewidth": 0.6,
    "axes.spines.top": False, "axes.spines.right": False, "legend.frameon": False,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "path", "savefig.dpi": 200,
})

BLUE, RED, ORANGE, GREEN, PURPLE, MUTED = "#2563eb", "#dc2626", "#d97706", "#059669", "#7c3aed", "#9ca3af"
INK = "#374151"
LABEL_BOX = {"facecolor": "white", "edgecolor": "none", "alpha": 0.75, "pad": 0.6}  # text over data
# Line colours and markers of the figures with a few series (time vs context, chunk length,
# the lesson): series i gets colour i % 20 and marker i % 10. The roofline, with a point
# per kernel, has its own KERNEL_COLOURS and KERNEL_MARKERS.
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22", "#0b3d91", "#a50f15", "#006d2c", "#b35806",
           "#54278f", "#4d4d4d", "#c51b7d", "#01665e", "#fdae61", "#80b1d3"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "<", ">", "h"]
CYCLE = PALETTE[:10]
FILLS = ["full", "none", "left", "top"]  # 1st, 2nd, ... thread count of a figure

NAMES = {"attn_decode": "attention", "kvq_decode": "attention",
         "mamba1_step": "Mamba-1 step", "ssd_step": "Mamba-2 SSD step",
         "attn_prefill": "causal attention", "mamba1_scan": "Mamba-1 scan",
         "ssd_chunked": "Mamba-2 SSD, chunked", "linear_chunked": "linear attention, chunked",
         "delta_chunked": "gated delta rule, chunked", "scan_affine": "affine scan",
         "attn_prefill_window": "sliding-window prefill (x: window)"}


def _num(row, key, default=0.0):
    try:
        return float(row.get(key, default))
    except (TypeError, ValueError):
        return default


def _save(fig, path, tight=True):
    """PNG at `path`, PDF and SVG beside it (same stem); tight bounds keep outside legends
    (tight=False: the figure's own size, for layouts placed by hand)."""
    stem = os.path.splitext(path)[0]
    for ext in (".png", ".pdf", ".svg"):
        fig.savefig(stem + ext, bbox_inches="tight" if tight else None, pad_inches=0.03)
    plt.close(fig)
    return path


def _ok(rows):
    return [r for r in rows if r.get("status") == "ok" and _num(r, "median_s") > 0]


def _tokens(n, _pos=None):
    """Axis text of a token count: 64, 256, 1k, 4k, 16k, 1M (k = 1024)."""
    n = int(round(n))
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}k"
    return str(n)


def _seconds(s, _pos=None):
    """Axis text of a time: 10 µs, 1 ms, 100 ms, 2 s."""
    if s <= 0:
        return ""
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns")):
        if s >= scale * 0.999:
            v = s / scale
            return f"{v:.0f} {unit}" if v >= 10 or abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{s:.0e} s"


def _plain(v, _pos=None):
    """Axis text of a log axis in plain numbers: 0.1, 1, 10, 1,000 (not 10^3)."""
    if v <= 0:
        return ""
    return f"{v:,.0f}" if v >= 1 else f"{v:.{max(0, -math.floor(math.log10(v) + 1e-9))}f}"


def _decimal(v, _pos=None):
    """Axis text of a decimal count: 1k, 10k, 100k, 1M (k = 1000); plain below 1000."""
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}k"
    return _plain(v)


def _log2_ticks(ax, lo, hi, axis="x", fmt=_tokens):
    """Ticks at powers of two from lo to hi, every other one when there are more than 7."""
    if lo <= 0 or hi <= 0:
        return
    e0, e1 = math.floor(math.log2(lo) + 1e-9), math.ceil(math.log2(hi) - 1e-9)
    step = 1 if e1 - e0 <= 6 else 2
    ticks = [2.0 ** e for e in range(e0, e1 + 1, step)]
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(ticks))
    a.set_major_formatter(FuncFormatter(fmt))
    a.set_minor_locator(NullLocator())


def _time_axis(ax, axis="y"):
    """Log time axis labelled in s / ms / µs: decades when the data spans four or more,
    1-3 steps from 1.5 decades, 1-2-5 steps down to 0.8 of a decade, 1-1.5-2-3-5-7 below,
    so that each panel has a label every half decade or closer."""
    a = ax.yaxis if axis == "y" else ax.xaxis
    lo, hi = ax.get_ylim() if axis == "y" else ax.get_xlim()
    span = math.log10(hi / lo) if lo > 0 and hi > lo else 3
    subs = ((1.0,) if span >= 4 else (1.0, 3.0) if span >= 1.5 else (1.0, 2.0, 5.0) if span >= 0.8
            else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0))
    if lo > 0 and hi > lo and span < 0.8:  # a narrow axis: finer steps until three labels show
        for finer in ((1.0, 1.5, 2.0, 3.0, 5.0, 7.0), (1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)):
            subs = finer
            ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                     for m in finer]
            if sum(lo <= t <= hi for t in ticks) >= 3:
                break
    a.set_major_locator(LogLocator(base=10, subs=subs, numticks=12))
    a.set_major_formatter(FuncFormatter(_seconds))
    a.set_minor_locator(NullLocator() if len(subs) > 1 else LogLocator(base=10, subs=range(2, 10), numticks=12))
    a.set_minor_formatter(NullFormatter())


# ---- measurements -----------------------------------------------------------------------

DECODE_GROWING = {"attn_decode", "kvq_decode"}
DECODE_FLAT = {"mamba1_step", "ssd_step"}
PREFILL_GROWING = {"attn_prefill"}
PREFILL_OTHER = {"mamba1_scan", "linear_chunked", "ssd_chunked"}


CONFIG = ("chunk", "heads", "kv_heads", "head_dim", "d_inner", "d_state", "batch", "bits",
          "disc")


def _context_sources(rows):
    """The rows the time-vs-context figure draws: crossover.csv's alone when it has any (the
    crossover table was computed from them), else every file's, each file its own line; and
    of each kernel, dtype, threads and file, only the configuration (chunk, geometry) measured
    at the most contexts, so that a line varies n alone (a chunk study at one n is
    fig_chunk's)."""
    wanted = DECODE_GROWING | DECODE_FLAT | PREFILL_GROWING | PREFILL_OTHER
    rows = [r for r in _ok(rows) if r["kernel"] in wanted]
    rows = [r for r in rows if r.get("_file") == "crossover.csv"] or rows
    contexts = defaultdict(set)
    for r in rows:
        line = (r["kernel"], r["dtype"], r["threads"], r.get("_file"))
        contexts[line, tuple(r.get(c, "") for c in CONFIG)].add(r["n_ctx"])
    best = {}
    for (line, config), ns in sorted(contexts.items()):
        if line not in best or len(ns) > len(contexts[line, best[line]]):
            best[line] = config
    return [r for r in rows if best[(r["kernel"], r["dtype"], r["threads"], r.get("_file"))]
            == tuple(r.get(c, "") for c in CONFIG)]


def _series_label(r, phase, files):
    k = r["kernel"]
    name = NAMES.get(k, k)
    if k in DECODE_GROWING:
        name = f"{name}, {r['dtype']} KV"
    elif k in DECODE_FLAT | {"mamba1_scan", "ssd_chunked"} and _num(r, "d_state") > 0:
        name = f"{name} (N={r['d_state']})"
    if len(files) > 1:
        name += f" [{r.get('_file', '?')}]"
    return name


def _interp_loglog(pts, x):
    """y at x on the log-log line through the two points of pts (sorted (x, y)) around x."""
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x0 <= x <= x1 and x1 > x0:
            f = math.log(x / x0) / math.log(x1 / x0)
            return math.exp(math.log(y0) + f * (math.log(y1) - math.log(y0)))
    return None


def _crossover_table(summary, phase, threads, contexts):
    """The crossovers of one phase as the lines of a small table: a row per pair (the
    recurrent method, and the KV dtype in decode), a column per thread count; a result
    outside the grid reads "<= 64" or "> 16k" (contexts: thread count -> sorted contexts)."""
    cells, order = {}, []
    for s in summary:
        t = int(_num(s, "threads"))
        if s.get("phase") != phase or t not in threads:
            continue
        ns = contexts.get(t) or [0]
        found = s.get("found")
        value = (f"{_num(s, 'n_star'):,.0f}" if found == "found" else
                 f"<= {_tokens(ns[0])}" if found == "below_grid" else
                 f"> {_tokens(ns[-1])}" if found == "above_grid" else "-")
        method = NAMES.get(s.get("method_b", ""), s.get("method_b", "?"))
        method = method.replace(" step", "").replace(", chunked", "")
        row = method + (f", {s.get('dtype')} KV" if phase == "decode" else "")
        if row not in order:
            order.append(row)
        cells[row, t] = value
    if not order:
        return []
    width = max(len(r) for r in order)
    head = [f"{t} thr." for t in threads]
    lines = ["measured crossover n* (tokens):", "above n*, attention is slower than", "",
             " " * width + "".join(f"{h:>8}" for h in head)]
    for row in order:
        lines.append(f"{row:<{width}}" + "".join(f"{cells.get((row, t), '-'):>8}" for t in threads))
    return lines


def _context_panel(ax, rows, summary, phase, threads, files, styles):
    """One panel: time vs context for one phase and thread count, each measured crossover
    an open circle on the attention line edged in the colour of the method it crosses;
    returns the contexts drawn (sorted), or None when there is nothing to draw."""
    growing = DECODE_GROWING if phase == "decode" else PREFILL_GROWING
    others = DECODE_FLAT if phase == "decode" else PREFILL_OTHER
    series, flats = defaultdict(list), {}
    for r in rows:
        if int(_num(r, "threads")) != threads or r["kernel"] not in growing | others:
            continue
        label = _series_label(r, phase, files)
        if phase == "decode" and r["kernel"] in DECODE_FLAT:
            flats[label] = _num(r, "median_s")
        elif _num(r, "n_ctx") > 0:
            series[label].append((_num(r, "n_ctx"), _num(r, "median_s")))
    if not series:
        return None
    ns = sorted({n for pts in series.values() for n, _ in pts})
    for label, pts in sorted(series.items()):
        pts.sort()
        color, marker = styles[label]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=marker, ms=3, color=color,
                label=label)
    for label, t in sorted(flats.items()):
        ax.axhline(t, ls="--", color=styles[label][0], label=label + ", per token")
    for s in summary:
        if s.get("phase") != phase or s.get("found") != "found" or int(_num(s, "threads")) != threads:
            continue
        n_star = _num(s, "n_star")
        attention = [k for k in series if k.startswith(NAMES["attn_decode" if phase == "decode" else "attn_prefill"])
                     and (phase != "decode" or f", {s.get('dtype')} KV" in k)]
        y = _interp_loglog(sorted(series[attention[0]]), n_star) if attention else None
        if y is None:
            continue
        other = NAMES.get(s.get("method_b", ""), s.get("method_b", "?"))
        edge = next((styles[k][0] for k in list(flats) + list(series) if k.startswith(other)), INK)
        ax.plot([n_star], [y], "o", ms=5.5, mfc="white", mec=edge, mew=1.4, zorder=5)
    ax.set_xscale("log")
    ax.set_yscale("log")
    return ns


def time_vs_context(rows, summary, path):
    """Log-log time per layer vs context, one panel per phase (rows: decode, prefill) and
    thread count (columns), the panels of a phase on one context and one time axis: decode attention per KV
    dtype against the SSM steps (flat lines), prefill attention against the scans; each
    measured crossover n* marked (open circle, edged in the colour of the method crossed)
    and listed in a table beside the row's legend. One line per kernel, dtype and file."""
    rows = _context_sources(rows)
    if not rows:
        return None
    files = sorted({r.get("_file", "?") for r in rows})
    phases = [p for p, kernels in (("decode", DECODE_GROWING), ("prefill", PREFILL_GROWING))
              if any(r["kernel"] in kernels for r in rows)]
    threads = sorted({int(_num(r, "threads")) for r in rows})
    if not phases:
        return None
    labels = sorted({_series_label(r, p, files) for r in rows for p in phases})
    styles = {lab: (PALETTE[i % len(PALETTE)], MARKERS[i % len(MARKERS)]) for i, lab in enumerate(labels)}
    fig, axes = plt.subplots(len(phases), len(threads), figsize=(PAGE, 2.6 * len(phases)),
                             squeeze=False, sharex="row", sharey="row")
    legends = []
    for i, phase in enumerate(phases):
        contexts = {}
        for j, t in enumerate(threads):
            ax = axes[i][j]
            ns = _context_panel(ax, rows, summary, phase, t, files, styles)
            ax.set_title(f"{phase}, {t} thread{'s' if t > 1 else ''}")
            if ns is None:
                ax.text(0.5, 0.5, f"no {phase} rows", ha="center", transform=ax.transAxes)
            else:
                contexts[t] = ns
            if i == len(phases) - 1:
                ax.set_xlabel("context n (tokens)")
            if j == 0:
                ax.set_ylabel("time per layer, one token" if phase == "decode" else "time per layer, n-token prompt")
            else:
                ax.tick_params(labelleft=True)
        _time_axis(axes[i][0])
        if contexts:  # the shared context axis of the row: every panel's grid
            _log2_ticks(axes[i][0], min(ns[0] for ns in contexts.values()),
                        max(ns[-1] for ns in contexts.values()))
        for ax in axes[i]:
            ax.tick_params(labelbottom=True)
        handles, names = [], []
        for ax in axes[i]:
            for h, n in zip(*ax.get_legend_handles_labels()):
                if n not in names:
                    handles.append(h)
                    names.append(n)
        if any(s.get("phase") == phase and s.get("found") == "found" for s in summary):
            handles.append(Line2D([], [], ls="", marker="o", ms=5.5, mfc="white", mec=INK, mew=1.4))
            names.append("crossover n*, edged in the colour\nof the method attention crosses")
        legend = axes[i][-1].legend(handles, names, loc="upper left", bbox_to_anchor=(1.03, 1.0),
                                    borderaxespad=0, handlelength=2.2)
        legends.append((axes[i][-1], legend, _crossover_table(summary, phase, threads, contexts)))
    fig.tight_layout(h_pad=1.0)
    fig.canvas.draw()
    for ax, legend, lines in legends:  # under the legend, in figure space tight_layout left
        if not lines:
            continue
        box = legend.get_window_extent().transformed(ax.transAxes.inverted())
        ax.text(1.03, box.y0 - 0.06, "\n".join(lines), transform=ax.transAxes, ha="left", va="top",
                fontsize=6.2, family="DejaVu Sans Mono", color=INK, linespacing=1.25)
    return _save(fig, path)


# The roofline's kernels: 15 marker shapes, none repeated among the first 15 kernels, and 20
# colours whose second ten are other hues than the first ten (not darker twins), so that
# kernel i and kernel i + 10 differ in colour family as well as in shape.
KERNEL_MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<", "h", ">", "p", "d", "H", "8"]
KERNEL_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                  "#17becf", "#7f7f7f", "#bcbd22", "#000000", "#e7298a", "#66a61e", "#e6ab02",
                  "#1b9e77", "#7570b3", "#a6761d", "#d95f02", "#666666", "#fb9a99"]


def _kernel_styles(kernels):
    """kernel -> (colour, marker): no pair repeats before 60 kernels, no shape before 15."""
    return {k: (KERNEL_COLOURS[i % len(KERNEL_COLOURS)], KERNEL_MARKERS[i % len(KERNEL_MARKERS)])
            for i, k in enumerate(sorted(kernels))}


def roofline(roof_rows, rows, path):
    """The machine's roofline (best peak per ISA and best triad over thread counts) with
    every measured kernel configuration as a point at its arithmetic intensity: a colour and
    marker per kernel, filled for the first thread count and open for the second."""
    peaks = defaultdict(float)
    bw = 0.0
    for r in roof_rows:  # the best over thread counts: the limit of any point drawn
        if r.get("status") != "ok":
            continue
        if r["kernel"] == "peak_fma":
            peaks[r["isa"]] = max(peaks[r["isa"]], _num(r, "gflops"))
        elif r["kernel"] == "stream_triad":
            bw = max(bw, _num(r, "gbps"))
    points = [r for r in _ok(rows) if _num(r, "flops") > 0 and _num(r, "bytes") > 0]
    if not peaks and not points:
        return None
    fig, ax = plt.subplots(figsize=(PAGE, 3.7))
    intensities = [_num(r, "flops") / _num(r, "bytes") for r in points] or [0.1, 100]
    x_lo, x_hi = min(intensities) / 2, max(intensities) * 4
    xs = [x_lo * (x_hi / x_lo) ** (i / 200) for i in range(201)]
    below = None  # the last peak labelled above its line
    for i, (isa, peak) in enumerate(sorted(peaks.items(), key=lambda p: p[1])):
        ys = [min(peak, x * bw) if bw else peak for x in xs]
        ax.plot(xs, ys, color=MUTED if i < len(peaks) - 1 else INK, lw=1.0, zorder=1)
        # two peaks within 25 %: the lower one's label goes under its line, not onto the other
        nxt = sorted(peaks.values())[i + 1] if i + 1 < len(peaks) else None
        under = nxt is not None and nxt / peak < 1.25 and below != peak
        if under:  # under the line, at the left of its flat part (the ridge)
            ax.text((peak / bw if bw else xs[0]) * 1.3, peak / 1.06, f"{isa} peak {peak:.0f}",
                    ha="left", va="top", fontsize=6.5, color=INK, bbox=LABEL_BOX, zorder=6)
        else:
            ax.text(xs[-1], peak * 1.06, f"{isa} peak {peak:.0f}", ha="right", va="bottom",
                    fontsize=6.5, color=INK, bbox=LABEL_BOX, zorder=6)
        below = None if under else peak
    styles = _kernel_styles({r["kernel"] for r in points})
    threads = sorted({int(_num(r, "threads")) for r in points})
    above = defaultdict(int)  # kernel -> points above the roof drawn
    for k, (color, marker) in styles.items():
        for ti, t in enumerate(threads):
            pts = [r for r in points if r["kernel"] == k and int(_num(r, "threads")) == t]
            if not pts:
                continue
            x = [_num(r, "flops") / _num(r, "bytes") for r in pts]
            y = [_num(r, "gflops") for r in pts]
            for xi, yi, r in zip(x, y, pts):
                roof = min(peaks.get(r["isa"], max(peaks.values() or [float("inf")])), xi * bw) if bw else None
                above[k] += roof is not None and yi > 1.05 * roof
            ax.plot(x, y, ls="", marker=marker, color=color, mec=color, ms=4.2, mew=0.9,
                    fillstyle=FILLS[ti % len(FILLS)], zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline (peak FMA per ISA in GFLOP/s, triad bandwidth; the best over thread counts)\n"
                 "and every measured configuration", loc="left")
    ax.xaxis.set_major_formatter(FuncFormatter(_plain))
    ax.yaxis.set_major_formatter(FuncFormatter(_plain))
    kernel_handles = [Line2D([], [], ls="", marker=m, color=c, ms=4.2, label=k)
                      for k, (c, m) in styles.items()]
    thread_handles = [Line2D([], [], ls="", marker="o", color=INK, ms=4.2, fillstyle=FILLS[i % len(FILLS)],
                             label=f"{t} thread{'s' if t > 1 else ''}") for i, t in enumerate(threads)]
    columns = 1 if len(kernel_handles) <= 12 else 2
    above = {k: n for k, n in above.items() if n}
    fig.subplots_adjust(left=0.08, right=0.98 - 0.19 * columns, bottom=0.22 if above else 0.12, top=0.88)
    fig.legend(handles=kernel_handles, loc="upper left", bbox_to_anchor=(1.0 - 0.19 * columns, 0.88),
               ncol=columns, title="kernel", title_fontsize=7, handletextpad=0.2, columnspacing=0.6,
               borderaxespad=0)
    fig.legend(handles=thread_handles, loc="lower left", bbox_to_anchor=(1.0 - 0.19 * columns, 0.22 if above else 0.12),
               borderaxespad=0, handletextpad=0.2)
    if bw:  # along the slope, above it (measured points sit below the slope), at the left
        fig.canvas.draw()
        x0 = xs[1]
        (px0, py0), (px1, py1) = ax.transData.transform([(x0, x0 * bw), (x0 * 10, x0 * 10 * bw)])
        angle = math.atan2(py1 - py0, px1 - px0)
        ax.annotate(f"triad {bw:.1f} GB/s", (xs[0] * 1.05, xs[0] * 1.05 * bw),
                    xytext=(-3.5 * math.sin(angle), 3.5 * math.cos(angle)), textcoords="offset points",
                    fontsize=6.5, color=INK, rotation=math.degrees(angle),
                    rotation_mode="anchor", bbox=LABEL_BOX, zorder=6)
    if above:
        count = sum(above.values())
        most = sorted(above.items(), key=lambda kn: (-kn[1], kn[0]))
        names = ", ".join(f"{k} ({n})" if n > 1 else k for k, n in most[:3])
        if len(most) > 3:
            names += f" and {len(most) - 3} more kernels"
        fig.text(0.08, 0.03, f"Above the roof ({count} point{'s' if count > 1 else ''}: {names}): "
                 "working sets small enough\nto stay in cache between repetitions, not limited by the "
                 "DRAM bandwidth drawn here (a cache roof would sit higher).", fontsize=7, color=INK)
    return _save(fig, path, tight=False)


def roofline_fraction(rows, path, clip=1.25):
    """Each kernel's rate over the same run's roofline bound: a bar per thread count for the
    median configuration, a diamond for the best. Kernels whose median is above 1 (working
    sets held in cache, beyond the DRAM roof) are drawn apart, under the others; a bar or
    diamond beyond `clip` is cut at the axis edge with an arrowhead and its value printed,
    so that they do not squash the rest."""
    from matplotlib.patches import Patch
    rows = [r for r in _ok(rows) if _num(r, "roofline_frac") > 0]
    if not rows:
        return None
    isas = sorted({r["isa"] for r in rows})
    groups = defaultdict(list)
    for r in rows:
        name = r["kernel"] + (f" ({r['isa']})" if len(isas) > 1 else "")
        groups[(name, int(_num(r, "threads")))].append(_num(r, "roofline_frac"))
    medians = {key: sorted(v)[len(v) // 2] for key, v in groups.items()}
    resident = sorted({k for (k, _), m in medians.items() if m > 1.0}, reverse=True)
    bounded = sorted({k for k, _ in groups} - set(resident), reverse=True)
    # y positions: the cache-resident kernels at the bottom, a gap of one row above them
    place = {k: i for i, k in enumerate(resident)}
    place.update({k: i + len(resident) + (1 if resident else 0) for i, k in enumerate(bounded)})
    threads = sorted({t for _, t in groups})
    height = 0.84 / len(threads)
    rows_drawn = len(place) + (1 if resident else 0)
    fig, ax = plt.subplots(figsize=(COLUMN, 0.15 * rows_drawn * (1 + 0.35 * (len(threads) - 1)) + 1.0))
    ax.axvspan(1.0, clip, color="#e5e7eb", lw=0, zorder=0)
    handles = []
    for ti, t in enumerate(threads):
        color = [BLUE, ORANGE, GREEN, PURPLE][ti % 4]
        handles.append(Patch(color=color, label=f"{t} thread{'s' if t > 1 else ''}: median configuration"))
        for k, yk in place.items():
            vals = sorted(groups.get((k, t), []))
            if not vals:
                continue
            y = yk - (ti - (len(threads) - 1) / 2) * height
            med, best = vals[len(vals) // 2], vals[-1]
            ax.barh(y, min(med, clip), height=height * 0.9, color=color, zorder=2)
            ax.plot([min(best, clip)], [y], marker="D", ms=2.8, color=INK, ls="", zorder=3)
            if best > clip or med > clip:
                ax.plot([clip], [y], marker=">", ms=4, color=INK, ls="", zorder=4, clip_on=False)
                text = f"best {best:.2f}" if med <= clip else f"median {med:.2f}, best {best:.2f}"
                ax.text(clip - 0.05, y, text, va="center", ha="right", fontsize=5.5, zorder=4,
                        color="white" if med > clip else INK)
    handles += [Line2D([], [], ls="", marker="D", ms=2.8, color=INK, label="best configuration"),
                Patch(color="#e5e7eb", label="above 1: faster than the DRAM roof (cache-resident)"),
                Line2D([], [], ls="", marker=">", ms=4, color=INK, label=f"beyond {clip}: cut, value printed")]
    ax.set_yticks(list(place.values()))
    ax.set_yticklabels(list(place), fontsize=6.5)
    ax.set_ylim(-0.6, rows_drawn - 0.4)
    ax.set_xlim(0, clip)
    ax.axvline(1.0, color=MUTED, ls="--", lw=0.7, zorder=1.5)
    if resident:
        ax.axhline(len(resident), color=MUTED, lw=0.6, zorder=1)
        ax.text(0.01, len(resident), "cache-resident: median above the DRAM roof",
                va="center", ha="left", fontsize=6, color=INK, style="italic",
                bbox=dict(facecolor="white", edgecolor="none", pad=0.5), zorder=5)
    ax.set_xlabel("rate / bound, bound = min(peak FMA,\nintensity × DRAM triad) of the\nsame run, ISA and threads", fontsize=7)
    fig.suptitle("Measured rate over its roofline bound, per kernel", x=0.02, ha="left", fontsize=8.5)
    fig.tight_layout()
    fig.legend(handles=handles, loc="upper left", bbox_to_anchor=(0.02, 0.0), ncol=1, borderaxespad=0,
               handlelength=1.4)
    return _save(fig, path)


def quant_error(lesson_rows, rows, path):
    """Attention output error vs bits: the lesson's reference schemes (longmix lesson) and
    the measured quantized decode kernels (err_max of kvq_decode rows)."""
    quantized = [r for r in _ok(rows) if r["kernel"] == "kvq_decode" and _num(r, "err_max") > 0]
    if not lesson_rows and not quantized:
        return None
    fig, ax = plt.subplots(figsize=(COLUMN * 1.35, 2.6))
    schemes = defaultdict(list)
    for r in lesson_rows:
        schemes[r["scheme"]].append((_num(r, "bits"), _num(r, "relative_error")))
    for i, (name, pts) in enumerate(sorted(schemes.items())):
        pts.sort()
        ax.semilogy([p[0] for p in pts], [p[1] for p in pts], "o-", color=CYCLE[i], label=f"reference: {name}")
    measured = defaultdict(list)
    for r in quantized:
        measured[r["dtype"]].append((_num(r, "bits"), _num(r, "err_max")))
    for i, (fmt, pts) in enumerate(sorted(measured.items())):
        ax.semilogy([p[0] for p in pts], [p[1] for p in pts], MARKERS[(i + 1) % len(MARKERS)], ms=5,
                    color=PALETTE[(i + 3) % len(PALETTE)], label=f"measured kernel: {fmt}")
    ax.set_xlabel("bits per cached value")
    ax.set_ylabel("relative error of attention's output")
    ax.yaxis.set_major_formatter(FuncFormatter(_plain))
    ax.set_title("Quantized KV cache: error vs bits")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, path)


def chunk_vs_time(rows, path):
    """Time vs chunk length, one panel per kernel with a chunk (the window of
    attn_prefill_window), each on its own time axis: a line per context (colour), thread
    count (line style) and file, one legend under the panels; only series of two or more
    chunk lengths."""
    rows = [r for r in _ok(rows) if _num(r, "chunk") > 0]
    series = defaultdict(list)
    for r in rows:
        key = (r["kernel"], int(_num(r, "n_ctx")), int(_num(r, "threads")), r["isa"], r.get("_file", ""))
        series[key].append((_num(r, "chunk"), _num(r, "median_s")))
    series = {k: sorted(v) for k, v in series.items() if len({c for c, _ in v}) > 1}
    if not series:
        return None
    kernels = sorted({k[0] for k in series})
    cols = min(3, len(kernels))
    nrows = math.ceil(len(kernels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(PAGE, 2.25 * nrows), squeeze=False)
    styles = ["-", "--", ":", "-."]
    legend = {}  # label -> handle, over every panel
    for idx, kernel in enumerate(kernels):
        ax = axes[idx // cols][idx % cols]
        mine = {k: v for k, v in series.items() if k[0] == kernel}
        ctxs = sorted({k[1] for k in mine})
        threads = sorted({k[2] for k in mine})
        files = sorted({k[4] for k in mine})
        isas = sorted({k[3] for k in mine})
        for (k, n, t, isa, f), pts in sorted(mine.items()):
            label = f"n = {_tokens(n)}, {t} thread{'s' if t > 1 else ''}" + (f" {isa}" if len(isas) > 1 else "") + (f" [{f}]" if len(files) > 1 else "")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", ms=2.5,
                    color=PALETTE[ctxs.index(n) % len(PALETTE)], ls=styles[threads.index(t) % 4], label=label)
            for h, name in zip(*ax.get_legend_handles_labels()):
                if name not in legend:
                    legend[name] = h
        chunks = [c for v in mine.values() for c, _ in v]
        ax.set_xscale("log")
        ax.set_yscale("log")
        _log2_ticks(ax, min(chunks), max(chunks), fmt=lambda v, _p=None: _tokens(v))
        _time_axis(ax)
        ax.set_title(kernel, fontsize=8)
        ax.set_xlabel("window (tokens)" if kernel == "attn_prefill_window" else "chunk length")
        if idx % cols == 0:
            ax.set_ylabel("time per call")
    for idx in range(len(kernels), nrows * cols):
        axes[idx // cols][idx % cols].axis("off")
    fig.tight_layout(h_pad=1.2)
    # one legend for every panel (the same contexts and thread counts), under them
    fig.legend(list(legend.values()), list(legend), loc="upper center", bbox_to_anchor=(0.5, 0.0),
               ncol=min(4, len(legend)), borderaxespad=0, handlelength=2.4, columnspacing=1.2)
    return _save(fig, path)


# ---- the lesson's eight figures, from `longmix lesson --csv` ---------------------------

def _matrix(rows, panel):
    cells = [r for r in rows if r["panel"] == panel]
    n = max(int(r["query"]) for r in cells) + 1
    m = [[0.0] * n for _ in range(n)]
    for r in cells:
        m[int(r["query"])][int(r["key"])] = float(r.get("value", r.get("weight", 0)))
    return m


def _panels(rows):
    seen = []
    for r in rows:
        if r["panel"] not in seen:
            seen.append(r["panel"])
    return seen


def lesson_context_cost(rows, path):
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(PAGE * 0.8, 2.5))
    labels = [r["label"] for r in rows]
    a1.bar(labels, [_num(r, "pairs_per_head_per_layer") for r in rows], color=RED)
    a1.set_yscale("log")
    a1.set_ylabel("pairs per head per layer")
    a1.set_title("Compute: pairs scored grow with n²")
    gb = [_num(r, "kv_cache_bytes") / 1e9 for r in rows]
    a2.bar(labels, gb, color=BLUE)
    for i, g in enumerate(gb):
        a2.text(i, g + 2, f"{g:.1f} GB", ha="center", fontsize=7)
    a2.axhline(80, color=MUTED, ls="--")
    a2.text(-0.4, 84, "one 80 GB GPU", color="#4b5563", fontsize=7)
    a2.set_ylabel("KV cache, GB")
    a2.set_ylim(0, 160)
    a2.set_title("Memory: the KV cache grows with n")
    for a in (a1, a2):
        a.set_xlabel("context length")
    fig.tight_layout()
    return _save(fig, path)


def lesson_window_reach(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE, PAGE / len(panels) + 0.5))
    for a, p in zip(axes, panels):
        a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1.3)
        a.set_title(p)
        a.set_xlabel("key position (being read)")
        a.set_ylabel("query position (reading)")
    fig.tight_layout()
    return _save(fig, path)


def lesson_sparse_masks(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE, PAGE / len(panels) + 0.5))
    for a, p in zip(axes, panels):
        name, _, pairs = p.partition("|")
        a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1.3)
        a.set_title(f"{name}\n{pairs}")
        a.set_xlabel("key")
    axes[0].set_ylabel("query")
    fig.tight_layout()
    return _save(fig, path)


def lesson_linear_vs_softmax(rows, path):
    panels = _panels(rows)
    fig, axes = plt.subplots(1, len(panels), figsize=(PAGE * 0.8, 2.9))
    im = None
    for a, p in zip(axes, panels):
        im = a.imshow(_matrix(rows, p), cmap="Blues", vmin=0, vmax=1)
        a.set_title(p)
        a.set_xlabel("key")
        a.set_ylabel("query")
    fig.colorbar(im, ax=list(axes), fraction=0.03, label="attention weight")
    return _save(fig, path)


def lesson_ssm_kernel(rows, path):
    fig, ax = plt.subplots(figsize=(COLUMN, 2.3))
    by_a = defaultdict(list)
    for r in rows:
        by_a[r["A"]].append((int(r["k"]), _num(r, "kernel")))
    for (a, pts), color in zip(sorted(by_a.items(), key=lambda x: float(x[0])), (RED, ORANGE, BLUE)):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, label=f"A = {a}")
    ax.set_xlabel("steps since the input arrived (k)")
    ax.set_ylabel("weight still carried, C·A^k·B")
    ax.set_title("How fast a fixed SSM forgets")
    ax.legend()
    fig.tight_layout()
    return _save(fig, path)


def lesson_selective_recall(rows, path):
    fig, ax = plt.subplots(figsize=(PAGE * 0.7, 2.5))
    series = defaultdict(list)
    deltas = {}
    for r in rows:
        series[r["series"]].append((int(r["position"]), _num(r, "value")))
        if r.get("delta"):
            deltas[r["series"]] = _num(r, "delta")
    xs = [p[0] for p in series["input"]]
    ax.bar(xs, [p[1] for p in series["input"]], color=MUTED, label="input (marked 7 at position 2)")
    styles = {"selective": (BLUE, "selective: Δ set by each token"),
              "best fixed": (RED, f"best fixed Δ = {deltas.get('best fixed', 0):.2f}"),
              "large fixed": (ORANGE, "large fixed Δ = 5")}
    for name, (color, label) in styles.items():
        if series.get(name):
            ax.plot(xs, [p[1] for p in series[name]], "o-", color=color, ms=3, label=label)
    ax.set_xlabel("position in the sequence")
    ax.set_ylabel("value / state")
    ax.set_title("Remembering one marked token through noise")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, path)


def lesson_kv_per_token(rows, path):
    fig, ax = plt.subplots(figsize=(COLUMN * 1.5, 2.2))
    kb = [_num(r, "bytes_per_token") / 1024 for r in rows]
    names = [r["design"] for r in rows]
    ax.barh(names[::-1], kb[::-1], color=[GREEN, ORANGE, PURPLE, BLUE, RED][: len(kb)])
    for i, v in enumerate(kb[::-1]):
        ax.text(v + 5, i, f"{v:.0f} KB", va="center", fontsize=7)
    ax.set_xlabel("KV cache per token, all 32 layers (KB)")
    ax.set_xlim(0, 620)
    ax.set_title("Shrinking the cache per token")
    return _save(fig, path)


def lesson_memory_vs_context(rows, path):
    fig, ax = plt.subplots(figsize=(PAGE * 0.75, 2.8))
    series = defaultdict(list)
    order = []
    for r in rows:
        if r["method"] not in series:
            order.append(r["method"])
        series[r["method"]].append((_num(r, "context"), _num(r, "bytes")))
    for i, name in enumerate(order):
        pts = series[name]
        ax.loglog([p[0] for p in pts], [p[1] / 1e9 for p in pts], color=PALETTE[i % len(PALETTE)], label=name)
    ax.axhline(80, color=MUTED, ls="--")
    ax.text(1_200, 95, "80 GB GPU", color="#4b5563", fontsize=7)
    ax.set_xlabel("context length n (tokens)")
    ax.set_ylabel("cache for one conversation (GB)")
    ax.set_title("What each design must keep, as context grows")
    ax.xaxis.set_major_formatter(FuncFormatter(_decimal))
    ax.yaxis.set_major_formatter(FuncFormatter(_plain))
    # outside the axes: inside, every corner holds a line (state-space runs along the bottom)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
    return _save(fig, path)


LESSON_FIGURES = (
    ("context_cost", lesson_context_cost, "The two bills: pairs scored (n²) and KV cache (n) at 8k, 128k, 1M tokens"),
    ("window_reach", lesson_window_reach, "Sliding window: one layer vs what three layers reach"),
    ("sparse_masks", lesson_sparse_masks, "Four 16 x 16 masks and the pairs each scores"),
    ("linear_vs_softmax", lesson_linear_vs_softmax, "Softmax vs linear attention weights on the same queries and keys"),
    ("ssm_kernel", lesson_ssm_kernel, "SSM kernels: A sets how long an input keeps counting"),
    ("selective_recall", lesson_selective_recall, "Selective recall of one marked token"),
    ("kv_per_token", lesson_kv_per_token, "Cache per token, by design"),
    ("memory_vs_context", lesson_memory_vs_context, "Memory vs context, every design"),
)

def model_decode_vs_context(rows, crossings, path):
    """Whole-model decode ms/token against context (log-log), one line per model, a panel
    per batch (the largest thread count), the measured model-level crossovers marked."""
    rows = [r for r in rows if r.get("status") == "ok" and _num(r, "ms_per_token") > 0]
    if not rows:
        return None
    threads = max(int(_num(r, "threads")) for r in rows)
    rows = [r for r in rows if int(_num(r, "threads")) == threads]
    batches = sorted({int(_num(r, "batch")) for r in rows})
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(min(PAGE, COLUMN * len(batches)), 2.6),
                             squeeze=False)
    for ax, b in zip(axes[0], batches):
        for i, m in enumerate(models):
            pts = sorted((_num(r, "n_ctx"), _num(r, "ms_per_token") / 1e3) for r in rows
                         if r["model"] == m and int(_num(r, "batch")) == b)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[i % 10],
                        color=PALETTE[i % 20], label=m, ms=3)
        for c in crossings:
            if int(_num(c, "batch")) == b and int(_num(c, "threads")) == threads and _num(c, "nstar_ctx") > 0:
                n = _num(c, "nstar_ctx")
                lo, hi = _num(c, "lower_ctx"), _num(c, "upper_ctx")
                f = (math.log(n) - math.log(lo)) / (math.log(hi) - math.log(lo)) if hi > lo > 0 else 0
                y = math.exp(math.log(_num(c, "lower_baseline_ms")) +
                             f * (math.log(_num(c, "upper_baseline_ms")) - math.log(_num(c, "lower_baseline_ms"))))
                ax.plot([n], [y / 1e3], marker="*", ms=8, color=INK, ls="", zorder=5)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        contexts = [_num(r, "n_ctx") for r in rows]
        _log2_ticks(ax, min(contexts), max(contexts))
        _time_axis(ax)
        ax.set_xlabel("context (tokens per sequence)")
        ax.set_ylabel("decode step (one token each)")
        ax.set_title(f"batch {b}, {threads} thread{'s' if threads > 1 else ''}")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6)
    return _save(fig, path)


def model_prefill_vs_prompt(rows, path):
    """Whole-model time to the first token against prompt length (log-log), one line per
    model, a panel per batch (the largest thread count)."""
    rows = [r for r in rows if r.get("status") == "ok" and _num(r, "ttft_ms") > 0]
    if not rows:
        return None
    threads = max(int(_num(r, "threads")) for r in rows)
    rows = [r for r in rows if int(_num(r, "threads")) == threads]
    batches = sorted({int(_num(r, "batch")) for r in rows})
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(batches), figsize=(min(PAGE, COLUMN * len(batches)), 2.6),
                             squeeze=False)
    for ax, b in zip(axes[0], batches):
        for i, m in enumerate(models):
            pts = sorted((_num(r, "n_ctx"), _num(r, "ttft_ms") / 1e3) for r in rows
                         if r["model"] == m and int(_num(r, "batch")) == b)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=MARKERS[i % 10],
                        color=PALETTE[i % 20], label=m, ms=3)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        prompts = [_num(r, "n_ctx") for r in rows]
        _log2_ticks(ax, min(prompts), max(prompts))
        _time_axis(ax)
        ax.set_xlabel("prompt (tokens per sequence)")
        ax.set_ylabel("time to the first token")
        ax.set_title(f"batch {b}, {threads} thread{'s' if threads > 1 else ''}")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6)
    return _save(fig, path)


COMPONENTS = [("proj_ms", "projections", BLUE), ("mixing_ms", "mixing", RED),
              ("mlp_ms", "MLP / MoE", GREEN), ("head_ms", "LM head", ORANGE)]


def _nearest_ctx(contexts, want):
    """The measured context closest to `want` on a log scale."""
    return min(contexts, key=lambda n: abs(math.log(n) - math.log(want)))


def model_components(rows, path, wanted=(4096, 131072)):
    """Per-token decode time split by component (stacked bars: projections, mixing, MLP,
    LM head), one bar per model, a panel per context nearest 4 k and 128 k among those
    measured (batch 1, the largest thread count)."""
    rows = [r for r in rows if r.get("status") == "ok" and _num(r, "ms_per_token") > 0
            and int(_num(r, "batch")) == 1]
    if not rows:
        return None
    threads = max(int(_num(r, "threads")) for r in rows)
    rows = [r for r in rows if int(_num(r, "threads")) == threads]
    contexts = sorted({int(_num(r, "n_ctx")) for r in rows})
    panels = sorted({_nearest_ctx(contexts, w) for w in wanted})
    models = sorted({r["model"] for r in rows})
    fig, axes = plt.subplots(1, len(panels), figsize=(min(PAGE, 3.2 * len(panels)), 2.4),
                             squeeze=False, sharex=True, sharey=True)
    for ax, n in zip(axes[0], panels):
        at = {r["model"]: r for r in rows if int(_num(r, "n_ctx")) == n}
        names = models  # one row per model in every panel (empty where not measured)
        bottom = [0.0] * len(names)
        for key, label, colour in COMPONENTS:
            vals = [_num(at[m], key) if m in at else 0.0 for m in names]
            ax.barh(range(len(names)), vals, left=bottom, color=colour, label=label, height=0.7)
            bottom = [b + v for b, v in zip(bottom, vals)]
        if ax is axes[0][0]:  # shared: the models' names once, on the left
            ax.set_yticks(range(len(names)), names)
            ax.invert_yaxis()
        ax.set_xlabel("decode step (ms per token)")
        ax.set_title(f"context {_tokens(n)}, batch 1, {threads} thread{'s' if threads > 1 else ''}")
    axes[0][-1].legend(loc="center left", bbox_to_anchor=(1.02, 0.5), fontsize=6)
    return _save(fig, path)


if __name__ == "__main__":
    print(__doc__)
