# Runs an example and checks it (cmake -DEXE=<program> -DSOURCE=<example.cpp> -P ...):
# the program must exit 0 and its stdout+stderr must match the regex on the source's
# `// EXPECT-OUTPUT: <regex>` line (a CMake regex; `.` also matches newlines).
file(STRINGS "${SOURCE}" marker REGEX "^//[ \t]*EXPECT-OUTPUT:" LIMIT_COUNT 1)
string(REGEX REPLACE "^//[ \t]*EXPECT-OUTPUT:[ \t]*" "" regex "${marker}")
string(STRIP "${regex}" regex)
if(regex STREQUAL "")
  message(FATAL_ERROR "${SOURCE}: no `// EXPECT-OUTPUT: <regex>` line")
endif()

execute_process(COMMAND "${EXE}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${EXE} exited with ${rc}")
endif()
if(NOT out MATCHES "${regex}")
  message(FATAL_ERROR "output of ${EXE} does not match `${regex}`")
endif()
