// text::BPETokenizer against the Hugging Face `tokenizers` library (tests/data/make_bpe_reference.py): two tiny
// trained tokenizers (gpt2 and llama-bpe pre-tokenizers) on many texts, random Unicode among them; the SmolLM2
// vocabulary (smollm pre-tokenizer) when SMOLLM2_TOKENIZER_JSON names its tokenizer.json; the same from GGUF-style
// vectors; streaming decode; bad inputs.
#include <catch2/catch.hpp>
#include <tinygrad/text/bpe.hpp>

#include <chrono>
#include <fstream>
#include <random>
#include <sstream>

using tinygrad::text::BPETokenizer;
using tinygrad::detail::Json;
using tinygrad::detail::find;

namespace {
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::string data_path(const std::string& name) { return std::string(TG_TEST_SOURCE_DIR) + "/tests/data/" + name; }
Json load_json(const std::string& path) { return tinygrad::detail::parse_json(read_text(path), path + ": "); }
std::vector<int32_t> ids_of(const Json& arr) {
  std::vector<int32_t> v;
  for (auto& x : arr.arr) v.push_back(int32_t(x.i));
  return v;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// the GGUF-style vectors of a tokenizer.json: tokens by id, "a b" merges, token types (added: 3 special, 4 not)
struct Vectors {
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
};
Vectors vectors_of(const Json& root) {
  Vectors v;
  const Json& model = *find(root, "model");
  for (auto& m : find(model, "vocab")->obj) {
    size_t id = size_t(m.value.i);
    if (id >= v.tokens.size()) v.tokens.resize(id + 1), v.types.resize(id + 1, 1);
    v.tokens[id] = m.key;
  }
  for (auto& a : find(root, "added_tokens")->arr) {
    size_t id = size_t(find(a, "id")->i);
    if (id >= v.tokens.size()) v.tokens.resize(id + 1), v.types.resize(id + 1, 1);
    v.tokens[id] = find(a, "content")->s;
    v.types[id] = find(a, "special")->b ? 3 : 4;
  }
  for (auto& m : find(model, "merges")->arr) v.merges.push_back(m.kind == Json::Str ? m.s : m.arr[0].s + " " + m.arr[1].s);
  return v;
}

// whether every byte of the text has a token: one without is dropped, as by Hugging Face (SmolLM2 has none for 21
// bytes, e.g. 0xF1), and then the ids do not spell the text
bool spellable(const BPETokenizer& tok, std::string_view text) {
  for (char b : text) {
    std::string ch;
    tinygrad::text::detail::append_utf8(ch, tinygrad::text::detail::byte_chars[uint8_t(b)]);
    if (tok.token_to_id(ch) < 0) return false;
  }
  return true;
}

// every case of a reference file gives Hugging Face's ids and decodes back to its text
void check_cases(const std::vector<const Json*>& cases, const BPETokenizer& tok) {
  size_t exact = 0;
  for (const Json* c : cases) {
    const std::string& text = find(*c, "text")->s;
    bool special = find(*c, "special")->b;
    INFO("text: \"" << text << "\" parse_special " << special);
    auto got = tok.encode(text, special);
    CHECK(got == ids_of(*find(*c, "ids")));
    if (spellable(tok, text)) CHECK(tok.decode(got) == text);
    exact += got == ids_of(*find(*c, "ids"));
  }
  REQUIRE(exact == cases.size());
}
}  // namespace

TEST_CASE("bpe: tiny gpt2 and llama-bpe tokenizers give the Hugging Face ids", "[bpe]") {
  Json ref = load_json(data_path("bpe_tiny_tokens.json"));
  for (std::string family : {"gpt2", "llama"}) {
    INFO("tokenizer " << family);
    std::string path = data_path("bpe_tiny_" + family + ".json");
    auto tok = BPETokenizer::from_file(path);
    CHECK(tok.pre() == (family == "gpt2" ? "gpt2" : "llama-bpe"));
    std::vector<const Json*> cases;
    for (auto& c : find(ref, "cases")->arr)
      if (find(c, "tokenizer")->s == family) cases.push_back(&c);
    REQUIRE(cases.size() > 100);
    check_cases(cases, tok);
    // the same vocabulary as GGUF vectors
    Vectors v = vectors_of(load_json(path));
    auto tv = BPETokenizer::from_vocab(v.tokens, v.merges, v.types, family == "gpt2" ? "gpt2" : "llama-bpe");
    check_cases(cases, tv);
  }
}

TEST_CASE("bpe: llama-bpe's template gives bos, user-defined tokens match always, control ones with parse_special", "[bpe]") {
  auto tok = BPETokenizer::from_file(data_path("bpe_tiny_llama.json"));
  CHECK(tok.add_bos());
  CHECK(tok.bos_id() == 0);
  CHECK(tok.id_to_token(0) == "<|begin_of_text|>");
  CHECK(tok.token_type(0) == BPETokenizer::Control);
  int32_t tool = tok.token_to_id("<tool>");
  REQUIRE(tool >= 0);
  CHECK(tok.token_type(tool) == BPETokenizer::UserDefined);
  CHECK(tok.encode("<tool>") == std::vector<int32_t>{tool});
  CHECK(tok.encode("<|eot_id|>", true) == std::vector<int32_t>{tok.token_to_id("<|eot_id|>")});
  CHECK(tok.encode("<|eot_id|>", false).size() > 1);
  CHECK(tok.decode(tok.encode("a<|eot_id|>b", true), true) == "ab");  // skip_control
  auto gpt2 = BPETokenizer::from_file(data_path("bpe_tiny_gpt2.json"), {.bos = 0, .eos = 0});
  CHECK(!gpt2.add_bos());
  CHECK(gpt2.eos_id() == 0);
  CHECK(gpt2.vocab_size() == 500);
}

TEST_CASE("bpe: any bytes encode and decode back, invalid UTF-8 included, and streaming keeps characters whole", "[bpe]") {
  auto tok = BPETokenizer::from_file(data_path("bpe_tiny_gpt2.json"));
  std::mt19937 rng(39);
  for (int k = 0; k < 200; k++) {
    std::string s(size_t(rng() % 64), '\0');
    for (auto& c : s) c = char(rng() % 4 ? rng() % 128 : rng() % 256);
    auto ids = tok.encode(s, k % 2);
    for (int32_t id : ids) REQUIRE(size_t(id) < tok.vocab_size());
    REQUIRE(tok.decode(ids) == s);
  }
  std::string text = "h\xC3\xA9llo \xF0\x9F\x98\x80 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD!";
  tinygrad::text::Utf8Stream stream;
  std::string out;
  for (int32_t id : tok.encode(text)) {
    std::string chunk = stream.push(tok.piece(id));
    CHECK(tinygrad::text::detail::decode_utf8(chunk).find(U'\uFFFD') == std::u32string::npos);
    out += chunk;
  }
  CHECK(stream.flush().empty());
  CHECK(out == text);
  CHECK(stream.push("a\xF0\x9F") == "a");
  CHECK(stream.push("\x98") == "");
  CHECK(stream.push("\x80\xFF") == "\xF0\x9F\x98\x80\xFF");
  CHECK(stream.push("\xE4") == "");
  CHECK(stream.flush() == "\xE4");
}

TEST_CASE("bpe: SmolLM2 gives the Hugging Face ids exactly, from tokenizer.json and from GGUF vectors", "[bpe]") {
  const char* path = std::getenv("SMOLLM2_TOKENIZER_JSON");
  if (!path) {
    WARN("SKIPPED: set SMOLLM2_TOKENIZER_JSON to the tokenizer.json of tests/data/make_bpe_reference.py");
    return;
  }
  auto tok = BPETokenizer::from_file(path, {.bos = 1, .eos = 2, .pad = 2});
  CHECK(tok.pre() == "smollm");
  CHECK(tok.vocab_size() == 49152);
  CHECK(tok.encode("a  1") == std::vector<int32_t>{81, 256, 33});  // the digit split (transformers' GGUF conversion: 81 216 216 33)
  CHECK(tok.encode("<|im_start|>user\nhi<|im_end|>", true).front() == 1);
  Json ref = load_json(data_path("smollm2_tokens.json"));
  std::vector<const Json*> cases;
  for (auto& c : find(ref, "cases")->arr) cases.push_back(&c);
  REQUIRE(cases.size() > 300);
  check_cases(cases, tok);
  Vectors v = vectors_of(load_json(path));
  auto t0 = std::chrono::steady_clock::now();
  auto tv = BPETokenizer::from_vocab(v.tokens, v.merges, v.types, "smollm", {.bos = 1, .eos = 2, .pad = 2});
  WARN("from_vocab of 49152 tokens, " << v.merges.size() << " merges: "
       << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s");
  check_cases(cases, tv);
  // speed: 1 MB of varied text
  std::string mb;
  for (size_t k = 0; mb.size() < (1 << 20); k++)
    if (const std::string& t = find(*cases[k % cases.size()], "text")->s; spellable(tok, t)) mb += t + "\n";
  t0 = std::chrono::steady_clock::now();
  auto ids = tok.encode(mb);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  WARN("encode of " << mb.size() << " bytes: " << ids.size() << " ids in " << s << " s");
  CHECK(tok.decode(ids) == mb);
}

TEST_CASE("bpe: bad vocabularies and files are StateErrors that name the problem, bad ids IndexErrors", "[bpe]") {
  using tinygrad::nn::StateError;
  auto msg = [](auto&& f) {
    try { f(); } catch (const tinygrad::Error& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  std::vector<std::string> toks{"a", "b", "ab", "<s>"};
  std::vector<int32_t> types{1, 1, 1, 3};
  auto ok = BPETokenizer::from_vocab(toks, {"a b"}, types, "gpt2", {.bos = 3, .add_bos = true});
  CHECK(ok.encode("abab<s>", true) == std::vector<int32_t>{2, 2, 3});  // "c" has no token: dropped
  CHECK(ok.encode("abc") == std::vector<int32_t>{2});
  std::string m = msg([&] { BPETokenizer::from_vocab(toks, {"a b"}, types, "qwen2"); });
  CHECK(contains(m, "tinygrad::BPETokenizer::from_vocab"));
  CHECK(contains(m, "\"qwen2\""));
  CHECK(contains(m, "gpt2, smollm, llama-bpe"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {"a c"}, types, "gpt2"); }), "\"c\""));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {"b a"}, types, "gpt2"); }), "\"ba\", which is not in the vocabulary"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {"ab"}, types, "gpt2"); }), "not two tokens"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {"a b", "a b"}, types, "gpt2"); }), "listed twice"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {}, {1, 1}, "gpt2"); }), "token_types has 2 entries for 4 tokens"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {}, {1, 1, 9, 1}, "gpt2"); }), "has type 9"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab({"a", "a"}, {}, {}, "gpt2"); }), "token \"a\" has ids 0 and 1"));
  CHECK(contains(msg([&] { BPETokenizer::from_vocab(toks, {}, {}, "gpt2", {.eos = 4}); }), "eos id 4 is outside"));
  CHECK_THROWS_AS(BPETokenizer::from_vocab({}, {}, {}, "gpt2"), StateError);
  m = msg([&] { std::vector<int32_t> ids{0, 7}; ok.decode(ids); });
  CHECK(contains(m, "tinygrad::BPETokenizer::decode: id 7 is outside the vocabulary [0, 4)"));
  CHECK_THROWS_AS(ok.piece(-1), tinygrad::IndexError);

  std::string good = read_text(data_path("bpe_tiny_gpt2.json"));
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  CHECK(contains(msg([&] { BPETokenizer::from_json("{\"model\": ", "x.json"); }), "x.json: malformed JSON"));
  CHECK_THROWS_AS(BPETokenizer::from_json("[]"), StateError);
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("\"type\":\"BPE\"", "\"type\":\"WordPiece\"")); }),
                 "model type \"WordPiece\" is not supported (only BPE)"));
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("[\"Ġ\",\"t\"]", "[\"Ġ\",\"zzz\"]")); }), "\"zzz\""));
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("\"use_regex\":true", "\"use_regex\":false")); }),
                 "none of the known families"));
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("\"decoder\":{\"type\":\"ByteLevel\"", "\"decoder\":{\"type\":\"BPEDecoder\"")); }),
                 "decoder \"BPEDecoder\""));
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("\"id\":0,", "\"id\":9000,")); }), "past the vocabulary"));
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("\"Ġt\":", "\"zz\":600,\"Ġt\":")); }), "token \"zz\" has no id in [0, 501)"));
  CHECK(contains(msg([&] { BPETokenizer::from_json(edit("\"post_processor\":{\"type\":\"ByteLevel\"",
                                                        "\"post_processor\":{\"type\":\"RobertaProcessing\"")); }),
                 "post_processor \"RobertaProcessing\" is not supported"));
  CHECK_THROWS_AS(BPETokenizer::from_file("/nonexistent/tokenizer.json"), StateError);
}
