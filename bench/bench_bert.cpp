// Sentences/s of all-MiniLM-L6-v2 embeddings (models::MiniLM_L6: BERT forward, mean pooling, L2 normalization) at batch
// BS (32) x SEQ (128) tokens on DEV (default CPU: float32; CUDA: float16 weights, MiniLM_L6_t<half_t>), TinyJit-replayed
// and eager, next to plain PyTorch with as many threads (bench/torch_bert_peer.py; skipped when torch is not installed).
// Then the cold start of a fresh process, start to first embedding (load, tokenize, compile, run), ours with the kernel
// cache warm and with it empty, vs PyTorch's (import, load, tokenize, run). Needs the model: tools/fetch_model minilm.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include "../examples/minilm.hpp"
#include "peer.hpp"

using namespace tinygrad;

namespace {
const double t_start = detail::now_s();

// --cold: a child process's time to its first embedding; prints one JSON line
template <class T>
int cold(const std::string& dir) {
  models::MiniLM_L6_t<T> model;
  model.load(dir);
  auto tok = text::BertTokenizer::from_file(dir);
  auto [ids, mask] = minilm::to_tensors(minilm::pad_to(tok.encode_batch({"A man is eating food.", "A man is eating a piece of bread."}), 16,
                                                       tok.pad_id()));
  float e0 = model.embed(ids, mask).template cast<float>().template to_vector<float>()[0];
  std::printf("{\"cold_s\": %.6f, \"e0\": %.6f}\n", detail::now_s() - t_start, double(e0));
  return 0;
}

// a command's JSON value `key` and its wall time (NaN, NaN when it fails)
std::pair<double, double> child(const std::string& cmd, const std::string& key) {
  double t0 = detail::now_s();
  std::string out;
  if (FILE* p = popen((cmd + " 2>/dev/null").c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    if (pclose(p) != 0) return {NAN, NAN};
  }
  double wall = detail::now_s() - t0;
  auto at = out.find("\"" + key + "\": ");
  return at == std::string::npos ? std::pair{double(NAN), double(NAN)} : std::pair{std::stod(out.substr(at + key.size() + 4)), wall};
}

template <class T>
int bench(const std::string& dev, const std::string& dir, const char* dtype) {
  const int64_t B = detail::getenv_int("BS", 32), S = detail::getenv_int("SEQ", 128), warm = detail::getenv_int("WARM", 3),
                iters = detail::getenv_int("ITERS", 10);
  models::MiniLM_L6_t<T> model;
  model.load(dir);
  auto tok = text::BertTokenizer::from_file(dir);
  auto [ids, mask] = minilm::to_tensors(minilm::bench_batch(tok, B, S));
  ids.realize(), mask.realize();
  auto t = minilm::throughput(model, ids, mask, warm, iters);
  double ours = B / t.jitted_s;
  std::printf("bench_bert: all-MiniLM-L6-v2, batch %lld x %lld tokens, %s on %s (%d CPU threads), median of %lld after %lld warm-up\n",
              (long long)B, (long long)S, dtype, dev.c_str(), cpu_threads(), (long long)iters, (long long)warm);
  std::printf("  tinygrad.hpp TinyJit   %8.1f sentences/s  (%.1f ms/batch, %zu kernels)\n", ours, t.jitted_s * 1e3, t.kernels);
  std::printf("  tinygrad.hpp eager     %8.1f sentences/s  (%.1f ms/batch; TinyJit %.2fx)\n", B / t.eager_s, t.eager_s * 1e3, t.eager_s / t.jitted_s);

  ::setenv("THREADS", std::to_string(cpu_threads()).c_str(), 1);  // the peer uses as many threads as we do, and our device
  ::setenv("DEV", dev.c_str(), 1);
  ::setenv("MINILM_DIR", dir.c_str(), 1);
  ::setenv("MODE", "bench", 1);
  double torch = peer_value("torch_bert_peer.py", "sentences_per_s");
  if (std::isnan(torch)) std::printf("  PyTorch                (not run: pip install torch)\n");
  else
    std::printf("  PyTorch eager          %8.1f sentences/s  (%s, %d threads)\n  ratio                  %.2fx PyTorch's sentences/s\n", torch, dtype,
                cpu_threads(), ours / torch);
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  std::string dev = pin_device("CPU");
  bool gpu = dev.rfind("CUDA", 0) == 0 && detail::getenv_int("HALF", 1) == 1;  // HALF=0: float32 on CUDA too (the peer reads HALF as well)
  std::string dir = minilm::default_dir();
  if (!minilm::has_model(dir)) {
    std::fputs(minilm::missing_message("bench_bert", dir).c_str(), stderr);
    return 1;
  }
  if (argc > 1 && std::string(argv[1]) == "--cold") return gpu ? cold<half_t>(dir) : cold<float>(dir);
  int rc = gpu ? bench<half_t>(dev, dir, "float16") : bench<float>(dev, dir, "float32");
  if (rc || detail::getenv_int("COLD", 1) == 0) return rc;

  // fresh processes: ours with an empty kernel cache, then with the one that run filled; PyTorch's
  std::printf("cold start, process start -> first embedding of 2 sentences (in-process figure; wall time of the process)\n");
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  auto row = [](const char* what, std::pair<double, double> v) {
    if (std::isnan(v.first)) std::printf("  %-34s (not run)\n", what);
    else std::printf("  %-34s %7.0f ms  (process %.0f ms)\n", what, v.first * 1e3, v.second * 1e3);
  };
  auto tmp = std::filesystem::temp_directory_path() / ("bench_bert_cache." + std::to_string(getpid()));
  // NOTE: the cache dir reaches the children through their environment, never through the command line
  const char* old = std::getenv("CACHEDIR");
  std::string keep = old ? old : "";
  ::setenv("CACHEDIR", tmp.string().c_str(), 1);
  std::string cold_cmd = "'" + self + "' --cold";
  auto empty = child(cold_cmd, "cold_s");  // compiles every kernel into the fresh cache...
  auto warm = child(cold_cmd, "cold_s");   // ...which the next process finds
  if (old) ::setenv("CACHEDIR", keep.c_str(), 1); else ::unsetenv("CACHEDIR");
  std::filesystem::remove_all(tmp);
  row("tinygrad.hpp, kernel cache empty", empty);
  row("tinygrad.hpp, kernel cache warm", warm);
  ::setenv("MODE", "cold", 1);
  auto torch = child("python3 " TG_BENCH_DIR "/torch_bert_peer.py", "cold_s");
  row("PyTorch (import torch, tokenizers)", torch);
  if (!std::isnan(torch.first) && !std::isnan(warm.first))
    std::printf("  ratio                              %.2fx PyTorch's time (cache warm), %.2fx (cache empty)\n", warm.first / torch.first,
                empty.first / torch.first);
}
