# Fuzz test runner (cmake -P): builds one libFuzzer target of tests/fuzz/ with clang++ and runs it for a bounded
# time over a corpus kept in BINARY_DIR (grown from the seeds in tests/fuzz/corpus/<NAME>/). Fails on any finding;
# the input that found it is written to BINARY_DIR/<NAME>-crash-*. Skipped (message "fuzz skipped") where CXX
# cannot link -fsanitize=fuzzer (no libFuzzer runtime).
# NAME=impl builds the library once (tests/impl.cpp, coverage-instrumented, BINARY_DIR/impl.o) for every target,
# which compiles in separate mode and links it: ctest's fixture fuzz.impl runs it before the targets (one compile of
# the library under ASan, not one per target: about 200 s less on 2 cores).
#
#   cmake -DCXX=clang++ -DNAME=impl|safetensors|idx -DSOURCE_DIR=<repo> -DBINARY_DIR=<scratch dir> [-DSECONDS=20]
#         [-DLAUNCHER=ccache] -DINCLUDES=<the library's include dir>|dir2|... -P tests/fuzz/run.cmake
#
# The longer run by hand: see the comment at the top of tests/fuzz/fuzz_<NAME>.cpp.

foreach(var CXX NAME SOURCE_DIR BINARY_DIR INCLUDES)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "fuzz/run.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT SECONDS)
  set(SECONDS 20)
endif()

set(common -std=c++20 -g -O1 -fno-sanitize-recover=undefined -DTINYGRAD_SEPARATE_COMPILATION -DTINYGRAD_INTERNALS)
set(flags ${common} -fsanitize=fuzzer,address,undefined)
set(incs)
string(REPLACE "|" ";" extra "${INCLUDES}")
foreach(dir IN LISTS extra)
  list(APPEND incs "-I${dir}")
endforeach()
file(MAKE_DIRECTORY "${BINARY_DIR}")
set(launcher)
if(LAUNCHER)
  set(launcher "${LAUNCHER}")
endif()

# can this compiler build a libFuzzer target at all?
set(probe "${BINARY_DIR}/probe_${NAME}.cpp")  # NOTE: one per test: the targets run at once
file(WRITE "${probe}" "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
execute_process(COMMAND "${CXX}" ${flags} "${probe}" -o "${BINARY_DIR}/probe_${NAME}" RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
if(NOT rc EQUAL 0)
  message("fuzz skipped: ${CXX} cannot build a -fsanitize=fuzzer program:\n${log}")
  return()
endif()

# build what is missing or older than its sources (the library: any header; a target: its source or the library) or
# than this script (its flags)
set(lib_obj "${BINARY_DIR}/impl.o")
if(NAME STREQUAL "impl")
  file(GLOB_RECURSE deps "${SOURCE_DIR}/include/*.hpp" "${SOURCE_DIR}/single_include/*.hpp")
  list(APPEND deps "${SOURCE_DIR}/tests/impl.cpp" "${CMAKE_CURRENT_LIST_FILE}")  # this script: the flags
  set(product "${lib_obj}")
  set(cmd "${CXX}" ${common} -fsanitize=fuzzer-no-link,address,undefined ${incs} -c "${SOURCE_DIR}/tests/impl.cpp" -o "${lib_obj}")
else()
  set(src "${SOURCE_DIR}/tests/fuzz/fuzz_${NAME}.cpp")
  if(NOT EXISTS "${lib_obj}")
    message(FATAL_ERROR "fuzz.${NAME}: ${lib_obj} is missing: the test fuzz.impl builds it first")
  endif()
  set(deps "${src}" "${lib_obj}" "${CMAKE_CURRENT_LIST_FILE}")
  set(product "${BINARY_DIR}/fuzz_${NAME}")
  set(cmd "${CXX}" ${flags} ${incs} "${src}" "${lib_obj}" -o "${product}" -ldl -lpthread)
endif()
set(stale FALSE)
foreach(dep IN LISTS deps)
  if(NOT EXISTS "${product}" OR "${dep}" IS_NEWER_THAN "${product}")
    set(stale TRUE)
    break()
  endif()
endforeach()
if(stale)
  execute_process(COMMAND ${launcher} ${cmd} RESULT_VARIABLE rc OUTPUT_VARIABLE log ERROR_VARIABLE log)
  if(NOT rc EQUAL 0)
    file(REMOVE "${product}")
    message(FATAL_ERROR "fuzz.${NAME}: building ${product} failed (${rc}):\n${log}")
  endif()
endif()
if(NAME STREQUAL "impl")
  message("fuzz.impl: ${lib_obj} is built")
  return()
endif()

# run: new inputs go to the corpus dir in BINARY_DIR, the seeds are read only
set(corpus "${BINARY_DIR}/corpus_${NAME}")
file(MAKE_DIRECTORY "${corpus}")
execute_process(COMMAND "${product}" -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                        "-artifact_prefix=${BINARY_DIR}/${NAME}-" "${corpus}" "${SOURCE_DIR}/tests/fuzz/corpus/${NAME}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
string(REGEX MATCH "stat::number_of_executed_units: *[0-9]+" runs "${out}")
if(NOT rc EQUAL 0)
  string(LENGTH "${out}" len)
  if(len GREATER 12000)
    math(EXPR start "${len} - 12000")
    string(SUBSTRING "${out}" ${start} -1 out)
  endif()
  message(FATAL_ERROR "fuzz.${NAME}: the fuzzer found a problem (rc ${rc}); the input is in ${BINARY_DIR}/${NAME}-*\n${out}")
endif()
message("fuzz.${NAME}: ${SECONDS} s, ${runs}, no findings")
