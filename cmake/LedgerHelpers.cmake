# The helpers every folder's CMakeLists.txt uses, in the spirit of Abseil's
# CMake/AbseilHelpers.cmake: ledger_test for a library's test binary.

# Registers a library's test binary with CTest: one binary per library,
# labelled "unit" and built by the target unit_tests (the sanitizer builds
# build and run only those). A parameterized case's CTest name is its
# gtest name (NO_PRETTY_VALUES: no printed parameter appended).
#
#   ledger_test(NAME [CONCURRENT] SRCS...)
#
# CONCURRENT: the library under test runs threads of its own (or is called
# from several); its tests are labelled "concurrent_unit" and built by the
# target concurrent_tests, which is what the ThreadSanitizer tree builds and
# runs. The others are single-threaded code, which TSan has nothing to say
# about.
#
# Every test binary links GoogleMock, for its matchers and those of
# tests/util/status_matchers.h (StatusIs).
add_custom_target(unit_tests)
add_custom_target(concurrent_tests)
function(ledger_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "CONCURRENT" "" "")
  add_executable(${name} ${arg_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE GTest::gmock GTest::gtest_main)
  # A test's own code (gtest's macros, mostly) gains nothing from -O2, and
  # compiles a fifth faster at -O1 (bench/build_flags.sh); the libraries
  # it tests keep the tree's flags.
  if(CMAKE_BUILD_TYPE MATCHES "Rel")
    target_compile_options(${name} PRIVATE -O1)
  endif()
  # One label (gtest_discover_tests takes no list): "unit", or
  # "concurrent_unit", which `ctest -L unit` matches as well.
  set(label unit)
  if(arg_CONCURRENT)
    set(label concurrent_unit)
    add_dependencies(concurrent_tests ${name})
  endif()
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 NO_PRETTY_VALUES
    PROPERTIES ENVIRONMENT "LEDGER_VECTORS=${CMAKE_SOURCE_DIR}/tests/vectors" LABELS ${label})
  add_dependencies(unit_tests ${name})
endfunction()
