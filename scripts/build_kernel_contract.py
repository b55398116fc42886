#!/usr/bin/python3
"""Build contracts/kernels.json (schema "longmix-kernels/1") with NumPy, in float64.

Every case's inputs are drawn from numpy.random.default_rng(seed) by the kernel's recipe
(docs/contracts.md, section "kernels (longmix-kernels/1)"), the kernel is computed in
float64 on those inputs (rounded to the fast path's storage dtype first, as the recipe
says), and the contract keeps statistics of the output: count, sum, sum of absolute values
and a few elements by flat C-order index, each with its scale (the sum of |terms| the
float64 computation added up for it) and the case's tolerance.

The same bytes on any machine: every sum, product and exp/log behind an expected value
goes through scripts/fpmath.py (compensated sums in index order, exp and log made of
correctly rounded operations, math.fsum), never through `@`, dot, einsum or linalg
(which call the machine's BLAS) nor NumPy's exp/log (whose SIMD loop depends on the CPU).
So the file rebuilds byte for byte under the reference BLAS, OpenBLAS or MKL, on AVX2 or
AVX-512, whatever the NumPy version's summation order (docs/dependencies.md).

Kernels live in modules scripts/kcases/<family>.py, loaded in name order. Each defines
    REFERENCES = {"kernel_name": function(case, rng) -> Result}
    CASES = [{"id": ..., "kernel": ..., "dtype": ..., "seed": ..., "shape": {...},
              "options": {...}}, ...]
and never touches this file. Nothing here runs the C code.

Usage: build_kernel_contract.py [--out contracts/kernels.json] [--no-pin] [--check]
       build_kernel_contract.py --cases KERNEL:KEY=VALUE,... [--cases ...] --out FILE [--no-pin]

Cases at your own shapes: each --cases makes one case of a contract kernel (attention_decode,
ssm_mamba1_scan, ...) by the same recipe and reference, e.g.
    --cases attention_decode:batch=1,heads=32,kv_heads=8,head_dim=128,capacity=4096
    --cases ssm_mamba1_scan:batch=1,length=2048,channels=64,state=16,dtype=f32,seed=7
A key the kernel's built-in cases have under "shape" is a shape field; id, dtype (default
f32) and seed (default 0) are the case's own; every other key is an option its built-in
cases use (true/false, integers, numbers, text; another key is refused). The new file gets
its line in the SHA256SUMS beside it (printed), so `longmix verify FILE` and
`longmix verify --plugin P FILE` check it at once.
"""

import argparse
import dataclasses
import hashlib
import importlib.util
import json
import math
import pathlib
import sys

import numpy as np

import pins

ROOT = pathlib.Path(__file__).resolve().parent.parent
FAMILIES = ROOT / "scripts" / "kcases"
SCHEMA = "longmix-kernels/1"

# Unit roundoff of the arithmetic each fast-path dtype computes in. Storage dtypes that
# compute in float32 (f16, bf16, quantized codes) use float32's: the recipe rounds their
# inputs to the storage format before the float64 reference runs, so only the
# computation's own rounding is left for the tolerance to cover.
UNIT_ROUNDOFF = {
    "f64": 2.0 ** -53,
    "f32": 2.0 ** -24,
    "f16": 2.0 ** -24,
    "bf16": 2.0 ** -24,
}
SAFETY = 4.0       # multiplies sqrt(K) * u: a probabilistic bound with room to spare
ATOL = {"f64": 0.0}  # default 1e-30: only outputs whose scale is exactly 0 need it
DEFAULT_ATOL = 1e-30
TOLERANCE_RULE = ("|got - expected| <= atol + rtol * scale; rtol = 4 * sqrt(terms) * u + 2 * u "
                  "(u: unit roundoff of the dtype's arithmetic), scale = sum of |terms| behind "
                  "the statistic (docs/kernels.md, Tolerances)")


@dataclasses.dataclass
class Result:
    """What a kernel reference returns.

    output: the kernel's output array in float64 (flattened in C order for the contract).
    scale:  same shape, >= 0: for each output element the sum of the absolute values of
            the terms the float64 computation added up (|x| @ |w| for a dot product).
    terms:  K, the longest chain of float32 additions behind one element (d for a row dot).
    rtol/atol: optional overrides of the dtype rule (say why in docs/kernels.md).
    """
    output: np.ndarray
    scale: np.ndarray
    terms: int
    rtol: float = None
    atol: float = None


def round_to(values, dtype):
    """Inputs as the fast path stores them, back in float64 (f64: unchanged)."""
    values = np.asarray(values, dtype=np.float64)
    if dtype == "f64":
        return values
    if dtype == "f32":
        return values.astype(np.float32).astype(np.float64)
    if dtype == "f16":
        return values.astype(np.float16).astype(np.float64)
    if dtype == "bf16":  # round to nearest even on the top 16 bits of the float32
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    raise ValueError(f"round_to: unknown dtype {dtype}")


def tolerance(dtype, result):
    if dtype not in UNIT_ROUNDOFF:
        raise ValueError(f"no unit roundoff for dtype {dtype}; add it to UNIT_ROUNDOFF")
    u = UNIT_ROUNDOFF[dtype]
    rtol = SAFETY * math.sqrt(max(result.terms, 1)) * u + 2.0 * u
    atol = ATOL.get(dtype, DEFAULT_ATOL)
    if result.rtol is not None:
        rtol = result.rtol
    if result.atol is not None:
        atol = result.atol
    return {"rtol": float(rtol), "atol": float(atol), "terms": int(result.terms)}


def sample_indices(count, wanted):
    """Flat indices sampled: every index of a small output, else `wanted` spread evenly
    from the first to the last element."""
    if count <= wanted:
        return list(range(count))
    return sorted({int(round(i * (count - 1) / (wanted - 1))) for i in range(wanted)})


def statistics(result, indices):
    output = np.asarray(result.output, dtype=np.float64).ravel()
    scale = np.asarray(result.scale, dtype=np.float64).ravel()
    if output.shape != scale.shape:
        raise ValueError("scale must have the output's shape")
    if not (np.all(np.isfinite(output)) and np.all(np.isfinite(scale)) and np.all(scale >= 0)):
        raise ValueError("output and scale must be finite, scale >= 0")
    total_scale = math.fsum(scale.tolist())
    return {
        "count": int(output.size),
        "sum": {"value": math.fsum(output.tolist()), "scale": total_scale},
        "abs_sum": {"value": math.fsum(np.abs(output).tolist()), "scale": total_scale},
        "samples": [{"index": int(i), "value": float(output[i]), "scale": float(scale[i])}
                    for i in indices],
    }


def load_families():
    # Family modules import Result and round_to from this module, under its file name
    # even when it runs as __main__.
    sys.modules.setdefault("build_kernel_contract", sys.modules[__name__])
    references, cases = {}, []
    for path in sorted(FAMILIES.glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"kcases_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name, function in getattr(module, "REFERENCES", {}).items():
            if name in references:
                raise ValueError(f"{path.name}: kernel {name} is defined twice")
            references[name] = function
        cases.extend(getattr(module, "CASES", []))
    return references, cases


def build_case(case, references):
    for field in ("id", "kernel", "dtype", "seed"):
        if field not in case:
            raise ValueError(f"case {case.get('id', case)}: missing {field}")
    kernel = case["kernel"]
    if kernel not in references:
        raise ValueError(f"case {case['id']}: no NumPy reference for kernel {kernel}")
    entry = {
        "id": case["id"],
        "kernel": kernel,
        "dtype": case["dtype"],
        "seed": int(case["seed"]),
        "shape": dict(case.get("shape", {})),
        "options": dict(case.get("options", {})),
    }
    if "expect_status" in case:  # a bad-input case: the run must be rejected
        entry["expected"] = {"status": case["expect_status"]}
        if "mention" in case:
            entry["expected"]["mention"] = case["mention"]
        return entry
    rng = np.random.default_rng(entry["seed"])
    result = references[kernel](entry, rng)
    count = int(np.asarray(result.output).size)
    indices = case.get("samples", sample_indices(count, case.get("sample_count", 7)))
    entry["expected"] = statistics(result, indices)
    entry["tolerance"] = tolerance(entry["dtype"], result)
    return entry


def parse_value(text):
    """A --cases value as JSON would hold it: true/false, an integer, a number, or text."""
    if text in ("true", "false"):
        return text == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def user_case(spec, cases):
    """The case of one --cases KERNEL:KEY=VALUE,... (see the module's usage)."""
    kernel, _, pairs = spec.partition(":")
    shape_keys = {key for case in cases if case["kernel"] == kernel
                  for key in case.get("shape", {})}
    if not shape_keys:
        known = sorted({case["kernel"] for case in cases if case.get("shape")})
        raise ValueError(f"--cases {spec}: unknown kernel '{kernel}' (one of: {', '.join(known)})")
    option_keys = {key for case in cases if case["kernel"] == kernel
                   for key in case.get("options", {})}
    case = {"kernel": kernel, "dtype": "f32", "seed": 0, "shape": {}, "options": {}}
    for pair in filter(None, pairs.split(",")):
        key, equals, text = pair.partition("=")
        if not equals or not key:
            raise ValueError(f"--cases {spec}: '{pair}' is not KEY=VALUE")
        value = parse_value(text)
        if key in ("id", "dtype"):
            case[key] = text
        elif key == "seed":
            case[key] = int(text)
        elif key in shape_keys:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"--cases {spec}: shape field {key} must be an integer")
            case["shape"][key] = value
        elif key in option_keys:
            case["options"][key] = value
        else:
            known = ", ".join(sorted(shape_keys | option_keys | {"id", "dtype", "seed"}))
            raise ValueError(f"--cases {spec}: kernel {kernel} has no field or option "
                             f"'{key}' (one of: {known})")
    missing = sorted(shape_keys - set(case["shape"]))
    if missing:
        raise ValueError(f"--cases {spec}: kernel {kernel} needs shape field(s) {', '.join(missing)}")
    if "id" not in case:
        words = [f"{k}{v}" for k, v in case["shape"].items()] + \
                [f"{k}_{json.dumps(v).strip(chr(34))}" for k, v in case["options"].items()]
        case["id"] = f"{kernel}.{case['dtype']}.user_" + "_".join(words) + f"_seed{case['seed']}"
    return case


def contract_text(built, about):
    contract = {"schema": SCHEMA, "about": about, "tolerance_rule": TOLERANCE_RULE,
                "cases": built}
    return json.dumps(contract, indent=1, allow_nan=False) + "\n"


def build_user(specs):
    """A contract of the --cases specs alone."""
    references, cases = load_families()
    built = [build_case(user_case(spec, cases), references) for spec in specs]
    ids = [case["id"] for case in built]
    if len(set(ids)) != len(ids):
        raise ValueError("two --cases make the same case id; give one of them id=...")
    return contract_text(built, "Cases at user-given shapes (--cases of "
                         "scripts/build_kernel_contract.py): inputs from "
                         "numpy.random.default_rng(seed) by each kernel's recipe "
                         "(docs/contracts.md, kernels), expected float64 statistics of the "
                         "output, computed BLAS-free (scripts/fpmath.py).")


def build():
    references, cases = load_families()
    seen = set()
    built = []
    for case in cases:
        if case["id"] in seen:
            raise ValueError(f"case id {case['id']} repeats")
        seen.add(case["id"])
        built.append(build_case(case, references))
    contract = {
        "schema": SCHEMA,
        "about": "Fast-kernel cases: inputs from numpy.random.default_rng(seed) by each "
                 "kernel's recipe (docs/contracts.md, kernels), expected float64 statistics "
                 "of the output, computed BLAS-free (scripts/fpmath.py). Built by "
                 "scripts/build_kernel_contract.py.",
        "tolerance_rule": TOLERANCE_RULE,
        "cases": built,
    }
    return json.dumps(contract, indent=1, allow_nan=False) + "\n"


def main():
    paragraphs = __doc__.split("\n\n")
    parser = argparse.ArgumentParser(
        description=paragraphs[0], formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(p for p in paragraphs
                             if p.startswith(("Cases at your own shapes", "The same bytes"))))
    parser.add_argument("--out", help="default contracts/kernels.json (required with --cases)")
    parser.add_argument("--no-pin", action="store_true", help="do not touch SHA256SUMS")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when the file on disk differs from a fresh build")
    parser.add_argument("--cases", action="append", metavar="KERNEL:KEY=VALUE,...",
                        help="a case at your own shape (repeatable): writes a contract of "
                             "these cases alone to --out")
    args = parser.parse_args()
    if args.cases:
        if args.out is None or args.check:
            parser.error("--cases writes a new file: give --out FILE (and no --check)")
        try:
            text = build_user(args.cases)
        except ValueError as error:
            parser.error(str(error))
    else:
        text = build()
    out = pathlib.Path(args.out or ROOT / "contracts" / "kernels.json")
    if args.check:
        return pins.check(out, text, "/usr/bin/python3 scripts/build_kernel_contract.py")
    pins.write(out, text)
    cases = json.loads(text)["cases"]
    print(f"wrote {out}: {len(cases)} cases")
    if not args.no_pin:
        print(f"pinned {out.name}: {pins.pin(out, text)}")
    if args.cases:  # the line for a SHA256SUMS elsewhere (sha256sum format)
        print(f"{hashlib.sha256(text.encode()).hexdigest()}  {out.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
