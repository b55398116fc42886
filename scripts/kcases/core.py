"""NumPy references and cases for the core kernels (harness/kcases_core.c runs them in C).

Recipe of each kernel: docs/contracts.md, section "kernels (longmix-kernels/1)".
A reference gets the case (its "shape", "options", "dtype") and the generator
numpy.random.default_rng(seed), draws its inputs in the recipe's order, and returns
Result(output, scale, terms) in float64.
"""
import numpy as np

import fpmath as fp
from build_kernel_contract import Result, round_to


def gemv_rowdot(case, rng):
    """y = X w. Draws x = standard_normal((n, d)) then w = standard_normal(d); both rounded
    to the case's dtype. Output y {n}; scale |x| @ |w|; terms d."""
    n, d = case["shape"]["n"], case["shape"]["d"]
    x = round_to(rng.standard_normal((n, d)), case["dtype"])
    w = round_to(rng.standard_normal(d), case["dtype"])
    products = x * w  # {n, d}
    return Result(output=fp.sums(products, axis=1), scale=fp.sums(np.abs(products), axis=1),
                  terms=d)


REFERENCES = {"gemv_rowdot": gemv_rowdot}


def _rowdot(n, d, seed, dtype="f32", **extra):
    return dict(id=f"gemv_rowdot.{dtype}.n{n}_d{d}", kernel="gemv_rowdot", dtype=dtype,
                seed=seed, shape={"n": n, "d": d}, **extra)


CASES = [
    _rowdot(3, 5, 20260),          # tiny: every element sampled (tests read it)
    _rowdot(1, 1, 20261),
    _rowdot(7, 37, 20262),
    _rowdot(4, 15, 20263),
    _rowdot(4, 16, 20264),
    _rowdot(4, 17, 20265),
    _rowdot(9, 31, 20266),
    _rowdot(33, 129, 20267),
    _rowdot(64, 1000, 20268),
    _rowdot(5, 4099, 20269),       # long accumulation, not a multiple of any vector width
    _rowdot(9, 23, 20270, dtype="f64"),    # the float64 oracle itself (label "ref")
    _rowdot(2, 1001, 20271, dtype="f64"),
    # bad input: the run must fail with this status (no statistics)
    _rowdot(0, 5, 20272, dtype="f64", expect_status="shape", mention="non-empty"),
    _rowdot(3, 0, 20273, expect_status="shape", mention="non-empty"),
]
