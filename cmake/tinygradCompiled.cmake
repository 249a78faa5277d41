# tinygrad::compiled: the library compiled once (TINYGRAD_SEPARATE_COMPILATION; see include/tinygrad/helpers.hpp).
# A static library of one generated source that includes <tinygrad/impl.hpp>; a program links it instead of
# tinygrad::tinygrad, and each of its translation units then compiles only the library's declarations.
# It is built by the consuming project, with its compiler and flags, and only when something links it.
function(tinygrad_add_compiled_target)
  if(TARGET tinygrad::compiled)
    return()
  endif()
  set(src "${CMAKE_CURRENT_BINARY_DIR}/tinygrad_compiled.cpp")
  file(CONFIGURE OUTPUT "${src}" CONTENT "#include <tinygrad/impl.hpp>\n")
  add_library(tinygrad_compiled STATIC EXCLUDE_FROM_ALL "${src}")
  target_link_libraries(tinygrad_compiled PUBLIC tinygrad::tinygrad)
  target_compile_definitions(tinygrad_compiled PUBLIC TINYGRAD_SEPARATE_COMPILATION)
  add_library(tinygrad::compiled ALIAS tinygrad_compiled)
endfunction()
