# Fuzz test runner (cmake -P): runs one libFuzzer target of tests/fuzz/ for a bounded time over a corpus kept in
# BINARY_DIR (grown from the seeds in tests/fuzz/corpus/<NAME>/). Fails on any finding; the input that found it is
# written to BINARY_DIR/<NAME>-crash-*. The targets are built by the sanitizer build (tools/ci-sanitize: clang, ASan +
# UBSan, linking the library it compiles once for its tests; tests/CMakeLists.txt).
#
#   cmake -DFUZZER=<the target's binary> -DNAME=safetensors|idx -DSEEDS=<seed corpus dir> -DBINARY_DIR=<scratch dir>
#         [-DSECONDS=20] -P tests/fuzz/run.cmake
#
# The longer run by hand: see the comment at the top of tests/fuzz/fuzz_<NAME>.cpp.

foreach(var FUZZER NAME SEEDS BINARY_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "fuzz/run.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT SECONDS)
  set(SECONDS 20)
endif()
file(MAKE_DIRECTORY "${BINARY_DIR}")

# run: new inputs go to the corpus dir in BINARY_DIR, the seeds are read only
set(corpus "${BINARY_DIR}/corpus_${NAME}")
file(MAKE_DIRECTORY "${corpus}")
execute_process(COMMAND "${FUZZER}" -max_total_time=${SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
                        "-artifact_prefix=${BINARY_DIR}/${NAME}-" "${corpus}" "${SEEDS}"
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
