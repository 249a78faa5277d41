// models/llama.hpp against a float64 reference: SmolLM2-135M-Instruct.Q4_1.gguf dequantized by python's gguf package and
// run by the numpy forward of tests/data/make_llama_reference.py (its outputs: tests/data/smollm2_reference.json).
// The logits after each prompt (8 prompts, chat and plain, 1 to 275 tokens) agree to 1e-3 relative RMS with the same
// top-1; the greedy continuation through the jitted prefill and decode steps is the reference's, token for token.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>
#include <tinygrad/models/llama.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
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
  models::SmolLM2_135M lm(*path, {.max_context = 512, .chunk = 64});  // its sizes checked against the file
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

namespace {
namespace nn = tinygrad::nn;
// GPT-2's byte-to-unicode spelling of byte b (printable bytes as themselves, the rest from U+0100 on), as UTF-8
std::string byte_token(int b) {
  auto printable = [](int c) { return (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE; };
  int cp = b, next = 256;
  if (!printable(b)) for (int c = 0; c < b; c++) if (!printable(c)) next++;
  if (!printable(b)) cp = next;
  std::string s;
  if (cp < 0x80) s += char(cp);
  else { s += char(0xC0 | cp >> 6); s += char(0x80 | (cp & 0x3F)); }
  return s;
}

// a small random Llama (2 blocks, width 256, 4 query and 2 kv heads, FFN 512, 260 tokens: the 256 bytes and four
// specials) with its matrices in `type` -- and, in `f32`, the same model with those matrices as their dequantized values
void write_tiny_llama(const std::string& path, const std::string& f32, nn::GGMLType type, const std::string& skip = "") {
  constexpr int64_t L = 2, D = 256, H = 4, KV = 2, F = 512;
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; b++) tokens.push_back(byte_token(b));
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<pad>"}) tokens.push_back(s);
  std::vector<int64_t> types(256, 1);
  types.insert(types.end(), 4, 3);
  const int64_t V = int64_t(tokens.size());
  nn::GGUFMetadata meta = {
      {"general.architecture", nn::GGUFValue::str("llama")},
      {"llama.block_count", nn::GGUFValue::u32(L)},
      {"llama.context_length", nn::GGUFValue::u32(256)},
      {"llama.embedding_length", nn::GGUFValue::u32(D)},
      {"llama.feed_forward_length", nn::GGUFValue::u32(F)},
      {"llama.attention.head_count", nn::GGUFValue::u32(H)},
      {"llama.attention.head_count_kv", nn::GGUFValue::u32(KV)},
      {"llama.rope.freq_base", nn::GGUFValue::f32(10000)},
      {"llama.attention.layer_norm_rms_epsilon", nn::GGUFValue::f32(1e-5f)},
      {"tokenizer.ggml.model", nn::GGUFValue::str("gpt2")},
      {"tokenizer.ggml.pre", nn::GGUFValue::str("gpt2")},
      {"tokenizer.ggml.tokens", nn::GGUFValue::strings(tokens)},
      {"tokenizer.ggml.token_type", nn::GGUFValue::array(nn::GGUFType::INT32, types)},
      {"tokenizer.ggml.merges", nn::GGUFValue::strings({})},
      {"tokenizer.ggml.eos_token_id", nn::GGUFValue::u32(258)},
  };
  std::mt19937 rng(uint32_t(type) + 7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<std::vector<uint8_t>> store, store32;
  std::vector<nn::GGUFTensorData> q, f;
  auto add = [&](const std::string& name, std::vector<int64_t> shape, bool matrix) {
    int64_t n = 1;
    for (auto s : shape) n *= s;
    std::vector<float> v(static_cast<size_t>(n));
    float scale = matrix ? 1.0f / std::sqrt(float(shape.back())) : 0.1f;
    for (auto& x : v) x = (matrix ? 0.0f : 1.0f) + scale * normal(rng);
    std::vector<int64_t> ne(shape.rbegin(), shape.rend());
    nn::GGMLType t = matrix ? type : nn::GGMLType::F32;
    store.push_back(nn::quantize(v, t));
    if (name != skip) q.push_back({name, ne, t, store.back()});
    // the dequantized values, as float32
    Tensor raw = Tensor::from_bytes(store.back().data(), tinygrad::DType::UInt8, {int64_t(store.back().size())});
    std::vector<float> back = t == nn::GGMLType::F32 ? v : nn::dequantize(raw, t, shape).to_vector<float>();
    store32.emplace_back(reinterpret_cast<const uint8_t*>(back.data()), reinterpret_cast<const uint8_t*>(back.data() + back.size()));
    f.push_back({name, ne, nn::GGMLType::F32, store32.back()});
  };
  store.reserve(64), store32.reserve(64);
  add("token_embd.weight", {V, D}, true);
  add("output_norm.weight", {D}, false);
  for (int64_t i = 0; i < L; i++) {
    std::string b = "blk." + std::to_string(i) + ".";
    add(b + "attn_norm.weight", {D}, false);
    add(b + "attn_q.weight", {D, D}, true);
    add(b + "attn_k.weight", {KV * D / H, D}, true);
    add(b + "attn_v.weight", {KV * D / H, D}, true);
    add(b + "attn_output.weight", {D, D}, true);
    add(b + "ffn_norm.weight", {D}, false);
    add(b + "ffn_gate.weight", {F, D}, true);
    add(b + "ffn_up.weight", {F, D}, true);
    add(b + "ffn_down.weight", {D, F}, true);
  }
  nn::gguf_write(path, meta, q);
  nn::gguf_write(f32, meta, f);
}
}  // namespace

TEST_CASE("llama: a small random model in every weight type runs as its float32 twin, jitted and not", "[llama][cl]") {
  auto dir = std::filesystem::temp_directory_path() / ("tg_llama_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  for (auto type : {nn::GGMLType::F32, nn::GGMLType::F16, nn::GGMLType::BF16, nn::GGMLType::Q4_0, nn::GGMLType::Q4_1,
                    nn::GGMLType::Q8_0, nn::GGMLType::Q4_K, nn::GGMLType::Q6_K}) {
    INFO(nn::to_string(type));
    std::string pq = (dir / "q.gguf").string(), pf = (dir / "f.gguf").string();
    write_tiny_llama(pq, pf, type);
    models::Llama a(pq, {.max_context = 64, .chunk = 8}), b(pf, {.max_context = 64, .chunk = 8});
    std::vector<int32_t> ids = a.tokenizer().encode("<|im_start|>Hello, world! 123 <|im_end|>", true);
    REQUIRE(ids.size() == 20);  // 18 bytes, the two specials whole
    auto la = a.logits(ids).to_vector<float>(), lb = b.logits(ids).to_vector<float>();
    double err = 0, norm = 0;
    for (size_t i = 0; i < la.size(); i++) err += std::pow(double(la[i]) - lb[i], 2), norm += double(lb[i]) * lb[i];
    CHECK(std::sqrt(err / norm) <= 1e-5);
    // the jitted path: greedy, 6 new tokens, the same as the twin's
    a.reset(), b.reset();
    models::GenerateOptions g{.max_tokens = 6, .sampling = {}, .stop_at_eos = false};
    CHECK(a.generate(ids, g) == b.generate(ids, g));
    if (type == nn::GGMLType::Q8_0) {  // a program compiled for other sizes refuses the file, naming the setting
      CHECK_THROWS_WITH(models::SmolLM2_135M(pq), Catch::Matchers::Contains("block_count is 2, the program is compiled for 30"));
      write_tiny_llama(pq, pf, type, "blk.1.ffn_up.weight");  // and a file without one of the tensors
      CHECK_THROWS_WITH(models::Llama(pq), Catch::Matchers::Contains("has no tensor 'blk.1.ffn_up.weight'"));
    }
  }
  std::filesystem::remove_all(dir);
}
