// models/llama.hpp against a float64 reference: SmolLM2-135M-Instruct.Q4_1.gguf dequantized by python's gguf package and
// run by the numpy forward of tests/data/make_llama_reference.py (its outputs: tests/data/smollm2_reference.json).
// The logits after each prompt (8 prompts, chat and plain, 1 to 275 tokens) agree to 1e-3 relative RMS with the same
// top-1; the greedy continuation through the jitted prefill and decode steps is the reference's, token for token.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>
#include <tinygrad/models/llama.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

#include "smollm2.hpp"

using tinygrad::Tensor;
using tinygrad::detail::Json;
using tinygrad::detail::find;
namespace models = tinygrad::models;

namespace {
Json reference() {
  std::string path = std::string(TG_TEST_SOURCE_DIR) + "/tests/data/smollm2_reference.json";
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return tinygrad::detail::parse_json(ss.str(), path + ": ");
}
std::vector<int32_t> ints(const Json& a) {
  std::vector<int32_t> r;
  for (auto& x : a.arr) r.push_back(int32_t(x.i));
  return r;
}
}  // namespace

TEST_CASE("llama: SmolLM2's logits agree with a float64 reference, and its greedy continuation is the reference's", "[llama]") {
  TG_REQUIRE_SMOLLM2(path);
  Json ref = reference();
  models::Llama lm(*path, {.max_context = 512, .chunk = 64});
  const auto& c = lm.config();
  REQUIRE((c.n_layers == 30 && c.dim == 576 && c.n_heads == 9 && c.n_kv_heads == 3 && c.hidden == 1536 && c.vocab == 49152));
  REQUIRE(c.rope_base == 100000);
  size_t case_no = 0;
  for (auto& r : ref.arr) {
    auto ids = ints(*find(r, "ids"));
    std::string text = find(r, "text")->s;
    INFO("prompt " << case_no << " (" << ids.size() << " tokens): " << text.substr(0, 60));
    // the tokenizer gives the reference's ids (HF tokenizers with SmolLM2's digit split)
    std::string full = find(r, "kind")->s == "chat" ? models::Llama::chat_prompt(text) : text;
    CHECK(lm.tokenizer().encode(full, true) == ids);
    lm.reset();
    auto logits = lm.logits(ids).to_vector<float>();
    auto at = ints(*find(r, "logit_ids"));
    const auto& want = find(r, "logits")->arr;
    double err = 0, norm = 0;
    for (size_t i = 0; i < at.size(); i++) {
      double w = want[i].kind == Json::Int ? double(want[i].i) : want[i].f;
      err += std::pow(double(logits[size_t(at[i])]) - w, 2);
      norm += w * w;
    }
    CHECK(std::sqrt(err / norm) <= 1e-3);
    CHECK(std::max_element(logits.begin(), logits.end()) - logits.begin() == find(r, "top1")->i);
    case_no++;
  }
  // greedy generation through the jits: the continuation of three prompts, 32 tokens each (eos does not stop it)
  int64_t compiled = 0;
  for (size_t k : {4u, 0u, 5u}) {
    const Json& r = ref.arr[k];
    auto ids = ints(*find(r, "ids"));
    lm.reset();
    std::string streamed;
    auto got = lm.generate(ids, {.max_tokens = 32, .sampling = {}, .stop_at_eos = false}, [&](int32_t, std::string_view t) {
      streamed += t;
      return true;
    });
    INFO("prompt " << k);
    CHECK(got == ints(*find(r, "greedy")));
    CHECK(streamed == lm.tokenizer().decode(got));  // streamed whole characters, control tokens as their text
    if (k == 0) compiled = tinygrad::run_stats().kernels_compiled;
  }
  CHECK(tinygrad::run_stats().kernels_compiled == compiled);  // the third prompt replays the captured steps: nothing compiles
}
