#!/bin/sh
# Compile time (user+sys CPU seconds) and peak compiler memory of the static Fashion-MNIST example vs the
# dynamic one, g++ -O2. usage (repo root): bench/static_compile_time.sh [static.cpp] [dynamic.cpp]
S=${1:-examples/static_fashion_mnist.cpp}
D=${2:-examples/fashion_mnist.cpp}
CXX=${CXX:-g++}
[ -f "$D" ] || { echo "no dynamic example $D; pass one as the second argument"; exit 1; }
measure() {  # prints: seconds peak_MB
  /usr/bin/time -v "$CXX" -std=c++20 -O2 -Iinclude -c "$1" -o /dev/null 2>&1 |
    awk '/User time/ {u=$NF} /System time/ {s=$NF} /Maximum resident/ {m=$NF} END {printf "%.2f %.0f\n", u + s, m / 1024}'
}
set -- $(measure "$S") $(measure "$D")
printf "static  %-40s %6.2f s  %5d MB\n" "$S" "$1" "$2"
printf "dynamic %-40s %6.2f s  %5d MB\n" "$D" "$3" "$4"
awk -v a="$1" -v b="$3" -v c="$2" -v d="$4" 'BEGIN {printf "ratio static/dynamic: time %.2fx, memory %.2fx (target <= 1.5x)\n", a / b, c / d}'
