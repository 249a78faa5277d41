#!/bin/sh
# Compile time of tinygrad.hpp next to Eigen's <Eigen/Dense>, measured in the same run (issue 14's table):
# user CPU seconds and peak compiler memory of one translation unit, g++ (or $CXX) at -O2 unless a row says otherwise.
#   header-only        the default: the whole library inline in the TU
#   separate           TINYGRAD_SEPARATE_COMPILATION: a TU other than the implementation TU (declarations only)
#   implementation     the one TU that compiles the library (tinygrad/impl.hpp; the CMake target tinygrad::compiled)
# usage (repo root): bench/compile_time.sh      (about two minutes on 2 cores)
set -eu
CXX=${CXX:-g++}
EIGEN=${EIGEN_INCLUDE:-/usr/include/eigen3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <tinygrad.hpp>\nint main() {}\n' > "$tmp/empty.cpp"
printf '#include <tinygrad/impl.hpp>\n' > "$tmp/impl.cpp"
printf '#include <Eigen/Dense>\nint main() { Eigen::Matrix2f m; m.setIdentity(); return int(m(0, 0)); }\n' > "$tmp/eigen.cpp"

measure() {  # flags... source -> "user_s peak_MB"
  /usr/bin/time -f "%U %M" "$CXX" -std=c++20 -Iinclude -I"$EIGEN" "$@" -c -o "$tmp/out.o" 2> "$tmp/time" || { cat "$tmp/time"; exit 1; }
  tail -n 1 "$tmp/time" | awk '{printf "%.2f %.0f\n", $1, $2 / 1024}'
}
set -- $(measure -O2 "$tmp/eigen.cpp")
eigen=$1
printf "%-58s %7s %7s %9s\n" "translation unit ($CXX)" "user s" "MB" "vs Eigen"
print_row() { printf "%-58s %7.2f %7d %8.2fx\n" "$1" "$2" "$3" "$(echo "$2 $eigen" | awk '{print $1 / $2}')"; }
row() {  # label flags... source
  label=$1; shift
  set -- $(measure "$@")
  print_row "$label" "$1" "$2"
}
print_row "<Eigen/Dense> + a 2x2 matrix, -O2" "$@"
row "<tinygrad.hpp> + empty main, header-only, -O0" -O0 "$tmp/empty.cpp"
row "<tinygrad.hpp> + empty main, header-only, -O2" -O2 "$tmp/empty.cpp"
row "<tinygrad.hpp> + empty main, separate (not the impl TU), -O2" -O2 -DTINYGRAD_SEPARATE_COMPILATION "$tmp/empty.cpp"
row "examples/quickstart.cpp, header-only, -O2" -O2 examples/quickstart.cpp
row "examples/quickstart.cpp, separate (not the impl TU), -O2" -O2 -DTINYGRAD_SEPARATE_COMPILATION examples/quickstart.cpp
row "the implementation TU (tinygrad/impl.hpp), once, -O2" -O2 -DTINYGRAD_SEPARATE_COMPILATION "$tmp/impl.cpp"
