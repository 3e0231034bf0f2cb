# Thin wrapper over CMake. The first two targets are the README's.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
GPU_BUILD  ?= build-gpu
SIM_BUILD  ?= build-sim
SIM_ASAN_BUILD ?= build-sim-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=
# Warnings are errors here and in CI; a plain CMake build (a packager's) leaves them warnings.
WERROR     ?= ON
CLANG_BUILD ?= build-clang
REL_BUILD  ?= build-release
FUZZ_SECONDS ?= 3600
SOAK_SECONDS ?= 1800
SOAK_OUT   ?= $(BUILD)/soak.json
PREFIX     ?= /usr/local

.PHONY: all run test deps deps-run build configure install test-unit build-asan test-asan build-sim test-sim build-sim-asan build-release build-clang fuzz-smoke fuzz soak format format-check bench bench-peer gpu clean

all: build

# PORT=N or LISTEN=HOST:PORT: where orchd listens (default 127.0.0.1:8080). Builds only
# what running needs, quietly (scripts/build_run.sh); 'make build' builds everything.
run: deps-run
	@PORT="$(PORT)" LISTEN="$(LISTEN)" scripts/run.sh --check "$(BUILD)"
	@WERROR="$(WERROR)" JOBS="$(JOBS)" CMAKE_ARGS="$(CMAKE_ARGS)" scripts/build_run.sh "$(BUILD)"
	@PORT="$(PORT)" LISTEN="$(LISTEN)" scripts/run.sh "$(BUILD)"

test: deps
	@scripts/test.sh

deps:
	@scripts/deps.sh test

deps-run:
	@scripts/deps.sh run

configure:
	cmake -S . -B $(BUILD) -DORCH_WERROR=$(WERROR) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j$(JOBS)

# Programs, systemd unit, sysusers/tmpfiles snippets, config (scripts/install.sh).
# DESTDIR=DIR stages into DIR for a package.
install: deps
	cmake -S . -B $(BUILD) -DORCH_WERROR=$(WERROR) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j$(JOBS)
	scripts/install.sh "$(BUILD)"

test-unit: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

build-asan:
	cmake -S . -B $(ASAN_BUILD) -DORCH_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Debug -DORCH_SANITIZE=ON -DORCH_CUDA=OFF
	cmake --build $(ASAN_BUILD) -j$(JOBS)

test-asan: build-asan
	cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS) -L 'unit|integration' -LE slow

# The simulated CUDA device under ASan+UBSan (cuda/sim/README.md): sim_test's kernels
# that read out of bounds or overflow an index, reported with kernel and thread.
build-sim-asan:
	cmake -S . -B $(SIM_ASAN_BUILD) -DORCH_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Debug -DORCH_SANITIZE=ON -DORCH_CUDA=SIM
	cmake --build $(SIM_ASAN_BUILD) -j$(JOBS) --target sim_test cost_test

# The simulated CUDA device (cuda/sim/README.md): the GPU tests' binaries and the
# programs they start, built from the real cuda/ sources for the CPU; test-sim runs
# every GPU test there (ctest -L gpu: the kernels, the backend, orchd on cuda:0, the mutants).
build-sim:
	cmake -S . -B $(SIM_BUILD) -DORCH_WERROR=$(WERROR) -DORCH_CUDA=SIM $(CMAKE_ARGS)
	cmake --build $(SIM_BUILD) -j$(JOBS) --target gpu-tests

test-sim: build-sim
	cd $(SIM_BUILD) && ctest --output-on-failure -j$(JOBS) -L gpu

# The other compilers and optimisation levels a packager may use (make test
# builds both): -O3 Release with gcc, and clang; warnings are errors in both.
build-release:
	cmake -S . -B $(REL_BUILD) -DORCH_WERROR=$(WERROR) -DCMAKE_BUILD_TYPE=Release -DORCH_CUDA=OFF -DBUILD_TESTING=OFF
	cmake --build $(REL_BUILD) -j$(JOBS)

build-clang:
	CC=clang cmake -S . -B $(CLANG_BUILD) -DORCH_WERROR=$(WERROR) -DORCH_CUDA=OFF
	cmake --build $(CLANG_BUILD) -j$(JOBS)

# libFuzzer (clang): FUZZ_SECONDS per target; 'make fuzz-smoke' is the short CI run.
fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DORCH_WERROR=$(WERROR) -DORCH_FUZZ=ON -DORCH_CUDA=OFF -DBUILD_TESTING=OFF
	cmake --build $(FUZZ_BUILD) -j$(JOBS) --target fuzzers
	scripts/fuzz.sh "$(FUZZ_BUILD)" $(FUZZ_SECONDS)

fuzz-smoke:
	$(MAKE) fuzz FUZZ_SECONDS=15

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cu')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h' '*.cu')

# orchd under load for SOAK_SECONDS, its worker SIGKILLed every 90-150 s; fails on a
# stream without its terminal event, leaked descriptors or a growing RSS
# (tests/soak/soak.py, docs/building.md "Soak"). The report: SOAK_OUT.
soak: build
	SOAK_SECONDS=$(SOAK_SECONDS) SOAK_OUT=$(SOAK_OUT) tests/soak/soak.py "$(BUILD)/bin"

bench: build
	bench/run.sh "$(BUILD)"

# orch beside llama.cpp on the same files, interleaved (bench/peer/peer.sh says
# what it fetches, builds and runs; the first run builds llama-bench: long on 2 cores).
bench-peer: build
	BUILD="$(BUILD)" bench/peer/peer.sh all

# Every GPU test and benchmark in one go (see tests/gpu/run.sh).
gpu:
	tests/gpu/run.sh build test orchd bench sanitize

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(GPU_BUILD) $(SIM_BUILD) $(SIM_ASAN_BUILD) $(REL_BUILD) $(CLANG_BUILD) build-ccache
