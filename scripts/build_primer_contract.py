#!/usr/bin/python3
"""Build contracts/primer.json: every number the lesson ("Long context and
efficient architectures") states or prints, with the inputs to recompute it.

This is an independent NumPy implementation of the lesson's functions. It never runs the
C code. Each entry names a function of the catalog documented in docs/contracts.md
("primer (longmix-primer/1)"), its arguments, which output (and which element) is
checked, an optional scale and divisor, the comparison and its tolerance:

    value = scale * (f(args)[output][index] - subtract) / divide_by

Two kinds of entries pin a lesson number:
  * exact pins: "expected" is the value this NumPy implementation computes, at a tight
    tolerance (0 for integers, rtol 1e-12 for closed forms, 1e-9 for random-input
    statistics that go through long sums);
  * rounded statements ("rounded": true): "expected" is the number as the lesson prints
    it ("about 12 %", "6.55", "1.1 GB"), with atol = half a unit of the last printed digit
    (or the bound for "under 1 %"), showing the rounding.
The builder asserts that every rounded statement holds for the computed value.

    /usr/bin/python3 scripts/build_primer_contract.py                # contracts/primer.json
    /usr/bin/python3 scripts/build_primer_contract.py --variant 1 -o /tmp/v.json
A variant changes seeds and sizes (lesson statements about the original inputs are left
out); the C checker reads every parameter from the file, so a variant must verify too.
    /usr/bin/python3 scripts/build_primer_contract.py --check        # exit 1 if it differs

The same bytes on any machine: every sum, product and exp/log goes through
scripts/fpmath.py (compensated sums in index order, exp and log made of correctly rounded
operations), never through `@`, dot, linalg or convolve (the machine's BLAS) nor NumPy's
exp/log/power (SIMD loops chosen by CPU). Writing the file re-pins it in the SHA256SUMS
beside it when that lists it (contracts/SHA256SUMS does).
"""
from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

import fpmath as fp
import pins

ROOT = pathlib.Path(__file__).resolve().parent.parent

SCHEMA = "longmix-primer/1"
LAYERS, KV_HEADS, HEAD_DIM = 32, 8, 128

# ---------------------------------------------------------------------------------
# The borrowed primitives (primer.ml.attention / primer.ml.inference), as the lesson
# text describes them.
# ---------------------------------------------------------------------------------


def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool))


def softmax(x):
    top = np.max(x, axis=-1, keepdims=True)
    e = fp.exp(x - top)
    return e / fp.sums(e, axis=-1, keepdims=True)


def sdpa(Q, K, V, mask=None, scale=True):
    scores = fp.matmul(Q, np.swapaxes(K, -1, -2))
    if scale:
        scores = scores / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    w = softmax(scores)
    return fp.matmul(w, V), w


def kv_bytes_per_token(layers, kv_heads, head_dim, bits=16):
    return 2 * layers * kv_heads * head_dim * bits // 8


def kv_cache_bytes(n, layers, kv_heads, head_dim, bits=16):
    return n * 2 * layers * kv_heads * head_dim * bits // 8


def quantize_rows(M, bits):
    """Symmetric, one scale per row: codes in [-(2^(b-1)-1), 2^(b-1)-1], round half even."""
    qmax = 2 ** (bits - 1) - 1
    scale = np.max(np.abs(M), axis=-1, keepdims=True) / qmax
    safe = np.where(scale > 0, scale, 1.0)
    codes = np.where(scale > 0, np.clip(np.round(M / safe), -qmax, qmax), 0.0)
    return codes.astype(np.int64), scale[..., 0]


def dequantize_rows(codes, scales):
    return codes * scales[..., None]


def kivi(M, bits, axis):
    """Asymmetric min/max quantize-dequantize; axis 'channel' (per column) or 'token'."""
    levels = 2 ** bits - 1
    X = M.T if axis == "channel" else M
    lo = X.min(axis=1, keepdims=True)
    hi = X.max(axis=1, keepdims=True)
    s = (hi - lo) / levels
    safe = np.where(s > 0, s, 1.0)
    codes = np.where(s > 0, np.clip(np.round((X - lo) / safe), 0, levels), 0.0)
    out = codes * s + lo
    return out.T if axis == "channel" else out


# ---------------------------------------------------------------------------------
# The lesson's functions and the M8 demos, independently in NumPy
# ---------------------------------------------------------------------------------


def window_mask(n, w):
    back = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (back >= 0) & (back < w)


def strided_mask(n, s):
    back = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (back >= 0) & ((back < s) | (back % s == 0))


def global_local_mask(n, w, g):
    m = window_mask(n, w)
    m[:, list(g)] = True
    m[list(g), :] = True
    return m & causal_mask(n)


def receptive(n, w, layers):
    step = window_mask(n, w).astype(float)
    heard = np.eye(n)
    for _ in range(layers):  # counts of paths, exact in float64
        heard = np.minimum(fp.matmul(step, heard), 1.0)
    return heard > 0


def phi(x):
    x = np.asarray(x, float)
    return np.where(x > 0, x + 1.0, fp.exp(np.minimum(x, 0.0)))


def lin_scores(Q, K):
    s = fp.matmul(phi(Q), phi(K).T)
    return np.where(causal_mask(len(Q)), s, 0.0)


def lin_weights(Q, K):
    s = lin_scores(Q, K)
    return s / fp.sums(s, axis=1, keepdims=True)


def lin_recurrent(Q, K, V):
    S = np.zeros((K.shape[1], V.shape[1]))
    z = np.zeros(K.shape[1])
    out = np.zeros((len(Q), V.shape[1]))
    for i in range(len(Q)):
        pk = phi(K[i])
        S = S + np.outer(pk, V[i])
        z = z + pk
        pq = phi(Q[i])
        out[i] = fp.matmul(pq, S) / fp.matmul(pq, z)
    return out, S, z


def ssm_params(A, B, C):
    return np.atleast_2d(np.asarray(A, float)), np.atleast_1d(np.asarray(B, float)), np.atleast_1d(np.asarray(C, float))


def ssm_rec(x, A, B, C):
    A, B, C = ssm_params(A, B, C)
    h = np.zeros(len(B))
    y = []
    for xt in np.asarray(x, float):
        h = fp.matmul(A, h) + B * xt
        y.append(float(fp.matmul(C, h)))
    return np.array(y)


def ssm_ker(A, B, C, length):
    A, B, C = ssm_params(A, B, C)
    out, p = [], B.copy()
    for _ in range(length):
        out.append(float(fp.matmul(C, p)))
        p = fp.matmul(A, p)
    return np.array(out)


def ssm_conv(x, A, B, C):
    x = np.asarray(x, float)
    kernel = ssm_ker(A, B, C, len(x))
    return np.array([float(fp.dot(x[:t + 1], kernel[t::-1])) for t in range(len(x))])


def discretize(delta, a, b):
    ab = float(fp.exp(delta * a))
    return ab, float((ab - 1.0) / a * b)


def softplus(x):
    return fp.softplus(x)


def step_sizes(markers, sharpness, bias):
    return softplus(sharpness * np.asarray(markers, float) + bias)


def selective(x, delta, a, b, c):
    h, ys = 0.0, []
    for xt, dt in zip(np.asarray(x, float), np.asarray(delta, float)):
        ab, bb = discretize(dt, a, b)
        h = ab * h + bb * xt
        ys.append(c * h)
    return np.array(ys)


def hillis_steele(a, b, max_rounds=0):
    a, b = np.array(a, float), np.array(b, float)
    shift, rounds = 1, 0
    while shift < len(a) and (max_rounds == 0 or rounds < max_rounds):
        ap = np.concatenate([np.ones(shift), a[:-shift]])
        bp = np.concatenate([np.zeros(shift), b[:-shift]])
        a, b = ap * a, a * bp + b
        shift, rounds = shift * 2, rounds + 1
    return a, b, rounds


def sequential_scan(a, b, h0=None):
    a, b = np.asarray(a, float), np.asarray(b, float)
    h = np.zeros(a.shape[1:]) if h0 is None else np.array(h0, float)
    out = np.empty_like(b)
    for t in range(len(a)):
        h = a[t] * h + b[t]
        out[t] = h
    return out


def blelloch(a, b):
    """Exclusive up-sweep / down-sweep over the composition, padded with (1, 0)."""
    n = len(a)
    size = 1
    while size < n:
        size *= 2
    ta = np.ones(size)
    tb = np.zeros(size)
    ta[:n], tb[:n] = a, b
    span = 1
    while span < size:
        for r in range(2 * span - 1, size, 2 * span):
            l = r - span
            tb[r] = ta[r] * tb[l] + tb[r]
            ta[r] = ta[l] * ta[r]
        span *= 2
    ta[size - 1], tb[size - 1] = 1.0, 0.0
    span = size // 2
    while span >= 1:
        for r in range(2 * span - 1, size, 2 * span):
            l = r - span
            la, lb = ta[l], tb[l]
            ta[l], tb[l] = ta[r], tb[r]
            tb[r] = la * tb[r] + lb
            ta[r] = ta[r] * la
        span //= 2
    return np.asarray(a, float) * tb[:n] + np.asarray(b, float)


def chunked_scan(a, b, chunk, h0):
    state = np.array(h0, float)
    out = np.empty_like(b)
    for start in range(0, len(a), chunk):
        end = min(start + chunk, len(a))
        la, lb = a[start:end], b[start:end]
        z = np.zeros(a.shape[1])
        local = np.empty_like(lb)
        for o in range(len(la)):
            z = la[o] * z + lb[o]
            local[o] = z
        out[start:end] = local + np.cumprod(la, axis=0) * state
        state = out[end - 1].copy()
    return out


def normalize_key(k):
    k = np.asarray(k, float)
    s = float(np.max(np.abs(k)))
    k = k / s
    return k / fp.norm(k)


def delta_write(S, k, v, beta, decay):
    u = normalize_key(k)
    base = decay * S
    return base + beta * np.outer(v - fp.matmul(base, u), u)


def skip_normals(rng, count):
    if count:
        rng.standard_normal(count)


class Latent:
    def __init__(self, d_model, n_heads, d_head, d_latent, seed):
        rng = np.random.default_rng(seed)
        self.H, self.dh, self.dl = n_heads, d_head, d_latent
        s, sl = 1 / np.sqrt(d_model), 1 / np.sqrt(d_latent)
        self.W_q = rng.normal(0, s, (d_model, n_heads * d_head))
        self.W_down = rng.normal(0, s, (d_model, d_latent))
        self.W_uk = rng.normal(0, sl, (d_latent, n_heads * d_head))
        self.W_uv = rng.normal(0, sl, (d_latent, n_heads * d_head))

    def heads(self, M):
        return M.reshape(M.shape[0], self.H, self.dh).transpose(1, 0, 2)

    def merge(self, M):
        return M.transpose(1, 0, 2).reshape(M.shape[1], self.H * self.dh)

    def attend(self, X, C):
        Q, K = self.heads(fp.matmul(X, self.W_q)), self.heads(fp.matmul(C, self.W_uk))
        V = self.heads(fp.matmul(C, self.W_uv))
        return self.merge(sdpa(Q, K, V, mask=causal_mask(len(X)))[0])

    def absorbed(self, X, C):
        Q = self.heads(fp.matmul(X, self.W_q))
        Wk = self.W_uk.reshape(self.dl, self.H, self.dh).transpose(1, 0, 2)
        Wv = self.W_uv.reshape(self.dl, self.H, self.dh).transpose(1, 0, 2)
        scores = fp.matmul(fp.matmul(Q, Wk.transpose(0, 2, 1)), C.T) / np.sqrt(self.dh)
        scores = np.where(causal_mask(len(X)), scores, -np.inf)
        return self.merge(fp.matmul(fp.matmul(softmax(scores), C), Wv))


def cache_error(bits, n, d, seed, scheme):
    rng = np.random.default_rng(seed)
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
    exact = sdpa(Q, K, V, mask=causal_mask(n))[0]
    if scheme == "symmetric":
        Kh = dequantize_rows(*quantize_rows(K, bits))
        Vh = dequantize_rows(*quantize_rows(V, bits))
    else:
        Kh, Vh = kivi(K, bits, "channel"), kivi(V, bits, "token")
    approx = sdpa(Q, Kh, Vh, mask=causal_mask(n))[0]
    return float(fp.norm(np.ravel(approx - exact)) / fp.norm(np.ravel(exact)))


def quantized_kv_bytes_per_token(layers, kv_heads, head_dim, bits, scale_bits=16):
    return 2 * layers * kv_heads * (head_dim * bits / 8 + scale_bits / 8)


def ssm_state_bytes(channels, state, bits=16):
    return channels * state * bits // 8


def hybrid_cache_bytes(context, layers=LAYERS, attention_layers=4, kv_heads=KV_HEADS, head_dim=HEAD_DIM,
                       channels=4096, state_size=16, bits=16):
    return (attention_layers * context * kv_bytes_per_token(1, kv_heads, head_dim, bits)
            + (layers - attention_layers) * ssm_state_bytes(channels, state_size, bits))


METHODS = ["multi_head", "grouped_query", "grouped_query_4bit", "latent", "sliding_window", "hybrid", "state_space"]
METHOD_LABELS = ["multi-head (32 KV heads)", "grouped-query (8 KV heads)", "grouped-query, 4-bit",
                 "latent (576 per layer)", "sliding window 4k", "hybrid, 1 attention in 8", "state-space"]


def cache_by_method(context):
    return [
        kv_cache_bytes(context, LAYERS, 32, HEAD_DIM),
        kv_cache_bytes(context, LAYERS, KV_HEADS, HEAD_DIM),
        context * quantized_kv_bytes_per_token(LAYERS, KV_HEADS, HEAD_DIM, 4),
        context * (LAYERS * (512 + 64) * 16 // 8),
        kv_cache_bytes(min(context, 4096), LAYERS, KV_HEADS, HEAD_DIM),
        hybrid_cache_bytes(context),
        LAYERS * ssm_state_bytes(4096, 16),
    ]


def maxabs(x, y):
    return float(np.max(np.abs(np.asarray(x) - np.asarray(y))))


# ---------------------------------------------------------------------------------
# The catalog: function name -> outputs {name: array or number}. The C checker
# (harness/primer.c) implements the same names through the kernels/ references.
# ---------------------------------------------------------------------------------


def catalog(fn, a):
    A = lambda k: np.asarray(a[k], float)  # noqa: E731
    if fn == "handshakes":
        return {"value": a["n"] * (a["n"] - 1) // 2}
    if fn == "pairs_per_head_per_layer":
        return {"value": a["n"] * a["n"]}
    if fn == "kv_cache_bytes_per_token":
        return {"value": kv_bytes_per_token(a["layers"], a["kv_heads"], a["head_dim"], a["bits"])}
    if fn == "kv_cache_bytes":
        return {"value": kv_cache_bytes(a["n"], a["layers"], a["kv_heads"], a["head_dim"], a["bits"])}
    if fn == "context_cost":
        return {"pairs": a["n"] * a["n"],
                "kv_cache_bytes": kv_cache_bytes(a["n"], a["layers"], a["kv_heads"], a["head_dim"], a["bits"])}
    if fn == "sliding_window_mask_row":
        return {"value": window_mask(a["n"], a["w"])[a["row"]].astype(int)}
    if fn == "sliding_window_pairs":
        return {"value": int(np.count_nonzero(window_mask(a["n"], a["w"])))}
    if fn == "causal_pairs":
        return {"value": int(np.count_nonzero(causal_mask(a["n"])))}
    if fn == "receptive_field":
        row = receptive(a["n"], a["w"], a["layers"])[a["query"]]
        return {"row": row.astype(int), "width": int(np.count_nonzero(row))}
    if fn == "reach":
        return {"value": a["layers"] * (a["w"] - 1)}
    if fn == "relay_hops":
        return {"value": -(-a["distance"] // (a["w"] - 1))}
    if fn == "rolling_buffer_slots":
        slots = [-1] * a["w"]
        for t in range(a["last_token"] + 1):
            slots[t % a["w"]] = t
        return {"value": np.array(slots)}
    if fn == "sliding_window_decode":
        rng = np.random.default_rng(a["seed"])
        skip_normals(rng, a["skip_normals"])
        n, d, w = a["n"], a["d"], a["w"]
        Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
        keys, values, outs, largest = [], [], [], 0
        for q, k, v in zip(Q, K, V):
            keys.append(k)
            values.append(v)
            keys, values = keys[-w:], values[-w:]
            largest = max(largest, len(keys))
            wts = softmax(fp.matmul(np.array(keys), q) / np.sqrt(len(q)))
            outs.append(fp.matmul(wts, np.array(values)))
        streamed = np.array(outs)
        masked = sdpa(Q, K, V, mask=window_mask(n, w))[0]
        return {"largest_buffer": largest, "max_abs_diff": maxabs(streamed, masked),
                "matches": bool(np.allclose(streamed, masked)), "output_sum": fp.total(streamed)}
    if fn == "global_local_pairs":
        return {"value": int(np.count_nonzero(global_local_mask(a["n"], a["w"], a["global_tokens"])))}
    if fn == "strided_pairs":
        return {"value": int(np.count_nonzero(strided_mask(a["n"], a["stride"])))}
    if fn == "strided_row_keys":
        return {"value": np.nonzero(strided_mask(a["n"], a["stride"])[a["row"]])[0]}
    if fn == "feature_map":
        return {"value": phi(A("x"))}
    if fn == "linear_attention_recurrent":
        out, S, z = lin_recurrent(A("Q"), A("K"), A("V"))
        return {"out": out.ravel(), "S": S.ravel(), "z": z}
    if fn == "linear_attention_weights":
        return {"weights": lin_weights(A("Q"), A("K")).ravel(), "scores": lin_scores(A("Q"), A("K")).ravel()}
    if fn == "linear_attention_quadratic":
        return {"value": fp.matmul(lin_weights(A("Q"), A("K")), A("V")).ravel()}
    if fn == "scaled_dot_product_attention":
        n_q, n_k = len(a["Q"]), len(a["K"])
        mask = {"none": None, "causal": causal_mask(n_q) if n_q == n_k else None}[a["mask"]]
        out, w = sdpa(A("Q"), A("K"), A("V"), mask=mask, scale=a["scale"])
        return {"out": out.ravel(), "weights": w.ravel()}
    if fn == "linear_attention_random":
        rng = np.random.default_rng(a["seed"])
        skip_normals(rng, a["skip_normals"])
        Q, K, V = (rng.standard_normal((a["n"], a["d"])) for _ in range(3))
        fast, S, z = lin_recurrent(Q, K, V)
        slow = fp.matmul(lin_weights(Q, K), V)
        return {"max_abs_diff": maxabs(fast, slow), "matches": bool(np.allclose(fast, slow)),
                "state_rows": S.shape[0], "state_cols": S.shape[1], "z_length": z.shape[0],
                "output_sum": fp.total(fast)}
    if fn == "peak_weights":
        rng = np.random.default_rng(a["seed"])
        Q = a["query_scale"] * rng.standard_normal((a["n"], a["d"]))
        K = rng.standard_normal((a["n"], a["d"]))
        soft = sdpa(Q, K, K, mask=causal_mask(a["n"]))[1]
        lin = lin_weights(Q, K)
        last = a["last_rows"]
        return {"softmax": fp.mean(soft[-last:].max(axis=1)), "linear": fp.mean(lin[-last:].max(axis=1))}
    if fn == "ssm_recurrent":
        return {"value": ssm_rec(A("x"), A("A"), A("B"), A("C"))}
    if fn == "ssm_kernel":
        return {"value": ssm_ker(A("A"), A("B"), A("C"), a["length"])}
    if fn == "ssm_convolution":
        return {"value": ssm_conv(A("x"), A("A"), A("B"), A("C"))}
    if fn == "discretize":
        ab, bb = discretize(a["delta"], a["a"], a["b"])
        return {"a_bar": ab, "b_bar": bb}
    if fn == "softplus":
        return {"value": softplus(A("x"))}
    if fn == "step_sizes":
        return {"value": step_sizes(A("markers"), a["sharpness"], a["bias"])}
    if fn == "selective_ssm":
        delta = A("delta") if "delta" in a else step_sizes(A("markers"), a["sharpness"], a["bias"])
        return {"value": selective(A("x"), delta, a["a"], a["b"], a["c"])}
    if fn == "selective_recall":
        d = step_sizes(A("markers"), a["sharpness"], a["bias"])
        return {"value": float(selective(A("values"), d, a["a"], a["b"], a["c"])[-1])}
    if fn == "time_invariant_recall":
        v = A("values")
        return {"value": float(selective(v, np.full(len(v), a["delta"]), a["a"], a["b"], a["c"])[-1])}
    if fn == "best_time_invariant_recall":
        v = A("values")
        grid = fp.geomspace(a["grid_start"], a["grid_stop"], a["grid_num"])
        finals = [float(selective(v, np.full(len(v), g), a["a"], a["b"], a["c"])[-1]) for g in grid]
        i = int(np.argmax(finals))
        path = selective(v, np.full(len(v), grid[i]), a["a"], a["b"], a["c"])
        return {"best_value": finals[i], "best_delta": float(grid[i]), "best_index": i, "best_peak": float(path.max())}
    if fn == "parallel_scan":
        ao, bo, rounds = hillis_steele(A("a"), A("b"), a["max_rounds"])
        return {"states": bo, "a": ao, "rounds": rounds}
    if fn == "work_efficient_scan":
        return {"states": blelloch(A("a"), A("b"))}
    if fn == "parallel_scan_random":
        rng = np.random.default_rng(a["seed"])
        skip_normals(rng, a["skip_normals"])
        b = rng.standard_normal(a["length"])
        av = np.full(a["length"], a["a_fill"])
        _, states, rounds = hillis_steele(av, b)
        seq = sequential_scan(av, b)
        return {"rounds": rounds, "max_abs_diff": maxabs(states, seq), "states_sum": fp.total(states),
                "blelloch_max_abs_diff": maxabs(blelloch(av, b), seq)}
    if fn == "ssm_state_bytes":
        return {"value": ssm_state_bytes(a["channels"], a["state_size"], a["bits"])}
    if fn == "hybrid_cache_bytes":
        return {"value": hybrid_cache_bytes(a["context"], a["layers"], a["attention_layers"], a["kv_heads"],
                                            a["head_dim"], a["channels"], a["state_size"], a["bits"])}
    if fn == "latent_kv_bytes_per_token":
        return {"value": a["layers"] * (a["latent_dim"] + a["rope_dim"]) * a["bits"] // 8}
    if fn == "mha_numbers_per_token":
        return {"value": 2 * a["heads"] * a["head_dim"]}
    if fn == "latent_numbers_per_token":
        return {"value": a["latent_dim"] + a["rope_dim"]}
    if fn == "latent_kv_worked_example":
        x, Wd, Wk, q = A("x"), A("W_down"), A("W_uk"), A("q")
        c = fp.matmul(x, Wd)
        k = fp.matmul(c, Wk)
        ql = fp.matmul(q, Wk.T)
        return {"latent": c, "key": k, "score": float(fp.matmul(q, k)), "q_latent": ql,
                "absorbed_score": float(fp.matmul(ql, c))}
    if fn == "latent_attention":
        layer = Latent(a["d_model"], a["n_heads"], a["d_head"], a["d_latent"], a["weight_seed"])
        rng = np.random.default_rng(a["seed"])
        skip_normals(rng, a["skip_normals"])
        X = rng.standard_normal((a["n"], a["d_model"]))
        C = fp.matmul(X, layer.W_down)
        e, b = layer.attend(X, C), layer.absorbed(X, C)
        return {"cached_numbers": a["d_latent"], "full_numbers": 2 * a["n_heads"] * a["d_head"],
                "max_abs_diff": maxabs(e, b), "agree": bool(np.allclose(e, b)), "output_sum": fp.total(e)}
    if fn == "quantize":
        codes, scales = quantize_rows(np.atleast_2d(A("x")), a["bits"])
        return {"codes": codes.ravel(), "scale": scales, "dequantized": dequantize_rows(codes, scales).ravel()}
    if fn == "quantized_vector_bytes":
        return {"value": a["head_dim"] * a["bits"] / 8 + a["scale_bits"] / 8}
    if fn == "quantized_kv_bytes_per_token":
        return {"value": quantized_kv_bytes_per_token(a["layers"], a["kv_heads"], a["head_dim"], a["bits"], a["scale_bits"])}
    if fn == "quantized_cache_error":
        return {"value": cache_error(a["bits"], a["n"], a["d"], a["seed"], "symmetric")}
    if fn == "kivi_cache_error":
        return {"value": cache_error(a["bits"], a["n"], a["d"], a["seed"], "kivi")}
    if fn == "cache_bytes_by_method":
        return dict(zip(METHODS, cache_by_method(a["context"])))
    if fn == "chunk_boundary_demo":
        rng = np.random.default_rng(a["seed"])
        T, d = a["steps"], a["width"]
        av = rng.uniform(a["a_low"], a["a_high"], (T, d))
        bv = rng.normal(size=(T, d))
        h0 = rng.normal(size=d)
        exp = sequential_scan(av, bv, h0)
        errs = [maxabs(chunked_scan(av, bv, c, h0), exp) for c in a["chunk_sizes"]]
        r = a["reset_chunk"]
        reset = np.concatenate([sequential_scan(av[j:j + r], bv[j:j + r]) for j in range(0, T, r)])
        return {"chunk_errors": np.array(errs), "reset_error": maxabs(reset, exp)}
    if fn == "rewrite_keys_demo":
        rng = np.random.default_rng(a["seed"])
        keys = rng.normal(size=(a["n_keys"], a["key_width"]))
        keys /= fp.norm(keys, axis=1, keepdims=True)
        values = rng.normal(size=(a["writes"], a["value_width"]))
        ids = np.arange(a["writes"]) % a["n_keys"]
        st = {m: np.zeros((a["value_width"], a["key_width"])) for m in ("additive", "delta", "gated")}
        latest = np.zeros((a["n_keys"], a["value_width"]))
        worst = {"delta": 0.0, "gated": 0.0}
        mse = {}
        for i, v in zip(ids, values):
            k = keys[i]
            latest[i] = v
            st["additive"] = st["additive"] + np.outer(v, k)
            st["delta"] = delta_write(st["delta"], k, v, 1.0, 1.0)
            st["gated"] = delta_write(st["gated"], k, v, 1.0, a["decay"])
            for m in worst:
                worst[m] = max(worst[m], maxabs(fp.matmul(st[m], k), v))
            for m, s in st.items():
                mse[m] = fp.mean(np.square(fp.matmul(keys, s.T) - latest))
        return {"additive": mse["additive"], "delta": mse["delta"], "gated": mse["gated"],
                "delta_current_key_error": worst["delta"], "gated_current_key_error": worst["gated"]}
    if fn == "parallel_prefix_exercise":
        rng = np.random.default_rng(a["seed"])
        hd, bd = [], []
        for L in a["lengths"]:
            av = rng.uniform(a["a_low"], a["a_high"], (L, a["width"]))
            bv = rng.standard_normal((L, a["width"]))
            h0 = rng.standard_normal(a["width"])
            seq = sequential_scan(av, bv, h0)
            b0 = bv.copy()
            b0[0] = av[0] * h0 + bv[0]
            hs = np.stack([hillis_steele(av[:, c], b0[:, c])[1] for c in range(a["width"])], axis=1)
            bl = np.stack([blelloch(av[:, c], b0[:, c]) for c in range(a["width"])], axis=1)
            hd.append(maxabs(hs, seq))
            bd.append(maxabs(bl, seq))
        return {"hillis_diff": np.array(hd), "blelloch_diff": np.array(bd)}
    if fn == "overwrite_interference":
        S = A("state")
        S2 = delta_write(S, A("key"), A("value"), a["beta"], a["decay"])
        other = normalize_key(A("other_key"))
        before, after = fp.matmul(S, other), fp.matmul(S2, other)
        return {"retrieval_before": before, "retrieval_after": after,
                "change_norm": float(fp.norm(after - before)),
                "retrieval_at_key": fp.matmul(S2, normalize_key(A("key")))}
    if fn == "crossover_by_batch":
        kv = 2 * a["layers"] * a["kv_heads"] * a["head_width"] * a["bytes_per_value"]
        ex, first = [], []
        for B in a["batches"]:
            rec = B * a["ssm_layers"] * (a["inner_width"] * a["state_width"] + a["conv_channels"] * a["conv_width"]) * a["bytes_per_value"]
            ex.append(rec / (B * kv))
            first.append(-(-rec // (B * kv)))
        return {"tokens_exact": np.array(ex), "first_integer_token": np.array(first)}
    raise KeyError(fn)


# ---------------------------------------------------------------------------------
# Entries
# ---------------------------------------------------------------------------------


def evaluate(fn, args, output=None, index=None):
    outs = catalog(fn, args)
    key = output if output is not None else next(iter(outs))
    v = outs[key]
    if index is not None:
        v = np.asarray(v).ravel()[index]
    return v


def to_json(v):
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, np.ndarray):
        return [to_json(x) for x in v.ravel()]
    if isinstance(v, (list, tuple)):
        return [to_json(x) for x in v]
    if isinstance(v, (np.integer, int)):
        return int(v)
    f = float(v)
    if f == int(f) and abs(f) < 2 ** 53 and not isinstance(v, float):
        return int(f)
    return f


class Builder:
    def __init__(self, lesson_mode):
        self.entries = []
        self.lesson_mode = lesson_mode
        self.ids = set()

    def _value(self, e):
        v = evaluate(e["function"], e["args"], e.get("output"), e.get("index"))
        v = np.asarray(v, dtype=float if not isinstance(v, (bool, np.bool_)) else bool)
        if "subtract" in e:
            d = e["subtract"]
            v = v - float(evaluate(d["function"], d["args"], d.get("output"), d.get("index")))
        if "scale" in e:
            v = v * e["scale"]
        if "divide_by" in e:
            d = e["divide_by"]
            v = v / float(evaluate(d["function"], d["args"], d.get("output"), d.get("index")))
        return v

    def add(self, id_, fn, args, lesson, compare="close", rtol=1e-12, atol=0.0, output=None, index=None,
            scale=None, divide_by=None, expected=None, rounded=False, subtract=None):
        assert id_ not in self.ids, id_
        if rounded and not self.lesson_mode:
            return
        self.ids.add(id_)
        e = {"id": id_, "function": fn, "args": args}
        if output is not None:
            e["output"] = output
        if index is not None:
            e["index"] = index
        if subtract is not None:
            e["subtract"] = subtract
        if scale is not None:
            e["scale"] = scale
        if divide_by is not None:
            e["divide_by"] = divide_by
        got = self._value(e)
        if compare == "exact":
            rtol = atol = 0
        if compare in ("bool", "below", "above"):
            rtol = atol = 0
        if expected is None:
            if compare == "bool":
                expected = bool(got) if got.ndim == 0 else [bool(x) for x in got.ravel()]
            elif compare == "exact":
                assert np.all(got == np.round(got)), id_
                expected = int(got) if got.ndim == 0 else [int(x) for x in got.ravel()]
            else:
                expected = [float(x) for x in got.ravel()] if got.ndim else float(got)
        # the statement must hold for the computed value
        exp = np.asarray(expected, dtype=float).ravel()
        g = np.asarray(got, dtype=float).ravel()
        if compare == "below":
            ok = np.all(g < exp)
        elif compare == "above":
            ok = np.all(g > exp)
        elif compare == "bool":
            ok = np.all(g == exp)
        else:
            ok = np.all(np.abs(g - exp) <= atol + rtol * np.abs(exp))
        if not ok:
            raise AssertionError(f"{id_}: computed {g} does not satisfy {compare} {expected} (rtol {rtol}, atol {atol})")
        e.update({"compare": compare, "expected": expected, "rtol": rtol, "atol": atol})
        if rounded:
            e["rounded"] = True
        e["lesson"] = lesson
        self.entries.append(e)


def lesson_params():
    return dict(
        window_n=8, window_w=3, window_layers=3, mistral_w=4096, mistral_layers=32,
        decode_seed=0, decode_n=50, decode_d=8, decode_w=4,
        sparse_n=16, sparse_w=4, stride=4, strided_row=13,
        lin_seed=0, lin_skip=1200, lin_n=200, lin_d=8,
        peak_seed=11, peak_n=10, peak_d=8, peak_last=5,
        scan_seed=0, scan_skip=6000, scan_length=1024, scan_a=0.99,
        latent_seed=0, latent_skip=7024, latent_n=12, latent_d_model=64, latent_heads=8, latent_d_head=8,
        latent_d_latent=16, latent_weight_seed=0,
        quant_seed=0, quant_n=64, quant_d=64,
        chunk_seed=20260801, chunk_steps=53, chunk_width=6, chunk_sizes=[1, 7, 16, 64], chunk_reset=16,
        rewrite_seed=20260802, rewrite_keys=4, rewrite_key_width=8, rewrite_value_width=3, rewrite_writes=48,
        prefix_seed=3, prefix_lengths=[1, 3, 5, 7, 13, 100, 1000], prefix_width=4,
        crossover_batches=[1, 2, 3, 8],
    )


def variant_params(k):
    p = lesson_params()
    p.update(
        window_n=11 + k, window_w=4, window_layers=2, mistral_w=8192, mistral_layers=40,
        decode_seed=100 + k, decode_n=37, decode_d=6, decode_w=5,
        sparse_n=23, sparse_w=5, stride=3, strided_row=17,
        lin_seed=200 + k, lin_skip=7, lin_n=61, lin_d=5,
        peak_seed=300 + k, peak_n=12, peak_d=6, peak_last=4,
        scan_seed=400 + k, scan_skip=3, scan_length=777, scan_a=0.95,
        latent_seed=500 + k, latent_skip=11, latent_n=9, latent_d_model=24, latent_heads=3, latent_d_head=5,
        latent_d_latent=7, latent_weight_seed=600 + k,
        quant_seed=700 + k, quant_n=40, quant_d=24,
        chunk_seed=800 + k, chunk_steps=41, chunk_width=3, chunk_sizes=[1, 5, 9, 50], chunk_reset=9,
        rewrite_seed=900 + k, rewrite_keys=3, rewrite_key_width=6, rewrite_value_width=2, rewrite_writes=30,
        prefix_seed=1000 + k, prefix_lengths=[2, 6, 11, 33], prefix_width=3,
        crossover_batches=[1, 5, 7],
    )
    return p


def build(p, lesson_mode):
    b = Builder(lesson_mode)
    add = b.add
    R9 = dict(rtol=1e-9, atol=1e-12)  # random inputs through long sums
    kv8b = dict(layers=LAYERS, kv_heads=KV_HEADS, head_dim=HEAD_DIM, bits=16)

    # ---- 1. the bill ---------------------------------------------------------------
    add("bill.handshakes_10", "handshakes", {"n": 10}, "Ten guests make 45 handshakes", "exact")
    add("bill.handshakes_1000", "handshakes", {"n": 1000}, "a thousand guests make half a million", "exact")
    add("bill.handshakes_1000.lesson", "handshakes", {"n": 1000}, "half a million (rounded)", expected=500000,
        rtol=0, atol=500, rounded=True)
    add("bill.kv_bytes_per_token", "kv_cache_bytes_per_token", kv8b,
        "2 x 32 x 8 x 128 x 2 = 131,072 bytes of cache, about 128 KB", "exact")
    add("bill.kv_bytes_per_token.kib", "kv_cache_bytes_per_token", kv8b, "about 128 KB", scale=1 / 1024)
    for n, tag, gb, pairs_text in ((8192, "8k", 1.1, "67 million"), (131072, "128k", 17.2, "17 billion"),
                                   (1048576, "1M", 137.4, "1.1 trillion")):
        args = dict(n=n, **kv8b)
        add(f"bill.pairs_{tag}", "context_cost", args, f"pairs per head per layer at {n:,} (n^2)", "exact", output="pairs")
        add(f"bill.kv_bytes_{tag}", "context_cost", args, f"KV cache bytes at {n:,}", "exact", output="kv_cache_bytes")
        add(f"bill.kv_gb_{tag}", "context_cost", args, f"KV cache at {n:,} in GB (bytes / 1e9)",
            output="kv_cache_bytes", scale=1e-9)
        add(f"bill.kv_gb_{tag}.lesson", "context_cost", args, f"table: {gb} GB", output="kv_cache_bytes",
            scale=1e-9, expected=gb, rtol=0, atol=0.05, rounded=True)
        mant, unit = {"8k": (67, 1e6), "128k": (17, 1e9), "1M": (1.1, 1e12)}[tag]
        add(f"bill.pairs_{tag}.lesson", "context_cost", args, f"table: {pairs_text}", output="pairs",
            scale=1 / unit, expected=mant, rtol=0, atol=0.5 if mant >= 10 else 0.05, rounded=True)
    add("bill.pairs_1M_over_8k", "pairs_per_head_per_layer", {"n": 1048576},
        "16,384 times more pairs (8k to 1M)", divide_by={"function": "pairs_per_head_per_layer", "args": {"n": 8192}})
    add("bill.tokens_1M_over_8k", "kv_cache_bytes", dict(n=1048576, **kv8b), "128 times more tokens",
        divide_by={"function": "kv_cache_bytes", "args": dict(n=8192, **kv8b)})
    add("bill.kv_gb_128k_2dp.lesson", "kv_cache_bytes", dict(n=131072, **kv8b), "round(..., 2) -> 17.18",
        scale=1e-9, expected=17.18, rtol=0, atol=0.005, rounded=True)
    add("bill.kv_gb_1M_137.lesson", "kv_cache_bytes", dict(n=1048576, **kv8b),
        "a million-token one 137 GB, more than an 80 GB GPU", scale=1e-9, expected=137, rtol=0, atol=0.5, rounded=True)
    add("bill.kv_gb_1M_over_80gb", "kv_cache_bytes", dict(n=1048576, **kv8b), "past an 80 GB GPU",
        compare="above", scale=1e-9, expected=80.0, rounded=True)

    add("bill.kv_gb_128k_17.lesson", "kv_cache_bytes", dict(n=131072, **kv8b),
        "Level 1: still 17 GB at 128k (and '128,000-token ... 17.2 GB' means n = 131,072)", scale=1e-9,
        expected=17, rtol=0, atol=0.5, rounded=True)
    add("bill.pairs_128k_sci.lesson", "pairs_per_head_per_layer", {"n": 131072}, "131,072^2 ~ 1.7 x 10^10",
        scale=1e-10, expected=1.7, rtol=0, atol=0.05, rounded=True)
    add("bill.pairs_128k_over_8k", "pairs_per_head_per_layer", {"n": 131072},
        "figure: every step to the right multiplies the bar by 256", divide_by={"function": "pairs_per_head_per_layer", "args": {"n": 8192}})
    add("bill.pairs_1M_over_128k", "pairs_per_head_per_layer", {"n": 1048576}, "... and then by 64",
        divide_by={"function": "pairs_per_head_per_layer", "args": {"n": 131072}})

    # ---- 2. sliding window -------------------------------------------------------
    n, w = p["window_n"], p["window_w"]
    add("window.mask_row5", "sliding_window_mask_row", {"n": n, "w": w, "row": 5},
        "[int(0 <= 5 - j < w) for j in range(n)] -> [0, 0, 0, 1, 1, 1, 0, 0]", "exact")
    add("window.pairs", "sliding_window_pairs", {"n": n, "w": w}, "1 + 2 + 3 x 6 = 21 scores", "exact")
    add("window.causal_pairs", "causal_pairs", {"n": n}, "instead of the 36 a full causal mask needs", "exact")
    L = p["window_layers"]
    add("window.reach", "reach", {"w": w, "layers": L}, "L * (w - 1) -> 6", "exact")
    add("window.receptive_7_1", "receptive_field", {"n": n, "w": w, "layers": L, "query": 7},
        "after three layers, token 7 can hear token 1: True", "exact", output="row", index=1)
    add("window.receptive_7_0", "receptive_field", {"n": n, "w": w, "layers": L, "query": 7},
        "token 0: False", "exact", output="row", index=0)
    add("window.reach_mistral", "reach", {"w": p["mistral_w"], "layers": p["mistral_layers"]},
        "32 x 4,095 = 131,040 tokens", "exact")
    add("window.relay_hops_100k", "relay_hops", {"distance": 99999, "w": p["mistral_w"]},
        "token 100,000 from token 1: relayed through about 25 intermediate tokens and layers", "exact")
    add("window.reach_band_16_4_3", "receptive_field", {"n": 16, "w": 4, "layers": 3, "query": 15},
        "the band has widened to 3 x 3 + 1 = 10 cells", "exact", output="width")
    add("window.rolling_slots_w4_after9", "rolling_buffer_slots", {"w": 4, "last_token": 9},
        "slot 0: token 8, slot 1: token 9, slot 2: token 6 (oldest), slot 3: token 7", "exact")
    add("window.rolling_slots_w4_after10", "rolling_buffer_slots", {"w": 4, "last_token": 10},
        "token 10 lands in slot 2, where token 6 sat; attends to 7, 8, 9, 10", "exact")
    add("window.reach_figure_4_3", "reach", {"w": 4, "layers": 3}, "figure: Reach after 3 layers: 3*(4 - 1) = 9 back",
        "exact")
    dec = {"seed": p["decode_seed"], "skip_normals": 0, "n": p["decode_n"], "d": p["decode_d"], "w": p["decode_w"]}
    add("window.decode_largest_buffer", "sliding_window_decode", dec, "Decoding 50 tokens: largest buffer 4",
        "exact", output="largest_buffer")
    add("window.decode_matches", "sliding_window_decode", dec, "same outputs: True (np.allclose)", "bool",
        output="matches")
    add("window.decode_max_abs_diff", "sliding_window_decode", dec, "rolling buffer equals masked attention",
        "below", output="max_abs_diff", expected=1e-12)
    add("window.decode_output_sum", "sliding_window_decode", dec, "not printed: checksum of the decoded outputs",
        output="output_sum", **R9)
    add("window.cache_gb_4096", "kv_cache_bytes", dict(n=4096, **kv8b), "4,096 x 128 KB = 0.54 GB", scale=1e-9)
    add("window.cache_gb_4096.lesson", "kv_cache_bytes", dict(n=4096, **kv8b), "0.54 GB", scale=1e-9,
        expected=0.54, rtol=0, atol=0.005, rounded=True)
    add("window.cache_128k_over_window", "kv_cache_bytes", dict(n=131072, **kv8b), "32 times less",
        divide_by={"function": "kv_cache_bytes", "args": dict(n=4096, **kv8b)})

    # ---- 3. sparse ------------------------------------------------------------------
    n, w, s = p["sparse_n"], p["sparse_w"], p["stride"]
    add("sparse.window_pairs", "sliding_window_pairs", {"n": n, "w": w}, "1 + 2 + 3 + 4 x 13 = 58 pairs", "exact")
    add("sparse.global_pairs", "global_local_pairs", {"n": n, "w": w, "global_tokens": [0]},
        "Make token 0 global: 70 pairs", "exact")
    add("sparse.causal_pairs", "causal_pairs", {"n": n}, "against 136 for full causal attention", "exact")
    add("sparse.strided_pairs", "strided_pairs", {"n": n, "stride": s}, "58 + 24 = 82 pairs", "exact")
    add("sparse.strided_row13", "strided_row_keys", {"n": n, "stride": s, "row": p["strided_row"]},
        "row 13 -> [1, 5, 9, 10, 11, 12, 13]", "exact")
    add("sparse.global_extra", "global_local_pairs", {"n": n, "w": w, "global_tokens": [0]},
        "the 12 rows past the window add a pair each", "exact",
        subtract={"function": "sliding_window_pairs", "args": {"n": n, "w": w}})
    add("sparse.strided_extra", "strided_pairs", {"n": n, "stride": s}, "58 + 24 = 82: the strided links add 24",
        "exact", subtract={"function": "sliding_window_pairs", "args": {"n": n, "w": s}})
    for tokens in (256, 1024, 4096):
        add(f"sparse.causal_pairs_{tokens}", "causal_pairs", {"n": tokens}, f"table: full causal at {tokens}", "exact")
        add(f"sparse.window64_pairs_{tokens}", "sliding_window_pairs", {"n": tokens, "w": 64},
            f"table: window 64 at {tokens}", "exact")
        add(f"sparse.ratio_{tokens}", "causal_pairs", {"n": tokens}, f"table: ratio at {tokens} (.1f)",
            divide_by={"function": "sliding_window_pairs", "args": {"n": tokens, "w": 64}})
    add("sparse.ratio_4096.lesson", "causal_pairs", {"n": 4096},
        "on 4,096 tokens, full attention scores 32 times as many pairs as a 64-token window",
        divide_by={"function": "sliding_window_pairs", "args": {"n": 4096, "w": 64}}, expected=32, rtol=0,
        atol=0.5, rounded=True)

    # ---- 4. linear attention -----------------------------------------------------------
    Qw = [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    Kw = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
    Vw = [[2.0], [4.0], [6.0]]
    qkv = {"Q": Qw, "K": Kw, "V": Vw}
    add("linear.phi_keys", "feature_map", {"x": Kw}, "phi of the keys: (2, 1), (1, 2), (2, 2)")
    add("linear.phi_negative", "feature_map", {"x": [-1.0, 0.0, 0.5]}, "e^x at or below zero, x + 1 above")
    add("linear.pot_S", "linear_attention_recurrent", qkv, "S = (20, 22)", output="S")
    add("linear.total_z", "linear_attention_recurrent", qkv, "z = (5, 5)", output="z")
    add("linear.outputs", "linear_attention_recurrent", qkv, "o_3 = 62/15 (and o_1, o_2 of the same run)",
        output="out")
    add("linear.o3_62_15", "linear_attention_recurrent", qkv, "62 / 15 = 4.133", output="out", index=2,
        expected=62 / 15, rtol=1e-15)
    add("linear.o3.lesson", "linear_attention_recurrent", qkv, "round(..., 3) -> 4.133", output="out", index=2,
        expected=4.133, rtol=0, atol=0.0005, rounded=True)
    add("linear.scores_row3", "linear_attention_weights", qkv, "the weights phi(q).phi(k) are 5, 4 and 6",
        output="scores")
    add("linear.weights", "linear_attention_weights", qkv, "the n x n normalized weights", output="weights")
    add("linear.quadratic", "linear_attention_quadratic", qkv, "The slow way agrees: 62/15")
    add("linear.softmax_unscaled", "scaled_dot_product_attention", dict(qkv, mask="causal", scale=False),
        "Softmax attention on the same numbers gives 4.00", output="out", index=2)
    add("linear.softmax_unscaled.lesson", "scaled_dot_product_attention", dict(qkv, mask="causal", scale=False),
        "{soft[2, 0]:.3f} -> 4.000", output="out", index=2, expected=4.0, rtol=0, atol=0.0005, rounded=True)
    add("linear.softmax_unscaled_rows", "scaled_dot_product_attention", dict(qkv, mask="causal", scale=False),
        "not printed: every row of the unscaled softmax output", output="out")
    add("linear.softmax_unscaled_weights", "scaled_dot_product_attention", dict(qkv, mask="causal", scale=False),
        "not printed: the unscaled softmax weights", output="weights")
    add("linear.softmax_scaled_rows", "scaled_dot_product_attention", dict(qkv, mask="causal", scale=True),
        "not printed: the same with 1/sqrt(d) scaling (row 3 stays 4: (8x + 4) / (2x + 1))", output="out")
    add("linear.softmax_nomask_scaled", "scaled_dot_product_attention", dict(qkv, mask="none", scale=True),
        "not printed: no mask, scaled", output="out")
    lr = {"seed": p["lin_seed"], "skip_normals": p["lin_skip"], "n": p["lin_n"], "d": p["lin_d"]}
    add("linear.random_matches", "linear_attention_random", lr, "the running sum equals the n x n form: True",
        "bool", output="matches")
    add("linear.random_max_abs_diff", "linear_attention_random", lr, "running sum vs n x n form", "below",
        output="max_abs_diff", expected=1e-12)
    add("linear.random_state_rows", "linear_attention_random", lr, "The state is (8, 8)", "exact", output="state_rows")
    add("linear.random_state_cols", "linear_attention_random", lr, "The state is (8, 8)", "exact", output="state_cols")
    add("linear.random_z_length", "linear_attention_random", lr, "plus (8,)", "exact", output="z_length")
    add("linear.random_output_sum", "linear_attention_random", lr, "not printed: checksum", output="output_sum", **R9)
    pk = {"seed": p["peak_seed"], "n": p["peak_n"], "d": p["peak_d"], "query_scale": 2.0, "last_rows": p["peak_last"]}
    add("linear.peak_softmax", "peak_weights", pk, "softmax: largest weight in the last five rows averages 0.46",
        output="softmax", **R9)
    add("linear.peak_linear", "peak_weights", pk, "linear: averages 0.21", output="linear", **R9)
    add("linear.peak_softmax.lesson", "peak_weights", pk, "0.46", output="softmax", expected=0.46, rtol=0,
        atol=0.005, rounded=True)
    add("linear.peak_linear.lesson", "peak_weights", pk, "0.21", output="linear", expected=0.21, rtol=0,
        atol=0.005, rounded=True)
    pk1 = dict(pk, query_scale=1.0)
    add("linear.peak_softmax_usual", "peak_weights", pk1, "at the usual size the two numbers are 0.28 and 0.20",
        output="softmax", **R9)
    add("linear.peak_linear_usual", "peak_weights", pk1, "at the usual size ... 0.20", output="linear", **R9)
    add("linear.peak_softmax_usual.lesson", "peak_weights", pk1, "0.28", output="softmax", expected=0.28, rtol=0,
        atol=0.005, rounded=True)
    add("linear.peak_linear_usual.lesson", "peak_weights", pk1, "0.20", output="linear", expected=0.20, rtol=0,
        atol=0.005, rounded=True)

    # ---- 5. SSMs -------------------------------------------------------------------------
    tea = {"x": [1.0, 0.0, 0.0, 2.0], "A": [[0.5]], "B": [1.0], "C": [1.0]}
    add("ssm.recurrent", "ssm_recurrent", tea, "[1.0, 0.5, 0.25, 2.125]")
    add("ssm.kernel", "ssm_kernel", {"A": [[0.5]], "B": [1.0], "C": [1.0], "length": 4}, "[1.0, 0.5, 0.25, 0.125]")
    add("ssm.convolution", "ssm_convolution", tea, "Convolution: [1.0, 0.5, 0.25, 2.125]")
    add("ssm.y4_2125", "ssm_convolution", tea, "y_4 = 2.125", output="value", index=3, expected=2.125, rtol=0)
    for A_, k_, stmt in ((0.5, 5, "A = 0.5: forgotten within about 5 steps (A^5 ~ 0.03)"),
                         (0.9, 40, "0.9: within about 40 (A^40 ~ 0.015)"),
                         (0.99, 150, "0.99: still counts about a fifth after 150 steps")):
        add(f"ssm.kernel_{A_}_at_{k_}", "ssm_kernel", {"A": [[A_]], "B": [1.0], "C": [1.0], "length": k_ + 1},
            stmt, output="value", index=k_)
    add("ssm.kernel_0.99_at_150.lesson", "ssm_kernel", {"A": [[0.99]], "B": [1.0], "C": [1.0], "length": 151},
        "about a fifth", output="value", index=150, expected=0.2, rtol=0, atol=0.05, rounded=True)
    add("ssm.kernel_2x2", "ssm_kernel", {"A": [[0.5, 0.1], [0.0, 0.9]], "B": [1.0, 2.0], "C": [1.0, -1.0], "length": 6},
        "not printed: an N = 2 kernel (A a matrix, as ssm_kernel allows)")
    add("ssm.convolution_2x2", "ssm_convolution", {"x": [1.0, -2.0, 0.5, 3.0, 0.0], "A": [[0.5, 0.1], [0.0, 0.9]],
                                                    "B": [1.0, 2.0], "C": [1.0, -1.0]},
        "not printed: convolution of the N = 2 system")
    add("ssm.recurrent_2x2", "ssm_recurrent", {"x": [1.0, -2.0, 0.5, 3.0, 0.0], "A": [[0.5, 0.1], [0.0, 0.9]],
                                                "B": [1.0, 2.0], "C": [1.0, -1.0]},
        "not printed: the loop equals the convolution")
    for d in (0.01, 0.1, 1.0, 5.0):
        add(f"ssm.discretize_{d}_a_bar", "discretize", {"delta": d, "a": -1.0, "b": 1.0}, f"table: keep at delta {d}",
            output="a_bar")
        add(f"ssm.discretize_{d}_b_bar", "discretize", {"delta": d, "a": -1.0, "b": 1.0}, f"table: write at delta {d}",
            output="b_bar")
    add("ssm.softplus", "softplus", {"x": [5.0, -5.0, 0.0, 40.0, -40.0]}, "softplus(5) = 5.007, softplus(-5) = 0.0067")
    add("ssm.softplus_5.lesson", "softplus", {"x": [5.0]}, "5.007", index=0, expected=5.007, rtol=0, atol=0.0005,
        rounded=True)
    add("ssm.softplus_m5.lesson", "softplus", {"x": [-5.0]}, "0.0067", index=0, expected=0.0067, rtol=0,
        atol=0.00005, rounded=True)
    mk = {"markers": [1.0, 0.0], "sharpness": 10.0, "bias": -5.0}
    add("ssm.step_sizes", "step_sizes", mk, "Delta for a marked token, then an ordinary one: (5.007, 0.0067)")
    add("ssm.step_plain_0.007.lesson", "step_sizes", mk, "docstring: unmarked ones Delta ~ 0.007", index=1,
        expected=0.007, rtol=0, atol=0.0005, rounded=True)
    add("ssm.step_mark_5.lesson", "step_sizes", mk, "docstring: Marked tokens get Delta ~ 5", index=0,
        expected=5, rtol=0, atol=0.05, rounded=True)
    d_mark = float(softplus(5.0))
    d_plain = float(softplus(-5.0))
    add("ssm.keep_mark", "discretize", {"delta": d_mark, "a": -1.0, "b": 1.0}, "keep 0.0067", output="a_bar")
    add("ssm.write_mark", "discretize", {"delta": d_mark, "a": -1.0, "b": 1.0}, "write 0.9933", output="b_bar")
    add("ssm.keep_plain", "discretize", {"delta": d_plain, "a": -1.0, "b": 1.0}, "keep 0.9933", output="a_bar")
    add("ssm.write_plain", "discretize", {"delta": d_plain, "a": -1.0, "b": 1.0}, "write 0.0067", output="b_bar")
    for name, dd, out, val in (("keep_mark", d_mark, "a_bar", 0.0067), ("write_mark", d_mark, "b_bar", 0.9933),
                               ("keep_plain", d_plain, "a_bar", 0.9933), ("write_plain", d_plain, "b_bar", 0.0067)):
        add(f"ssm.{name}.lesson", "discretize", {"delta": dd, "a": -1.0, "b": 1.0}, f"table: {val}", output=out,
            expected=val, rtol=0, atol=0.00005, rounded=True)
    write7 = {"x": [7.0], "markers": [1.0], "sharpness": 10.0, "bias": -5.0, "a": -1.0, "b": 1.0, "c": 1.0}
    add("ssm.write_7", "selective_ssm", write7, "the state becomes about 0.9933 x 7 = 6.95", index=0)
    add("ssm.write_7.lesson", "selective_ssm", write7, "6.95", index=0, expected=6.95, rtol=0, atol=0.005, rounded=True)
    hold = dict(write7, x=[7.0] + [0.0] * 9, markers=[1.0] + [0.0] * 9)
    add("ssm.hold_7", "selective_ssm", hold, "round(write_mark * 7 * keep_plain ** 9, 2) -> 6.55", index=9)
    add("ssm.hold_7.lesson", "selective_ssm", hold, "6.55", index=9, expected=6.55, rtol=0, atol=0.005, rounded=True)
    RV = [0.3, -0.5, 7.0, 0.8, -0.2, 0.6, -0.9, 0.4, 0.1, -0.3, 0.5, -0.6]
    RM = [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    rec = {"values": RV, "markers": RM, "sharpness": 10.0, "bias": -5.0, "a": -1.0, "b": 1.0, "c": 1.0}
    add("ssm.selective_recall", "selective_recall", rec, "the selective SSM ends at 6.55")
    add("ssm.selective_recall.lesson", "selective_recall", rec, "{selective_recall():.2f} -> 6.55", expected=6.55,
        rtol=0, atol=0.005, rounded=True)
    ti = {"values": RV, "grid_start": 1e-3, "grid_stop": 10.0, "grid_num": 60, "a": -1.0, "b": 1.0, "c": 1.0}
    add("ssm.best_fixed", "best_time_invariant_recall", ti, "the best fixed step ends at 0.26", output="best_value")
    add("ssm.best_fixed.lesson", "best_time_invariant_recall", ti, "{max(...):.2f} -> 0.26", output="best_value",
        expected=0.26, rtol=0, atol=0.005, rounded=True)
    add("ssm.best_fixed_delta", "best_time_invariant_recall", ti, "figure legend: best fixed Delta = {best:.2f}",
        output="best_delta")
    add("ssm.best_fixed_index", "best_time_invariant_recall", ti, "argmax over geomspace(1e-3, 10, 60)", "exact",
        output="best_index")
    add("ssm.best_fixed_peak", "best_time_invariant_recall", ti, "the best fixed step peaks near 0.6",
        output="best_peak")
    add("ssm.best_fixed_peak.lesson", "best_time_invariant_recall", ti, "peaks near 0.6", output="best_peak",
        expected=0.6, rtol=0, atol=0.05, rounded=True)
    add("ssm.fixed_delta_5", "time_invariant_recall", dict(values=RV, delta=5.0, a=-1.0, b=1.0, c=1.0),
        "a large fixed Delta = 5 tracks whatever arrived last (-0.6)")
    add("ssm.fixed_delta_5.lesson", "time_invariant_recall", dict(values=RV, delta=5.0, a=-1.0, b=1.0, c=1.0),
        "copies the latest noise: ends near the last value -0.6", expected=-0.6, rtol=0, atol=0.01, rounded=True)
    tiny = {"a": [0.5, 0.5, 0.5, 0.5], "b": [1.0, 0.0, 0.0, 2.0]}
    add("scan.round1_a", "parallel_scan", dict(tiny, max_rounds=1), "r1 -> [(0.5, 1.0), (0.25, 0.5), (0.25, 0.0), (0.25, 2.0)]", output="a")
    add("scan.round1_b", "parallel_scan", dict(tiny, max_rounds=1), "r1 b parts", output="states")
    add("scan.round2_states", "parallel_scan", dict(tiny, max_rounds=0), "[b for a, b in r2] -> [1.0, 0.5, 0.25, 2.125]",
        output="states")
    add("scan.round2_a", "parallel_scan", dict(tiny, max_rounds=0), "(0.125, 0.25) and (0.0625, 2.125) boxes", output="a")
    add("scan.rounds_4", "parallel_scan", dict(tiny, max_rounds=0), "After 2 rounds (log2 4 = 2)", "exact", output="rounds")
    add("scan.work_efficient_tiny", "work_efficient_scan", tiny, "the same states by a work-efficient scan", output="states")
    add("scan.work_efficient_odd", "work_efficient_scan", {"a": [0.5, 0.9, 1.1, 0.3, 0.7], "b": [1.0, -1.0, 2.0, 0.5, 0.25]},
        "not printed: a length that is not a power of two", output="states")
    add("scan.hillis_odd", "parallel_scan", {"a": [0.5, 0.9, 1.1, 0.3, 0.7], "b": [1.0, -1.0, 2.0, 0.5, 0.25], "max_rounds": 0},
        "not printed: a length that is not a power of two", output="states")
    sr = {"seed": p["scan_seed"], "skip_normals": p["scan_skip"], "length": p["scan_length"], "a_fill": p["scan_a"]}
    add("scan.rounds_1024", "parallel_scan_random", sr, "A parallel scan over 1,024 steps finishes in 10 rounds",
        "exact", output="rounds")
    add("scan.random_max_abs_diff", "parallel_scan_random", sr, "the scan equals the loop", "below",
        output="max_abs_diff", expected=1e-12)
    add("scan.random_blelloch_diff", "parallel_scan_random", sr, "work-efficient scan equals the loop", "below",
        output="blelloch_max_abs_diff", expected=1e-12)
    add("scan.random_states_sum", "parallel_scan_random", sr, "not printed: checksum of the states",
        output="states_sum", **R9)
    add("hybrid.ssm_layer_kib", "ssm_state_bytes", {"channels": 4096, "state_size": 16, "bits": 16},
        "D * N * b / 1024 -> 128.0", scale=1 / 1024)
    add("hybrid.ssm_layer_bytes", "ssm_state_bytes", {"channels": 4096, "state_size": 16, "bits": 16},
        "4,096 x 16 x 2 bytes", "exact")
    add("hybrid.attention_layer_mb_128k", "kv_cache_bytes", dict(n=131072, layers=1, kv_heads=8, head_dim=128, bits=16),
        "n * 2 * H_kv * d_h * b / 1e6 -> 536.870912", scale=1e-6)
    add("hybrid.attention_layer_mb_128k.lesson", "kv_cache_bytes", dict(n=131072, layers=1, kv_heads=8, head_dim=128,
                                                                       bits=16), "537 MB", scale=1e-6, expected=537,
        rtol=0, atol=0.5, rounded=True)
    add("hybrid.attention_layer_bytes_per_token", "kv_cache_bytes_per_token",
        dict(layers=1, kv_heads=8, head_dim=128, bits=16), "2 H_kv d_h b: one attention layer's cache per token, 4,096 bytes",
        "exact")
    hyb = dict(context=131072, layers=32, attention_layers=4, kv_heads=8, head_dim=128, channels=4096, state_size=16, bits=16)
    add("hybrid.bytes_128k", "hybrid_cache_bytes", hyb, "2,147,483,648 + 3,670,016 bytes", "exact")
    add("hybrid.gb_128k", "hybrid_cache_bytes", hyb, "round(..., 2) -> 2.15 GB", scale=1e-9)
    add("hybrid.gb_128k.lesson", "hybrid_cache_bytes", hyb, "2.15 GB", scale=1e-9, expected=2.15, rtol=0, atol=0.005,
        rounded=True)
    add("hybrid.attention_part_128k", "hybrid_cache_bytes", dict(hyb, attention_layers=4, layers=4),
        "4 x 131,072 x 4,096 = 2,147,483,648 bytes", "exact")
    add("hybrid.ssm_part", "hybrid_cache_bytes", dict(hyb, context=0),
        "28 x 4,096 x 16 x 2 = 3,670,016 bytes", "exact")
    add("hybrid.one_eighth", "hybrid_cache_bytes", hyb, "about one eighth of 17.2 GB",
        divide_by={"function": "kv_cache_bytes", "args": dict(n=131072, **kv8b)})
    for n_, tag in ((8192, "8k"), (131072, "128k"), (1048576, "1M")):
        add(f"hybrid.table_all_attention_{tag}", "kv_cache_bytes", dict(n=n_, **kv8b),
            f"table: all-attention cache (GB) at {tag}", scale=1e-9)
        add(f"hybrid.table_hybrid_{tag}", "hybrid_cache_bytes", dict(hyb, context=n_),
            f"table: hybrid 4 of 32 (GB) at {tag}", scale=1e-9)
    add("hybrid.table_pure_ssm_mb", "ssm_state_bytes", {"channels": 4096, "state_size": 16, "bits": 16},
        "table: pure SSM state (MB) = 32 layers", scale=32e-6)
    add("hybrid.table_pure_ssm_mb.lesson", "ssm_state_bytes", {"channels": 4096, "state_size": 16, "bits": 16},
        "4 MB for the whole 8B-shaped stack", scale=32e-6, expected=4, rtol=0, atol=0.5, rounded=True)

    # ---- 6. compressing the cache ------------------------------------------------------
    for heads, kb in ((32, 512), (8, 128), (1, 16)):
        add(f"latent.kv_per_token_kib_{heads}", "kv_cache_bytes_per_token",
            dict(layers=32, kv_heads=heads, head_dim=128, bits=16), f"GQA/MQA table: {kb} KB", scale=1 / 1024)
    add("latent.gqa_four_times", "kv_cache_bytes_per_token", dict(layers=32, kv_heads=32, head_dim=128, bits=16),
        "four times less than 32 heads", divide_by={"function": "kv_cache_bytes_per_token",
                                                    "args": dict(layers=32, kv_heads=8, head_dim=128, bits=16)})
    wex = {"x": [1.0, 0.0, 2.0, 1.0], "W_down": [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]],
           "W_uk": [[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0]], "q": [1.0, 2.0, 0.0, 1.0]}
    add("latent.worked_latent", "latent_kv_worked_example", wex, "c = (3, 1)", output="latent")
    add("latent.worked_key", "latent_kv_worked_example", wex, "k = (3, 1, 3, 1)", output="key")
    add("latent.worked_score", "latent_kv_worked_example", wex, "q . k = 6", output="score")
    add("latent.worked_q_latent", "latent_kv_worked_example", wex, "q W_uk^T = (1, 3)", output="q_latent")
    add("latent.worked_absorbed", "latent_kv_worked_example", wex, "(1, 3) . (3, 1) = 6", output="absorbed_score")
    add("latent.deepseek_full", "mha_numbers_per_token", {"heads": 128, "head_dim": 128}, "32,768 numbers", "exact")
    add("latent.deepseek_latent", "latent_numbers_per_token", {"latent_dim": 512, "rope_dim": 64}, "576", "exact")
    add("latent.deepseek_ratio", "mha_numbers_per_token", {"heads": 128, "head_dim": 128}, "32768 / 576",
        divide_by={"function": "latent_numbers_per_token", "args": {"latent_dim": 512, "rope_dim": 64}})
    add("latent.deepseek_ratio.lesson", "mha_numbers_per_token", {"heads": 128, "head_dim": 128},
        "round(..., 1) -> 56.9", divide_by={"function": "latent_numbers_per_token",
                                            "args": {"latent_dim": 512, "rope_dim": 64}},
        expected=56.9, rtol=0, atol=0.05, rounded=True)
    add("latent.deepseek_ratio_57.lesson", "mha_numbers_per_token", {"heads": 128, "head_dim": 128},
        "about 57 times less", divide_by={"function": "latent_numbers_per_token",
                                          "args": {"latent_dim": 512, "rope_dim": 64}},
        expected=57, rtol=0, atol=0.5, rounded=True)
    add("latent.bytes_per_token", "latent_kv_bytes_per_token", {"layers": 32, "latent_dim": 512, "rope_dim": 64, "bits": 16},
        "latent, 512 + 64 numbers: 36 KB over 32 layers", "exact")
    add("latent.bytes_per_token_kib", "latent_kv_bytes_per_token", {"layers": 32, "latent_dim": 512, "rope_dim": 64, "bits": 16},
        "36 KB", scale=1 / 1024)
    la = {"d_model": p["latent_d_model"], "n_heads": p["latent_heads"], "d_head": p["latent_d_head"],
          "d_latent": p["latent_d_latent"], "weight_seed": p["latent_weight_seed"], "seed": p["latent_seed"],
          "skip_normals": p["latent_skip"], "n": p["latent_n"]}
    add("latent.layer_cached", "latent_attention", la, "caches 16 numbers per token", "exact", output="cached_numbers")
    add("latent.layer_full", "latent_attention", la, "instead of 128", "exact", output="full_numbers")
    add("latent.layer_agree", "latent_attention", la, "Expanded and absorbed attention agree: True", "bool", output="agree")
    add("latent.layer_max_abs_diff", "latent_attention", la, "the two paths agree", "below", output="max_abs_diff",
        expected=1e-12)
    add("latent.layer_output_sum", "latent_attention", la, "not printed: checksum of the expanded output",
        output="output_sum", **R9)
    kq = {"x": [0.7, -0.3, 0.2, 0.04], "bits": 4}
    add("kvquant.scale", "quantize", kq, "The step size is 0.7 / 7 = 0.1", output="scale")
    add("kvquant.codes", "quantize", kq, "the codes are (7, -3, 2, 0)", "exact", output="codes")
    add("kvquant.dequantized", "quantize", kq, "reading back gives (0.7, -0.3, 0.2, 0)", output="dequantized")
    add("kvquant.ties_half_even", "quantize", {"x": [7.0, 2.5, -0.5, 1.5, -3.5], "bits": 4},
        "not printed: ties round half to even like np.round (scale 1)", "exact", output="codes")
    add("kvquant.vector_bytes_16", "quantized_vector_bytes", {"head_dim": 128, "bits": 16, "scale_bits": 0},
        "A 128-number head vector: 256 bytes")
    add("kvquant.vector_bytes_4", "quantized_vector_bytes", {"head_dim": 128, "bits": 4, "scale_bits": 16},
        "64 bytes of codes plus a 2-byte scale: 66 bytes")
    add("kvquant.vector_ratio", "quantized_vector_bytes", {"head_dim": 128, "bits": 16, "scale_bits": 0},
        "3.9 times smaller", divide_by={"function": "quantized_vector_bytes",
                                        "args": {"head_dim": 128, "bits": 4, "scale_bits": 16}})
    add("kvquant.vector_ratio.lesson", "quantized_vector_bytes", {"head_dim": 128, "bits": 16, "scale_bits": 0},
        "3.9 times smaller", divide_by={"function": "quantized_vector_bytes",
                                        "args": {"head_dim": 128, "bits": 4, "scale_bits": 16}},
        expected=3.9, rtol=0, atol=0.05, rounded=True)
    for bits, scale_bits in ((16, 0), (8, 16), (4, 16)):
        add(f"kvquant.bytes_per_token_{bits}", "quantized_kv_bytes_per_token",
            dict(layers=32, kv_heads=8, head_dim=128, bits=bits, scale_bits=scale_bits),
            f"table: bytes per token at {bits}-bit (131,072 / 66,560 / 33,792)")
    add("kvquant.bytes_per_token_4_kib", "quantized_kv_bytes_per_token",
        dict(layers=32, kv_heads=8, head_dim=128, bits=4, scale_bits=16), "33 KB for 8 heads at 4 bits",
        scale=1 / 1024)
    add("kvquant.bytes_per_token_4_kib.lesson", "quantized_kv_bytes_per_token",
        dict(layers=32, kv_heads=8, head_dim=128, bits=4, scale_bits=16), "33 KB (.0f)", scale=1 / 1024,
        expected=33, rtol=0, atol=0.5, rounded=True)
    add("kvquant.token_ratio_4bit", "quantized_kv_bytes_per_token",
        dict(layers=32, kv_heads=8, head_dim=128, bits=16, scale_bits=0), "3.9x smaller at 4 bits",
        divide_by={"function": "quantized_kv_bytes_per_token",
                   "args": dict(layers=32, kv_heads=8, head_dim=128, bits=4, scale_bits=16)})
    add("kvquant.head_vectors_per_token", "kv_cache_bytes_per_token", dict(layers=32, kv_heads=8, head_dim=1, bits=8),
        "2 x 32 x 8 = 512 head vectors per token (2 L H_kv, one byte each at head_dim 1)", "exact")
    qe = {"n": p["quant_n"], "d": p["quant_d"], "seed": p["quant_seed"]}
    for bits in (16, 8, 4, 2):
        add(f"kvquant.error_{bits}", "quantized_cache_error", dict(qe, bits=bits),
            f"table: output error at {bits}-bit" if bits != 2 else "not printed: 2-bit symmetric, for KIVI's contrast",
            **R9)
    add("kvquant.error_8.lesson", "quantized_cache_error", dict(qe, bits=8), "under 1% output error at 8 bits",
        "below", expected=0.01, rounded=True)
    add("kvquant.error_4.lesson", "quantized_cache_error", dict(qe, bits=4), "about 12% at 4 bits", expected=0.12,
        rtol=0, atol=0.005, rounded=True)
    for bits in (4, 2):
        add(f"kvquant.kivi_error_{bits}", "kivi_cache_error", dict(qe, bits=bits),
            f"KIVI (keys per channel, values per token) at {bits} bits", **R9)
    for i, (m, label) in enumerate(zip(METHODS, METHOD_LABELS)):
        add(f"methods.1M.{m}", "cache_bytes_by_method", {"context": 1048576}, f"cache_bytes_by_method(1M): {label}",
            output=m)
        add(f"methods.1M.{m}.gb", "cache_bytes_by_method", {"context": 1048576}, f"table: {label} (GB, .3f)",
            output=m, scale=1e-9, expected=round(cache_by_method(1048576)[i] / 1e9, 3), rtol=0, atol=0.0005,
            rounded=True)
        add(f"methods.5000.{m}", "cache_bytes_by_method", {"context": 5000}, f"not printed: {label} at 5,000 tokens",
            output=m)
    add("methods.latent_vs_gqa_1M", "cache_bytes_by_method", {"context": 1048576},
        "figure: latent and 4-bit caches climb 4 times lower (latent)", output="grouped_query",
        divide_by={"function": "cache_bytes_by_method", "args": {"context": 1048576}, "output": "latent"})
    add("methods.latent_vs_gqa_1M.lesson", "cache_bytes_by_method", {"context": 1048576},
        "latent ... climb 4 times lower (3.56)", output="grouped_query",
        divide_by={"function": "cache_bytes_by_method", "args": {"context": 1048576}, "output": "latent"},
        expected=4, rtol=0, atol=0.5, rounded=True)
    add("methods.q4_vs_gqa_1M", "cache_bytes_by_method", {"context": 1048576},
        "figure: 4-bit caches climb 4 times lower", output="grouped_query",
        divide_by={"function": "cache_bytes_by_method", "args": {"context": 1048576}, "output": "grouped_query_4bit"})
    add("methods.q4_vs_gqa_1M.lesson", "cache_bytes_by_method", {"context": 1048576},
        "4-bit ... 4 times lower (3.88)", output="grouped_query",
        divide_by={"function": "cache_bytes_by_method", "args": {"context": 1048576}, "output": "grouped_query_4bit"},
        expected=4, rtol=0, atol=0.5, rounded=True)
    add("methods.window_same_at_1M", "cache_bytes_by_method", {"context": 1048576},
        "the window cache is the same at 1M tokens as at 128k", output="sliding_window",
        subtract={"function": "cache_bytes_by_method", "args": {"context": 131072}, "output": "sliding_window"},
        compare="exact")
    add("methods.hybrid_vs_gqa_1M", "cache_bytes_by_method", {"context": 1048576},
        "figure: the hybrid 8 times lower", output="grouped_query",
        divide_by={"function": "cache_bytes_by_method", "args": {"context": 1048576}, "output": "hybrid"})
    add("methods.hybrid_vs_gqa_1M.lesson", "cache_bytes_by_method", {"context": 1048576},
        "8 times lower", output="grouped_query",
        divide_by={"function": "cache_bytes_by_method", "args": {"context": 1048576}, "output": "hybrid"},
        expected=8, rtol=0, atol=0.5, rounded=True)
    add("methods.window_flat_gb.lesson", "cache_bytes_by_method", {"context": 1048576},
        "the sliding window flattens at 0.5 GB", output="sliding_window", scale=1e-9, expected=0.5, rtol=0,
        atol=0.05, rounded=True)

    # ---- the M8 notebook: the module's project demos and exercises --------------------------
    cb = {"seed": p["chunk_seed"], "steps": p["chunk_steps"], "width": p["chunk_width"], "a_low": 0.3, "a_high": 0.99,
          "chunk_sizes": p["chunk_sizes"], "reset_chunk": p["chunk_reset"]}
    add("m8demo.chunk_errors", "chunk_boundary_demo", cb, "np.testing.assert_allclose(actual, expected, 1e-12, 1e-12)",
        "below", output="chunk_errors", expected=[1e-12] * len(p["chunk_sizes"]))
    add("m8demo.reset_error", "chunk_boundary_demo", cb, "the reset control's max error (printed)", output="reset_error",
        **R9)
    add("m8demo.reset_error_above", "chunk_boundary_demo", cb, "assert np.max(np.abs(reset - expected)) > .1",
        "above", output="reset_error", expected=0.1)
    rk = {"seed": p["rewrite_seed"], "n_keys": p["rewrite_keys"], "key_width": p["rewrite_key_width"],
          "value_width": p["rewrite_value_width"], "writes": p["rewrite_writes"], "decay": 0.9}
    for m in ("additive", "delta", "gated"):
        add(f"m8demo.rewrite_{m}", "rewrite_keys_demo", rk, f"final MSE relative to latest values: {m} (printed)",
            output=m, **R9)
    for m in ("delta", "gated"):
        add(f"m8demo.rewrite_{m}_current_key", "rewrite_keys_demo", rk,
            f"assert_allclose(states['{m}'] @ k, v, atol=1e-12) at every write", "below",
            output=f"{m}_current_key_error", expected=1e-12)
    pp = {"seed": p["prefix_seed"], "lengths": p["prefix_lengths"], "width": p["prefix_width"], "a_low": 0.7, "a_high": 0.99}
    add("m8ex.prefix_hillis", "parallel_prefix_exercise", pp, "exercise 2: parallel prefix at lengths not powers of two",
        "below", output="hillis_diff", expected=[1e-12] * len(p["prefix_lengths"]))
    add("m8ex.prefix_blelloch", "parallel_prefix_exercise", pp, "exercise 2: work-efficient prefix", "below",
        output="blelloch_diff", expected=[1e-12] * len(p["prefix_lengths"]))
    ow = {"state": [[1.0, 0.0], [2.0, 0.0]], "key": [1.0, 0.0], "value": [3.0, 4.0], "other_key": [1.0, 1.0],
          "beta": 1.0, "decay": 1.0}
    add("m8ex.overwrite_before", "overwrite_interference", ow, "exercise 3: retrieval at the second key before",
        output="retrieval_before")
    add("m8ex.overwrite_after", "overwrite_interference", ow, "exercise 3: retrieval at the second key after",
        output="retrieval_after")
    add("m8ex.overwrite_change", "overwrite_interference", ow,
        "exercise 3: |change| = beta |v - S k| cos(k, k2) = 2 sqrt(2) / sqrt(2)", output="change_norm")
    add("m8ex.overwrite_exact", "overwrite_interference", ow, "beta = 1 overwrites retrieval at the key exactly",
        output="retrieval_at_key")
    add("m8ex.overwrite_orthogonal", "overwrite_interference", dict(ow, other_key=[0.0, 1.0]),
        "an orthogonal second key is untouched", output="change_norm", rtol=0, atol=1e-15)
    add("m8ex.overwrite_half_gated", "overwrite_interference", dict(ow, beta=0.5, decay=0.8, other_key=[1.0, 3.0]),
        "exercise 3 with beta 0.5, decay 0.8", output="change_norm")
    cr = {"layers": 32, "kv_heads": 8, "head_width": 128, "bytes_per_value": 2, "ssm_layers": 32, "inner_width": 8192,
          "state_width": 16, "conv_width": 4, "conv_channels": 8192, "batches": p["crossover_batches"]}
    add("m8ex.crossover_by_batch", "crossover_by_batch", cr, "exercise 4: B cancels; 80 tokens at every batch",
        output="tokens_exact")
    add("m8ex.crossover_first_integer", "crossover_by_batch", cr, "first integer token 80 at every batch", "exact",
        output="first_integer_token")
    return b.entries


def main(argv=None):
    paragraphs = __doc__.split("\n\n")
    ap = argparse.ArgumentParser(
        description=paragraphs[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=next(p for p in paragraphs if p.startswith("The same bytes")))
    ap.add_argument("-o", "--output", default=str(ROOT / "contracts" / "primer.json"))
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when the output file differs from a fresh build (writes nothing)")
    ap.add_argument("--variant", type=int, default=0,
                    help="0 = the lesson's inputs; k > 0 = other seeds and sizes (no rounded lesson statements)")
    args = ap.parse_args(argv)
    lesson = args.variant == 0
    params = lesson_params() if lesson else variant_params(args.variant)
    entries = build(params, lesson)
    doc = {
        "schema": SCHEMA,
        "source": "seeds/000_94db9aaf2d8704fc.txt (lesson) and seeds/003_56e436c57e445bcb.txt (module 8 demos/exercises)",
        "builder": "scripts/build_primer_contract.py (independent NumPy implementation)",
        "variant": args.variant,
        "numbers": len([x for e in entries for x in np.ravel(e["expected"])]),
        "entries": entries,
    }
    text = json.dumps(doc, indent=1, allow_nan=False) + "\n"
    if args.check:
        return pins.check(args.output, text, "/usr/bin/python3 scripts/build_primer_contract.py")
    pins.write(args.output, text)
    print(f"{args.output}: {len(entries)} entries, {doc['numbers']} numbers", file=sys.stderr)
    digest = pins.pin(args.output, text, add=False)
    if digest:
        print(f"pinned {pathlib.Path(args.output).name}: {digest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
