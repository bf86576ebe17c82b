# quiver — root Makefile over CMake. Targets:
#   make            build everything into build/ (CLI, libquiver.a, libquiver.so,
#                   and the CPython extension in build/python/quiver/)
#   make test       build, then run every test (C unit, conformance, Python oracle)
#   make bench      run the benchmarks (never part of CI)
#   make install    install library, headers, CLI, pkg-config and CMake files
#   make asan       build + test under ASan+UBSan in build-asan/
#   make fuzz       build libFuzzer targets with clang in build-fuzz/
BUILD ?= build
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE ?= cmake
CMAKE_FLAGS ?=
QV_CMAKE_DEFAULTS = -DQV_WERROR=ON $(if $(PYTHON),-DPython3_EXECUTABLE=$(PYTHON))
PREFIX ?= /usr/local
VENV ?= $(CURDIR)/build/venv
# The interpreter the CPython extension is built for: the venv's, else the
# python3 that scripts/venv.sh creates the venv with (same ABI).
PYTHON ?= $(shell if [ -x "$(VENV)/bin/python" ]; then echo "$(VENV)/bin/python"; \
            else python3 -c 'import sys; print(sys.executable)' 2>/dev/null; fi)

.PHONY: all test bench install asan fuzz clean venv venv-scale demo

all: $(BUILD)/CMakeCache.txt
	$(CMAKE) --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(QV_CMAKE_DEFAULTS) $(CMAKE_FLAGS)

venv:
	sh scripts/venv.sh $(VENV)

# Ray + PySpark for tests/scale and bench/bench_scale.py (scripts/venv-scale.sh).
venv-scale:
	sh scripts/venv-scale.sh $(BUILD)/venv-scale

test: all venv
	cd $(BUILD) && QV_VENV=$(VENV) ctest --output-on-failure -j $(JOBS) $(CTEST_FLAGS)

asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DQV_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)" CTEST_FLAGS="-LE python" test

fuzz:
	$(CMAKE) -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DQV_FUZZ=ON -DQV_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
	$(CMAKE) --build build-fuzz -j $(JOBS)

bench: all venv
	QV_VENV=$(VENV) sh bench/run.sh $(BUILD)

demo: all venv
	VENV=$(VENV) sh scripts/demo.sh $(BUILD)

install: all
	$(CMAKE) --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf build build-asan build-fuzz
