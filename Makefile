# Pillars — the entry points a user needs.
#
#   make test    install missing build dependencies (apt-get, as root), build, run every test
#   make build   configure + build (Release) into build/
#   make run     the main job: build, prepare Multi30k de→en, train the default experiment on the
#                CPU, evaluate, print the test BLEU (≤ 20 minutes on 2 cores)
#   make bench   run the benchmarks
#   make clean
BUILD  ?= build
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test run bench clean

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

# The offline dataset mirror, when it sits beside the repository (as in CI); otherwise files come
# from $$PILLARS_CACHE or are downloaded (`pillars data list` shows what is where).
PILLARS_DATA ?= $(if $(wildcard ../shared/datasets),$(abspath ../shared/datasets),)
export PILLARS_DATA
RUN_EXPERIMENT ?= experiments/multi30k-de-en.json
RUN_DIR ?= runs/multi30k-de-en

run: deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD)/configure.log 2>&1 \
	  || { cat $(BUILD)/configure.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS) --target pillars
	@rm -rf $(RUN_DIR)
	@$(BUILD)/pillars data prepare multi30k-de-en
	@$(BUILD)/pillars train $(RUN_EXPERIMENT) --out $(RUN_DIR)

bench: build
	@$(BUILD)/pillars bench gemm
	@$(BUILD)/pillars bench attention
	@$(BUILD)/pillars bench step

clean:
	rm -rf $(BUILD)
