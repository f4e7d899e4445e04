# The two commands: `make demo` (set up, build, run the CPU demo) and
# `make test` (set up, build, run every test, the big matrices sampled; what CI
# runs). `make check` runs the fast tier and lit, `make test-full` every matrix
# case (tests/README.md). `make bench` runs the CPU benchmark.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: setup build demo check test test-full test-gpu bench bench-gpu record-cpu record-cpu-matmul record-cuda-matmul clean \
	check-format check-commits tidy test-asan
setup:
	@scripts/bootstrap.sh
# $(call configure,OPT): optimized at OPT with line tables only (-g1):
# backtraces and sanitizer reports keep file:line, and a build compiles
# about a fifth faster than with full debug info.
configure = -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS_RELWITHDEBINFO="$(1) -g1 -DNDEBUG" \
	-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$(1) -g1 -DNDEBUG"
build: setup
	@cmake -S . -B $(BUILD) $(call configure,-O2) >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
demo: build
	@scripts/demo.sh $(BUILD)
check: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -L 'fast|lit'
test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@scripts/verify_evidence.sh $(BUILD)
	@scripts/check_format.sh
	@scripts/check_commits.sh
test-full: build
	@TESSERA_TEST_FULL=1 ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)
	@scripts/verify_evidence.sh $(BUILD)
bench: build
	@python3 bench/run_cpu_reduce.py --build $(BUILD)
# On a machine with an NVIDIA GPU (the H200 lane): the CUDA suite and benchmark.
test-gpu: build
	@$(BUILD)/tests/tessera_gpu_tests
bench-gpu: build
	@python3 bench/run_cuda_reduce.py --build $(BUILD)
# Record the CPU evidence packet (commit first: a dirty tree is refused).
record-cpu: build
	@python3 bench/anchors.py bench/reduce_cpu.json --target cpu --out $(BUILD)/anchors-cpu.json
	@$(BUILD)/tessera bench bench/reduce_cpu.json --target cpu --anchors $(BUILD)/anchors-cpu.json \
	  --out bench/evidence/cpu/reduce.packet.json
	@$(BUILD)/tessera evidence report bench/evidence
# The CPU matmul packet (tessera vs the openblas candidate vs numpy; commit first).
record-cpu-matmul: build
	@python3 bench/anchors.py bench/matmul_cpu.json --target cpu --out $(BUILD)/anchors-cpu-matmul.json
	@$(BUILD)/tessera bench bench/matmul_cpu.json --target cpu --anchors $(BUILD)/anchors-cpu-matmul.json \
	  --out bench/evidence/cpu/matmul.packet.json
	@$(BUILD)/tessera evidence report bench/evidence
# The CUDA matmul packet, on the GPU machine with a prebuilt $(BUILD)/tessera
# (no build step here; torch and triton for the anchors). Where the tree has
# no git, name the commit and its fingerprint (`tessera evidence fingerprint`
# on the clean checkout): make record-cuda-matmul BUILD=build COMMIT=<sha> FINGERPRINT=<fp>
record-cuda-matmul:
	@python3 bench/anchors.py bench/matmul_cuda.json --target cuda --out $(BUILD)/anchors-cuda-matmul.json
	@$(BUILD)/tessera bench bench/matmul_cuda.json --target cuda --anchors $(BUILD)/anchors-cuda-matmul.json \
	  --out bench/evidence/cuda/matmul.packet.json $(if $(COMMIT),--commit $(COMMIT) --fingerprint $(FINGERPRINT))
	@$(BUILD)/tessera evidence report bench/evidence
clean:
	rm -rf $(BUILD)
# Gates (docs/contributing.md): formatting, commit subjects, clang-tidy.
check-format:
	@scripts/check_format.sh
check-commits:
	@scripts/check_commits.sh $(BASE)
tidy: build
	@cmake --build $(BUILD) --target tidy
# ASan + UBSan (only what it runs is built): the unit tests (toolchain checks left out), lit, a fixed
# sample of the end-to-end tests and two minutes of the IR mutation fuzzer; the kernels compiled at run time are
# sanitized too (TESSERA_CXX=scripts/sanitized_cxx.sh). intercept_tls_get_addr=0:
# the sanitizer runtime's dynamic-TLS tracking misreads glibc's TLS blocks at
# some addresses and LeakSanitizer's tracer then crashes at exit ("Tracer
# caught signal 11", google/sanitizers#1322); run-time kernels keep their
# thread_local scratch in dynamic TLS. Leak checking still covers the heap.
ASAN_BUILD ?= build-asan
# At -O0: the instrumented build is the job's largest part and took half as
# long as at -O1; the fuzzer, slower at -O0, gets two minutes for about as
# many mutants (docs/journal.md). The run-time kernels keep their own flags
# (scripts/sanitized_cxx.sh).
ASAN_E2E ?= Semantics.*:Runtime.*:MatmulErrors.*:MatmulRuntime.*:Fusion*.*:RegionSample.*:All/ReduceMatrix.*/sum_f32_*
test-asan: setup
	@cmake -S . -B $(ASAN_BUILD) $(call configure,-O0) -DTESSERA_SANITIZE=address,undefined >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS) --target tessera tessera_unit_tests tessera_e2e_tests tessera_ir_fuzz
	@cd $(ASAN_BUILD) && export TESSERA_CACHE_DIR=$$PWD/test-cache TESSERA_CXX=$(CURDIR)/scripts/sanitized_cxx.sh \
	  ASAN_OPTIONS=detect_leaks=1:intercept_tls_get_addr=0 UBSAN_OPTIONS=print_stacktrace=1 && \
	  tests/tessera_unit_tests --gtest_filter='-*Hip*:*Nvrtc*:*NVRTC*:*Compile*' && \
	  python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv --param build_dir=$$PWD $(CURDIR)/tests/ir && \
	  tests/tessera_e2e_tests --gtest_filter='$(ASAN_E2E)' && \
	  TESSERA_FUZZ_SECONDS=120 tests/tessera_ir_fuzz
