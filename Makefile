# longmix — one Makefile. `make help` lists the targets.
#
#   make                build build/longmix and build/liblongmix.{a,so}
#   make install        PREFIX=/usr/local DESTDIR= (README "Using longmix as a library")
#   make SANITIZER=address,undefined BUILD=build/asan test-unit
#   make CC=clang       the same with clang
#   make ARCH=aarch64   cross-build the NEON path (BUILD defaults to build/aarch64)

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
LDLIBS    := -ljansson -lnettle -lsleef -lhwloc -lm -lpthread
LIB_LDLIBS := -lsleef -lm   # what liblongmix itself needs (with -fopenmp's libgomp)
ifneq ($(SANITIZER),)
  CFLAGS_ALL += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDFLAGS    += -fsanitize=$(SANITIZER)
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

# ---- dependencies: install from Debian when a header or tool is missing ----------
HOST_TRIPLET := $(shell uname -m)-linux-gnu
DEP_FILES := /usr/include/jansson.h /usr/include/nettle/sha2.h /usr/include/$(HOST_TRIPLET)/sleef.h \
             /usr/bin/clang /usr/lib/python3/dist-packages/numpy /usr/lib/python3/dist-packages/matplotlib \
             /usr/include/hwloc.h /usr/include/criterion/criterion.h \
             /usr/include/benchmark/benchmark.h /usr/bin/pkg-config
MISSING_DEPS := $(strip $(foreach f,$(DEP_FILES),$(if $(wildcard $(f)),,$(f))))
ifneq ($(MISSING_DEPS),)
  $(info longmix: missing $(MISSING_DEPS); running scripts/install-deps.sh)
  $(if $(shell scripts/install-deps.sh >&2 && echo ok),,$(error scripts/install-deps.sh failed; see above))
endif
ifeq ($(ARCH),aarch64)
  NEON_DEP_FILES := /usr/bin/aarch64-linux-gnu-gcc /usr/bin/qemu-aarch64 /usr/lib/aarch64-linux-gnu/libsleef.so \
                    /usr/lib/aarch64-linux-gnu/libjansson.so /usr/lib/aarch64-linux-gnu/libnettle.so \
                    /usr/lib/aarch64-linux-gnu/libhwloc.so /usr/lib/aarch64-linux-gnu/libgomp.so.1
  ifneq ($(strip $(foreach f,$(NEON_DEP_FILES),$(if $(wildcard $(f)),,$(f)))),)
    $(if $(shell scripts/install-deps.sh --neon >&2 && echo ok),,$(error scripts/install-deps.sh --neon failed))
  endif
endif

.PHONY: all run test check test-unit test-cli test-sanitize test-clang test-neon verify \
        neon bench sweep targets report install uninstall test-install clean help FORCE
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
	@scripts/build_info.sh '$(CC)' '$(CFLAGS_ALL)' > $@.tmp && { cmp -s $@.tmp $@ || mv $@.tmp $@; }; rm -f $@.tmp
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
RUN_CHUNK_ARGS ?= --kernel attn_prefill_window,affine_scan,linear_chunked --ctx 2048 --chunk 16..512 --threads auto --reps 3
RUN_CROSSOVER_ARGS ?= --threads auto
run: $(BIN) ## Install, build, verify every contract, measure (~5 min on 2 cores), report
	$(RUNNER) $(BIN) verify
	@mkdir -p results
	@start=$$(date +%s); fail=0; \
	$(BIN) info --format json > results/info.json && $(BIN) info || fail=1; \
	echo "== roofline"; $(BIN) roofline --out results/roofline.csv || fail=1; \
	echo "== sweep"; $(BIN) sweep $(RUN_SWEEP_ARGS) --out results/sweep.csv || fail=1; \
	$(BIN) sweep $(RUN_CHUNK_ARGS) --out results/sweep.csv --resume || fail=1; \
	echo "== crossover"; $(BIN) crossover $(RUN_CROSSOVER_ARGS) > results/crossover.md || fail=1; \
	cat results/crossover.md; \
	$(BIN) lesson --csv results/lesson || fail=1; \
	$(PYTHON) scripts/report.py results || fail=1; \
	echo "make run: every contract verified; measured in $$(( $$(date +%s) - start )) s$$( [ $$fail = 0 ] || echo ', SOME MEASUREMENTS FAILED (see the report)')."; \
	echo "make run: report in results/report.md (figures results/fig_*.png, data results/*.csv)"; \
	[ $$fail = 0 ]

test: ## Every test: unit + CLI, then ASan+UBSan, clang, and the NEON path under qemu
	$(MAKE) --no-print-directory check
	$(MAKE) --no-print-directory test-sanitize
	$(MAKE) --no-print-directory test-clang
	$(MAKE) --no-print-directory test-neon
	@echo "make test: all suites passed"

check: test-unit test-cli $(if $(SANITIZER),,test-install) ## Fast: unit, CLI and install tests with the default build

test-unit: $(UNIT) $(BIN) ## Criterion unit suites
	cd $(CURDIR) && $(RUNNER) $(UNIT) --jobs 2

test-cli: $(BIN) ## End-to-end tests of the real binary
	LONGMIX=$(BIN) PYTHON=$(PYTHON) bash tests/cli/run.sh

test-sanitize: ## The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
	$(MAKE) --no-print-directory SANITIZER=address,undefined BUILD=build/asan OPT=-O1 check

test-clang: ## Build and unit-test with clang 14 (warnings are errors)
	$(MAKE) --no-print-directory CC=clang BUILD=build/clang test-unit

test-neon: ## Cross-build for AArch64 and verify the contracts under qemu-aarch64
	$(MAKE) --no-print-directory ARCH=aarch64 neon

# qemu-aarch64 can hang (see RUNNER); a bounded run fails loudly instead of stalling CI.
neon: $(BIN)
	timeout 1200 $(RUNNER) $(BIN) verify

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

SWEEP_ARGS ?= --preset smoke --threads 1
sweep: $(BIN) ## A small sweep of every registered kernel -> results/sweep.csv (SWEEP_ARGS=...)
	@mkdir -p results
	$(BIN) sweep $(SWEEP_ARGS) --out results/sweep.csv

targets: $(BIN) ## Every issue speed target measured -> results/targets/{*.csv,targets.md} (~10 min)
	LONGMIX=$(BIN) PYTHON=$(PYTHON) scripts/targets.sh results/targets

report: $(BIN) ## results/*.csv -> results/report.md + PNGs (scripts/report.py, plot.py)
	@mkdir -p results
	$(BIN) lesson --csv results/lesson
	$(PYTHON) scripts/report.py results

# ---- install (README "Using longmix as a library") ------------------------------------
PREFIX       ?= /usr/local
DESTDIR      ?=
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# The public headers, the one list to change when the API's headers change: installed flat
# into $(INCLUDEDIR)/longmix/ (longmix.pc's Cflags name that folder: #include <longmix.h>).
# lm_ops.h and lm_ops_types.h stay out: they include family headers by relative paths
# (../ssm/ssm.h) that an installed copy would not have.
PUBLIC_HEADERS := kernels/include/longmix.h kernels/include/lm_reduce.h \
                  kernels/include/lm_validate.h
# A path of longmix.pc, written relative to ${prefix} when it lies under PREFIX.
pc_path = $(if $(filter $(PREFIX)/%,$(1)),$${prefix}/$(patsubst $(PREFIX)/%,%,$(1)),$(1))
INSTALLED = $(DESTDIR)$(LIBDIR)/liblongmix.a $(DESTDIR)$(LIBDIR)/liblongmix.so.$(VERSION) \
            $(DESTDIR)$(LIBDIR)/liblongmix.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/liblongmix.so \
            $(addprefix $(DESTDIR)$(INCLUDEDIR)/longmix/,$(notdir $(PUBLIC_HEADERS))) \
            $(DESTDIR)$(PKGCONFIGDIR)/longmix.pc $(DESTDIR)$(BINDIR)/longmix

install: $(LIB) $(SHLIB) $(BIN) ## Install liblongmix (.a, .so), its headers, longmix.pc, bin/longmix (PREFIX=/usr/local DESTDIR=)
	$(if $(filter /%,$(PREFIX)),,$(error PREFIX must be an absolute path, got '$(PREFIX)'))
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/longmix $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(BINDIR)
	install -m 644 $(LIB) $(DESTDIR)$(LIBDIR)/liblongmix.a
	install -m 755 $(SHLIB) $(DESTDIR)$(LIBDIR)/liblongmix.so.$(VERSION)
	ln -sf liblongmix.so.$(VERSION) $(DESTDIR)$(LIBDIR)/liblongmix.so.$(SOVERSION)
	ln -sf liblongmix.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/liblongmix.so
	install -m 644 $(PUBLIC_HEADERS) $(DESTDIR)$(INCLUDEDIR)/longmix/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(call pc_path,$(LIBDIR))|' \
	  -e 's|@INCLUDEDIR@|$(call pc_path,$(INCLUDEDIR))|' -e 's|@VERSION@|$(VERSION)|' \
	  scripts/longmix.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/longmix.pc
	install -m 755 $(BIN) $(DESTDIR)$(BINDIR)/longmix

uninstall: ## Remove what `make install` installed (same PREFIX= DESTDIR=)
	rm -f $(INSTALLED)
	-rmdir $(DESTDIR)$(INCLUDEDIR)/longmix 2>/dev/null

test-install: $(LIB) $(SHLIB) $(BIN) ## make install into a scratch root, then build programs against it with pkg-config only
	MAKE="$(MAKE)" BUILD=$(BUILD) CC="$(CC)" bash tests/install/run.sh

clean: ## Remove build/
	rm -rf build

help: ## This list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

FORCE:

-include $(DEPFILES)
