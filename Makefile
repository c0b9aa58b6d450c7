# gpubind: two commands.
#   make run   installs what is missing, builds, launches the example DDP job bound on this
#              machine (a C++ stand-in worker when PyTorch is absent), shows topology, plan
#              and strategy comparison for embedded 8-GPU nodes, measures the strategies with
#              bench, then watches the job run again
#   make test  installs what is missing, builds (warnings are errors), runs every test, then the
#              unit and CLI tests again under AddressSanitizer + UndefinedBehaviorSanitizer
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: run test deps deps-build build build-asan test-asan build-fuzz fuzz fuzz-regress bench clean install package

deps:
	@scripts/install-deps.sh

deps-build:
	@scripts/install-deps.sh --build

$(BUILD)/CMakeCache.txt: | deps-build
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DWARNINGS_AS_ERRORS=ON $(CMAKE_ARGS)

build: deps-build $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

DDP_RANKS ?= 2

run: build
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
	@echo "== gpubind bench -n $(DDP_RANKS) --steps 100 --noise 2 --plot $(BUILD)/bench.svg (each strategy measured here, two unbound noisy neighbours)"
	@$(BUILD)/src/gpubind bench -n $(DDP_RANKS) --steps 100 --noise 2 --quiet --plot $(BUILD)/bench.svg
	@echo "(the step-time plot: $(BUILD)/bench.svg)"
	@echo
	@echo "== gpubind watch --children-of LAUNCH_PID --duration 4 (the job again, 200 steps, watched while it runs)"
	@if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then \
	  worker="/usr/bin/python3 examples/ddp_train.py --steps 200"; \
	else \
	  worker="$(BUILD)/examples/gpubind_demo_worker --steps 200"; \
	fi; \
	$(BUILD)/src/gpubind launch -n $(DDP_RANKS) -- $$worker >/dev/null 2>&1 & job=$$!; \
	$(BUILD)/src/gpubind watch --children-of $$job --duration 4 --interval 1; rc=$$?; \
	wait $$job; [ $$rc -eq 0 ] || [ $$rc -eq 3 ]

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	$(MAKE) --no-print-directory test-asan
	$(MAKE) --no-print-directory fuzz-regress

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
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# make package: a Debian package (build/gpubind_VERSION_ARCH.deb) from CPack.
package: build
	cd $(BUILD) && cpack -G DEB

bench: build
	bench/bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
