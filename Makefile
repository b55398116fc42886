# longmix — one Makefile. `make help` lists the targets.
#
#   make                build build/longmix and build/liblongmix.a
#   make SANITIZER=address,undefined BUILD=build/asan test-unit
#   make CC=clang       the same with clang
#   make ARCH=aarch64   cross-build the NEON path (BUILD defaults to build/aarch64)

ARCH      ?= $(shell uname -m)
ifeq ($(ARCH),aarch64)
  ifneq ($(shell uname -m),aarch64)
    CC    := aarch64-linux-gnu-gcc
    CXX   := aarch64-linux-gnu-g++
    RUNNER ?= qemu-aarch64 -L /usr/aarch64-linux-gnu
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
CFLAGS_ALL = -std=c17 $(OPT) -g -fopenmp -ffp-contract=off -D_POSIX_C_SOURCE=200809L \
             -Ikernels/include $(WARNINGS) $(EXTRA_CFLAGS)
CXXFLAGS_ALL = -std=c++17 $(OPT) -g -Ikernels/include -Iharness -Wall -Wextra -Werror
LDLIBS    := -ljansson -lnettle -lsleef -lhwloc -lm -lpthread
ifneq ($(SANITIZER),)
  CFLAGS_ALL += -fsanitize=$(SANITIZER) -fno-omit-frame-pointer -fno-sanitize-recover=all
  LDFLAGS    += -fsanitize=$(SANITIZER)
endif

# Per-ISA flags: only the file of that ISA gets them (the file #errors without them).
FLAGS_avx2     := -mavx2 -mfma -mf16c -ffp-contract=fast
FLAGS_avx512   := -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c -ffp-contract=fast
FLAGS_avx512bf16 := $(FLAGS_avx512) -mavx512bf16
FLAGS_neon     := -ffp-contract=fast

# ---- sources -------------------------------------------------------------------
KERNEL_SRC_ALL := $(wildcard kernels/*/*.c)
X86_SRC        := $(filter kernels/%/avx2.c kernels/%/avx2_%.c kernels/%/avx512.c kernels/%/avx512_%.c \
                   kernels/%/avx512bf16.c kernels/%/avx512bf16_%.c,$(KERNEL_SRC_ALL))
NEON_SRC       := $(filter kernels/%/neon.c kernels/%/neon_%.c,$(KERNEL_SRC_ALL))
BASE_SRC       := $(filter-out $(X86_SRC) $(NEON_SRC),$(KERNEL_SRC_ALL))
ifeq ($(ARCH),aarch64)
  KERNEL_SRC   := $(BASE_SRC) $(NEON_SRC)
else
  KERNEL_SRC   := $(BASE_SRC) $(X86_SRC)
endif
HARNESS_SRC    := $(filter-out harness/main.c,$(wildcard harness/*.c))
TEST_SRC       := $(wildcard tests/test_*.c)

LIB_OBJ   := $(KERNEL_SRC:%.c=$(BUILD)/%.o) $(HARNESS_SRC:%.c=$(BUILD)/%.o)
MAIN_OBJ  := $(BUILD)/harness/main.o
TEST_OBJ  := $(TEST_SRC:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/liblongmix.a
BIN       := $(BUILD)/longmix
UNIT      := $(BUILD)/tests/unit
DEPFILES  := $(LIB_OBJ:.o=.d) $(MAIN_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

# ---- dependencies: install from Debian when a header or tool is missing ----------
DEP_FILES := /usr/include/jansson.h /usr/include/nettle/sha2.h /usr/include/x86_64-linux-gnu/sleef.h \
             /usr/include/hwloc.h /usr/include/criterion/criterion.h \
             /usr/include/benchmark/benchmark.h /usr/bin/pkg-config
MISSING_DEPS := $(strip $(foreach f,$(DEP_FILES),$(if $(wildcard $(f)),,$(f))))
ifneq ($(MISSING_DEPS),)
  $(info longmix: missing $(MISSING_DEPS); running scripts/install-deps.sh)
  $(if $(shell scripts/install-deps.sh >&2 && echo ok),,$(error scripts/install-deps.sh failed; see above))
endif
ifeq ($(ARCH),aarch64)
  ifeq ($(wildcard /usr/bin/aarch64-linux-gnu-gcc /usr/bin/qemu-aarch64 /usr/lib/aarch64-linux-gnu/libsleef.so),)
    $(if $(shell scripts/install-deps.sh --neon >&2 && echo ok),,$(error scripts/install-deps.sh --neon failed))
  endif
endif

.PHONY: all run test check test-unit test-cli test-sanitize test-clang test-neon verify \
        neon bench sweep report clean help FORCE
.DEFAULT_GOAL := all

all: $(BIN) $(LIB) ## Build build/longmix and build/liblongmix.a

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

$(LIB): $(LIB_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	@ar rcs $@ $^

$(BIN): $(MAIN_OBJ) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS) $^ -o $@ $(LDLIBS)

$(UNIT): $(TEST_OBJ) $(LIB)
	@echo "  LD      $@"
	@$(CC) $(CFLAGS_ALL) $(LDFLAGS) $^ -o $@ $(LDLIBS) -lcriterion

# ---- the README's two commands -------------------------------------------------
run: $(BIN) ## Install what is missing, build, verify every contract
	$(RUNNER) $(BIN) verify
	@echo "make run: every contract verified"

test: ## Every test: unit + CLI, then ASan+UBSan, clang, and the NEON path under qemu
	$(MAKE) --no-print-directory check
	$(MAKE) --no-print-directory test-sanitize
	$(MAKE) --no-print-directory test-clang
	$(MAKE) --no-print-directory test-neon
	@echo "make test: all suites passed"

check: test-unit test-cli ## Fast: unit tests and CLI tests with the default build

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

neon: $(BIN)
	$(RUNNER) $(BIN) verify

verify: $(BIN) ## longmix verify on every contract in contracts/SHA256SUMS
	$(BIN) verify

clean: ## Remove build/
	rm -rf build

help: ## This list
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

FORCE:

-include $(DEPFILES)
