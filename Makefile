# Pillars — the entry points a user needs.
#
#   make test    install missing build dependencies (apt-get, as root), build, run every test
#   make build   configure + build (Release) into build/
#   make bench   run the benchmarks
#   make clean
BUILD  ?= build
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test bench clean

all: build

deps:
	@./tools/install-deps.sh

build: deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD)/configure.log 2>&1 \
	  || { cat $(BUILD)/configure.log; exit 1; }
	@grep -E '^-- pillars:' $(BUILD)/configure.log || true
	@cmake --build $(BUILD) -j $(JOBS)

test: build
	@cd $(BUILD) && OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} ctest --output-on-failure -j $(JOBS)

bench: build
	@$(BUILD)/pillars bench gemm
	@$(BUILD)/pillars bench attention
	@$(BUILD)/pillars bench step

clean:
	rm -rf $(BUILD)
