# Compile-fail test runner (cmake -P). One source, one compiler.
#
#   cmake -DCXX=<c++ compiler> -DSOURCE=<file.cpp> [-DINCLUDES=dir1|dir2] [-DFLAGS=f1|f2]
#         -P tests/compile_fail.cmake
#
# The first line of SOURCE says what must happen:
#   // PASS                     the file compiles (the twin of a fail test)
#   // FAIL-REGEX: <regex>      compilation fails and the output matches <regex> anywhere
#   // FAIL-FIRST-REGEX: <re>   compilation fails and the first line containing "error"
#                               matches <re> (the cause must be on line one)
# Regexes are CMake regexes (no \d, no {n}; `.` matches newlines too). Diagnostics are
# produced with LC_ALL=C and without colour, so quotes are plain ASCII.

foreach(var CXX SOURCE)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "compile_fail.cmake: -D${var}=... is required")
  endif()
endforeach()

file(READ "${SOURCE}" head LIMIT 4096)
string(REGEX MATCH "^[^\n]*" first "${head}")
string(REGEX REPLACE "\r$" "" first "${first}")

if(first MATCHES "^//[ \t]*PASS[ \t]*$")
  set(expect PASS)
elseif(first MATCHES "^//[ \t]*FAIL-REGEX:[ \t]*(.*[^ \t])[ \t]*$")
  set(expect FAIL)
  set(regex "${CMAKE_MATCH_1}")
elseif(first MATCHES "^//[ \t]*FAIL-FIRST-REGEX:[ \t]*(.*[^ \t])[ \t]*$")
  set(expect FAIL_FIRST)
  set(regex "${CMAKE_MATCH_1}")
else()
  message(FATAL_ERROR "${SOURCE}: the first line must be `// PASS`, `// FAIL-REGEX: <regex>` "
                      "or `// FAIL-FIRST-REGEX: <regex>`, not: ${first}")
endif()

set(args -std=c++20 -fsyntax-only -fdiagnostics-color=never)
string(REPLACE "|" ";" includes "${INCLUDES}")
foreach(dir IN LISTS includes)
  if(NOT dir STREQUAL "")
    list(APPEND args "-I${dir}")
  endif()
endforeach()
string(REPLACE "|" ";" flags "${FLAGS}")
list(REMOVE_ITEM flags "")
list(APPEND args ${flags} "${SOURCE}")

set(ENV{LC_ALL} C)
execute_process(COMMAND "${CXX}" ${args}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)

list(JOIN args " " args_str)
set(cmdline "${CXX} ${args_str}")
string(LENGTH "${out}" out_len)
if(out_len GREATER 30000)
  string(SUBSTRING "${out}" 0 30000 out)
  string(APPEND out "\n... (output truncated)\n")
endif()

if(expect STREQUAL "PASS")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected to compile, but it failed (${rc}):\n${cmdline}\n${out}")
  endif()
  message(STATUS "compiles, as expected")
  return()
endif()

if(rc EQUAL 0)
  message(FATAL_ERROR "expected a compile error matching `${regex}`, but it compiled:\n${cmdline}\n${out}")
endif()
if(expect STREQUAL "FAIL_FIRST")
  string(REGEX MATCH "[^\n]*error[^\n]*" subject "${out}")
  set(where "first error line")
else()
  set(subject "${out}")
  set(where "output")
endif()
if(NOT subject MATCHES "${regex}")
  message(FATAL_ERROR "compile error as expected, but the ${where} does not match `${regex}`:\n"
                      "${cmdline}\n${out}")
endif()
string(REGEX MATCH "[^\n]*error[^\n]*" first_error "${out}")
message(STATUS "fails as expected; first error: ${first_error}")
