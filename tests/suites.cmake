# Conformance and oracle suites beyond the per-file C unit tests.
# Included from tests/CMakeLists.txt.

# Golden files: `quiver integration --mode=VALIDATE` on every .stream and
# .arrow_file of every producer folder against its JSON.
add_test(NAME conformance.golden_validate
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/conformance/golden_validate.sh
                 $<TARGET_FILE:quiver_cli>)
set_tests_properties(conformance.golden_validate PROPERTIES
  ENVIRONMENT "QV_SHARED=${PROJECT_SOURCE_DIR}/../shared;XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")

# CLI behaviour: help, version, exit codes, errors.
add_test(NAME cli.basics
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/cli/basics.sh $<TARGET_FILE:quiver_cli>)
set_tests_properties(cli.basics PROPERTIES
  ENVIRONMENT "QV_SHARED=${PROJECT_SOURCE_DIR}/../shared;XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")

# The public library: every public header compiles alone as strict C11
# (gcc, and clang when installed) and the umbrella header includes them all;
# libquiver.so exports exactly the functions the headers declare.
set(QV_HEADER_COMPILERS ${CMAKE_C_COMPILER})
find_program(QV_CLANG clang)
if(QV_CLANG)
  list(APPEND QV_HEADER_COMPILERS ${QV_CLANG})
endif()
add_test(NAME headers.compile_alone
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/headers/compile_alone.sh
                 ${PROJECT_SOURCE_DIR}/include ${QV_HEADER_COMPILERS})
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME headers.exports
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/headers/public_api.py check
                 ${PROJECT_SOURCE_DIR}/include/quiver $<TARGET_FILE:quiver_shared>)

# Python oracle tests (pyarrow): need the venv from scripts/venv.sh and the
# shared library; labelled so sanitizer builds can skip them.
add_test(NAME python.oracle
         COMMAND sh -c "\"$QV_VENV/bin/python\" -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(python.oracle PROPERTIES LABELS python
  ENVIRONMENT "QV_SHARED=${PROJECT_SOURCE_DIR}/../shared;QV_BUILD=${CMAKE_BINARY_DIR};XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")

# The pip-installable package: the wheel built from pyproject.toml
# (scikit-build-core from the venv, no build isolation) and installed into
# a fresh venv under build/pkgtest; labelled python (needs the venv).
add_test(NAME python.package
         COMMAND sh -c "\"$QV_VENV/bin/python\" -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/package"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(python.package PROPERTIES LABELS python
  ENVIRONMENT "QV_BUILD=${CMAKE_BINARY_DIR};XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")

# `quiver serve` under the sanitizers: the API suite (pytest with the
# venv's oracles) against this build's CLI, so that `make asan` serves
# real requests with ASan + UBSan. Plain builds run it in python.oracle.
if(QV_SANITIZE)
  add_test(NAME serve.api_sanitized
           COMMAND sh -c "\"$QV_VENV/bin/python\" -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python/test_serve_api.py"
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(serve.api_sanitized PROPERTIES
    ENVIRONMENT "QV_SHARED=${PROJECT_SOURCE_DIR}/../shared;QV_BUILD=${CMAKE_BINARY_DIR};XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")
endif()
# Scale-out (quiver.ray / quiver.spark, tests/scale/): a local Ray instance
# and a local Spark session in their own venv (build/venv-scale from
# scripts/venv-scale.sh: tests/requirements.txt + tests/requirements-scale.txt,
# created here when missing or when the pins changed; Spark needs a JRE).
# Labelled python (needs the extension; skipped by `make asan`).
add_test(NAME python.scale
         COMMAND sh -c "sh scripts/venv-scale.sh \"${CMAKE_BINARY_DIR}/venv-scale\" && \"${CMAKE_BINARY_DIR}/venv-scale/bin/python\" -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/scale"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(python.scale PROPERTIES LABELS python TIMEOUT 1500
  ENVIRONMENT "QV_BUILD=${CMAKE_BINARY_DIR};XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")
# The torch format and DataLoader tests: torch 2.13.0 (CPU) in a venv of
# their own (scripts/venv-torch.sh: tests/requirements.txt plus
# tests/requirements-torch.txt, created once, idempotent; QV_TORCH_VENV
# overrides its place); labelled python (not run under sanitizers).
add_test(NAME python.torch
         COMMAND sh -c "v=\${QV_TORCH_VENV:-${CMAKE_BINARY_DIR}/venv-torch} && sh scripts/venv-torch.sh \"$v\" && \"$v/bin/python\" -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python_torch"
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(python.torch PROPERTIES LABELS python TIMEOUT 1800
  ENVIRONMENT "QV_SHARED=${PROJECT_SOURCE_DIR}/../shared;QV_BUILD=${CMAKE_BINARY_DIR};XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/test-xdg-cache")
