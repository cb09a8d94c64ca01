# Pillars — the entry points a user needs.
#
#   make test    install missing build dependencies (apt-get, as root), then build and test the
#                three configurations, one after the other (what CI runs):
#                  build/               Release, CUDA compiled when nvcc is found (GPU tests skip
#                                       without a GPU)
#                  build-cpu-sanitize/  CPU-only (no CUDA even where nvcc exists), AddressSanitizer
#                                       + UndefinedBehaviorSanitizer, leak detection on
#                  build-fuzz/          clang + libFuzzer + ASan/UBSan, only the fuzz targets of
#                                       tests/fuzz/ (the readers of untrusted files), each run for
#                                       FUZZ_SECONDS (50) from its seed corpus
#   make test-quick     the Release configuration alone (day-to-day; minutes, not half an hour)
#   make test-sanitize  the sanitized CPU-only configuration alone
#   make test-fuzz      the fuzz stage alone (`make test-fuzz FUZZ_SECONDS=600` fuzzes longer)
#   make build   configure + build (Release) into build/
#   make run     the main job: build, prepare Multi30k de→en, train the default experiment on the
#                CPU (926 updates, 2 threads: ~15 minutes on a 2-core Zen 5; it prints its own
#                estimate after 11 updates), evaluate, print the test BLEU
#   make bench   run the benchmarks
#   make clean
BUILD  ?= build
SANITIZE_BUILD ?= build-cpu-sanitize
SANITIZERS ?= address,undefined
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 50
JOBS   ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build build-sanitize build-fuzz test test-quick test-sanitize test-fuzz run bench clean

all: build

deps:
	@./tools/install-deps.sh

build: deps
	@mkdir -p $(BUILD)
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) > $(BUILD)/configure.log 2>&1 \
	  || { cat $(BUILD)/configure.log; exit 1; }
	@grep -E '^-- pillars:' $(BUILD)/configure.log || true
	@cmake --build $(BUILD) -j $(JOBS)

# The CPU-only configuration: a compile error there fails `make test` as surely as a failing test.
build-sanitize: deps
	@mkdir -p $(SANITIZE_BUILD)
	@cmake -S . -B $(SANITIZE_BUILD) -DCMAKE_BUILD_TYPE=Release -DPILLARS_NO_CUDA=ON \
	  -DPILLARS_SANITIZE=$(SANITIZERS) $(CMAKE_FLAGS) > $(SANITIZE_BUILD)/configure.log 2>&1 \
	  || { cat $(SANITIZE_BUILD)/configure.log; exit 1; }
	@grep -E '^-- pillars:' $(SANITIZE_BUILD)/configure.log || true
	@cmake --build $(SANITIZE_BUILD) -j $(JOBS)

# The fuzz targets only (CMakeLists.txt, PILLARS_FUZZ): clang, whatever compiler the others use.
build-fuzz: deps
	@mkdir -p $(FUZZ_BUILD)
	@CC=clang CXX=clang++ cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Release -DPILLARS_FUZZ=ON \
	  -DPILLARS_FUZZ_SECONDS=$(FUZZ_SECONDS) $(CMAKE_FLAGS) > $(FUZZ_BUILD)/configure.log 2>&1 \
	  || { cat $(FUZZ_BUILD)/configure.log; exit 1; }
	@grep -E '^-- pillars:' $(FUZZ_BUILD)/configure.log || true
	@cmake --build $(FUZZ_BUILD) -j $(JOBS)

# One configuration after the other (never both builds at once on a small machine); each prints
# how long it took.
test:
	@t0=$$(date +%s); $(MAKE) --no-print-directory test-quick || exit 1; \
	t1=$$(date +%s); $(MAKE) --no-print-directory test-sanitize || exit 1; \
	t2=$$(date +%s); $(MAKE) --no-print-directory test-fuzz || exit 1; \
	t3=$$(date +%s); \
	echo "pillars: make test took $$((t3 - t0)) s: Release build + tests $$((t1 - t0)) s, sanitized CPU-only build + tests $$((t2 - t1)) s, fuzz build + fuzzing $$((t3 - t2)) s"

# CTest runs $(JOBS) tests at once, each with two OpenMP threads: idle threads sleep instead of
# spinning (OMP_WAIT_POLICY=PASSIVE), so one test's waiting threads do not steal another's core.
TEST_ENV = OMP_NUM_THREADS=$${OMP_NUM_THREADS:-2} OMP_WAIT_POLICY=$${OMP_WAIT_POLICY:-PASSIVE}

test-quick: build
	@echo "pillars: testing $(BUILD)/ (Release)"
	@cd $(BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS)

test-sanitize: build-sanitize
	@echo "pillars: testing $(SANITIZE_BUILD)/ (CPU-only, sanitizers: $(SANITIZERS))"
	@cd $(SANITIZE_BUILD) && $(TEST_ENV) ctest --output-on-failure -j $(JOBS)

# Each fuzz target is one CTest test that fuzzes for FUZZ_SECONDS (one core each).
test-fuzz: build-fuzz
	@echo "pillars: fuzzing in $(FUZZ_BUILD)/ ($(FUZZ_SECONDS) s per target, $(JOBS) at a time)"
	@cd $(FUZZ_BUILD) && ctest --output-on-failure -j $(JOBS)

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
	rm -rf $(BUILD) $(SANITIZE_BUILD) $(FUZZ_BUILD)
