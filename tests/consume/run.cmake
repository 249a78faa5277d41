# Consumption test runner (cmake -P): build and run a tiny program that uses tinygrad
# the way a user would.
#
#   cmake -DMODE=subdirectory|find_package|single_header -DSOURCE_DIR=<repo>
#         -DTOP_BINARY_DIR=<repo build dir> -DBINARY_DIR=<scratch dir> -DCXX=<compiler>
#         -DVERSION=<project version> [-DLAUNCHER=ccache] [-DGENERATOR=<cmake -G>]
#         [-DINCLUDES=dir1|dir2] -P tests/consume/run.cmake
#
#   subdirectory   tests/consume/subdirectory: add_subdirectory(<repo>)
#   find_package   `cmake --install` TOP_BINARY_DIR into BINARY_DIR/prefix, then
#                  tests/consume/find_package: find_package(tinygrad CONFIG REQUIRED)
#   single_header  no CMake: $CXX -std=c++20 -I single_include main.cpp -pthread -ldl; then the same header in
#                  separate-compilation mode: tests/consume/separate's two TUs and one that defines TINYGRAD_IMPLEMENTATION
#   separate       tests/consume/separate: add_subdirectory(<repo>), two TUs linked with tinygrad::compiled
# Build dirs are kept between runs, so a rerun is incremental.

foreach(var MODE SOURCE_DIR TOP_BINARY_DIR BINARY_DIR CXX VERSION)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run what)
  list(JOIN ARGN " " cmdline)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consume.${MODE}: ${what} failed (${rc}):\n${cmdline}\n${out}")
  endif()
endfunction()

string(REGEX MATCH "^[0-9]+" VERSION_MAJOR "${VERSION}")
set(consumer_src "${SOURCE_DIR}/tests/consume/${MODE}")
set(build "${BINARY_DIR}/build")
file(MAKE_DIRECTORY "${build}")

if(MODE STREQUAL "single_header")
  set(header "${SOURCE_DIR}/single_include/tinygrad.hpp")
  if(NOT EXISTS "${header}")
    message(FATAL_ERROR "consume.single_header: ${header} does not exist; run tools/amalgamate.py")
  endif()
  set(incs "-I${SOURCE_DIR}/single_include")
  string(REPLACE "|" ";" extra "${INCLUDES}")
  foreach(dir IN LISTS extra)
    if(NOT dir STREQUAL "")
      list(APPEND incs "-I${dir}")
    endif()
  endforeach()
  # Compile and link separately so that ccache can cache the compile.
  run("compile" ${LAUNCHER} "${CXX}" -std=c++20 -DTG_EXPECTED_VERSION_MAJOR=${VERSION_MAJOR}
      ${incs} -c "${consumer_src}/main.cpp" -o "${build}/main.o")
  run("link" "${CXX}" "${build}/main.o" -o "${build}/consumer" -pthread -ldl)
  # separate compilation with the single header: the implementation is the header with TINYGRAD_IMPLEMENTATION
  set(sep "${SOURCE_DIR}/tests/consume/separate")
  file(WRITE "${build}/impl.cpp" "#define TINYGRAD_IMPLEMENTATION\n#include <tinygrad.hpp>\n")
  set(objs)
  foreach(tu "${build}/impl.cpp" "${sep}/main.cpp" "${sep}/model.cpp")
    get_filename_component(stem "${tu}" NAME_WE)
    run("compile ${stem} (separate)" ${LAUNCHER} "${CXX}" -std=c++20 -DTINYGRAD_SEPARATE_COMPILATION ${incs} -c "${tu}" -o "${build}/sep_${stem}.o")
    list(APPEND objs "${build}/sep_${stem}.o")
  endforeach()
  run("link (separate)" "${CXX}" ${objs} -o "${build}/consumer_separate" -pthread -ldl)
  run("running the separate-compilation consumer" "${build}/consumer_separate")
elseif(MODE STREQUAL "subdirectory" OR MODE STREQUAL "find_package" OR MODE STREQUAL "separate")
  set(cfg -S "${consumer_src}" -B "${build}" "-DCMAKE_CXX_COMPILER=${CXX}"
          "-DTG_EXPECTED_VERSION=${VERSION}")
  if(GENERATOR)
    list(APPEND cfg -G "${GENERATOR}")
  endif()
  if(LAUNCHER)
    list(APPEND cfg "-DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER}")
  endif()
  if(NOT MODE STREQUAL "find_package")
    list(APPEND cfg "-DTINYGRAD_REPO=${SOURCE_DIR}")
  else()
    set(prefix "${BINARY_DIR}/prefix")
    file(REMOVE_RECURSE "${prefix}")  # no stale headers from an earlier install
    run("install" "${CMAKE_COMMAND}" --install "${TOP_BINARY_DIR}" --prefix "${prefix}")
    list(APPEND cfg "-DCMAKE_PREFIX_PATH=${prefix}" "-DTINYGRAD_EXPECT_PREFIX=${prefix}"
                    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  endif()
  run("configure" "${CMAKE_COMMAND}" ${cfg})
  run("build" "${CMAKE_COMMAND}" --build "${build}")
else()
  message(FATAL_ERROR "run.cmake: unknown MODE=${MODE}")
endif()

run("running the consumer" "${build}/consumer")
message(STATUS "consume.${MODE}: built and ran ${build}/consumer")
