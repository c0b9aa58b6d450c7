# gpubind: two commands, three tiers.
#   make run       installs what is missing, builds, launches the example DDP job bound on this
#                  machine (a C++ stand-in worker when PyTorch is absent), shows topology, plan
#                  and strategy comparison for embedded 8-GPU nodes, measures the strategies with
#                  bench, then watches the job run again
#   make test      installs what is missing, builds (warnings are errors), runs every test that
#                  needs no VM (unit, CLI, lint, live, integration with Slurm, podman, Prometheus
#                  and packaging), the unit and fault tests under AddressSanitizer +
#                  UndefinedBehaviorSanitizer, and the fuzz regression; every pass runs, one
#                  summary of all failures at the end
#   make check     the edit loop: an incremental build, then the unit tests, the CLI goldens and
#                  the lints
#   make test-all  make test, plus the qemu tier, the mutation check, every CLI case under the
#                  sanitizers and the live and integration tests beside busy CPU workers (.ci/run)
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# The generator of a build directory configured here: Ninja where it is installed (install-deps.sh
# installs it; docs/PERFORMANCE.md: the main build in 351 s instead of 420 s on 2 vCPUs), else
# CMake's Makefiles. Read when the directory is configured, after the packages are installed; a
# directory keeps the generator it was configured with.
GENERATOR   = $$(command -v ninja >/dev/null && echo -GNinja)

.PHONY: run check test test-all test-load mutation build-asan-unit fuzz-replay deps deps-build build build-run build-asan test-asan build-fuzz fuzz fuzz-regress bench clean install package

deps:
	@scripts/install-deps.sh

deps-build:
	@scripts/install-deps.sh --build

$(BUILD)/CMakeCache.txt: | deps-build
	cmake -S . -B $(BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARNINGS_AS_ERRORS=ON $(CMAKE_ARGS)

build: deps-build $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

# Only what `make run` runs: the binary with its modules and the stand-in worker (not the tests and
# benchmarks `make test` builds), so a newcomer's first command compiles a third as much.
build-run: deps-build $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) --target gpubind gpubind_demo_worker

DDP_RANKS ?= 2
# The watched job steps for this long, twice watch's 4 s, whatever the machine's speed (a step
# count finished in 0.15 s on a fast CPU, before watch's first sample).
WATCH_JOB_SECONDS ?= 8

run: build-run
	@echo "== gpubind topo (this machine)"
	@$(BUILD)/src/gpubind topo
	@echo
	@if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then \
	  echo "== gpubind launch -n $(DDP_RANKS) --tag-output -- /usr/bin/python3 examples/ddp_train.py (PyTorch DDP, gloo)"; \
	  $(BUILD)/src/gpubind launch -n $(DDP_RANKS) --tag-output -- /usr/bin/python3 examples/ddp_train.py --steps 20; \
	else \
	  echo "== gpubind launch -n $(DDP_RANKS) --tag-output -- gpubind_demo_worker (PyTorch not installed)"; \
	  $(BUILD)/src/gpubind launch -n $(DDP_RANKS) --tag-output -- $(BUILD)/examples/gpubind_demo_worker --steps 20; \
	fi
	@echo
	@echo "== gpubind topo --topology example:dgx-h100 --format matrix (embedded DGX H100-like node)"
	@$(BUILD)/src/gpubind topo --topology example:dgx-h100 --format matrix
	@echo
	@echo "== gpubind plan --topology example:dgx-h100"
	@$(BUILD)/src/gpubind plan --topology example:dgx-h100
	@echo
	@echo "== gpubind compare --topology example:dgx-a100-nps4 (8 GPUs on 4 of 8 NUMA nodes)"
	@$(BUILD)/src/gpubind compare --topology example:dgx-a100-nps4
	@echo
	@echo "== gpubind bench --strategies closest,cpu-only,none --steps 500 --noise 1 (measured here: a noise process roaming, and kept on a reserved CPU; the verdicts and what this machine cannot show)"
	@$(BUILD)/src/gpubind bench --strategies closest,cpu-only,none --steps 500 --noise 1 --quiet --plot $(BUILD)/bench.svg
	@echo "(the step-time plot: $(BUILD)/bench.svg)"
	@echo
	@echo "== gpubind watch --children-of LAUNCH_PID --duration 4 (the job again, $(WATCH_JOB_SECONDS) s of steps, watched while it runs)"
	@if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then \
	  worker="/usr/bin/python3 examples/ddp_train.py --seconds $(WATCH_JOB_SECONDS)"; \
	 else \
	  worker="$(BUILD)/examples/gpubind_demo_worker --seconds $(WATCH_JOB_SECONDS)"; \
	 fi; \
	$(BUILD)/src/gpubind launch -n $(DDP_RANKS) -- $$worker >/dev/null 2>&1 & job=$$!; \
	$(BUILD)/src/gpubind watch --children-of $$job --duration 4 --interval 1; rc=$$?; \
	wait $$job; jrc=$$?; [ $$jrc -eq 0 ] || echo "make run: the watched job exited $$jrc" >&2; \
	{ [ $$rc -eq 0 ] || [ $$rc -eq 3 ]; } && [ $$jrc -eq 0 ]

# After every edit: what builds incrementally, then the tests that need nothing but the build.
check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -L 'unit|cli|lint'

# Every pass runs whatever an earlier one did (main build and its tests, the sanitizer build and
# its tests, the fuzz regression), then one summary names every failure (scripts/test-all.sh).
TEST_LOAD ?= 2
test: deps
	@TIER=test BUILD=$(BUILD) ASAN_BUILD=$(ASAN_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) MAKE="$(MAKE)" scripts/test-all.sh

# make test with the slow passes: the qemu tier, the mutation check, the CLI cases under the
# sanitizers, and a load pass (TEST_LOAD busy CPU workers beside the live and integration tests).
test-all: deps
	@TIER=all TEST_LOAD=$(TEST_LOAD) BUILD=$(BUILD) ASAN_BUILD=$(ASAN_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) MAKE="$(MAKE)" \
	  scripts/test-all.sh

# The whole of test-all under a shared CI machine's load: TEST_LOAD busy CPU workers beside it.
test-load: deps
	@GPUBIND_TEST_LOAD=$(TEST_LOAD) TIER=all BUILD=$(BUILD) ASAN_BUILD=$(ASAN_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) MAKE="$(MAKE)" \
	  scripts/test-all.sh

# Deliberate breakages the suite must fail on (tests/mutation/mutate.py; part of `make test`).
mutation: build
	JOBS=$(JOBS) /usr/bin/python3 tests/mutation/mutate.py $(BUILD)

$(ASAN_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Debug -DWARNINGS_AS_ERRORS=ON -DENABLE_ASAN=ON -DENABLE_UBSAN=ON -DGPUBIND_FAULT_POINTS=ON \
	  -DGPUBIND_BUILD_BENCH=OFF -DGPUBIND_FUZZ_REPLAY=ON -DGPUBIND_UNITY_BUILD=ON $(CMAKE_ARGS)

build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j$(JOBS)

# Only the programs the sanitizer passes of `make test` run: the unit tests, the binary the fault
# tests inject into and the fuzz targets' replay programs (the CLI cases under the sanitizers are
# test-all's).
build-asan-unit: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j$(JOBS) --target gpubind_unit_programs fuzz_targets

# Every fuzz target's seed and regression inputs once, under ASan and UBSan, in the sanitizer
# build (gcc; no libFuzzer): make test's fuzz pass. make fuzz-regress adds libFuzzer's fixed-seed run.
fuzz-replay: build-asan-unit
	scripts/fuzz.sh $(ASAN_BUILD) replay

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -L 'unit|cli|faults' -LE lint

# Fuzzing (issue 11): libFuzzer targets, one per parser, in a clang build where every layer is
# instrumented (ASan + UBSan). `make fuzz` fuzzes each target for FUZZ_SECONDS on its corpus;
# `make fuzz-regress` (part of `make test`) runs every seed and regression input, then a fixed-
# seed run of a few thousand inputs, so it is deterministic.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
$(FUZZ_BUILD)/CMakeCache.txt: | deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) $(GENERATOR) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE='-O1 -gline-tables-only' -DGPUBIND_FUZZ=ON \
	  -DGPUBIND_BUILD_TESTS=OFF -DGPUBIND_BUILD_BENCH=OFF -DGPUBIND_UNITY_BUILD=ON $(CMAKE_ARGS)

build-fuzz: deps $(FUZZ_BUILD)/CMakeCache.txt
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzz_targets

fuzz: build-fuzz
	scripts/fuzz.sh $(FUZZ_BUILD) fuzz $(FUZZ_SECONDS)

fuzz-regress: build-fuzz
	scripts/fuzz.sh $(FUZZ_BUILD) regress

# make install [PREFIX=/usr/local] [DESTDIR=/staging]: binary, SPANK plugin (Slurm's plugin
# dir under PREFIX), man pages, bash/zsh completion, deploy/ examples.
PREFIX ?= /usr/local
# DEBUG_FILES=no: installed stripped without the debug files in PREFIX/lib/debug.
DEBUG_FILES ?= yes
install: build
	GPUBIND_DEBUG_FILES=$(DEBUG_FILES) cmake --install $(BUILD) --prefix $(PREFIX)

# make package: a Debian package (build/gpubind_VERSION_ARCH.deb) from CPack.
package: build
	cd $(BUILD) && cpack -G DEB

bench: build
	benchmarks/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
