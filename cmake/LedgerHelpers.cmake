# The helpers every folder's CMakeLists.txt uses, in the spirit of Abseil's
# CMake/AbseilHelpers.cmake: ledger_library for the folder's library,
# ledger_test for its test binary.

# Defines a folder's library:
#
#   ledger_library(NAME name [INTERFACE]
#                  SRCS file.cc...              (none when INTERFACE)
#                  [HDRS file.h...]
#                  [DEPS target...]             linked PUBLIC: what its headers need
#                  [PRIVATE_DEPS target...])    linked PRIVATE: what only its sources need
#
# The name is the folder's: its path from the source root, '/' -> '_',
# without the "ledger/" that the prefix says already (ledger/format/hash:
# format_hash; util/http: util_http; ops: ops). A top folder that holds
# more than one library names each after itself and what it is (cmd/:
# cmd_flags, cmd_verify_options). Configuring fails on any other name.
#
# The target is ledger_<name>, and ledger::<name> its alias: dependents
# link the alias, so that a misspelt name fails at configure time (a name
# with "::" must be a target) instead of reaching the linker as -l<name>.
# The include root is the source tree, for the library and whoever links
# it: a header is included by its path from there
# ("ledger/format/hash/hash.h"). Headers under the folder's internal/ are
# the library's own: scripts/checks/layers.py refuses an include of one
# from any other folder.
#
# INTERFACE: a header-only library; its HDRS are its sources and its DEPS
# what including them needs.
function(ledger_library)
  cmake_parse_arguments(PARSE_ARGV 0 arg "INTERFACE" "NAME" "SRCS;HDRS;DEPS;PRIVATE_DEPS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "ledger_library(${arg_NAME}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(REGEX REPLACE "^ledger/" "" name "${folder}")
  string(REPLACE "/" "_" name "${name}")
  if(folder MATCHES "^[^/]+$")
    set(rule "${name} or ${name}_<what>")
    set(named "^${name}(_[a-z0-9_]+)?$")
  else()
    set(rule "${name}")
    set(named "^${name}$")
  endif()
  if(NOT arg_NAME MATCHES "${named}")
    message(FATAL_ERROR "ledger_library(NAME ${arg_NAME}) in ${folder}/: a library of ${folder}/ is named ${rule}")
  endif()
  set(target ledger_${arg_NAME})
  if(arg_INTERFACE)
    if(arg_SRCS OR arg_PRIVATE_DEPS)
      message(FATAL_ERROR "ledger_library(${arg_NAME} INTERFACE): no SRCS or PRIVATE_DEPS in a header-only library")
    endif()
    add_library(${target} INTERFACE ${arg_HDRS})
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} INTERFACE ${arg_DEPS})
  else()
    if(NOT arg_SRCS)
      message(FATAL_ERROR "ledger_library(${arg_NAME}): no SRCS (a header-only library is INTERFACE)")
    endif()
    add_library(${target} ${arg_SRCS} ${arg_HDRS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
    target_link_libraries(${target} PUBLIC ${arg_DEPS} PRIVATE ${arg_PRIVATE_DEPS})
  endif()
  add_library(ledger::${arg_NAME} ALIAS ${target})
endfunction()

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
