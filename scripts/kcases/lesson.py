"""NumPy references and cases for the lesson's float64 references (harness/kcases_lesson.c
runs the C references kernels/*/ref*.c on the same draws). Every case is dtype f64: these
pin the oracles themselves on random inputs, independently of the primer contract.

Tolerance: both sides compute in float64 and differ only in the order of roundings
(compensated sums here, left-to-right loops in C, exp of slightly different logits), so the
dtype rule's sqrt(K) * u is replaced by a flat rtol of 1e-12 of the scale: ~4,500 u, far
above that noise and orders of magnitude below any real error (docs/kernels.md).
"""
import math

import numpy as np

import fpmath as fp
from build_kernel_contract import Result

LESSON_RTOL = 1e-12


def _options(case):
    return case.get("options", {})


def _softmax_rows(scores):
    top = scores.max(axis=1, keepdims=True)
    e = fp.exp(scores - top)
    return e / fp.sums(e, axis=1, keepdims=True)


def _band(n_q, n_k, mask, w):
    i = np.arange(n_q)[:, None]
    j = np.arange(n_k)[None, :]
    if mask == "none":
        return np.ones((n_q, n_k), dtype=bool)
    if mask == "causal":
        return j <= i
    if mask == "window":
        return (i - j >= 0) & (i - j < w)
    raise ValueError(f"unknown mask {mask}")


def _attend(q, k, v, allowed, scaled):
    scores = fp.matmul(q, k.T)
    if scaled:
        scores = scores / math.sqrt(q.shape[1])
    scores = np.where(allowed, scores, -np.inf)
    weights = _softmax_rows(scores)
    return fp.matmul(weights, v), fp.matmul(weights, np.abs(v)), weights


def lesson_sdpa(case, rng):
    """Single-head attention (lm_attn_sdpa_f64_ref). Draws q (n_q, d), k (n_k, d),
    v (n_k, d_v). Options: mask none|causal|window (window needs w), scale (default true).
    Output: out {n_q, d_v} then weights {n_q, n_k}."""
    s, opt = case["shape"], _options(case)
    q = rng.standard_normal((s["n_q"], s["d"]))
    k = rng.standard_normal((s["n_k"], s["d"]))
    v = rng.standard_normal((s["n_k"], s["d_v"]))
    allowed = _band(s["n_q"], s["n_k"], opt.get("mask", "none"), opt.get("w", 0))
    out, out_scale, weights = _attend(q, k, v, allowed, opt.get("scale", True))
    return Result(output=np.concatenate([out.ravel(), weights.ravel()]),
                  scale=np.concatenate([out_scale.ravel(), weights.ravel()]),
                  terms=s["n_k"], rtol=LESSON_RTOL)


def lesson_window_decode(case, rng):
    """Rolling-buffer decode (lm_window_decode_f64_ref). Draws q (n, d), k (n, d),
    v (n, d_v); option w. Output: out {n, d_v} then the largest buffer size, min(n, w)."""
    s, w = case["shape"], _options(case)["w"]
    n = s["n"]
    q = rng.standard_normal((n, s["d"]))
    k = rng.standard_normal((n, s["d"]))
    v = rng.standard_normal((n, s["d_v"]))
    out, out_scale, _ = _attend(q, k, v, _band(n, n, "window", w), True)
    largest = float(min(n, w))
    return Result(output=np.append(out.ravel(), largest),
                  scale=np.append(out_scale.ravel(), largest), terms=min(n, w),
                  rtol=LESSON_RTOL)


def _phi(x):
    return np.where(x > 0, x + 1.0, fp.exp(np.minimum(x, 0.0)))


def lesson_linear_feature(case, rng):
    """phi = elu + 1 linear attention (lm_linear_feature_quadratic / _recurrent_f64_ref).
    Draws q (n, d), k (n, d), v (n, d_v). Option form quadratic|recurrent. Output: out
    {n, d_v}; the recurrent form appends S {d, d_v} = sum_j phi(k_j) v_j^T and z {d}."""
    s, form = case["shape"], _options(case).get("form", "quadratic")
    n = s["n"]
    q = rng.standard_normal((n, s["d"]))
    k = rng.standard_normal((n, s["d"]))
    v = rng.standard_normal((n, s["d_v"]))
    fq, fk = _phi(q), _phi(k)
    weights = np.tril(fp.matmul(fq, fk.T))
    weights = weights / fp.sums(weights, axis=1, keepdims=True)
    parts, scales = [fp.matmul(weights, v)], [fp.matmul(weights, np.abs(v))]
    if form == "recurrent":
        parts += [fp.matmul(fk.T, v), fp.sums(fk, axis=0)]
        scales += [fp.matmul(fk.T, np.abs(v)), fp.sums(fk, axis=0)]
    elif form != "quadratic":
        raise ValueError(f"unknown form {form}")
    return Result(output=np.concatenate([p.ravel() for p in parts]),
                  scale=np.concatenate([p.ravel() for p in scales]), terms=n,
                  rtol=LESSON_RTOL)


def lesson_affine_scan(case, rng):
    """h_t = a_t * h_{t-1} + b_t per column (lm_scan_affine_sequential / _chunked /
    lm_scan_parallel_columns_f64_ref). Draws a = uniform(0.5, 1.0, (steps, width)),
    b = standard_normal((steps, width)), h0 = standard_normal(width) (used when option h0
    is true). Options: method sequential|chunked|hillis_steele|blelloch, chunk (chunked).
    Output: states {steps, width}."""
    s, opt = case["shape"], _options(case)
    steps, width = s["steps"], s["width"]
    a = rng.uniform(0.5, 1.0, (steps, width))
    b = rng.standard_normal((steps, width))
    h0 = rng.standard_normal(width)
    h = h0.copy() if opt.get("h0", False) else np.zeros(width)
    h_abs = np.abs(h)
    states, scales = np.empty((steps, width)), np.empty((steps, width))
    for t in range(steps):
        h = a[t] * h + b[t]
        h_abs = a[t] * h_abs + np.abs(b[t])
        states[t], scales[t] = h, h_abs
    return Result(output=states, scale=scales, terms=steps, rtol=LESSON_RTOL)


def lesson_kv_quantize(case, rng):
    """Per-row symmetric quantization at `bits` (lm_kvquant_quantize_rows_f64_ref).
    Draws x = standard_normal((rows, cols)). scale = max|x_row| / (2^(bits-1) - 1),
    code = round-half-even(x / scale). Output: codes {rows, cols} then scales {rows}."""
    s, bits = case["shape"], _options(case)["bits"]
    x = rng.standard_normal((s["rows"], s["cols"]))
    top = 2.0 ** (bits - 1) - 1.0
    scales = np.abs(x).max(axis=1) / top
    codes = np.round(x / scales[:, None])
    return Result(output=np.concatenate([codes.ravel(), scales]),
                  scale=np.concatenate([np.abs(codes).ravel(), scales]), terms=1,
                  rtol=LESSON_RTOL)


def lesson_kivi(case, rng):
    """KIVI asymmetric quantize-dequantize (lm_kvquant_kivi_f64_ref). Draws
    x = standard_normal((rows, cols)); option axis token|channel, bits. Per group:
    s = (max - min) / (2^bits - 1), code = clip(round-half-even((x - min) / s)), x_hat =
    code * s + min. Output: x_hat {rows, cols}."""
    s, opt = case["shape"], _options(case)
    bits, axis = opt["bits"], opt["axis"]
    x = rng.standard_normal((s["rows"], s["cols"]))
    along = 1 if axis == "token" else 0
    lo = x.min(axis=along, keepdims=True)
    hi = x.max(axis=along, keepdims=True)
    levels = 2.0 ** bits - 1.0
    step = (hi - lo) / levels
    codes = np.clip(np.round((x - lo) / step), 0.0, levels)
    x_hat = codes * step + lo
    return Result(output=x_hat, scale=np.abs(codes * step) + np.abs(lo), terms=1,
                  rtol=LESSON_RTOL)


REFERENCES = {
    "lesson_sdpa": lesson_sdpa,
    "lesson_window_decode": lesson_window_decode,
    "lesson_linear_feature": lesson_linear_feature,
    "lesson_affine_scan": lesson_affine_scan,
    "lesson_kv_quantize": lesson_kv_quantize,
    "lesson_kivi": lesson_kivi,
}


def _case(kernel, tag, seed, shape, **options):
    return dict(id=f"{kernel}.{tag}", kernel=kernel, dtype="f64", seed=seed, shape=shape,
                options=options)


CASES = [
    _case("lesson_sdpa", "n7_m11_d5", 30001, {"n_q": 7, "n_k": 11, "d": 5, "d_v": 3}),
    _case("lesson_sdpa", "causal_n9_unscaled", 30002, {"n_q": 9, "n_k": 9, "d": 4, "d_v": 6},
          mask="causal", scale=False),
    _case("lesson_sdpa", "window3_n10", 30003, {"n_q": 10, "n_k": 10, "d": 8, "d_v": 2},
          mask="window", w=3),
    _case("lesson_window_decode", "n13_w4", 30004, {"n": 13, "d": 6, "d_v": 5}, w=4),
    _case("lesson_window_decode", "n5_w9", 30005, {"n": 5, "d": 3, "d_v": 4}, w=9),
    _case("lesson_linear_feature", "quadratic_n12", 30006, {"n": 12, "d": 5, "d_v": 3},
          form="quadratic"),
    _case("lesson_linear_feature", "recurrent_n12", 30006, {"n": 12, "d": 5, "d_v": 3},
          form="recurrent"),
    _case("lesson_affine_scan", "sequential_t37_w3", 30007, {"steps": 37, "width": 3},
          method="sequential", h0=True),
    _case("lesson_affine_scan", "chunked5_t37_w3", 30007, {"steps": 37, "width": 3},
          method="chunked", chunk=5, h0=True),
    _case("lesson_affine_scan", "chunked64_t37_w3", 30007, {"steps": 37, "width": 3},
          method="chunked", chunk=64, h0=True),
    _case("lesson_affine_scan", "hillis_steele_t37_w3", 30007, {"steps": 37, "width": 3},
          method="hillis_steele", h0=True),
    _case("lesson_affine_scan", "blelloch_t37_w3", 30007, {"steps": 37, "width": 3},
          method="blelloch", h0=True),
    _case("lesson_affine_scan", "blelloch_t1_w2", 30008, {"steps": 1, "width": 2},
          method="blelloch"),
    _case("lesson_kv_quantize", "int8_r6_c17", 30009, {"rows": 6, "cols": 17}, bits=8),
    _case("lesson_kv_quantize", "int4_r6_c17", 30009, {"rows": 6, "cols": 17}, bits=4),
    _case("lesson_kivi", "keys_per_channel_2bit", 30010, {"rows": 16, "cols": 8},
          axis="channel", bits=2),
    _case("lesson_kivi", "values_per_token_4bit", 30011, {"rows": 16, "cols": 8},
          axis="token", bits=4),
]
