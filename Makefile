# longmix — one Makefile. `make help` lists the targets.
#
#   make                build build/longmix and build/liblongmix.{a,so}
#   make install        PREFIX=/usr/local DESTDIR= (README "Using longmix as a library")
#   make SANITIZER=address,undefined BUILD=build/asan test-unit
#   make CC=clang       the same with clang
#   make ARCH=aarch64   cross-build the NEON path (BUILD defaults to build/aarch64)
#   make SANITIZER=thread   ThreadSanitizer build in build/tsan, with clang (make test-tsan)

comma     := ,
# ThreadSanitizer must see every synchronisation. Debian's libgomp is not built with TSan,
# so its barriers and locks are invisible and race-free parallel regions are reported as
# races; clang's libomp comes with Archer (libomp-14-dev), an OpenMP tool that tells TSan
# about barriers, locks, reductions and tasks. So SANITIZER=thread means clang.
TSAN      := $(filter thread,$(subst $(comma), ,$(SANITIZER)))
ifneq ($(TSAN),)
  ifeq ($(origin CC),default)
    CC    := clang
  endif
  ifeq ($(findstring clang,$(CC)),)
    $(error SANITIZER=thread needs CC=clang (libomp + Archer): Debian's libgomp is not TSan-instrumented, so gcc builds would report OpenMP's own synchronisation as races)
  endif
  BUILD   ?= build/tsan
endif

ARCH      ?= $(shell uname -m)
ifeq ($(ARCH),aarch64)
  ifneq ($(shell uname -m),aarch64)
    CC    := aarch64-linux-gnu-gcc
    CXX   := aarch64-linux-gnu-g++
    # qemu-aarch64 7.2 here hangs when a guest creates a second thread (even a bare
    # `omp parallel`), so the emulated runs keep OpenMP to one thread.
    RUNNER ?= env OMP_NUM_THREADS=1 qemu-aarch64 -L /usr/aarch64-linux-gnu
  endif
  BUILD   ?= build/aarch64
else
  BUILD   ?= build
endif
CC        ?= gcc
CXX       ?= g++
ifeq ($(origin CC),default)
  CC      := gcc
endif
ifeq ($(origin CXX),default)
  CXX     := g++
endif
RUNNER    ?=
SANITIZER ?=
OPT       ?= -O2
PYTHON    ?= /usr/bin/python3

WARNINGS  := -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
             -Wcast-qual -Wpointer-arith -Wvla -Wdouble-promotion \
             -Werror=implicit-function-declaration -Werror
# -fno-plt: calls into shared libraries (SLEEF's vector functions inside the scan loops) go
# through the GOT directly; through PLT stubs the Mamba-1 scan's time depended on where the
# linker happened to place it, by up to 1.6x (docs/kernels.md, "Code placement").
# -fPIC -fno-semantic-interposition: every object can go into liblongmix.so (and a user's
# shared object can link liblongmix.a); the kernels' machine code is the same as without it
# (docs/kernels.md, "Position-independent code").
CFLAGS_ALL = -std=c17 $(OPT) -g -fopenmp -fno-plt -fPIC -fno-semantic-interposition \
             -ffp-contract=off -D_POSIX_C_SOURCE=200809L -Ikernels/include $(WARNINGS) $(EXTRA_CFLAGS)
CXXFLAGS_ALL = -std=c++17 $(OPT) -g -Ikernels/include -Iharness -Wall -Wextra -Werror
# oneDNN (libdnnl): the GEMM of prefill projections (kernels/gemm). The arm64 cross build
# has no arm64 oneDNN installed, so there the GEMM says LM_ERR_UNSUPPORTED (LM_NO_DNNL).
ifeq ($(ARCH),aarch64)
  DNNL_LIBS :=
  CFLAGS_ALL += -DLM_NO_DNNL
else
  DNNL_LIBS := -ldnnl
endif
LDLIBS    := -ljansson -lnettle -lsleef -lhwloc $(DNNL_LIBS) -lm -lpthread
LIB_LDLIBS := -lsleef $(DNNL_LIBS) -lm   # what liblongmix itself needs (with -fopenmp's libgomp)
ifneq ($(SANITIZER),)
  CFLAGS_ALL += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDFLAGS    += -fsanitize=$(SANITIZER)
  # The instrumentation keeps clang from vectorizing loops marked `omp simd`, which it
  # reports as -Wpass-failed (an error with -Werror); it says nothing about the code.
  ifneq ($(findstring clang,$(notdir $(CC))),)
    CFLAGS_ALL += -Wno-pass-failed
  endif
endif
# A sanitizer finding exits 86, never 1 ("a check failed") or 2 ("bad input"), so a test
# that expects those cannot mistake a crash for them. Set for every test run of a
# sanitizer build (the variables are read by the sanitizer runtimes at start-up).
SANITIZER_EXIT := 86
ifneq ($(SANITIZER),)
  SANITIZER_ENV := ASAN_OPTIONS=exitcode=$(SANITIZER_EXIT):abort_on_error=0$(if $(ASAN_OPTIONS),:$(ASAN_OPTIONS)) \
                   UBSAN_OPTIONS=exitcode=$(SANITIZER_EXIT):print_stacktrace=1$(if $(UBSAN_OPTIONS),:$(UBSAN_OPTIONS)) \
                   LSAN_OPTIONS=exitcode=$(SANITIZER_EXIT)$(if $(LSAN_OPTIONS),:$(LSAN_OPTIONS))
endif

# Per-ISA flags: only the file of that ISA gets them (the file #errors without them).
FLAGS_avx2     := -mavx2 -mfma -mf16c -ffp-contract=fast
FLAGS_avx512   := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -ffp-contract=fast
FLAGS_avx512bf16 := $(FLAGS_avx512) -mavx512bf16
FLAGS_avx512vnni := $(FLAGS_avx512) -mavx512vnni
FLAGS_neon     := -ffp-contract=fast

# ---- sources -------------------------------------------------------------------
KERNEL_SRC_ALL := $(wildcard kernels/*/*.c)
# A file's ISA is its name up to the first '_' (make's filter takes only one %, so
# kernels/%/avx2_%.c would match nothing): avx2.c and avx2_decode.c are both avx2 files.
file_isa       = $(firstword $(subst _, ,$(basename $(notdir $(1)))))
X86_SRC        := $(foreach f,$(KERNEL_SRC_ALL),$(if $(filter avx2 avx512 avx512bf16 avx512vnni,$(call file_isa,$(f))),$(f)))
NEON_SRC       := $(foreach f,$(KERNEL_SRC_ALL),$(if $(filter neon,$(call file_isa,$(f))),$(f)))
BASE_SRC       := $(filter-out $(X86_SRC) $(NEON_SRC),$(KERNEL_SRC_ALL))
ifeq ($(ARCH),aarch64)
  KERNEL_SRC   := $(BASE_SRC) $(NEON_SRC)
else
  KERNEL_SRC   := $(BASE_SRC) $(X86_SRC)
endif
HARNESS_SRC    := $(filter-out harness/main.c,$(wildcard harness/*.c))
TEST_SRC       := $(wildcard tests/test_*.c)

KERNEL_OBJ  := $(KERNEL_SRC:%.c=$(BUILD)/%.o)
HARNESS_OBJ := $(HARNESS_SRC:%.c=$(BUILD)/%.o)
LIB_OBJ   := $(KERNEL_OBJ) $(HARNESS_OBJ)
MAIN_OBJ  := $(BUILD)/harness/main.o
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
# liblongmix: the kernels, references, dispatch and generator (what `make install` installs,
# static and shared); libharness: the command's own code (CSV, contracts, sweeps), linked
# into build/longmix, the unit tests and the Google Benchmark shim only.
VERSION   := 0.1.0
SOVERSION := 0
LIB       := $(BUILD)/liblongmix.a
SHLIB     := $(BUILD)/liblongmix.so.$(VERSION)
HARNESS_LIB := $(BUILD)/libharness.a
BIN       := $(BUILD)/longmix
UNIT      := $(BUILD)/tests/unit
DEPFILES  := $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# ---- dependencies: scripts/install-deps.sh installs what is missing ----------------
# Its package lists are the one source of truth: a single dpkg query when all are there.
# help and clean need nothing; test-fresh needs only debootstrap on this machine.
DEPS_GOALS := $(filter-out help clean test-fresh,$(or $(MAKECMDGOALS),all))
DEPS_SETS  := $(if $(DEPS_GOALS),host) $(if $(filter aarch64,$(ARCH)),neon) \
              $(if $(filter test-fresh,$(MAKECMDGOALS)),fresh)
ifneq ($(strip $(DEPS_SETS)),)
  $(if $(shell scripts/install-deps.sh $(DEPS_SETS) >&2 && echo ok),,$(error scripts/install-deps.sh $(strip $(DEPS_SETS)) failed; see above))
endif

.PHONY: all run test check test-unit test-cli test-sanitize test-clang test-neon test-slurm \
        test-fresh test-rebuild test-tsan fuzz fuzz-targets verify neon bench gemm-shapes gemv-shapes sweep targets report test-report \
        install uninstall test-install plugins clean help FORCE
.DEFAULT_GOAL := all

all: $(BIN) $(LIB) $(SHLIB) ## Build build/longmix and build/liblongmix.{a,so}

# ---- flags stamp: a change of compiler or flags rebuilds everything ----------------
FLAGS_TEXT := $(CC) $(CFLAGS_ALL) $(LDFLAGS) $(ARCH)
$(BUILD)/flags.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(FLAGS_TEXT)' | cmp -s - $@ || echo '$(FLAGS_TEXT)' > $@

# ---- compile and link ----------------------------------------------------------
isa_of = $(firstword $(subst _, ,$(basename $(notdir $(1)))))
$(BUILD)/%.o: %.c $(BUILD)/flags.stamp
	@mkdir -p $(@D)
	@echo "  CC      $<"
	@$(CC) $(CFLAGS_ALL) $(FLAGS_$(call isa_of,$<)) -MMD -MP -c $< -o $@

# Build metadata for `longmix info` and every results file: git revision, compiler, flags.
# Regenerated each build, replaced only when it changed (so info.o rebuilds only then).
$(BUILD)/build_info.h: FORCE
	@mkdir -p $(@D)
	@scripts/build_info.sh '$(CC)' '$(CFLAGS_ALL)' '$(VERSION)' > $@.tmp && { cmp -s $@.tmp $@ || mv $@.tmp $@; }; rm -f $@.tmp
$(BUILD)/harness/info.o: $(BUILD)/build_info.h
$(BUILD)/harness/info.o: CFLAGS_ALL += -I$(BUILD)

$(LIB): $(KERNEL_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $^

$(HARNESS_LIB): $(HARNESS_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $^

# The shared library: the same objects as the static one, its SONAME the major version.
$(SHLIB): $(KERNEL_OBJ)
	@echo "  LD      $@"
	@$(CC) -shared $(CFLAGS_ALL) $(LDFLAGS) -Wl,-soname,liblongmix.so.$(SOVERSION) \
	  -Wl,--no-undefined $^ -o $@ $(LIB_LDLIBS)

$(BIN): $(MAIN_OBJ) $(HARNESS_LIB) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(UNIT): $(TEST_OBJ) $(HARNESS_LIB) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcriterion

# ---- the README's two commands -------------------------------------------------
RUN_SWEEP_ARGS ?= --kernel all --threads auto --dtype f32,f16,bf16,int8,int4,kivi4,kivi2,kivi4g64,kivi2g64 --reps 5
RUN_CHUNK_ARGS ?= --kernel attn_prefill_window,scan_affine,linear_chunked --ctx 2048 --chunk 16..512 --threads auto --reps 3
RUN_CROSSOVER_ARGS ?= --threads auto
# whole models: a reduced grid (docs/models.md; docs/benchmarks.md gives the full one)
RUN_MODEL_ARGS ?= --preset llama3-8b,mistral-7b,mamba2-2.7b --ctx 1k,8k,32k --prompt 128 --batch 1 --threads cores --reps 2
# The build in parallel (one job per core, JOBS=N to change) even when make was called
# without -j; verify prints one line per contract, the full report goes to results/verify.txt.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
run: ## Install, build (parallel), verify every contract (one line each), measure, report
	@$(MAKE) --no-print-directory -j$(JOBS) $(BIN)
	@mkdir -p results
	@echo "== verify (every check: results/verify.txt)"
	$(RUNNER) $(BIN) verify --summary --output results/verify.txt
	@start=$$(date +%s); fail=0; \
	$(BIN) info --format json > results/info.json && $(BIN) info || fail=1; \
	echo "== roofline"; $(BIN) roofline --out results/roofline.csv || fail=1; \
	echo "== sweep"; $(BIN) sweep $(RUN_SWEEP_ARGS) --out results/sweep.csv || fail=1; \
	$(BIN) sweep $(RUN_CHUNK_ARGS) --out results/sweep.csv --resume || fail=1; \
	echo "== crossover"; $(BIN) crossover $(RUN_CROSSOVER_ARGS) > results/crossover.md || fail=1; \
	cat results/crossover.md; \
	echo "== model"; $(BIN) model $(RUN_MODEL_ARGS) --out results/models.csv \
	  --crossover-out results/model_crossover.csv > results/models.md || fail=1; \
	cat results/models.md; \
	$(BIN) lesson --csv results/lesson || fail=1; \
	$(PYTHON) scripts/report.py results || fail=1; \
	echo "make run: every contract verified; measured in $$(( $$(date +%s) - start )) s$$( [ $$fail = 0 ] || echo ', SOME MEASUREMENTS FAILED (see the report)')."; \
	echo "make run: report in results/report.md (figures results/fig_*.png, data results/*.csv)"; \
	[ $$fail = 0 ]

TEST_FUZZ_SECONDS ?= 30
test: ## Every test: unit + CLI, then ASan+UBSan, clang, TSan, the NEON path under qemu, 30 s of each fuzz target
	$(MAKE) --no-print-directory check
	$(MAKE) --no-print-directory test-sanitize
	$(MAKE) --no-print-directory test-clang
	$(MAKE) --no-print-directory test-tsan
	$(MAKE) --no-print-directory test-neon
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(TEST_FUZZ_SECONDS)
	@echo "make test: all suites passed"

check: test-unit test-cli $(if $(SANITIZER),,test-install) ## Fast: unit, CLI and install tests with the default build

test-unit: $(UNIT) $(BIN) ## Criterion unit suites
	cd $(CURDIR) && $(SANITIZER_ENV) $(RUNNER) $(UNIT) --jobs 2

test-cli: $(BIN) $(PLUGINS) ## End-to-end tests of the real binary
	$(SANITIZER_ENV) LONGMIX=$(BIN) PYTHON=$(PYTHON) bash tests/cli/run.sh

test-sanitize: ## The whole suite under ASan + UBSan (a finding exits 86, not 1 or 2)
	$(MAKE) --no-print-directory SANITIZER=address,undefined BUILD=build/asan OPT=-O1 check

test-clang: ## Build and unit-test with clang 14 (warnings are errors)
	$(MAKE) --no-print-directory CC=clang BUILD=build/clang test-unit

# The kernels' OpenMP drivers and the sweep driver on 2 threads under ThreadSanitizer:
# scripts/test-tsan.sh checks that TSan both catches a race and sees OpenMP's
# synchronisation (Archer), then runs every kernel contract case and a short sweep.
test-tsan: ## ThreadSanitizer (clang, libomp + Archer): every kernel contract case and a sweep, 2 threads
	$(MAKE) --no-print-directory SANITIZER=thread CC=clang BUILD=build/tsan OPT=-O1 build/tsan/longmix
	CC=clang scripts/test-tsan.sh build/tsan/longmix

test-neon: ## Cross-build for AArch64; verify the contracts and check every model layer (model --check) under qemu-aarch64
	$(MAKE) --no-print-directory ARCH=aarch64 neon

# Slurm (scripts/slurm/) and GNU parallel shards against the real tools: a one-node cluster
# the test starts on loopback and stops (needs root; about a minute on 2 cores).
test-slurm: $(BIN) ## Sharded sweeps through a real one-node Slurm cluster and GNU parallel
	scripts/install-deps.sh --slurm --parallel
	LONGMIX=$(BIN) PYTHON=$(PYTHON) timeout 600 bash tests/slurm/run.sh

# The report's tables and figures typeset in a two-column paper with pdflatex (overfull
# boxes fail), fonts checked, pages rendered with pdftoppm (about a minute).
test-report: ## The report's LaTeX tables and PDF figures in a two-column paper (pdflatex)
	scripts/install-deps.sh --latex --figures
	PYTHON=$(PYTHON) timeout 600 bash tests/report/paper.sh

# qemu-aarch64 can hang (see RUNNER); a bounded run fails loudly instead of stalling CI.
neon: $(BIN)
	timeout 1200 $(RUNNER) $(BIN) verify
	timeout 600 $(RUNNER) $(BIN) model --check

# libFuzzer targets (tests/fuzz/fuzz_<target>.c): the harness (readers, loaders, checkers,
# contract-case runners) built with clang, ASan + UBSan and libFuzzer's coverage in
# build/fuzz, linked with the kernels of the default build (gcc -O2, not instrumented: the
# targets fuzz what reads files; memory errors inside kernels are test-sanitize's, which
# runs every contract case under ASan + UBSan; clang's libomp serves gcc's OpenMP calls).
# The case budget is lowered to 256 MiB there (from 1 GiB) so that a case the budget
# accepts stays under the fuzzer's -rss_limit_mb. scripts/fuzz.sh seeds and runs them.
FUZZ_SECONDS    ?= 30
FUZZ_TARGETS    := contract results_csv model
FUZZ_CASE_BYTES := 268435456
FUZZ_KERNELS    ?= $(LIB)
FUZZ_BIN         = $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/fuzz_%)
$(BUILD)/tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(HARNESS_LIB) $(FUZZ_KERNELS) $(BUILD)/flags.stamp
	@mkdir -p $(@D)
	@echo "  FUZZ    $@"
	@$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer $(LDFLAGS) $< $(HARNESS_LIB) $(FUZZ_KERNELS) -o $@ $(LDLIBS)
fuzz-targets: $(FUZZ_BIN)

fuzz: $(LIB) ## Each libFuzzer target of tests/fuzz/ for FUZZ_SECONDS (30) s (clang, ASan+UBSan)
	$(MAKE) --no-print-directory CC=clang SANITIZER=address,undefined BUILD=build/fuzz OPT=-O1 \
	  EXTRA_CFLAGS='-fsanitize=fuzzer-no-link -DLM_CASE_MAX_BYTES=$(FUZZ_CASE_BYTES)' \
	  FUZZ_KERNELS=$(LIB) fuzz-targets
	PYTHON=$(PYTHON) scripts/fuzz.sh build/fuzz $(FUZZ_SECONDS)

test-rebuild: ## Contract builders' bytes under every installed BLAS and NumPy/glibc CPU dispatch
	PYTHON=$(PYTHON) scripts/check-rebuild.sh

# Not part of `make test` (30-60 min, needs root and the network): docs/dependencies.md.
FRESH_ARGS ?=
test-fresh: ## A fresh Debian 12 root (debootstrap): make run + make test inside, timed
	scripts/test-fresh.sh $(FRESH_ARGS)

verify: $(BIN) ## longmix verify on every contract in contracts/SHA256SUMS
	$(BIN) verify

# ---- measurement (docs/benchmarks.md) ---------------------------------------------
GBENCH     := $(BUILD)/longmix-gbench
BENCH_ARGS ?= --benchmark_min_time=0.05
$(GBENCH): harness/gbench_shim.cc harness/gbench_shim.h harness/bench.h $(HARNESS_LIB) $(LIB)
	@echo "  CXX     $@"
	@$(CXX) $(CXXFLAGS_ALL) -fopenmp $(LDFLAGS) $< $(HARNESS_LIB) $(LIB) -o $@ $(LDLIBS) \
	  -lbenchmark -lpthread

bench: $(GBENCH) ## Google Benchmark over every bench-registry kernel -> results/gbench.{json,csv}
	@mkdir -p results
	$(RUNNER) $(GBENCH) --benchmark_out=results/gbench.json --benchmark_out_format=json $(BENCH_ARGS)
	$(PYTHON) scripts/gbench_csv.py results/gbench.json --out results/gbench.csv

# The prefill GEMM at one projection shape (docs/dependencies.md): oneDNN f32 / bf16 / int8, blocked
# and plain weights, 1..T threads, % of the same run's peak; LM_OPENBLAS=.../libopenblas.so.0
# adds that library's cblas_sgemm (dlopen: measured, not linked). GEMM_ARGS="M N K REPS T".
GEMM_SHAPES := $(BUILD)/gemm-shapes
GEMM_ARGS   ?= 512 14336 4096 3 2
$(GEMM_SHAPES): $(BUILD)/tools/gemm_shapes.o $(HARNESS_LIB) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS) $^ -o $@ $(LDLIBS)
gemm-shapes: $(GEMM_SHAPES) ## The prefill GEMM at the Llama MLP shape, f32/bf16/int8, 1-2 threads (~1 min; GEMM_ARGS=)
	$(RUNNER) $(GEMM_SHAPES) $(GEMM_ARGS)

# The decode projection (batch 1 and 8) at the same shape: longmix's GEMV against oneDNN's
# matmul beside the read-only stream, interleaved (docs/dependencies.md).
# GEMV_ARGS="N K REPS T DTYPE M...".
GEMV_SHAPES := $(BUILD)/gemv-shapes
GEMV_ARGS   ?= 14336 4096 9 2 bf16 1 8
$(GEMV_SHAPES): $(BUILD)/tools/gemv_shapes.o $(HARNESS_LIB) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS) $^ -o $@ $(LDLIBS)
gemv-shapes: $(GEMV_SHAPES) ## The decode GEMV (batch 1, 8) vs oneDNN beside the stream, 1-2 threads (~1 min; GEMV_ARGS=)
	$(RUNNER) $(GEMV_SHAPES) $(GEMV_ARGS)

SWEEP_ARGS ?= --preset smoke --threads 1
sweep: $(BIN) ## A small sweep of every registered kernel -> results/sweep.csv (SWEEP_ARGS=...)
	@mkdir -p results
	$(BIN) sweep $(SWEEP_ARGS) --out results/sweep.csv

targets: $(BIN) ## Every issue speed target measured -> results/targets/{*.csv,targets.md} (~10 min)
	LONGMIX=$(BIN) PYTHON=$(PYTHON) scripts/targets.sh results/targets

report: $(BIN) ## results/*.csv -> report.md, tables/*.{md,tex,csv}, figures as PNG/PDF/SVG
	@mkdir -p results
	$(BIN) lesson --csv results/lesson
	$(PYTHON) scripts/report.py results

# ---- example plugins (docs/plugins.md) ------------------------------------------------
# Each examples/plugins/<name>.c is a shared object built against the plugin header alone
# (no liblongmix: a plugin needs longmix's headers, not its library).
PLUGIN_SRC := $(wildcard examples/plugins/*.c)
PLUGINS    := $(PLUGIN_SRC:examples/plugins/%.c=$(BUILD)/plugins/%.so)
PLUGIN_CFLAGS = -std=c17 $(OPT) -g -fPIC -shared -Ikernels/include $(WARNINGS) \
                $(if $(SANITIZER),-fsanitize=$(SANITIZER))

plugins: $(PLUGINS) ## The example plugins (naive, wrong, crash, hang, ...) -> build/plugins/*.so

$(BUILD)/plugins/%.so: examples/plugins/%.c examples/plugins/naive_ops.h kernels/include/longmix_plugin.h $(BUILD)/flags.stamp
	@mkdir -p $(@D)
	@echo "  CC      $@"
	@$(CC) $(PLUGIN_CFLAGS) $< -o $@ -lm

# ---- install (README "Using longmix as a library") ------------------------------------
PREFIX       ?= /usr/local
DESTDIR      ?=
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# The public headers: the roots below and every header they include, installed with the
# layout they have under kernels/ (longmix.h includes the family headers by relative paths,
# ../ssm/ssm.h) into $(INCLUDEDIR)/longmix/; longmix.pc's Cflags name
# $(INCLUDEDIR)/longmix/include, so a program says #include <longmix.h>. The roots are the one
# list to change when the API's headers change.
PUBLIC_HEADERS := kernels/include/longmix.h kernels/include/lm_reduce.h \
                  kernels/include/lm_validate.h kernels/include/longmix_plugin.h
# Every header the roots pull in, as paths under kernels/ (include/longmix.h, ssm/ssm.h, ...).
public_tree = $(sort $(foreach h,$(filter %.h,$(subst \, ,$(shell $(CC) -MM -MT x -Ikernels/include \
              -x c $(PUBLIC_HEADERS)))),$(patsubst kernels/%,%,$(h))))
# A path of longmix.pc, written relative to ${prefix} when it lies under PREFIX.
pc_path = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))
INSTALLED = $(DESTDIR)$(LIBDIR)/liblongmix.a $(DESTDIR)$(LIBDIR)/liblongmix.so.$(VERSION) \
            $(DESTDIR)$(LIBDIR)/liblongmix.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/liblongmix.so \
            $(addprefix $(DESTDIR)$(INCLUDEDIR)/longmix/,$(public_tree)) \
            $(DESTDIR)$(PKGCONFIGDIR)/longmix.pc $(DESTDIR)$(BINDIR)/longmix

install: $(LIB) $(SHLIB) $(BIN) ## Install liblongmix (.a, .so), its headers, longmix.pc, bin/longmix (PREFIX=/usr/local DESTDIR=)
	$(if $(filter /%,$(PREFIX)),,$(error PREFIX must be an absolute path, got '$(PREFIX)'))
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/longmix $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(BINDIR)
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/liblongmix.a
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/liblongmix.so.$(VERSION)
	ln -sf liblongmix.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liblongmix.so.$(SOVERSION)
	ln -sf liblongmix.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/liblongmix.so
	for h in $(public_tree); do install -D -m 644 kernels/$$h $(DESTDIR)$(INCLUDEDIR)/longmix/$$h || exit 1; done
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_path,$(LIBDIR))|' \
	  -e 's|@INCLUDEDIR@|$(call pc_path,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
	  scripts/longmix.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/longmix.pc
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/longmix

uninstall: ## Remove what `make install` installed (same PREFIX= DESTDIR=)
	rm -f $(INSTALLED)
	-cd $(DESTDIR)$(INCLUDEDIR) 2>/dev/null && rmdir -p $(sort $(dir $(addprefix longmix/,$(public_tree)))) 2>/dev/null

test-install: $(LIB) $(SHLIB) $(BIN) ## make install into a scratch root, then build programs against it with pkg-config only
	MAKE="$(MAKE)" BUILD=$(BUILD) CC="$(CC)" bash tests/install/run.sh

clean: ## Remove build/
	rm -rf build

help: ## This list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

FORCE:

-include $(DEPFILES)
