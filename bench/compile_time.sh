#!/bin/sh
# Compile time of tinygrad.hpp next to Eigen's <Eigen/Dense>, measured in the same run (issue 14's table):
# user CPU seconds and peak compiler memory of one translation unit, g++ (or $CXX) at -O2 unless a row says otherwise.
#   header-only        the default: the whole library inline in the TU
#   separate           TINYGRAD_SEPARATE_COMPILATION: a TU other than the implementation TU (declarations only)
#   implementation     the one TU that compiles the library (tinygrad/impl.hpp; the CMake target tinygrad::compiled)
#   precompiled        header-only, with <tinygrad.hpp> as a precompiled header (what CMake's target_precompile_headers
#                      does: a header that includes it, compiled once, force-included into each TU)
# usage (repo root): bench/compile_time.sh      (about seven minutes on 2 cores; REPS=1 about four)
set -eu
CXX=${CXX:-g++}
EIGEN=${EIGEN_INCLUDE:-/usr/include/eigen3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <tinygrad.hpp>\nint main() {}\n' > "$tmp/empty.cpp"
printf '#include <tinygrad/impl.hpp>\n' > "$tmp/impl.cpp"
printf '#include <Eigen/Dense>\nint main() { Eigen::Matrix2f m; m.setIdentity(); return int(m(0, 0)); }\n' > "$tmp/eigen.cpp"

# the rows of an empty main (the issue's targets) take the least of REPS runs (default 3): a shared 2-core machine
# moves a single run by 20-40%; the long rows run once
REPS=${REPS:-3}
least() {  # runs command... -> the one line the command prints whose first field is least, over that many runs
  runs=$1; shift
  : > "$tmp/runs"
  i=0
  while [ "$i" -lt "$runs" ]; do "$@" >> "$tmp/runs"; i=$((i + 1)); done
  sort -n "$tmp/runs" | head -n 1
}
compile_once() {  # flags... source -> "user_s peak_KB" (the compiler: $cc where set, else $CXX)
  /usr/bin/time -f "%U %M" "${cc:-$CXX}" -std=c++20 -Iinclude -I"$EIGEN" -c -o "$tmp/out.o" "$@" 2> "$tmp/time" || { cat "$tmp/time"; exit 1; }
  tail -n 1 "$tmp/time"
}
measure() {  # runs command... -> "user_s peak_MB" (the command: compile_once and its flags)
  least "$@" | awk '{printf "%.2f %.0f\n", $1, $2 / 1024}'
}
set -- $(measure "$REPS" compile_once -O2 "$tmp/eigen.cpp")
eigen=$1
printf "%-58s %7s %7s %9s\n" "translation unit ($CXX)" "user s" "MB" "vs Eigen"
print_row() { printf "%-58s %7.2f %7d %8.2fx\n" "$1" "$2" "$3" "$(echo "$2 $eigen" | awk '{print $1 / $2}')"; }
row_n() {  # runs label flags... source
  runs=$1 label=$2; shift 2
  set -- $(measure "$runs" compile_once "$@")
  print_row "$label" "$1" "$2"
}
row() { row_n 1 "$@"; }
row_min() { row_n "$REPS" "$@"; }  # the least of REPS runs
print_row "<Eigen/Dense> + a 2x2 matrix, -O2" "$@"
row "<tinygrad.hpp> + empty main, header-only, -O0" -O0 "$tmp/empty.cpp"
row_min "<tinygrad.hpp> + empty main, header-only, -O2" -O2 "$tmp/empty.cpp"
row_min "<tinygrad.hpp> + empty main, separate (not the impl TU), -O2" -O2 -DTINYGRAD_SEPARATE_COMPILATION "$tmp/empty.cpp"
row "examples/quickstart.cpp, header-only, -O2" -O2 examples/quickstart.cpp
row "examples/quickstart.cpp, separate (not the impl TU), -O2" -O2 -DTINYGRAD_SEPARATE_COMPILATION examples/quickstart.cpp
row "the implementation TU (tinygrad/impl.hpp), once, -O2" -O2 -DTINYGRAD_SEPARATE_COMPILATION "$tmp/impl.cpp"
mkdir "$tmp/pch"
printf '#include <tinygrad.hpp>\n' > "$tmp/pch/tinygrad_pch.hpp"
row "the precompiled <tinygrad.hpp>, once, -O2" -O2 -x c++-header "$tmp/pch/tinygrad_pch.hpp" -o "$tmp/pch/tinygrad_pch.hpp.gch"
row_min "<tinygrad.hpp> + empty main, header-only, precompiled, -O2" -O2 -Winvalid-pch -include "$tmp/pch/tinygrad_pch.hpp" "$tmp/empty.cpp"

# The floor of header-only mode (clang, whose -ftime-trace splits the front end into raw parsing and template
# instantiation): a header-only TU parses every header of the library, whatever it instantiates. Were the internals
# restructured so that an unused one instantiates nothing (every function and class of them a template, up to the
# Tensor members that reach them), the empty TU would still pay that parse, plus the instantiations the API's
# declarations need (the separate-mode TU's). That sum is the floor printed last.
if command -v clang++ >/dev/null 2>&1 && command -v python3 >/dev/null 2>&1; then
  trace_once() {  # flags... source -> "frontend_ms parse_ms instantiation_ms"
    clang++ -std=c++20 -O2 -Iinclude -I"$EIGEN" -ftime-trace -ftime-trace-granularity=0 -c -o "$tmp/trace.o" "$@"
    python3 tools/time_trace.py "$tmp/trace.json" --split
  }
  trace() { least "$REPS" trace_once "$@"; }  # the run of least front-end time
  set -- $(trace "$tmp/eigen.cpp")
  ceigen=$1
  crow() { printf "%-58s %7s %7s %9s %8.2fx\n" "$1" "$2" "$3" "$4" "$(echo "$5 $ceigen" | awk '{print $1 / $2}')"; }
  printf "\n%-58s %7s %7s %9s %9s\n" "clang++ front end (ms)" "total" "parse" "instant." "vs Eigen"
  crow "<Eigen/Dense> + a 2x2 matrix" "$ceigen" "" "" "$ceigen"
  set -- $(trace -DTINYGRAD_SEPARATE_COMPILATION "$tmp/empty.cpp")
  sep_inst=$3
  crow "<tinygrad.hpp> + empty main, separate" "$1" "$2" "$3" "$1"
  set -- $(trace "$tmp/empty.cpp")
  crow "<tinygrad.hpp> + empty main, header-only" "$1" "$2" "$3" "$1"
  floor=$(($2 + sep_inst))
  crow "  its floor: that parse + the separate TU's instantiation" "$floor" "$2" "$sep_inst" "$floor"
  # clang can also instantiate a precompiled header's pending templates in the header itself
  # (-fpch-instantiate-templates, what CMake's target_precompile_headers passes to clang): a TU that uses nothing of
  # the library then pays almost nothing; one that runs a graph still compiles the pipeline it reaches (quickstart)
  cc=clang++
  printf "\n%-58s %7s %7s %9s\n" "clang++ -O2, user s" "user s" "MB" "vs Eigen"
  set -- $(measure "$REPS" compile_once -O2 "$tmp/eigen.cpp")
  eigen=$1  # the rows below compare with clang's Eigen TU
  print_row "<Eigen/Dense> + a 2x2 matrix" "$@"
  print_row "the precompiled <tinygrad.hpp>, templates instantiated, once" $(measure 1 compile_once -O2 \
    -fpch-instantiate-templates -x c++-header "$tmp/pch/tinygrad_pch.hpp" -o "$tmp/pch/clang.pch")
  print_row "<tinygrad.hpp> + empty main, header-only, precompiled" \
    $(measure "$REPS" compile_once -O2 -include-pch "$tmp/pch/clang.pch" "$tmp/empty.cpp")
  print_row "examples/quickstart.cpp, header-only, precompiled" \
    $(measure 1 compile_once -O2 -include-pch "$tmp/pch/clang.pch" examples/quickstart.cpp)
fi
