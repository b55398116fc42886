# The contract builders give the same bytes on every machine: no BLAS, no CPU-dispatched
# NumPy math, nothing whose rounding depends on the machine (scripts/fpmath.py).

# The Python files whose arithmetic feeds expected values.
builder_files() { ls scripts/build_*_contract.py scripts/kcases/*.py; }

# No `@`, dot/einsum/matmul/linalg/convolve (BLAS), no NumPy or libm exp/log/power and no
# NumPy reductions (order and SIMD loop vary), no builtin sum (compensated since Python
# 3.12): read from the syntax tree, so comments and strings do not count.
test_builders_call_no_blas_nor_machine_dependent_math() {
  expect_exit 0 "$PYTHON" - $(builder_files) <<'PY'
import ast, sys
NUMPY = {"dot", "vdot", "inner", "matmul", "einsum", "tensordot", "linalg", "convolve",
         "correlate", "exp", "expm1", "exp2", "log", "log1p", "log2", "log10", "logaddexp",
         "logaddexp2", "power", "float_power", "tanh", "sinh", "cosh", "sin", "cos", "tan",
         "geomspace", "logspace", "sum", "nansum", "mean", "average", "std", "var", "prod",
         "trace"}
MATH = {"exp", "expm1", "log", "log1p", "log2", "log10", "pow", "tanh", "sinh", "cosh",
        "sin", "cos", "tan", "erf", "erfc", "gamma", "lgamma", "hypot", "dist"}
METHODS = {"dot", "sum", "mean", "prod", "std", "var", "trace"}
bad = []
for path in sys.argv[1:]:
    for node in ast.walk(ast.parse(open(path).read(), path)):
        where = f"{path}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            bad.append(f"{where}: @")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = node.value.id
            if base in ("np", "numpy") and node.attr in NUMPY:
                bad.append(f"{where}: {base}.{node.attr}")
            if base == "math" and node.attr in MATH:
                bad.append(f"{where}: math.{node.attr}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            f = node.func
            if f.attr in METHODS and not (isinstance(f.value, ast.Name) and f.value.id in ("fp", "np", "math")):
                bad.append(f"{where}: .{f.attr}()")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sum":
            bad.append(f"{where}: sum()")
print("\n".join(bad) or "clean")
sys.exit(1 if bad else 0)
PY
  expect_text out "clean"
}

# Every BLAS entry point NumPy links (cblas_*) preloaded with one that aborts: a NumPy dot
# dies (the trap works), the builders do not, and their output is the usual bytes.
# cblas_sdot is left to the real BLAS: NumPy's import checks the BLAS with a float32 dot.
noblas_shim() {
  local name
  {
    echo '#include <stdio.h>'
    echo '#include <stdlib.h>'
    echo 'static void trap(const char *f) { fprintf(stderr, "BLAS called: %s\n", f); _Exit(99); }'
    for name in saxpy daxpy caxpy zaxpy ddot cdotc_sub cdotu_sub zdotc_sub zdotu_sub \
                sgemm dgemm cgemm zgemm sgemv dgemv cgemv zgemv ssyrk dsyrk csyrk zsyrk; do
      echo "void cblas_$name(void) { trap(\"cblas_$name\"); }"
    done
  } >"$WORK/noblas.c"
  gcc -shared -fPIC -o "$WORK/noblas.so" "$WORK/noblas.c"
}
test_builders_run_with_every_blas_call_trapped() {
  noblas_shim
  LD_PRELOAD=$WORK/noblas.so expect_exit 99 "$PYTHON" -c \
    'import numpy as np; a = np.ones((64, 64)); print(a @ a)'
  expect_text err "BLAS called: cblas_dgemm"
  LD_PRELOAD=$WORK/noblas.so expect_exit 0 "$PYTHON" scripts/build_kernel_contract.py --check
  expect_text out "up to date"
  LD_PRELOAD=$WORK/noblas.so expect_exit 0 "$PYTHON" scripts/build_primer_contract.py --check
  expect_text out "up to date"
  "$PYTHON" scripts/build_m8_contract.py --seed-offset 2 --out "$WORK/m8a.json" 2>/dev/null
  LD_PRELOAD=$WORK/noblas.so expect_exit 0 "$PYTHON" scripts/build_m8_contract.py \
    --seed-offset 2 --out "$WORK/m8b.json"
  cmp "$WORK/m8a.json" "$WORK/m8b.json"
}

test_primer_contract_is_what_the_builder_writes() {
  expect_exit 0 "$PYTHON" scripts/build_primer_contract.py --check
  expect_text out "up to date"
}
test_primer_check_names_the_rebuild_command_when_it_differs() {
  cp contracts/primer.json "$WORK/primer.json"
  echo ' ' >>"$WORK/primer.json"
  expect_exit 1 "$PYTHON" scripts/build_primer_contract.py --check -o "$WORK/primer.json"
  expect_text out "differs from a fresh build; run /usr/bin/python3 scripts/build_primer_contract.py"
}

# fpmath's exp/log family against decimal (correctly rounded) and its sums against math.fsum.
test_fpmath_self_test_meets_its_error_bounds() {
  expect_exit 0 "$PYTHON" scripts/fpmath.py --self-test
  expect_text out "exp_small   max error 0.5"
  if grep -q FAIL "$WORK/out"; then return 1; fi
}
