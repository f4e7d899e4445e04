# The two commands: `make demo` (set up, build, run the CPU demo) and
# `make test` (set up, build, run every test). `make bench` runs the CPU benchmark.
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: setup build demo test test-gpu bench bench-gpu clean
setup:
	@scripts/bootstrap.sh
build: setup
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)
demo: build
	@scripts/demo.sh $(BUILD)
test: build
	@ctest --test-dir $(BUILD) --output-on-failure -j 1
bench: build
	@python3 bench/run_cpu_reduce.py --build $(BUILD)
# On a machine with an NVIDIA GPU (the H200 lane): the CUDA suite and benchmark.
test-gpu: build
	@$(BUILD)/tests/tessera_gpu_tests
bench-gpu: build
	@python3 bench/run_cuda_reduce.py --build $(BUILD)
clean:
	rm -rf $(BUILD)
