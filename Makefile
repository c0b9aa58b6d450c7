# gpubind: two commands.
#   make run   installs what is missing, builds, launches the example DDP job bound on this
#              machine (a C++ stand-in worker when PyTorch is absent), shows topology, plan
#              and strategy comparison for embedded 8-GPU nodes, measures the strategies with
#              bench, then watches the job run again
#   make test  installs what is missing, builds (warnings are errors), runs every test, then the
#              unit and CLI tests again under AddressSanitizer + UndefinedBehaviorSanitizer, then
#              the fuzz regression; every pass runs, one summary of all failures at the end
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: run test test-load mutation deps deps-build build build-run build-asan test-asan build-fuzz fuzz fuzz-regress bench clean install package

deps:
	@scripts/install-deps.sh

deps-build:
	@scripts/install-deps.sh --build

$(BUILD)/CMakeCache.txt: | deps-build
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARNINGS_AS_ERRORS=ON $(CMAKE_ARGS)

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

# Every pass runs whatever an earlier one did (main build and all its tests, the mutation check,
# the sanitizer build and its tests, the fuzz regression), then one summary names every failure
# (scripts/test-all.sh).
test: deps
	@BUILD=$(BUILD) ASAN_BUILD=$(ASAN_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) MAKE="$(MAKE)" scripts/test-all.sh

# The same under a shared CI machine's load: TEST_LOAD busy CPU workers (stress-ng) beside it.
TEST_LOAD ?= 2
test-load: deps
	@GPUBIND_TEST_LOAD=$(TEST_LOAD) BUILD=$(BUILD) ASAN_BUILD=$(ASAN_BUILD) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) MAKE="$(MAKE)" \
	  scripts/test-all.sh

# Deliberate breakages the suite must fail on (tests/mutation/mutate.py; part of `make test`).
mutation: build
	JOBS=$(JOBS) /usr/bin/python3 tests/mutation/mutate.py $(BUILD)

$(ASAN_BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DWARNINGS_AS_ERRORS=ON -DENABLE_ASAN=ON -DENABLE_UBSAN=ON -DGPUBIND_FAULT_POINTS=ON \
	  -DGPUBIND_BUILD_BENCH=OFF $(CMAKE_ARGS)

build-asan: deps $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j$(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j$(JOBS) -L 'unit|cli|faults'

# Fuzzing (issue 11): libFuzzer targets, one per parser, in a clang build where every layer is
# instrumented (ASan + UBSan). `make fuzz` fuzzes each target for FUZZ_SECONDS on its corpus;
# `make fuzz-regress` (part of `make test`) runs every seed and regression input, then a fixed-
# seed run of a few thousand inputs, so it is deterministic.
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
$(FUZZ_BUILD)/CMakeCache.txt: | deps
	CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE='-O1 -gline-tables-only' -DGPUBIND_FUZZ=ON \
	  -DGPUBIND_BUILD_TESTS=OFF -DGPUBIND_BUILD_BENCH=OFF $(CMAKE_ARGS)

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
	bench/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
