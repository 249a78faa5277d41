#pragma once
// Where SmolLM2-135M-Instruct.Q4_1.gguf is when tools/fetch_model smollm2 fetched it: $SMOLLM2_DIR, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/tinygrad/smollm2 (the path, whether or not the file is there). Shared by
// examples/chat.cpp, bench/bench_llm.cpp and the tests (tests/smollm2.hpp).
#include <cstdlib>
#include <filesystem>
#include <string>

inline std::string smollm2_path() {
  std::filesystem::path dir;
  if (const char* d = std::getenv("SMOLLM2_DIR"); d && *d) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::filesystem::path(x) / "tinygrad" / "smollm2";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::filesystem::path(h) / ".cache" / "tinygrad" / "smollm2";
  return (dir / "SmolLM2-135M-Instruct.Q4_1.gguf").string();
}
