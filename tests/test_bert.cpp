// models/bert.hpp: all-MiniLM-L6-v2 against sentence-transformers' embeddings (tests/data/minilm, on every device
// here), a tiny BERT against the same model written with dynamic Tensors, loading errors, the attention's kernels
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <tinygrad/models/bert.hpp>
#include <tinygrad/text/tokenizer.hpp>
#include "minilm.hpp"

using namespace tinygrad;
using Catch::Matchers::Contains;
using Catch::Matchers::Message;
namespace fs = std::filesystem;

namespace {
using ids_t = static_tensor<int32_t, dyn, dyn>;
bool has_device(const std::string& d) {
  try { runtime(d); return true; } catch (const DeviceError&) { return false; }
}
ids_t ids_of(const std::vector<int32_t>& v, int64_t b, int64_t s, const std::string& dev) { return ids_t(Tensor(v).reshape({b, s}).to(dev)); }

// the same BERT with dynamic Tensors and nn layers' math, straight from the state dict: the reference for a tiny model
Tensor reference_bert(const nn::StateDict& d, const Tensor& ids, const Tensor& mask, int64_t heads, double eps) {
  auto w = [&](const std::string& n) { return d.at(n); };
  auto dense = [&](const Tensor& x, const std::string& n) { return x.matmul(w(n + ".weight").T()) + w(n + ".bias"); };
  auto norm = [&](const Tensor& x, const std::string& n) { return x.layer_norm({x.shape(-1)}, w(n + ".weight"), w(n + ".bias"), eps); };
  int64_t b = ids.shape(0), s = ids.shape(1), h = w("embeddings.word_embeddings.weight").shape(1);
  Tensor x = nn::embedding(ids, w("embeddings.word_embeddings.weight")) + w("embeddings.position_embeddings.weight").shrink({{0, s}, {0, h}}) +
             w("embeddings.token_type_embeddings.weight")[0];
  x = norm(x, "embeddings.LayerNorm");
  Tensor keep = (mask != 0).reshape({b, 1, 1, s});
  for (int l = 0; d.count("encoder.layer." + std::to_string(l) + ".output.dense.weight"); l++) {
    std::string p = "encoder.layer." + std::to_string(l) + ".";
    auto split = [&](const Tensor& y) { return y.reshape({b, s, heads, h / heads}).permute({0, 2, 1, 3}); };
    Tensor q = split(dense(x, p + "attention.self.query")), k = split(dense(x, p + "attention.self.key")),
        v = split(dense(x, p + "attention.self.value"));
    Tensor scores = q.matmul(k.transpose(-2, -1)) / std::sqrt(double(h / heads)) + keep.where(0.0, -1e30);
    Tensor a = scores.softmax(-1).matmul(v).permute({0, 2, 1, 3}).reshape({b, s, h});
    x = norm(dense(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm");
    Tensor i = dense(x, p + "intermediate.dense");
    i = i * 0.5 * (1.0 + (i / std::sqrt(2.0)).erf());
    x = norm(dense(i, p + "output.dense") + x, p + "output.LayerNorm");
  }
  return x;
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) : path(fs::temp_directory_path() / ("tg_test_bert_" + tag + "_" + std::to_string(getpid()))) {
    fs::create_directories(path);
  }
  ~TempDir() { std::error_code ec; fs::remove_all(path, ec); }
};
void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
std::string tiny_config(int hidden = 8, const std::string& act = "gelu") {
  return "{\"hidden_size\": " + std::to_string(hidden) +
         ", \"num_attention_heads\": 2, \"intermediate_size\": 16, \"num_hidden_layers\": 2, \"vocab_size\": 10, \"max_position_embeddings\": 16, "
         "\"type_vocab_size\": 2, \"hidden_act\": \"" + act + "\", \"layer_norm_eps\": 1e-12}";
}
using Tiny = models::Bert<8, 2, 16, 2, float, 10, 16, 2>;
}  // namespace

TEST_CASE("bert: a tiny BERT equals the same model written with dynamic Tensors, padding does not change a sentence", "[bert]") {
  TempDir tmp("tiny");
  Tiny src;
  nn::StateDict sd;
  Tensor::manual_seed(3);
  for (auto& [name, t] : nn::get_state_dict(src)) sd[name] = name == "embeddings.position_ids" ? t.realize() : Tensor::randn(t.shape()) * 0.5;
  nn::safe_save(sd, (tmp.path / "model.safetensors").string());
  write(tmp.path / "config.json", tiny_config());
  Tiny m;
  m.load(tmp.path.string());
  std::vector<int32_t> ids{1, 5, 7, 9, 2, 1, 3, 2, 0, 0}, mask{1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  auto h = m(ids_of(ids, 2, 5, default_device()), ids_of(mask, 2, 5, default_device()));
  Tensor ref = reference_bert(sd, Tensor(ids).reshape({2, 5}), Tensor(mask).reshape({2, 5}), 2, 1e-12);
  auto a = h.to_vector<float>(), r = ref.to_vector<float>();
  REQUIRE(a.size() == r.size());
  for (size_t i = 0; i < a.size(); i++) REQUIRE(a[i] == Approx(r[i]).margin(1e-4));
  // the second sentence alone (3 tokens) gives the same first 3 hidden states as padded to 5
  auto alone = m(ids_of({1, 3, 2}, 1, 3, default_device()), ids_of({1, 1, 1}, 1, 3, default_device())).to_vector<float>();
  for (size_t i = 0; i < alone.size(); i++) REQUIRE(alone[i] == Approx(a[40 + i]).margin(1e-5));
  // pooled embeddings have norm 1
  auto e = m.embed(ids_of(ids, 2, 5, default_device()), ids_of(mask, 2, 5, default_device())).to_vector<float>();
  for (int s = 0; s < 2; s++) {
    double n = 0;
    for (int k = 0; k < 8; k++) n += double(e[size_t(s * 8 + k)]) * e[size_t(s * 8 + k)];
    CHECK(n == Approx(1.0).margin(1e-5));
  }
}

TEST_CASE("bert: load checks config.json and the file's tensors against the compiled model", "[bert]") {
  TempDir tmp("errors");
  Tiny src;
  nn::StateDict sd;
  for (auto& [name, t] : nn::get_state_dict(src)) sd[name] = t.realize();
  auto save = [&](const nn::StateDict& d) { nn::safe_save(d, (tmp.path / "model.safetensors").string()); };
  save(sd);
  Tiny m;
  SECTION("config") {
    write(tmp.path / "config.json", tiny_config(16));
    CHECK_THROWS_MATCHES(m.load(tmp.path.string()), ShapeError,
        Message("tinygrad::models::Bert::load: " + (tmp.path / "config.json").string() + " has hidden_size 16, the model was compiled for 8"));
    write(tmp.path / "config.json", tiny_config(8, "relu"));
    CHECK_THROWS_MATCHES(m.load(tmp.path.string()), nn::StateError,
        Message("tinygrad::models::Bert::load: " + (tmp.path / "config.json").string() + ": hidden_act \"relu\" is not supported (only \"gelu\")"));
    write(tmp.path / "config.json", "{\"hidden_size\": 8");
    CHECK_THROWS_AS(m.load(tmp.path.string()), nn::StateError);
    fs::remove(tmp.path / "config.json");
    CHECK_THROWS_WITH(m.load(tmp.path.string()), Contains("cannot open") && Contains("config.json"));
  }
  SECTION("tensors") {
    write(tmp.path / "config.json", tiny_config());
    nn::StateDict bad = sd;
    bad["encoder.layer.1.intermediate.dense.weight"] = Tensor::zeros({16, 9});
    save(bad);
    CHECK_THROWS_MATCHES(m.load(tmp.path.string()), ShapeError,
                         Message("tinygrad::models::Bert::load: encoder.layer.1.intermediate.dense.weight has shape (16, 9) in " +
                                 (tmp.path / "model.safetensors").string() + ", the model expects (16, 8)"));
    bad = sd;
    bad.erase("pooler.dense.bias");
    bad["cls.predictions.bias"] = Tensor::zeros({10});
    save(bad);
    CHECK_THROWS_WITH(m.load(tmp.path.string()), Contains("missing keys: pooler.dense.bias") && Contains("unexpected keys: cls.predictions.bias"));
    save(sd);  // the model is usable after the errors
    m.load(tmp.path.string());
    CHECK(m.embed(ids_of({1, 2}, 1, 2, default_device()), ids_of({1, 1}, 1, 2, default_device())).tensor().shape() == Shape{1, 8});
  }
}

TEST_CASE("bert: load checks what config.json and the file's values mean", "[bert]") {
  TempDir tmp("values");
  Tiny src;
  nn::StateDict sd;
  Tensor::manual_seed(5);
  for (auto& [name, t] : nn::get_state_dict(src))
    sd[name] = name == "embeddings.position_ids" ? t.realize() : Tensor::randn(t.shape()) * 0.5;
  std::string file = (tmp.path / "model.safetensors").string(), config = (tmp.path / "config.json").string();
  auto save = [&](const nn::StateDict& d) { nn::safe_save(d, file); };
  auto with = [&](const std::string& from, const std::string& to) {
    std::string c = tiny_config();
    c.replace(c.find(from), from.size(), to);
    write(config, c);
  };
  save(sd);
  Tiny m;
  auto fails = [&](const std::string& what) {
    CHECK_THROWS_MATCHES(m.load(tmp.path.string()), nn::StateError, Message("tinygrad::models::Bert::load: " + what));
  };
  // layer_norm_eps: -1 gave NaN, 1e308 a different answer, both silently
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": -1");
  fails(config + ": layer_norm_eps -1 is outside (0, 0.1]");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e308");
  fails(config + ": layer_norm_eps 1e+308 is outside (0, 0.1]");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 0");
  fails(config + ": layer_norm_eps 0 is outside (0, 0.1]");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": \"small\"");
  fails(config + ": layer_norm_eps is not a number");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e-12, \"hidden_dropout_prob\": 2");
  fails(config + ": hidden_dropout_prob 2 is outside [0, 1]");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e-12, \"pad_token_id\": 10");
  fails(config + ": pad_token_id is not a token id below vocab_size 10");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e-12, \"position_embedding_type\": \"relative_key\"");
  fails(config + ": position_embedding_type is not supported (only \"absolute\")");
  with("\"layer_norm_eps\": 1e-12", "\"layer_norm_eps\": 1e-12, \"is_decoder\": true");
  fails(config + ": is_decoder is not supported (only false: an encoder)");
  // embeddings.position_ids: 100000 gave a zero position embedding silently; HF's BertModel uses 0..15 in order
  write(config, tiny_config());
  nn::StateDict bad = sd;
  std::vector<int64_t> pos(16);
  for (int i = 0; i < 16; i++) pos[size_t(i)] = i;
  pos[5] = 100000;
  bad["embeddings.position_ids"] = Tensor(pos).reshape({1, 16});
  save(bad);
  fails(file + ": embeddings.position_ids[0][5] is 100000, but the positions must be 0..15 in order");
  pos[5] = 6, pos[6] = 5;
  bad["embeddings.position_ids"] = Tensor(pos).reshape({1, 16});
  save(bad);
  fails(file + ": embeddings.position_ids[0][5] is 6, but the positions must be 0..15 in order");
  bad["embeddings.position_ids"] = Tensor::arange(16).reshape({1, 16}).cast(DType::Float32);
  save(bad);
  fails(file + ": embeddings.position_ids has dtype dtypes.float32, not an integer type");
  // a file without it (newer checkpoints leave the buffer out) loads, with the same answer
  std::vector<int32_t> ids{1, 5, 7, 9, 2}, mask{1, 1, 1, 1, 1};
  save(sd);
  m.load(tmp.path.string());
  auto want = m(ids_of(ids, 1, 5, default_device()), ids_of(mask, 1, 5, default_device())).to_vector<float>();
  bad = sd;
  bad.erase("embeddings.position_ids");
  save(bad);
  Tiny m2;
  m2.load(tmp.path.string());
  CHECK(m2(ids_of(ids, 1, 5, default_device()), ids_of(mask, 1, 5, default_device())).to_vector<float>() == want);
}

TEST_CASE("bert: token ids outside the vocabulary are an IndexError, and the model still works", "[bert]") {
  Tiny m;
  auto run = [&](std::vector<int32_t> ids) {
    int64_t n = int64_t(ids.size());
    std::string dev = tinygrad::default_device();
    auto r = m(ids_of(ids, 1, n, dev), ids_of(std::vector<int32_t>(ids.size(), 1), 1, n, dev));
    (void)r.tensor().sum().item<float>();  // NOTE: ids on a GPU are checked there, and the error comes at a sync
    return r;
  };
  auto msg = [](const std::string& i) {
    return Message("tinygrad::nn::embedding: index " + i + " is out of bounds for size 10 (valid indices are 0..9)");
  };
  CHECK_THROWS_MATCHES(run({1, 10, 2}), IndexError, msg("10"));
  CHECK_THROWS_MATCHES(run({1, -1, 2}), IndexError, msg("-1"));
  CHECK_THROWS_MATCHES(run({INT32_MAX}), IndexError, msg("2147483647"));
  CHECK(run({1, 9, 2}).tensor().shape() == Shape{1, 3, 8});
}

TEST_CASE("bert: all-MiniLM-L6-v2 refuses ids 30522, -1 and INT32_MAX", "[bert][model]") {
  TG_REQUIRE_MINILM(dir);
  models::MiniLM_L6 m;
  m.load(*dir, "CPU");
  auto embed = [&](std::vector<int32_t> ids) {
    return m.embed(ids_of(ids, 1, 3, "CPU"), ids_of({1, 1, 1}, 1, 3, "CPU")).to_vector<float>();
  };
  for (int32_t bad : {30522, -1, INT32_MAX})
    CHECK_THROWS_MATCHES(embed({101, bad, 102}), IndexError,
                         Message("tinygrad::nn::embedding: index " + std::to_string(bad) +
                                 " is out of bounds for size 30522 (valid indices are 0..30521)"));
  auto e = embed({101, 7592, 102});  // "hello"
  double n = 0;
  for (float x : e) n += double(x) * x;
  CHECK(n == Approx(1.0).margin(1e-5));
}

TEST_CASE("bert: more tokens than positions is a ShapeError", "[bert]") {
  Tiny m;
  std::vector<int32_t> ids(17, 1);
  CHECK_THROWS_MATCHES(m(ids_of(ids, 1, 17, default_device()), ids_of(ids, 1, 17, default_device())), ShapeError,
                       Message("tinygrad::models::Bert: 17 tokens, the model has 16 positions"));
  CHECK_THROWS_AS(m(ids_of(ids, 1, 17, default_device()), ids_of({1, 1}, 1, 2, default_device())), ShapeError);
}

TEST_CASE("bert: attention with a padding mask is 4 kernels", "[bert]") {
  auto q = static_tensor<float, dyn, 12, dyn, 32>::randn(2, 7), k = static_tensor<float, dyn, 12, dyn, 32>::randn(2, 7),
      v = static_tensor<float, dyn, 12, dyn, 32>::randn(2, 7);
  auto keep = static_tensor<bool, dyn, 1, 1, dyn>(Tensor(std::vector<int32_t>{1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1}).reshape({2, 1, 1, 7}) != 0);
  int64_t before = run_stats().kernels_run;
  auto a = scaled_dot_product_attention(q, k, v, keep).realize();
  CHECK(run_stats().kernels_run - before == 4);
  // a masked key gets no weight: changing it changes nothing
  auto v2 = static_tensor<float, dyn, 12, dyn, 32>(v.tensor() +
                                                   Tensor::ones({2, 12, 7, 32}) * (Tensor::arange(7).reshape({1, 1, 7, 1}) == 5).where(100.0, 0.0));
  auto b = scaled_dot_product_attention(q, k, v2, keep).to_vector<float>();
  auto av = a.to_vector<float>();
  for (size_t i = 0; i < 12 * 7 * 32; i++) REQUIRE(b[i] == Approx(av[i]).margin(1e-5));
}

TEST_CASE("bert: all-MiniLM-L6-v2 sentence embeddings equal sentence-transformers' on every device", "[bert][model]") {
  TG_REQUIRE_MINILM(dir);
  std::ifstream in(std::string(TG_TEST_SOURCE_DIR) + "/tests/data/minilm/embeddings.json");
  std::stringstream ss;
  ss << in.rdbuf();
  detail::Json j = detail::parse_json(ss.str(), "embeddings.json: ");
  std::vector<std::string> texts;
  std::vector<std::vector<double>> want;
  for (auto& c : detail::find(j, "cases")->arr) {
    texts.push_back(detail::find(c, "text")->s);
    want.emplace_back();
    for (auto& x : detail::find(c, "embedding")->arr) want.back().push_back(x.kind == detail::Json::Float ? x.f : double(x.i));
  }
  REQUIRE(texts.size() == 20);
  auto tok = text::BertTokenizer::from_file(*dir);
  auto batch = tok.encode_batch(texts);
  auto check = [&](const auto& model, const std::string& dev, double cos_min, double tol) {
    auto e = model.embed(ids_of(batch.ids, batch.batch, batch.seq, dev), ids_of(batch.mask, batch.batch, batch.seq, dev)).template to_vector<float>();
    for (size_t s = 0; s < texts.size(); s++) {
      double dot = 0, na = 0, nb = 0, worst = 0;
      for (size_t k = 0; k < 384; k++) {
        double a = e[s * 384 + k], b = want[s][k];
        dot += a * b, na += a * a, nb += b * b, worst = std::max(worst, std::abs(a - b));
      }
      INFO(dev << ": \"" << texts[s] << "\"");
      CHECK(dot / std::sqrt(na * nb) >= cos_min);
      CHECK(worst <= tol);
    }
  };
  for (std::string dev : {"CPU", "CL", "CUDA"}) {
    if (!has_device(dev)) { WARN(dev << " is not available here: skipped"); continue; }
    models::MiniLM_L6 m;
    m.load(*dir, dev);
    check(m, dev, 0.99999, 1e-4);
    if (dev == "CUDA") {
      models::MiniLM_L6_t<half_t> h;
      h.load(*dir, dev);
      check(h, dev, 0.999, 1e-2);
    }
  }
}
