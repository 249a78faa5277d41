#pragma once
// BERT's encoder (Devlin et al. 2018) with Hugging Face's BertModel weight names, written with static tensors: the
// hidden size, heads, intermediate size and layer count are template arguments, batch and sequence length are dyn.
// A mistake in the model code is a compile error naming the op and both shapes; a model file or config.json that does
// not match the compiled sizes is a ShapeError naming the tensor or the setting. Opt-in: not part of <tinygrad.hpp>.
//
//   tinygrad::models::MiniLM_L6 model;                  // all-MiniLM-L6-v2: 384 hidden, 12 heads, 1536, 6 layers
//   model.load("all-minilm-l6-v2/");                     // config.json + model.safetensors
//   auto emb = model.embed(ids, mask);                   // sentence-transformers' mean pooling + L2 normalization
#include <cmath>
#include <filesystem>
#include <charconv>
#include "../../tinygrad.hpp"

namespace tinygrad::error {
template <int64_t Hidden, int64_t Heads> struct heads_do_not_divide_hidden;
}

namespace tinygrad::models {

namespace detail {
template <int64_t H, int64_t NH>
constexpr bool heads_divide() {
  if constexpr (H % NH != 0) tinygrad::detail::st::fail<error::heads_do_not_divide_hidden<H, NH>>();
  return H % NH == 0;
}
}  // namespace detail

// a Linear whose weight (Out, In) also has an inference copy W^T (In, Out), made by pack() (load() calls it): on a GPU,
// neighbouring threads (neighbouring outputs) then read neighbouring elements of W^T instead of rows In apart. The CPU
// runs both forms about as fast (the view's loads are vectors along In: 171 GFLOP/s for (4096, 384) @ (384, 1536) on
// 2 cores; MiniLM's throughput is the same within noise either way)
template <int64_t In, int64_t Out, class T>
struct Dense {
  using W = static_tensor<T, Out, In>;
  using B = static_tensor<T, Out>;
  TINYGRAD_MEMBERS(Dense, (W, weight), (B, bias));
  static_tensor<T, In, Out> packed;  // until pack(): a lazy view of weight.T(), so an unloaded model computes no copy
  Dense() : weight(W::uniform(1.0 / std::sqrt(double(In)))), bias(B::uniform(1.0 / std::sqrt(double(In)))), packed(weight.tensor().T()) {}
  void pack() { packed = weight.T().realize(); }
  template <static_expr X> auto operator()(const X& x) const { return x.matmul(packed) + bias; }
};

template <int64_t H, int64_t NH, class T>
struct BertSelfAttention {
  static_assert(detail::heads_divide<H, NH>());
  using L = Dense<H, H, T>;
  TINYGRAD_MEMBERS(BertSelfAttention, (L, query), (L, key), (L, value));
  // x (B, S, H), mask (B, 1, 1, S) bool -> (B, S, H)
  template <static_expr X, static_expr M> auto operator()(const X& x, const M& mask) const {
    auto heads = [](const auto& y) { return y.template unflatten<2, NH, H / NH>().template permute<0, 2, 1, 3>(); };  // (B, NH, S, H / NH)
    return scaled_dot_product_attention(heads(query(x)), heads(key(x)), heads(value(x)),
                                        mask).template permute<0, 2, 1, 3>().template flatten<2, 3>();
  }
};

// dense, then LayerNorm around the residual
template <int64_t In, int64_t H, class T>
struct BertResidual {
  using D = Dense<In, H, T>;
  using N = static_nn::LayerNorm<H, T>;
  TINYGRAD_MEMBERS(BertResidual, (D, dense), (N, LayerNorm));
  template <static_expr X, static_expr R> auto operator()(const X& x, const R& residual) const { return LayerNorm(dense(x) + residual); }
};

template <int64_t H, int64_t NH, class T>
struct BertAttention {
  using S = BertSelfAttention<H, NH, T>;
  using O = BertResidual<H, H, T>;
  TINYGRAD_MEMBERS(BertAttention, (S, self), (O, output));
};

template <int64_t H, int64_t I, class T>
struct BertIntermediate {
  using D = Dense<H, I, T>;
  TINYGRAD_MEMBERS(BertIntermediate, (D, dense));
};

template <int64_t H, int64_t NH, int64_t I, class T>
struct BertLayer {
  using A = BertAttention<H, NH, T>;
  using In = BertIntermediate<H, I, T>;
  using O = BertResidual<I, H, T>;
  TINYGRAD_MEMBERS(BertLayer, (A, attention), (In, intermediate), (O, output));
  // x (B, S, H) -> (B, S, H), realized: each half is one cached plan, shared by every layer of the model
  template <class X, class M> X operator()(const X& x, const M& mask) const {
    X a = attention.output(attention.self(x, mask), x).realize();
    return output(intermediate.dense(a).gelu(), a).realize();
  }
};

template <int64_t H, int64_t NH, int64_t I, int64_t Layers, class T>
struct BertEncoder {
  using L = std::vector<BertLayer<H, NH, I, T>>;
  TINYGRAD_MEMBERS(BertEncoder, (L, layer));
  BertEncoder() : layer(Layers) {}
};

template <int64_t H, int64_t Vocab, int64_t Positions, int64_t Types, class T>
struct BertEmbeddings {
  using W = static_nn::Embedding<Vocab, H, T>;
  using P = static_nn::Embedding<Positions, H, T>;
  using Ty = static_nn::Embedding<Types, H, T>;
  using N = static_nn::LayerNorm<H, T>;
  using Ids = static_tensor<int64_t, 1, Positions>;
  TINYGRAD_MEMBERS(BertEmbeddings, (W, word_embeddings), (P, position_embeddings), (Ty, token_type_embeddings), (N, LayerNorm), (Ids, position_ids));
  BertEmbeddings() : position_ids(Tensor::arange(double(Positions), std::nullopt, 1, DType::Int64).reshape({1, Positions})) {}
  // ids (B, S) -> (B, S, H); every token of type 0
  template <static_expr X> auto operator()(const X& ids) const {
    int64_t s = ids.rt_shape()[1];
    if (s > Positions)
      throw ShapeError("tinygrad::models::Bert: " + std::to_string(s) + " tokens, the model has " + std::to_string(Positions) + " positions");
    static_tensor<int64_t, 1, dyn> pos(position_ids.tensor().shrink({{0, 1}, {0, s}}));
    return LayerNorm(word_embeddings(ids) + position_embeddings(pos) + token_type_embeddings.weight.template slice<0, 0, 1>()).realize();
  }
};

template <int64_t H, class T>
struct BertPooler {
  using D = Dense<H, H, T>;
  TINYGRAD_MEMBERS(BertPooler, (D, dense));
};

// BertModel. Hidden, Heads, Intermediate and Layers as in config.json; T the parameters' element type (float, half_t)
template <int64_t Hidden, int64_t Heads, int64_t Intermediate, int64_t Layers, class T = float, int64_t Vocab = 30522,
          int64_t Positions = 512, int64_t Types = 2>
struct Bert {
  using E = BertEmbeddings<Hidden, Vocab, Positions, Types, T>;
  using Enc = BertEncoder<Hidden, Heads, Intermediate, Layers, T>;
  using P = BertPooler<Hidden, T>;
  TINYGRAD_MEMBERS(Bert, (E, embeddings), (Enc, encoder), (P, pooler));
  using hidden_t = static_tensor<T, dyn, dyn, Hidden>;
  using ids_t = static_tensor<int32_t, dyn, dyn>;

  // config.json and model.safetensors of a model directory: every setting and every tensor must match the compiled
  // sizes (a ShapeError names the first that does not); tensors missing from the file or unknown to the model are
  // listed in a StateError. The weights are cast to T and moved to `device`; they do not require grad afterwards.
  void load(const std::string& dir, const std::string& device = "") {
    namespace fs = std::filesystem;
    check_config((fs::path(dir) / "config.json").string());
    std::string file = (fs::path(dir) / "model.safetensors").string();
    nn::StateDict d = nn::safe_load(file, device);
    nn::StateDict mine = nn::get_state_dict(*this);
    for (auto& [name, t] : mine)
      if (auto it = d.find(name); it != d.end() && it->second.shape() != t.shape())
        throw ShapeError("tinygrad::models::Bert::load: " + name + " has shape " + to_string(it->second.shape()) + " in " + file +
                         ", the model expects " + to_string(t.shape()));
    check_position_ids(d, file);
    if (!device.empty())
      for (auto& [name, t] : mine) if (t.device() != device) t.replace(t.to(device));  // NOTE: lazy: the file's values replace them next
    nn::load_state_dict(*this, d);
    std::vector<Tensor> all;
    for (auto& [name, t] : mine) { t.requires_grad_(false); all.push_back(t); }  // NOTE: handles of the model's tensors
    Tensor::realize_all(all);
    for_each_dense([](auto& d) { d.pack(); });
  }

  // tensor parallel over `devices` (Megatron's split): query, key, value and the intermediate dense split by output
  // features, so each device computes its own heads and its part of the feed-forward layer; the attention output and
  // the output dense split by input features, each device's partial product summed by one all-reduce (two a layer);
  // the rest copied to each device. Heads and Intermediate should divide by the device count (uneven parts work, a
  // head cut in two is gathered); one device: the model moves there. Token ids then go in on the same devices: ids.to(devices)
  void shard(const std::vector<std::string>& devices) {
    auto ends = [](const std::string& n, std::string_view e) { return n.size() >= e.size() && n.compare(n.size() - e.size(), e.size(), e) == 0; };
    std::vector<Tensor> all;
    for (auto& [name, t] : nn::get_state_dict(*this)) {
      int64_t axis = -1;
      for (auto e : {"query.weight", "query.bias", "key.weight", "key.bias", "value.weight", "value.bias", "intermediate.dense.weight",
                     "intermediate.dense.bias"})
        if (ends(name, e)) axis = 0;
      if (ends(name, "output.dense.weight")) axis = 1;
      t.replace(axis < 0 ? t.to(devices) : t.shard(devices, axis));
      all.push_back(t);
    }
    Tensor::realize_all(all);
    for_each_dense([](auto& d) { d.pack(); });
  }

  // the last hidden state (B, S, Hidden) of token ids (B, S) with attention mask (B, S) (1: a token, 0: padding)
  hidden_t operator()(const ids_t& ids, const ids_t& mask) const {
    if (ids.rt_shape() != mask.rt_shape())
      throw ShapeError("tinygrad::models::Bert: ids " + to_string(ids.tensor().shape()) + " and mask " +
                       to_string(mask.tensor().shape()) + " differ");
    auto keep = (mask.template unflatten<1, 1, 1, dyn>() != 0).realize();  // NOTE: (B, 1, 1, S): every head, every query
    hidden_t h = embeddings(ids);
    for (auto& l : encoder.layer) h = l(h, keep);
    return h;
  }
  // sentence-transformers' embedding: the mean of the hidden states over the tokens, L2-normalized -> (B, Hidden)
  static_tensor<T, dyn, Hidden> pool(const hidden_t& h, const ids_t& mask) const {
    auto m = mask.template cast<T>().template unflatten<1, dyn, 1>();
    static_tensor<T, dyn, Hidden> mean = ((h * m).template sum<1>() / m.template sum<1>().maximum(1e-9)).realize();
    return (mean / (mean * mean).template sum_keepdim<-1>().sqrt().maximum(1e-12)).realize();
  }
  static_tensor<T, dyn, Hidden> embed(const ids_t& ids, const ids_t& mask) const { return pool((*this)(ids, mask), mask); }
  // BertModel's pooler_output: tanh(dense(the first token's hidden state))
  static_tensor<T, dyn, Hidden> pooled(const hidden_t& h) const {
    return pooler.dense(h.template slice<1, 0, 1>().template flatten<1, 2>()).tanh().realize();
  }

 private:
  template <class F> void for_each_dense(F f) {
    for (auto& l : encoder.layer) {
      f(l.attention.self.query), f(l.attention.self.key), f(l.attention.self.value), f(l.attention.output.dense);
      f(l.intermediate.dense), f(l.output.dense);
    }
    f(pooler.dense);
  }
  // embeddings.position_ids is Hugging Face's buffer arange(max_position_embeddings), which BertModel rebuilds
  // instead of loading it (newer checkpoints leave it out): a file that has it must have exactly those positions
  void check_position_ids(nn::StateDict& d, const std::string& file) {
    auto it = d.find("embeddings.position_ids");
    if (it == d.end()) { d["embeddings.position_ids"] = embeddings.position_ids.tensor(); return; }
    const Tensor& t = it->second;
    if (!is_int(t.dtype()))
      throw nn::StateError(who + file + ": embeddings.position_ids has dtype " + to_string(t.dtype()) +
                           ", not an integer type");
    auto v = t.to_vector<int64_t>();
    for (size_t i = 0; i < v.size(); i++)
      if (v[i] != int64_t(i))
        throw nn::StateError(who + file + ": embeddings.position_ids[0][" + std::to_string(i) + "] is " +
                             std::to_string(v[i]) + ", but the positions must be 0.." + std::to_string(Positions - 1) +
                             " in order");
  }
  inline static const std::string who = "tinygrad::models::Bert::load: ";
  static std::string shortest(double x) {  // the shortest text that reads back as x: 0.1, -1, 1e+308
    char b[32];
    return std::string(b, std::to_chars(b, b + sizeof(b), x).ptr);
  }
  void check_config(const std::string& path) {
    using Json = tinygrad::detail::Json;
    Json c = tinygrad::detail::parse_json_file(path, "tinygrad::models::Bert::load");
    auto setting = [&](const char* key, Json::Kind kind) -> const Json& {
      const Json* v = tinygrad::detail::find(c, key);
      if (!v || (v->kind != kind && !(kind == Json::Float && v->kind == Json::Int)))
        throw nn::StateError("tinygrad::models::Bert::load: " + path + " has no " + (kind == Json::Str ? "string" : "number") + " \"" + key + "\"");
      return *v;
    };
    std::pair<const char*, int64_t> sizes[] = {{"hidden_size", Hidden}, {"num_attention_heads", Heads}, {"intermediate_size", Intermediate},
                                               {"num_hidden_layers", Layers}, {"vocab_size", Vocab}, {"max_position_embeddings", Positions},
                                               {"type_vocab_size", Types}};
    for (auto [key, want] : sizes)
      if (int64_t got = setting(key, Json::Int).i; got != want)
        throw ShapeError("tinygrad::models::Bert::load: " + path + " has " + key + " " + std::to_string(got) +
                         ", the model was compiled for " + std::to_string(want));
    if (auto& act = setting("hidden_act", Json::Str).s; act != "gelu")
      throw nn::StateError("tinygrad::models::Bert::load: " + path + ": hidden_act \"" + act + "\" is not supported (only \"gelu\")");
    // the other settings that change the math, and every number in a range that means something
    auto bad = [&](const char* key, const std::string& why) {
      return nn::StateError(who + path + ": " + key + " " + why);
    };
    auto number = [&](const char* key, double lo, double hi, bool open_lo, bool required) -> double {
      const Json* v = tinygrad::detail::find(c, key);
      if (!v || v->kind == Json::Null) {
        if (required) setting(key, Json::Float);  // throws: no number
        return 0;
      }
      if (v->kind != Json::Int && v->kind != Json::Float) throw bad(key, "is not a number");
      double x = v->kind == Json::Int ? double(v->i) : v->f;
      if (!(open_lo ? x > lo : x >= lo) || !(x <= hi))
        throw bad(key, shortest(x) + " is outside " + (open_lo ? "(" : "[") + shortest(lo) + ", " + shortest(hi) + "]");
      return x;
    };
    // NOTE: eps is added to a variance of O(1): 0 or less is NaN on a constant row, past 0.1 it changes every output
    double eps = number("layer_norm_eps", 0, 0.1, true, true);
    number("attention_probs_dropout_prob", 0, 1, false, false);
    number("hidden_dropout_prob", 0, 1, false, false);
    number("initializer_range", 0, 1e6, false, false);
    auto given = [&](const char* key) {
      const Json* v = tinygrad::detail::find(c, key);
      return v && v->kind != Json::Null ? v : nullptr;
    };
    if (const Json* v = given("pad_token_id"); v && (v->kind != Json::Int || v->i < 0 || v->i >= Vocab))
      throw bad("pad_token_id", "is not a token id below vocab_size " + std::to_string(Vocab));
    if (const Json* v = given("position_embedding_type"); v && (v->kind != Json::Str || v->s != "absolute"))
      throw bad("position_embedding_type", "is not supported (only \"absolute\")");
    for (const char* key : {"is_decoder", "add_cross_attention"})
      if (const Json* v = given(key); v && (v->kind != Json::Bool || v->b))
        throw bad(key, "is not supported (only false: an encoder)");
    embeddings.LayerNorm.eps = eps;
    for (auto& l : encoder.layer) l.attention.output.LayerNorm.eps = l.output.LayerNorm.eps = eps;
  }
};

// sentence-transformers/all-MiniLM-L6-v2 (and every BERT of that shape)
template <class T = float> using MiniLM_L6_t = Bert<384, 12, 1536, 6, T>;
using MiniLM_L6 = MiniLM_L6_t<>;

}  // namespace tinygrad::models
