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
