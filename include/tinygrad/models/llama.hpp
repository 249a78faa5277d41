#pragma once
// Llama-family language models from GGUF files (SmolLM2, TinyLlama, Llama 3.x): the sizes come from the file, the
// weights stay as the file's blocks (dequantized inside the kernels that use them, nn/quant.hpp), the KV cache is
// indexed by a symbolic position, and prefill and decode are each one TinyJit captured once for every position.
// Opt-in: not part of <tinygrad.hpp>.
//
//   tinygrad::models::Llama lm("SmolLM2-135M-Instruct.Q4_1.gguf");
//   auto ids = lm.tokenizer().encode(lm.chat_prompt("What is 2+2?"), true);
//   lm.generate(ids, {.max_tokens = 64}, [](int32_t, std::string_view text) { std::cout << text << std::flush; return true; });
//
// The graph: x = embedding(tokens); per block x += attn(rmsnorm(x)); x += ffn(rmsnorm(x)); logits = rmsnorm(x) W_out^T.
// RoPE rotates adjacent pairs (x[2i], x[2i+1]) by pos * base^(-2i/head_dim): llama.cpp's conversion permutes the Q and
// K weights of Hugging Face's rotate-half layout into this one, so the file's weights are used as they are.
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>
#include <string_view>
#include "../../tinygrad.hpp"
#include "../nn/gguf.hpp"
#include "../nn/quant.hpp"
#include "../text/bpe.hpp"

namespace tinygrad::models {

// the sizes of a Llama-family model, as its GGUF file states them ("<arch>.block_count", ...)
struct LlamaConfig {
  std::string arch = "llama";
  int64_t n_layers = 0, dim = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, hidden = 0, vocab = 0, context = 0;
  double rope_base = 10000, norm_eps = 1e-5;

  static LlamaConfig from_gguf(const nn::GGUFFile& f) {
    LlamaConfig c;
    c.arch = f.get_string("general.architecture");
    if (c.arch != "llama")
      throw nn::StateError("tinygrad::models::Llama: " + f.name() + ": general.architecture is '" + c.arch + "', not a Llama-family model ('llama')");
    auto key = [&](const std::string& k) { return c.arch + "." + k; };
    c.n_layers = f.get_int(key("block_count"));
    c.dim = f.get_int(key("embedding_length"));
    c.n_heads = f.get_int(key("attention.head_count"));
    c.n_kv_heads = f.has(key("attention.head_count_kv")) ? f.get_int(key("attention.head_count_kv")) : c.n_heads;
    c.hidden = f.get_int(key("feed_forward_length"));
    c.context = f.get_int(key("context_length"));
    if (f.has(key("rope.freq_base"))) c.rope_base = f.get_float(key("rope.freq_base"));
    c.norm_eps = f.get_float(key("attention.layer_norm_rms_epsilon"));
    auto bad = [&](const std::string& what) { return nn::StateError("tinygrad::models::Llama: " + f.name() + ": " + what); };
    auto positive = [&](int64_t v, const char* k) { if (v < 1 || v > (int64_t(1) << 24)) throw bad(c.arch + "." + k + " is " + std::to_string(v)); };
    positive(c.n_layers, "block_count"); positive(c.dim, "embedding_length"); positive(c.n_heads, "attention.head_count");
    positive(c.n_kv_heads, "attention.head_count_kv"); positive(c.hidden, "feed_forward_length"); positive(c.context, "context_length");
    if (c.dim % c.n_heads != 0)
      throw bad("embedding_length " + std::to_string(c.dim) + " is not a multiple of head_count " + std::to_string(c.n_heads));
    if (c.n_heads % c.n_kv_heads != 0)
      throw bad("head_count " + std::to_string(c.n_heads) + " is not a multiple of head_count_kv " + std::to_string(c.n_kv_heads));
    c.head_dim = c.dim / c.n_heads;
    if (c.head_dim % 2 != 0) throw bad("the head size " + std::to_string(c.head_dim) + " is odd (RoPE rotates pairs)");
    if (f.has(key("rope.dimension_count")) && f.get_int(key("rope.dimension_count")) != c.head_dim)
      throw bad("rope.dimension_count differs from the head size (partial RoPE is not supported)");
    if (f.has(key("rope.scaling.type")) && f.get_string(key("rope.scaling.type")) != "none")
      throw bad("RoPE scaling '" + f.get_string(key("rope.scaling.type")) + "' is not supported");
    if (!(c.norm_eps > 0 && c.norm_eps < 1)) throw bad("attention.layer_norm_rms_epsilon is " + std::to_string(c.norm_eps));
    if (!(c.rope_base > 1)) throw bad("rope.freq_base is " + std::to_string(c.rope_base));
    return c;
  }
  bool operator==(const LlamaConfig&) const = default;
};

struct LlamaOptions {
  int64_t max_context = 2048;  // the KV cache's length (at most the model's context_length)
  // prefill runs the prompt this many tokens at a time; 0: 64 on the host CPU (its matmuls are compute-bound: a
  // longer chunk only pads short prompts), 512 elsewhere, llama.cpp's micro-batch (a GPU's prefill is launch-bound:
  // pp512 on an H200 ran 23,150-23,400 tok/s at 256, 36,470-36,520 at 512, the first token as soon)
  int64_t chunk = 0;
  std::string device = "";
};

// how the next token is picked: temperature 0 is greedy (argmax; deterministic); otherwise the top_k most likely
// tokens, cut to the smallest set whose probability reaches top_p, sampled at the temperature (on the device)
struct SamplingOptions {
  double temperature = 0;
  int64_t top_k = 40;
  double top_p = 0.95;
  bool operator==(const SamplingOptions&) const = default;
};

struct GenerateOptions {
  int64_t max_tokens = 256;  // the budget of new tokens
  SamplingOptions sampling = {};
  bool stop_at_eos = true;
};

// timings of the last generate()
struct GenerateStats {
  int64_t prompt_tokens = 0, new_tokens = 0;
  double prefill_s = 0, decode_s = 0, first_token_s = 0;
};

// the tokenizer a GGUF file describes (tokenizer.ggml.*): byte-level BPE ("gpt2" model) only
inline text::BPETokenizer gguf_tokenizer(const nn::GGUFFile& f) {
  std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2")
    throw nn::StateError("tinygrad::models::gguf_tokenizer: " + f.name() + ": tokenizer.ggml.model is '" + model +
                         "'; only byte-level BPE ('gpt2') is supported");
  auto id = [&](const char* k) { return f.has(k) ? int32_t(f.get_int(k)) : -1; };
  text::BPESpecial sp;
  sp.bos = id("tokenizer.ggml.bos_token_id");
  sp.eos = id("tokenizer.ggml.eos_token_id");
  sp.pad = id("tokenizer.ggml.padding_token_id");
  sp.unk = id("tokenizer.ggml.unknown_token_id");
  sp.add_bos = f.has("tokenizer.ggml.add_bos_token") && f.get_bool("tokenizer.ggml.add_bos_token");
  std::vector<int32_t> types;
  if (f.has("tokenizer.ggml.token_type"))
    for (auto t : f.at("tokenizer.ggml.token_type").as_ints("tokenizer.ggml.token_type")) types.push_back(int32_t(t));
  std::string pre = f.has("tokenizer.ggml.pre") ? f.get_string("tokenizer.ggml.pre") : "gpt2";
  return text::BPETokenizer::from_vocab(f.at("tokenizer.ggml.tokens").as_strings("tokenizer.ggml.tokens"),
                                        f.at("tokenizer.ggml.merges").as_strings("tokenizer.ggml.merges"), std::move(types), pre, sp);
}

class Llama {
 public:
  // a weight as the file stores it: its blocks on the device, dequantized lazily where it is used
  struct Weight {
    Tensor raw;
    nn::GGMLType type = nn::GGMLType::F32;
    Shape shape;
    Tensor value() const { return type == nn::GGMLType::F32 ? raw : nn::dequantize(raw, type, shape); }
  };
  // qkv and gate_up: the rows of q, k, v (gate, up) in one weight, where they are joined (see join())
  struct Block { Weight attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down; Tensor cache; std::optional<Weight> qkv, gate_up; };

  explicit Llama(const std::string& path, LlamaOptions opts = {}) : file_(nn::GGUFFile::open(path)), opts_(std::move(opts)) {
    cfg_ = LlamaConfig::from_gguf(file_);
    if (opts_.device.empty()) opts_.device = default_device();
    if (opts_.chunk == 0) opts_.chunk = opts_.device == host_device() ? 64 : 512;
    if (opts_.max_context < 1 || opts_.chunk < 1)
      throw Error("tinygrad::models::Llama: max_context and chunk must be positive, got " + std::to_string(opts_.max_context) + " and " +
                  std::to_string(opts_.chunk));
    ctx_ = std::min(opts_.max_context, cfg_.context);
    tok_ = gguf_tokenizer(file_);
    for (const char* t : {"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|eom_id|>"})
      if (int32_t i = tok_.token_to_id(t); i >= 0) eog_.push_back(i);
    if (tok_.eos_id() >= 0) eog_.push_back(tok_.eos_id());
    start_.emplace("start_pos", 0, ctx_ - 1);
    // a chunk's first position: a chunk's keys (at most its start + chunk) end at a multiple of 16, so a CPU kernel
    // walking them takes 16 lanes (a prefill chunk's softmax over them: 3.7x); the cache has room for that many
    int64_t last = (ctx_ - 1 + opts_.chunk + 15) / 16 * 16 - opts_.chunk;
    chunk_start_.emplace("chunk_start", 0, last);
    rows_ = last + 1 + opts_.chunk;  // (last >= ctx_ - 1)
    len_.emplace("chunk_len", 1, opts_.chunk);
    emb_ = weight("token_embd.weight", {-1, cfg_.dim});
    cfg_.vocab = emb_.shape[0];
    out_norm_ = weight("output_norm.weight", {cfg_.dim});
    out_ = file_.find_tensor("output.weight") ? weight("output.weight", {cfg_.vocab, cfg_.dim}) : emb_;  // tied embeddings
    int64_t kvd = cfg_.n_kv_heads * cfg_.head_dim;
    for (int64_t i = 0; i < cfg_.n_layers; i++) {
      std::string b = "blk." + std::to_string(i) + ".";
      blocks_.push_back(Block{weight(b + "attn_norm.weight", {cfg_.dim}), weight(b + "attn_q.weight", {cfg_.dim, cfg_.dim}),
                              weight(b + "attn_k.weight", {kvd, cfg_.dim}), weight(b + "attn_v.weight", {kvd, cfg_.dim}),
                              weight(b + "attn_output.weight", {cfg_.dim, cfg_.dim}), weight(b + "ffn_norm.weight", {cfg_.dim}),
                              weight(b + "ffn_gate.weight", {cfg_.hidden, cfg_.dim}), weight(b + "ffn_up.weight", {cfg_.hidden, cfg_.dim}),
                              weight(b + "ffn_down.weight", {cfg_.dim, cfg_.hidden}),
                              // keys and values of every position: (2, kv heads, positions, head size), plus a chunk of room
                              // (a chunk's rows are written whole: the last may run past the context by its padding)
                              Tensor::zeros({2, cfg_.n_kv_heads, rows_, cfg_.head_dim}, DType::Float32, opts_.device)
                                  .contiguous()
                                  .realize(),
                              std::nullopt, std::nullopt});
      Block& bl = blocks_.back();
      bl.qkv = join({&bl.wq, &bl.wk, &bl.wv});
      bl.gate_up = join({&bl.w_gate, &bl.w_up});
    }
    file_.drop_metadata();  // read: the config and the tokenizer
  }
  Llama(const Llama&) = delete;
  Llama& operator=(const Llama&) = delete;

  const LlamaConfig& config() const { return cfg_; }
  const LlamaOptions& options() const { return opts_; }  // as used: the device and chunk chosen where they were left open
  const text::BPETokenizer& tokenizer() const { return tok_; }
  int64_t context() const { return ctx_; }
  int64_t cache_rows() const { return rows_; }  // the KV cache's positions: the context, a chunk's room, alignment
  int64_t position() const { return pos_; }
  // start over: the next tokens go to position 0 (the cache's old rows are never read again)
  void reset() { pos_ = 0; }

  // the logits (vocab,) after the tokens, which go to positions position().. (unjitted: tests; generate() uses the jits)
  Tensor logits(const std::vector<int32_t>& tokens) {
    if (tokens.empty()) throw Error("tinygrad::models::Llama::logits: no tokens");
    check_room(int64_t(tokens.size()));
    Tensor out;
    for (size_t at = 0; at < tokens.size(); at += size_t(opts_.chunk)) {
      int64_t n = std::min<int64_t>(opts_.chunk, int64_t(tokens.size() - at));
      out = forward(chunk_tensor(tokens, at, n), chunk_start_->bind(pos_), len_->bind(n)).realize();
      pos_ += n;
    }
    return out;
  }

  // prompt then new tokens until EOS (if stop_at_eos), the budget, or on_token returning false; on_token gets each new
  // token and its text (bytes of an unfinished UTF-8 character wait for the next token). Returns the new tokens.
  std::vector<int32_t> generate(const std::vector<int32_t>& prompt, const GenerateOptions& o,
                                const std::function<bool(int32_t, std::string_view)>& on_token = {}) {
    if (prompt.empty()) throw Error("tinygrad::models::Llama::generate: the prompt is empty");
    check_room(int64_t(prompt.size()));
    jits(o.sampling);
    stats_ = {};
    stats_.prompt_tokens = int64_t(prompt.size());
    double t0 = now();
    Tensor next;
    for (size_t at = 0; at < prompt.size(); at += size_t(opts_.chunk)) {
      int64_t n = std::min<int64_t>(opts_.chunk, int64_t(prompt.size() - at));
      next = (*prefill_)(chunk_tensor(prompt, at, n), chunk_start_->bind(pos_), len_->bind(n));
      pos_ += n;
    }
    std::vector<int32_t> out;
    text::Utf8Stream stream;
    int32_t id = next.item<int32_t>();
    stats_.prefill_s = stats_.first_token_s = now() - t0;
    double t1 = now();
    while (true) {
      out.push_back(id);
      bool eos = o.stop_at_eos && is_eog(id);
      if (on_token && !on_token(id, eos ? stream.flush() : stream.push(tok_.piece(id)))) break;
      if (eos || int64_t(out.size()) >= o.max_tokens || pos_ >= ctx_) break;
      next = (*decode_)(next, start_->bind(pos_));
      pos_ += 1;
      id = next.item<int32_t>();
    }
    stats_.new_tokens = int64_t(out.size());
    stats_.decode_s = now() - t1;
    return out;
  }
  const GenerateStats& stats() const { return stats_; }
  // the end of a turn or of the text (eos, <|im_end|>, ...)
  bool is_eog(int32_t id) const { return std::find(eog_.begin(), eog_.end(), id) != eog_.end(); }

  // ChatML (SmolLM2's template): a system turn when given, the user's turn, and the assistant's turn opened
  static std::string chat_prompt(std::string_view user, std::string_view system = "") {
    std::string s;
    if (!system.empty()) s += "<|im_start|>system\n" + std::string(system) + "<|im_end|>\n";
    return s + "<|im_start|>user\n" + std::string(user) + "<|im_end|>\n<|im_start|>assistant\n";
  }

  // tokens (n,) int32 at positions start..start+n -> the logits (vocab,) after the last; n and start may be symbolic.
  // A chunk of more than one token computes all its opts_.chunk rows (tokens holds them, padded): its matmuls have a
  // size known when they are compiled, so each weight is dequantized once a chunk and the products tile over the rows
  // (a symbolic count of rows ran each row as a matvec that dequantized every weight again: 11 tok/s). The padding's
  // rows are never read: the causal mask puts them after every real row, and their cache rows are written again (by
  // the next chunk or decode step) before any query reaches them.
  Tensor forward(const Tensor& tokens, const SInt& start, const SInt& n) {
    bool one = n.is_int() && n.value() == 1;
    SInt rows = one ? n : SInt(opts_.chunk);
    Tensor x = nn::embedding(tokens.shrink({{0, rows}}), emb_.value());  // (rows, dim)
    Tensor pos = Tensor::arange(double(opts_.chunk), std::nullopt, 1, DType::Int32, opts_.device).shrink({{0, rows}}) + Tensor(start, opts_.device);
    auto [cos, sin] = rope(pos);
    // NOTE: computed once, not in each block's kernels (lazy, every block's q and k rotations made two kernels each
    // of them again: 120 of a SmolLM2 decode step's 665 launches)
    cos = cos.contiguous(), sin = sin.contiguous();
    Tensor::realize_all({cos, sin});
    SInt total = start + rows;
    // causal: query i (position start + i) sees keys 0..start + i
    std::optional<Tensor> mask;
    if (!one) {
      Tensor keys = Tensor::arange(double(rows_), std::nullopt, 1, DType::Int32, opts_.device).shrink({{0, total}});
      mask = keys.reshape({SInt(1), total}) <= pos.reshape({rows, SInt(1)});
    }
    for (auto& b : blocks_) {
      // NOTE: realized at each block: the cache write below realizes this block's keys and values now, which would
      // otherwise compute every block before it again
      x = x.realize();
      // NOTE: the attention's sum realized: the gate/up product is realized at once (products), and the feed-forward's
      // later kernels would compute the attention again
      x = (x + attention(b, normed(x, b.attn_norm), cos, sin, start, rows, mask)).realize();
      // NOTE: the product's input computed first (contiguous): fused in, it would be computed again for every output
      x = x + linear(swiglu(normed(x, b.ffn_norm), b), b.w_down);
    }
    // the last row (a cut into a symbolic dim is a one-hot sum, which the scheduler folds into one read)
    Tensor last = (pos == Tensor(start + n - 1, opts_.device)).reshape({rows, SInt(1)}).where(x, 0.0).sum(0, true).realize();
    return products(normed(last, out_norm_), std::nullopt, {&out_})[0].reshape({cfg_.vocab});
  }

 private:
  // NOTE: not detail::now_s: an opt-in header sees only the public API in a separate-compilation program
  static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
  void check_room(int64_t n) const {
    if (pos_ + n > ctx_)
      throw Error("tinygrad::models::Llama: " + std::to_string(n) + " tokens at position " + std::to_string(pos_) + " pass the context of " +
                  std::to_string(ctx_) + " (LlamaOptions::max_context)");
  }
  // tokens[at, at + n) padded to a chunk, on the device
  Tensor chunk_tensor(const std::vector<int32_t>& tokens, size_t at, int64_t n) const {
    std::vector<int32_t> chunk(size_t(opts_.chunk), 0);
    std::copy(tokens.begin() + int64_t(at), tokens.begin() + int64_t(at) + n, chunk.begin());
    return Tensor(chunk, {opts_.chunk}).to(opts_.device);
  }
  // a tensor of the file on the device, its shape checked (-1: any)
  Weight weight(const std::string& name, Shape want) {
    const nn::GGUFTensor* t = file_.find_tensor(name);
    if (!t) throw nn::StateError("tinygrad::models::Llama: " + file_.name() + " has no tensor '" + name + "'");
    Shape got = t->shape();
    bool ok = got.size() == want.size();
    for (size_t i = 0; ok && i < got.size(); i++) ok = want[i] < 0 || want[i] == got[i];
    if (!ok)
      throw ShapeError("tinygrad::models::Llama: " + file_.name() + ": tensor '" + name + "' is " + to_string(got) + ", the config says " +
                       to_string(want));
    if (t->type != nn::GGMLType::F32 && !nn::can_dequantize(t->type))
      throw nn::StateError("tinygrad::models::Llama: " + file_.name() + ": tensor '" + name + "' is " + nn::to_string(t->type) +
                           ", which is not supported");
    auto bytes = file_.data(*t);
    // NOTE: the file's pages are the weights on the host device (no copy: resident as they are read); copied elsewhere
    void* p = const_cast<uint8_t*>(bytes.data());
    Tensor raw = t->type == nn::GGMLType::F32 ? Tensor::from_blob(p, got, DType::Float32)
                                              : Tensor::from_blob(p, {int64_t(bytes.size())}, DType::UInt8);
    if (opts_.device != host_device()) raw = raw.to(opts_.device).realize();
    return Weight{raw, t->type, got};
  }
  // the weights' rows as one weight (their blocks one after another), so one product makes the outputs of all of them:
  // a decode step is launch-bound on a GPU (SmolLM2 on an H200: ~3 us a kernel), and q, k, v in one kernel and gate,
  // up in another are 90 launches fewer. Only where the weights were copied to the device anyway (the host's stay the
  // file's pages: a joined copy would be resident beside them) and all are one type and width.
  std::optional<Weight> join(std::vector<Weight*> ws) const {
    if (opts_.device == host_device()) return std::nullopt;
    std::vector<Tensor> raws;
    int64_t rows = 0, in = ws[0]->shape[1];
    for (Weight* w : ws) {
      if (w->type != ws[0]->type || w->shape[1] != in) return std::nullopt;
      raws.push_back(w->raw.reshape({-1})), rows += w->shape[0];
    }
    Tensor r = Tensor::cat(raws, 0);  // (float32 weights are their values: (rows, in))
    Weight j{(ws[0]->type == nn::GGMLType::F32 ? r.reshape({rows, in}) : r).realize(), ws[0]->type, {rows, in}};
    for (Weight* w : ws) w->raw = Tensor();  // NOTE: the joined copy replaces them (the parts are read from it)
    return j;
  }
  // RMSNorm's input to the products. One row on a GPU: x times the norm's weight, and x; products() multiplies each
  // output by its own 1 / rms, a sum of squares over the same inputs as the product's (x broadcast to every output,
  // not the one sum broadcast: a reduce read through a broadcast is a kernel of its own), so the norm is no kernel at
  // all (the one sum, realized, was 60 of a SmolLM2 decode step's 366 launches: H200 decode 714-748 -> 805-812 tok/s).
  // Else normed, realized: a chunk's tiled matmuls ran 8% slower on an H200 with the parts fused in, and the host
  // CPU's matvecs (compute-bound, launched cheaply) decoded 2-3% slower
  struct Normed { Tensor xw; std::optional<Tensor> x; };
  Normed normed(const Tensor& x, const Weight& w) const {
    if (x.shape()[0] == 1 && opts_.device != host_device()) return {x * w.value(), x};
    return {(x * (x.square().mean(-1, true) + cfg_.norm_eps).rsqrt() * w.value()).contiguous().realize(), std::nullopt};
  }
  // the normed rows (rows, in) @ w.T for each of ws, each contiguous: column ranges of the joined weight's one product
  // where it exists
  std::vector<Tensor> products(const Normed& h, const std::optional<Weight>& joined, std::vector<const Weight*> ws) const {
    std::vector<Tensor> out;
    // NOTE: realized: the cache write realizes k and v from it, and q's kernels computed it again (H200: 30 launches)
    Tensor all = joined ? product(h, *joined).contiguous().realize() : Tensor();
    int64_t at = 0;
    for (const Weight* w : ws)
      out.push_back(joined ? all.shrink({{0, h.xw.sym_shape()[0]}, {at, at + w->shape[0]}}) : product(h, *w).contiguous()), at += w->shape[0];
    return out;
  }
  // h @ w.T (rows [at, at + n) of w where n > 0), times each output's 1 / rms where the norm is left to the products
  Tensor product(const Normed& h, const Weight& w, int64_t at = 0, int64_t n = 0) const {
    Tensor y = n > 0 ? h.xw.matmul(w.value().shrink({{at, at + n}, {0, w.shape[1]}}).transpose()) : linear(h.xw, w);
    if (!h.x) return y;
    Tensor ss = h.x->square().unsqueeze(1).expand({1, y.shape()[1], h.x->shape()[1]}).mean(-1);
    return y * (ss + cfg_.norm_eps).rsqrt();
  }
  // the feed-forward's hidden silu(gate) * up, computed. One row on a GPU: the gate's and the up's products side by
  // side in that one kernel (reduces of one length over the same inputs), no kernel for the joined product's output
  Tensor swiglu(const Normed& h, const Block& b) const {
    if (h.x && b.gate_up) {
      int64_t f = b.w_gate.shape[0];
      return (product(h, *b.gate_up, 0, f).silu() * product(h, *b.gate_up, f, b.w_up.shape[0])).contiguous();
    }
    auto gu = products(h, b.gate_up, {&b.w_gate, &b.w_up});
    return (gu[0].silu() * gu[1]).contiguous();
  }
  // x (rows, in) @ w.T: one kernel reading the blocks for one row (a decode step reads each weight byte once); for a
  // chunk the weight dequantized first, once, then an ordinary matmul that tiles over the rows
  Tensor linear(const Tensor& x, const Weight& w) const {
    bool many = !x.shape().empty() && x.shape()[0] > 1;
    return x.matmul((many && w.type != nn::GGMLType::F32 ? w.value().contiguous() : w.value()).transpose());
  }
  // cos and sin (n, head_dim / 2) of the positions' angles
  std::pair<Tensor, Tensor> rope(const Tensor& pos) const {
    int64_t half = cfg_.head_dim / 2;
    Tensor i = Tensor::arange(double(half), std::nullopt, 1, DType::Float32, opts_.device);
    Tensor freq = (i * (-2.0 * std::log(cfg_.rope_base) / double(cfg_.head_dim))).exp();
    Tensor ang = pos.cast(DType::Float32).unsqueeze(-1) * freq.unsqueeze(0);
    return {ang.cos(), ang.sin()};
  }
  // x (n, heads, head_dim): each pair (x[2i], x[2i+1]) rotated by its angle
  Tensor rotate(const Tensor& x, const Tensor& cos, const Tensor& sin, const SInt& n, int64_t heads) const {
    int64_t half = cfg_.head_dim / 2;
    Tensor p = x.reshape({n, SInt(heads), SInt(half), SInt(2)});
    Tensor a = p.shrink({{0, n}, {0, heads}, {0, half}, {0, 1}}), b = p.shrink({{0, n}, {0, heads}, {0, half}, {1, 2}});
    Tensor c = cos.reshape({n, SInt(1), SInt(half), SInt(1)}), s = sin.reshape({n, SInt(1), SInt(half), SInt(1)});
    return Tensor::cat({a * c - b * s, a * s + b * c}, -1).reshape({n, SInt(heads), SInt(cfg_.head_dim)});
  }
  Tensor attention(Block& b, const Normed& h, const Tensor& cos, const Tensor& sin, const SInt& start, const SInt& n,
                   const std::optional<Tensor>& mask) {
    int64_t H = cfg_.n_heads, KV = cfg_.n_kv_heads, D = cfg_.head_dim, G = H / KV;
    // NOTE: the products first (contiguous): RoPE fused into them would run each pair's two rows per output
    auto qkv = products(h, b.qkv, {&b.wq, &b.wk, &b.wv});
    Tensor q = rotate(qkv[0].reshape({n, SInt(H), SInt(D)}), cos, sin, n, H);
    // NOTE: a chunk's queries rotated in their own kernel: fused, the scores' matmul rotated each query for every key
    // (H200 prefill 13.2k -> 6.7k tok/s); one token's rotation fuses into its scores (30 launches fewer a decode step)
    if (!(n.is_int() && n.value() == 1)) q = q.contiguous();
    Tensor k = rotate(qkv[1].reshape({n, SInt(KV), SInt(D)}), cos, sin, n, KV);
    Tensor v = qkv[2].reshape({n, SInt(KV), SInt(D)});
    SInt total = start + n;
    // this chunk's keys and values into the cache at start..start+n, in place
    b.cache.shrink({{0, 2}, {0, KV}, {start, total}, {0, D}}).assign(Tensor::stack({k, v}).permute({0, 2, 1, 3}));
    Tensor keys = b.cache.shrink({{0, 1}, {0, KV}, {0, total}, {0, D}}).reshape({SInt(KV), SInt(1), total, SInt(D)});
    Tensor vals = b.cache.shrink({{1, 2}, {0, KV}, {0, total}, {0, D}}).reshape({SInt(KV), SInt(1), total, SInt(D)});
    Tensor qh = q.permute({1, 0, 2}).reshape({SInt(KV), SInt(G), n, SInt(D)});  // query heads grouped by their kv head
    Tensor s = qh.matmul(keys.transpose(-1, -2)) * (1.0 / std::sqrt(double(D)));  // (KV, G, n, total)
    if (mask) s = mask->where(s, -INFINITY);
    bool one_row = !mask && opts_.device != host_device();
    Tensor o = one_row ? Tensor() : s.softmax(-1).matmul(vals);  // (KV, G, n, D)
    if (one_row) {
      // one row on a GPU: softmax's sum as one more column of the values' product (a column of ones), its exp and its
      // division computed where they are read (the scheduler repeats small broadcast values on a GPU): the
      // probabilities and the division are no kernels (60 launches a decode step)
      Tensor e = (s - s.max(-1, true)).exp();
      Tensor ov = e.matmul(vals.pad({{0, 0}, {0, 0}, {0, 0}, {0, 1}}, 1.0));  // (KV, G, 1, D + 1)
      o = ov.shrink({{0, KV}, {0, G}, {0, 1}, {0, D}}) / ov.shrink({{0, KV}, {0, G}, {0, 1}, {D, D + 1}});
    }
    Tensor heads = o.reshape({SInt(H), n, SInt(D)}).permute({1, 0, 2}).reshape({n, SInt(cfg_.dim)});
    return linear(one_row ? heads : heads.contiguous(), b.wo);
  }
  // the sampled next token (1,) int32 from the logits (vocab,)
  Tensor sample(const Tensor& logits, const SamplingOptions& s) const {
    if (s.temperature <= 0) return logits.argmax(0, true).cast(DType::Int32);
    int64_t k = std::clamp<int64_t>(s.top_k > 0 ? s.top_k : cfg_.vocab, 1, std::min<int64_t>(cfg_.vocab, 1024));
    auto [vals, idx] = (logits / s.temperature).topk(k);  // sorted, largest first
    Tensor p = vals.softmax(0);
    if (s.top_p < 1) {  // keep a token while the tokens before it hold less than top_p
      Tensor before = p.cumsum(0) - p;
      vals = (before < s.top_p).where(vals, -INFINITY);
    }
    // Gumbel-max: argmax(l + g), g = -log(-log(u)), picks i with probability softmax(l)_i
    Tensor u = Tensor::rand({k}, DType::Float32, opts_.device) * (1 - 2e-7) + 1e-7;
    Tensor pick = (vals - (-u.log()).log()).argmax(0, true);
    return idx.gather(0, pick).cast(DType::Int32);
  }
  void jits(const SamplingOptions& s) {
    if (prefill_ && sampling_ == s) return;
    sampling_ = s;
    prefill_.emplace(PrefillFn([this](const Tensor& t, const BoundVariable& start, const BoundVariable& n) {
      return sample(forward(t, SInt(start), SInt(n)), sampling_).realize();
    }), "llama_prefill");
    decode_.emplace(DecodeFn([this](const Tensor& t, const BoundVariable& start) {
      return sample(forward(t, SInt(start), SInt(1)), sampling_).realize();
    }), "llama_decode");
  }

  nn::GGUFFile file_;
  LlamaOptions opts_;
  LlamaConfig cfg_;
  int64_t ctx_ = 0, pos_ = 0, rows_ = 0;  // rows_: the cache's positions
  text::BPETokenizer tok_;
  Weight emb_, out_norm_, out_;
  std::vector<Block> blocks_;
  std::vector<int32_t> eog_;
  std::optional<Variable> start_, chunk_start_, len_;  // a decode step's position, a prefill chunk's first, its length
  SamplingOptions sampling_;
  using PrefillFn = std::function<Tensor(const Tensor&, const BoundVariable&, const BoundVariable&)>;
  using DecodeFn = std::function<Tensor(const Tensor&, const BoundVariable&)>;
  std::optional<TinyJit<PrefillFn>> prefill_;
  std::optional<TinyJit<DecodeFn>> decode_;
  GenerateStats stats_;
};

// A Llama whose sizes are known at compile time: loading checks the file against them (a ShapeError naming the
// setting), and the sizes are constants of the program (static_asserts check that they fit together).
template <int64_t Layers, int64_t Dim, int64_t Heads, int64_t KVHeads, int64_t Hidden, int64_t Vocab>
class LlamaOf : public Llama {
  static_assert(Layers > 0 && Dim > 0 && Heads > 0 && KVHeads > 0 && Hidden > 0 && Vocab > 0, "sizes are positive");
  static_assert(Dim % Heads == 0, "the heads divide the width");
  static_assert(Heads % KVHeads == 0, "the kv heads divide the query heads");
  static_assert((Dim / Heads) % 2 == 0, "RoPE rotates pairs: the head size is even");

 public:
  static constexpr int64_t layers = Layers, dim = Dim, heads = Heads, kv_heads = KVHeads, hidden = Hidden, vocab = Vocab;
  explicit LlamaOf(const std::string& path, LlamaOptions opts = {}) : Llama(path, std::move(opts)) {
    const LlamaConfig& c = config();
    auto check = [&](const char* what, int64_t want, int64_t got) {
      if (want != got)
        throw ShapeError("tinygrad::models::LlamaOf: " + path + ": " + what + " is " + std::to_string(got) + ", the program is compiled for " +
                         std::to_string(want));
    };
    check("block_count", Layers, c.n_layers), check("embedding_length", Dim, c.dim), check("attention.head_count", Heads, c.n_heads);
    check("attention.head_count_kv", KVHeads, c.n_kv_heads), check("feed_forward_length", Hidden, c.hidden);
    check("the vocabulary", Vocab, c.vocab);
  }
};
// SmolLM2-135M(-Instruct): 30 blocks of width 576, 9 query and 3 kv heads, FFN 1536, 49152 tokens
using SmolLM2_135M = LlamaOf<30, 576, 9, 3, 1536, 49152>;

}  // namespace tinygrad::models
