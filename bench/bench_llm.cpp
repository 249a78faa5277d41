// SmolLM2-135M-Instruct (Q4_1 GGUF) end to end, against llama.cpp on the same file in the same run:
//   pp512  prefill of 512 tokens (tokens/s), as llama-bench -p 512
//   tg128  decode of 128 tokens after them (tokens/s), as llama-bench -n 128
// plus the memory-bandwidth bound of decode (file bytes x tokens/s against a plain copy on as many threads), the time
// to the first token, and the resident memory against the file's tensor bytes + the KV cache.
//
//   bench_llm [--model FILE.gguf] [-t THREADS]      LLAMA_BENCH=/path/to/llama-bench runs the peer (else skipped)
// The model is --model, else where tools/fetch_model smollm2 puts it (examples/smollm2.hpp).
// DEV picks our device (CPU default); THREADS (or -t) our CPU threads and llama-bench's -t.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tinygrad.hpp>
#include <tinygrad/models/llama.hpp>

#include "../examples/smollm2.hpp"
#include "peer.hpp"

extern char** environ;
using namespace tinygrad;

namespace {
int64_t rss_bytes() {  // VmRSS of this process
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}

// a STREAM-like copy on `threads` threads: GB/s of bytes read + written, best of 5
double copy_gbs(int threads) {
  const size_t n = size_t(256) << 20;
  std::vector<char> a(n, 1), b(n, 2);
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = detail::now_s();
    std::vector<std::thread> ts;
    for (int i = 0; i < threads; i++)
      ts.emplace_back([&, i] {
        size_t lo = n * size_t(i) / size_t(threads), hi = n * size_t(i + 1) / size_t(threads);
        std::memcpy(b.data() + lo, a.data() + lo, hi - lo);
      });
    for (auto& t : ts) t.join();
    best = std::max(best, 2.0 * double(n) / (detail::now_s() - t0) / 1e9);
  }
  return best;
}

// llama-bench's output (argv, no shell), or "" when it cannot run
std::string run_peer(const std::vector<std::string>& args) {
  int fd[2];
  if (pipe(fd) != 0) return "";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  std::string out;
  if (rc == 0) {
    char buf[4096];
    ssize_t k;
    while ((k = read(fd[0], buf, sizeof(buf))) > 0) out.append(buf, size_t(k));
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) out.clear();
  }
  close(fd[0]);
  return out;
}
// tokens/s of llama-bench's test with n_prompt = p and n_gen = g (its JSON output), NaN when absent
double peer_ts(const std::string& json, int64_t p, int64_t g) {
  if (json.empty()) return NAN;
  auto j = detail::parse_json(json, "llama-bench: ");
  for (auto& t : j.arr) {
    auto num = [&](const char* k) { auto* v = detail::find(t, k); return v ? (v->kind == detail::Json::Int ? double(v->i) : v->f) : NAN; };
    if (num("n_prompt") == double(p) && num("n_gen") == double(g)) return num("avg_ts");
  }
  return NAN;
}
}  // namespace

int main(int argc, char** argv) {
  pin_device("CPU");
  const double t_start = detail::now_s();
  std::string model;
  int threads = cpu_threads();
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--model") model = argv[i + 1];
    else if (a == "-t") threads = std::stoi(argv[i + 1]), flags().threads = threads;
  }
  if (model.empty()) model = smollm2_path();
  if (!std::filesystem::exists(model)) { std::fprintf(stderr, "%s not found: tools/fetch_model smollm2\n", model.c_str()); return 1; }
  const int64_t P = detail::getenv_int("PP", 512), G = detail::getenv_int("TG", 128);
  models::Llama lm(model, {.max_context = P + G + 64, .chunk = detail::getenv_int("CHUNK", 0)});
  int64_t tensor_bytes = 0;
  for (auto& t : nn::GGUFFile::open(model).tensors()) tensor_bytes += int64_t(t.nbytes);
  std::vector<int32_t> prompt(static_cast<size_t>(P));
  for (size_t i = 0; i < prompt.size(); i++) prompt[i] = int32_t(1000 + (i * 7919) % 40000);
  models::GenerateOptions one{.max_tokens = 1, .sampling = {}, .stop_at_eos = false}, gen{.max_tokens = G, .sampling = {}, .stop_at_eos = false};
  // the first run captures the jits (and compiles, on a cold kernel cache); the figures are the best of the runs after
  lm.generate({1, 2, 3, 4}, one);
  double ttft = detail::now_s() - t_start;
  double pp = 0, tg = 0;
  for (int rep = 0; rep < 3; rep++) {
    lm.reset();
    lm.generate(prompt, one);
    pp = std::max(pp, double(P) / lm.stats().prefill_s);
    lm.reset();
    lm.generate({1, 2, 3, 4}, gen);  // decode from a short prompt, as llama-bench's tg
    tg = std::max(tg, double(G - 1) / lm.stats().decode_s);
  }
  // PROFILE=1: one decode step unjitted, each kernel timed (DEBUG=2's lines on stderr); PROFILE=2: the prompt's prefill
  if (int64_t prof = detail::getenv_int("PROFILE", 0)) {
    lm.reset();
    lm.logits({1, 2, 3});
    for (int rep = 0; rep < 2; rep++) {
      flags().debug = rep == 1 ? 2 : 0;
      if (prof == 2) lm.reset(), lm.logits(prompt);
      else lm.forward(Tensor(std::vector<int32_t>{5}, {1}), SInt(3 + rep), SInt(1)).realize();
    }
    flags().debug = 0;
  }
  int64_t kv = lm.config().n_layers * 2 * lm.config().n_kv_heads * lm.cache_rows() * lm.config().head_dim * 4;
  double rss = double(rss_bytes()), bw = copy_gbs(threads);
  double peer_pp = NAN, peer_tg = NAN;
  if (const char* lb = std::getenv("LLAMA_BENCH"); lb && *lb) {
    std::string out = run_peer({lb, "-m", model, "-p", std::to_string(P), "-n", std::to_string(G), "-t", std::to_string(threads), "-o", "json"});
    peer_pp = peer_ts(out, P, 0), peer_tg = peer_ts(out, 0, G);
  }
  std::printf("SmolLM2-135M-Instruct Q4_1 on %s, %d threads (llama.cpp: %s)\n", default_device().c_str(), threads,
              std::getenv("LLAMA_BENCH") ? "llama-bench, same threads" : "LLAMA_BENCH not set");
  std::printf("| metric | tinygrad.hpp | llama.cpp | ratio |\n| --- | --- | --- | --- |\n");
  std::printf("| pp%lld prefill | %.1f tok/s | %.1f tok/s | %.2fx |\n", (long long)P, pp, peer_pp, pp / peer_pp);
  std::printf("| tg%lld decode | %.1f tok/s | %.1f tok/s | %.2fx |\n", (long long)G, tg, peer_tg, tg / peer_tg);
  std::printf("decode reads %.1f GB/s of weights (%.1f MB x %.1f tok/s); a %d-thread copy moves %.1f GB/s: %.0f%% of the bound\n",
              double(tensor_bytes) * tg / 1e9, double(tensor_bytes) / 1e6, tg, threads, bw, 100 * double(tensor_bytes) * tg / 1e9 / bw);
  std::printf("first token after %.2f s (load, capture, prompt of 4) | resident %.1f MB = %.2fx of tensor bytes %.1f MB + KV cache %.1f MB\n",
              ttft, rss / 1e6, rss / double(tensor_bytes + kv), double(tensor_bytes) / 1e6, double(kv) / 1e6);
}
