#!/usr/bin/python3
"""Write tests/fixtures/numpy-rng-large-seeds.json: what the installed NumPy prints for
default_rng(seed) with seeds longer than SeedSequence's 4-word pool (the branch that mixes
extra entropy words back into the pool), in the schema of numpy-rng.json."""
import json
import sys

import numpy as np

SEEDS = [10**60, 2**200 + 3, 3**700]


def case(seed):
    state = np.random.default_rng(seed).bit_generator.state["state"]
    raw = np.random.default_rng(seed).bit_generator.random_raw(8)
    return {
        "seed": str(seed),
        "pcg64_state_after_seeding": {"state": str(state["state"]), "inc": str(state["inc"])},
        "random_raw_first_8": ["0x%016X" % int(v) for v in raw],
        "random_first_8": np.random.default_rng(seed).random(8).tolist(),
        "uniform_0.70_0.99_first_8": np.random.default_rng(seed).uniform(0.70, 0.99, 8).tolist(),
        "standard_normal_first_32": np.random.default_rng(seed).standard_normal(32).tolist(),
    }


doc = {"about": "default_rng(seed) for seeds of more than four 32-bit words, printed by "
                "scripts/make_rng_large_seed_fixture.py with the NumPy named here.",
       "numpy_version": np.__version__, "cases": [case(s) for s in SEEDS]}
json.dump(doc, sys.stdout, indent=1)
sys.stdout.write("\n")
