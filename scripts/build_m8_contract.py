#!/usr/bin/python3
"""Write a variant M8 contract (schema_version 2) with other parameters.

The expected values are computed here with NumPy, following the formulas of the M8
notebook (sections 1-6), so that `longmix verify` can be shown to recompute a
contract it has never seen: a variant with right values must pass, and one pushed off by
more than its tolerance (--perturb) must fail at exactly that check.

    build_m8_contract.py --seed-offset 3 --out /tmp/m8-variant.json
    build_m8_contract.py --set affine_scan.chunk_size=5 --set recall.seed=42 --out v.json
    build_m8_contract.py --seed-offset 1 --perturb zoh.exact_states[1][0] --out bad.json

--seed-offset 0 with no --set reproduces the notebook's parameters. What the notebook fixes in
its code (the delta-rule vectors, the cache geometries, the 128-pair softmax control of
width 32, the zero-mode system) is fixed here too; the memory section therefore never varies.
The file is compact JSON with sorted keys, like the notebook's; the SHA-256 is printed on stderr.
The arithmetic is BLAS-free (scripts/fpmath.py), so a variant's bytes are the same on every
machine.
"""
import argparse
import hashlib
import json
import math
import re
import sys

import numpy as np

import fpmath as fp


# ---- the notebook's operators (float64, its formulas and its draw order) ----------------

def zoh_diagonal(a, b, delta):
    transition = fp.exp(delta * a)
    factor = np.full_like(a, float(delta))
    np.divide(fp.expm1(delta * a), a, out=factor, where=a != 0)
    return transition, factor[:, None] * b


def scan_diagonal(a, b, c, x, deltas, exact):
    state = np.zeros(a.size)
    states, outputs, transitions, inputs = [], [], [], []
    for token, step in zip(x, deltas):
        transition, input_matrix = zoh_diagonal(a, b, float(step))
        if not exact:
            input_matrix = float(step) * b
        state = transition * state + fp.matmul(input_matrix, token)
        states.append(state.copy())
        outputs.append(fp.matmul(c, state))
        transitions.append(transition)
        inputs.append(input_matrix)
    return np.array(states), np.array(outputs), np.array(transitions), np.array(inputs)


def affine_sequential(a, b, h0):
    state, out = h0.copy(), np.empty_like(b)
    for t in range(a.shape[0]):
        state = a[t] * state + b[t]
        out[t] = state
    return out


def affine_chunked(a, b, h0, chunk):
    state, out = h0.copy(), np.empty_like(b)
    for start in range(0, a.shape[0], chunk):
        end = min(start + chunk, a.shape[0])
        zero, local = np.zeros(a.shape[1]), np.empty_like(b[start:end])
        for offset in range(end - start):
            zero = a[start + offset] * zero + b[start + offset]
            local[offset] = zero
        out[start:end] = local + np.cumprod(a[start:end], axis=0) * state
        state = out[end - 1].copy()
    return out


def linear_sequential(q, k, v):
    state, out = np.zeros((v.shape[1], k.shape[1])), np.empty((q.shape[0], v.shape[1]))
    for t in range(q.shape[0]):
        state += np.outer(v[t], k[t])
        out[t] = fp.matmul(state, q[t])
    return out


def linear_chunked(q, k, v, chunk):
    state, out = np.zeros((v.shape[1], k.shape[1])), np.empty((q.shape[0], v.shape[1]))
    for start in range(0, q.shape[0], chunk):
        end = min(start + chunk, q.shape[0])
        qc, kc, vc = q[start:end], k[start:end], v[start:end]
        out[start:end] = fp.matmul(qc, state.T) + fp.matmul(np.tril(fp.matmul(qc, kc.T)), vc)
        state += fp.matmul(vc.T, kc)
    return out


def normalize_key(key):
    scaled = key / np.max(np.abs(key))
    return scaled / fp.norm(scaled)


def delta_update(state, key, value, beta, decay=1.0):
    k = normalize_key(np.asarray(key, dtype=np.float64))
    base = decay * state
    updated = base + beta * np.outer(value - fp.matmul(base, k), k)
    return fp.matmul(updated, k)


def softmax_rows(logits):
    weights = fp.exp(logits - np.max(logits, axis=1, keepdims=True))
    return weights / fp.sums(weights, axis=1, keepdims=True)


def unit_keys(rng, count, width):
    keys = rng.standard_normal((count, width))
    return keys / fp.norm(keys, axis=1, keepdims=True)


# ---- the contract ---------------------------------------------------------------------

def parameters(offset):
    """The parameters of variant `offset` (0: the notebook's)."""
    k = offset
    p = {
        "affine_scan": {"seed": 11 + k, "sequence_length": 53 + 7 * k, "state_width": 6 + k % 3,
                        "chunk_size": 16 - (3 * k) % 11},
        "linear_attention": {"seed": 19 + k, "sequence_length": 50 + 5 * k,
                             "key_width": 8 + k % 4, "value_width": 6 + (2 * k) % 5,
                             "chunk_size": 16 + (5 * k) % 9},
        "recall": {"seed": 7 + k, "softmax_seed": 107 + k, "key_width": 32 - 4 * (k % 3),
                   "value_width": 32 - 8 * (k % 2),
                   "softmax_inverse_temperature": 20.0 + 2.0 * (k % 3),
                   "stored_pairs": [4, 8, 16, 32, 64, 128] if k == 0 else
                   [3 + k % 3, 9, 20 + k, 40, 80 + 3 * k, 150]},
        "decode_flops": {"positions": [1024, 32768, 1048576] if k == 0 else
                         [512 * (k + 1), 4096 + 77 * k, 1 << (15 + k % 5)],
                         "model_width": 4096 if k == 0 else 2048 + 512 * (k % 5),
                         "inner_width": 8192 if k == 0 else 4096 + 1024 * (k % 6),
                         "state_width": 16 if k == 0 else 8 * (1 + k % 4)},
    }
    if k == 0:
        p["zoh"] = {"continuous_a": [-1.0, -2.0], "continuous_b": [[1.0], [1.0]],
                    "output_c": [[1.0, 1.0]], "inputs": [[1.0], [-1.0], [2.0]],
                    "deltas": [0.1, 1.0, 0.5]}
    else:
        rng = np.random.default_rng(1000 + k)
        n, m, d_in, steps = 2 + k % 3, 1 + k % 2, 1 + (k // 2) % 2, 3 + k % 4
        a = -rng.uniform(0.2, 3.0, n)
        if k % 2 == 0:
            a[-1] = 0.0  # a zero mode: the a = 0 limit inside the scan
        p["zoh"] = {"continuous_a": a.tolist(),
                    "continuous_b": rng.uniform(0.5, 1.5, (n, d_in)).tolist(),
                    "output_c": rng.standard_normal((m, n)).tolist(),
                    "inputs": rng.standard_normal((steps, d_in)).tolist(),
                    "deltas": rng.uniform(0.05, 1.5, steps).tolist()}
    return p


def build(p):
    out = {"schema_version": 2}

    z = dict(p["zoh"])
    a, b = np.asarray(z["continuous_a"], float), np.asarray(z["continuous_b"], float)
    c, x = np.asarray(z["output_c"], float), np.asarray(z["inputs"], float)
    deltas = np.asarray(z["deltas"], float)
    states, outputs, transitions, input_matrices = scan_diagonal(a, b, c, x, deltas, True)
    approx_states, approx_outputs, _, _ = scan_diagonal(a, b, c, x, deltas, False)
    relative = [abs(s * b[0, 0] - zoh_diagonal(a, b, float(s))[1][0, 0]) /
                zoh_diagonal(a, b, float(s))[1][0, 0] for s in deltas]
    _, zero_mode = zoh_diagonal(np.array([0.0, -1.0]), np.array([[1.0], [1.0]]), 0.25)
    low, high = 1e-6, 10.0  # the 10 % root of x/(-expm1(-x)) - 1, by bisection
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if mid / (-float(fp.expm1(-mid))) - 1.0 < 0.1 else (low, mid)
    z.update({"transitions": transitions.tolist(), "exact_input_matrices": input_matrices.tolist(),
              "exact_states": states.tolist(), "exact_outputs": outputs[:, 0].tolist(),
              "approximate_states": approx_states.tolist(),
              "approximate_outputs": approx_outputs[:, 0].tolist(),
              "relative_input_error_first_mode": [float(v) for v in relative],
              "zero_mode_input_matrix": zero_mode.tolist(),
              "ten_percent_relative_error_root_a_minus_1": high})
    out["zoh"] = z

    s = dict(p["affine_scan"])
    rng = np.random.default_rng(s["seed"])
    T, W = s["sequence_length"], s["state_width"]
    a_steps = rng.uniform(0.70, 0.99, size=(T, W))
    b_steps = rng.standard_normal((T, W))
    h0 = rng.standard_normal(W)
    seq = affine_sequential(a_steps, b_steps, h0)
    chunked = affine_chunked(a_steps, b_steps, h0, s["chunk_size"])
    s["max_abs_difference"] = float(np.max(np.abs(seq - chunked)))
    s["output_checksum"] = fp.total(seq)
    out["affine_scan"] = s

    s = dict(p["linear_attention"])
    rng = np.random.default_rng(s["seed"])
    T = s["sequence_length"]
    q = rng.standard_normal((T, s["key_width"]))
    k = rng.standard_normal((T, s["key_width"]))
    v = rng.standard_normal((T, s["value_width"]))
    seq = linear_sequential(q, k, v)
    s["max_abs_difference"] = float(np.max(np.abs(linear_chunked(q, k, v, s["chunk_size"]) - seq)))
    s["output_checksum"] = fp.total(seq)
    out["linear_attention"] = s

    k1, v1, v2 = np.array([1.0, 0.0]), np.array([1.0, 2.0]), np.array([3.0, 4.0])
    state = np.outer(v1, k1)
    out["delta"] = {"additive_retrieval": fp.matmul(state + np.outer(v2, k1), k1).tolist(),
                    "half_retrieval": delta_update(state, k1, v2, 0.5).tolist(),
                    "full_retrieval": delta_update(state, k1, v2, 1.0).tolist(),
                    "gated_half_retrieval": delta_update(state, k1, v2, 0.5, 0.8).tolist()}

    r = dict(p["recall"])
    loads, width, values = r["stored_pairs"], r["key_width"], r["value_width"]
    rng, mse = np.random.default_rng(r["seed"]), []
    for count in loads:
        keys = unit_keys(rng, count, width)
        targets = rng.standard_normal((count, values))
        retrieved = fp.matmul(fp.matmul(targets.T, keys), keys.T).T
        mse.append(fp.mean(np.square(retrieved - targets)))
    rng = np.random.default_rng(r["softmax_seed"])
    keys = unit_keys(rng, 128, 32)
    targets = rng.standard_normal((128, 32))
    weights = softmax_rows(r["softmax_inverse_temperature"] * fp.matmul(keys, keys.T))
    softmax_mse = fp.mean(np.square(fp.matmul(weights, targets) - targets))
    rng, paired = np.random.default_rng(r["seed"]), []
    for count in loads:  # the curve's own keys and values, read out by softmax
        keys = unit_keys(rng, count, width)
        targets = rng.standard_normal((count, values))
        logits = fp.matmul(r["softmax_inverse_temperature"] * keys, keys.T)
        prediction = fp.matmul(softmax_rows(logits), targets)
        paired.append(fp.mean(np.square(prediction - targets)))
    if not all(later > earlier for earlier, later in zip(mse[2:], mse[3:])):
        sys.exit(f"build_m8_contract: recall mse {mse} does not increase from the third load")
    if not 0.0 < softmax_mse < 1e-6:
        sys.exit(f"build_m8_contract: softmax mse {softmax_mse} not in (0, 1e-6)")
    r.update({"mse": mse, "expected_additive_mse": [(n - 1) / width for n in loads],
              "softmax_mse_at_128": softmax_mse, "paired_softmax_mse": paired})
    out["recall"] = r

    out["memory"] = memory_section()

    d = dict(p["decode_flops"])
    attention = [4 * n * d["model_width"] for n in d["positions"]]
    ssm = [5 * d["inner_width"] * d["state_width"] for _ in d["positions"]]
    d.update({"attention_core_flops": attention, "ssm_core_flops": ssm,
              "ratios": [x / y for x, y in zip(attention, ssm)],
              "scope": "leading-order attention matmuls versus diagonal state update plus "
                       "readout, with prepared coefficients; not end-to-end latency"})
    out["decode_flops"] = d
    return out


def memory_section():
    """The notebook's fixed geometries: 32 layers, 8 KV heads of 128, 2-byte values."""
    kv_per_token = 2 * 32 * 8 * 128 * 2

    def recurrent(layers, inner, state, conv, channels):
        ssm, conv_bytes = layers * inner * state * 2, layers * channels * conv * 2
        return ssm, conv_bytes, ssm + conv_bytes

    def model(inner, state, channels):
        ssm, conv, total = recurrent(32, inner, state, 4, channels)
        return {"ssm_bytes": ssm, "conv_bytes": conv, "total_bytes": total,
                "crossover_tokens_exact": total / kv_per_token,
                "crossover_first_integer_token": -(-total // kv_per_token),
                "first_strictly_larger_token": total // kv_per_token + 1}

    tokens = 256 * 1024
    ssm, conv, total = recurrent(28, 8192, 16, 4, 8192)
    kv = 2 * 4 * 8 * 128 * 2 * tokens
    return {"kv_bytes_per_token_full_attention": kv_per_token,
            "full_attention_256k_bytes": kv_per_token * tokens,
            "mamba1": model(8192, 16, 8192), "mamba2_like": model(8192, 128, 8192 + 2 * 128),
            "hybrid_256k": {"attention_layers": 4, "ssm_layers": 28, "kv_bytes": kv,
                            "ssm_bytes": ssm, "conv_bytes": conv, "recurrent_bytes": total,
                            "total_bytes": kv + total}}


# ---- paths, overrides, perturbation -------------------------------------------------------

def split_path(path):
    parts = []
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        parts.append(int(index) if index else name)
    return parts


def set_at(document, path, value):
    parts = split_path(path)
    node = document
    for part in parts[:-1]:
        node = node[part]
    node[parts[-1]] = value


def get_at(document, path):
    node = document
    for part in split_path(path):
        node = node[part]
    return node


def perturb(document, path):
    """Moves the value at `path` past any tolerance the checker uses for it."""
    value = get_at(document, path)
    leaf = split_path(path)[-1]
    if isinstance(value, bool) or isinstance(value, (list, dict)):
        sys.exit(f"build_m8_contract: --perturb {path} must name a number or a string")
    if leaf == "max_abs_difference":
        new = 1e-11  # a bound of 1e-12: above it
    elif isinstance(value, int):
        new = value + 1
    elif isinstance(value, float):
        new = value + max(1e-3 * abs(value), 1e-6)
    else:
        new = "end-to-end latency"
    set_at(document, path, new)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed-offset", type=int, default=0,
                        help="variant number; 0 is the notebook's own parameters")
    parser.add_argument("--set", action="append", default=[], metavar="PATH=JSON",
                        help="override one parameter before computing, e.g. "
                             "affine_scan.chunk_size=5")
    parser.add_argument("--perturb", metavar="PATH",
                        help="push this value past its tolerance after computing")
    parser.add_argument("--out", default="-", help="output file (default: stdout)")
    args = parser.parse_args()
    if args.seed_offset < 0:
        parser.error("--seed-offset must be non-negative")

    p = parameters(args.seed_offset)
    for item in args.set:
        path, _, text = item.partition("=")
        if not text:
            parser.error(f"--set {item}: expected PATH=JSON")
        set_at(p, path, json.loads(text))
    document = build(p)
    if args.perturb:
        perturb(document, args.perturb)
    data = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    if args.out == "-":
        sys.stdout.buffer.write(data)
    else:
        with open(args.out, "wb") as handle:
            handle.write(data)
    print(hashlib.sha256(data).hexdigest(), file=sys.stderr)


if __name__ == "__main__":
    main()
