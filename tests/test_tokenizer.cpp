// text::BertTokenizer against the Hugging Face tokenizer of all-MiniLM-L6-v2: the ids of 261 varied texts
// (tests/data/minilm/gen_reference.py), padding, truncation, vocabulary lookups, invalid UTF-8 and bad files.
#include <catch2/catch.hpp>
#include <tinygrad/text/tokenizer.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include "minilm.hpp"

using tinygrad::text::BertTokenizer;
using tinygrad::detail::Json;
using tinygrad::detail::find;
namespace fs = std::filesystem;

namespace {
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
std::vector<int32_t> ids_of(const Json& arr) {
  std::vector<int32_t> v;
  for (auto& x : arr.arr) v.push_back(int32_t(x.i));
  return v;
}
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("tokenizer: every reference text gives the Hugging Face ids exactly", "[tokenizer]") {
  TG_REQUIRE_MINILM(dir);
  auto tok = BertTokenizer::from_file(*dir);
  std::string ref = std::string(TG_TEST_SOURCE_DIR) + "/tests/data/minilm/tokens.json";
  Json root = tinygrad::detail::parse_json(read_text(ref), ref + ": ");
  REQUIRE(find(root, "max_length")->i == 256);
  const auto& cases = find(root, "cases")->arr;
  REQUIRE(cases.size() >= 220);
  size_t exact = 0;
  for (auto& c : cases) {
    const std::string& text = find(c, "text")->s;
    INFO("text: " << text);
    auto got = tok.encode(text, 256);
    CHECK(got == ids_of(*find(c, "ids")));
    exact += got == ids_of(*find(c, "ids"));
  }
  WARN(exact << "/" << cases.size() << " reference texts tokenized exactly");
  REQUIRE(exact == cases.size());
}

TEST_CASE("tokenizer: batches pad to the longest with [PAD] and a 0 mask", "[tokenizer]") {
  TG_REQUIRE_MINILM(dir);
  auto tok = BertTokenizer::from_file(*dir);
  auto b = tok.encode_batch({"hello world, this is a test", "hi", ""});
  REQUIRE(b.batch == 3);
  REQUIRE(b.seq == 9);
  REQUIRE(b.ids == std::vector<int32_t>{101, 7592, 2088, 1010, 2023, 2003, 1037, 3231, 102,  //
                                        101, 7632, 102, 0, 0, 0, 0, 0, 0,                    //
                                        101, 102, 0, 0, 0, 0, 0, 0, 0});
  REQUIRE(b.mask == std::vector<int32_t>{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0});
  auto empty = tok.encode_batch({});
  REQUIRE((empty.batch == 0 && empty.seq == 0 && empty.ids.empty()));
}

TEST_CASE("tokenizer: truncation keeps [SEP] at 256 and at small max_length", "[tokenizer]") {
  TG_REQUIRE_MINILM(dir);
  auto tok = BertTokenizer::from_file(*dir);
  std::string long_text;
  for (int i = 0; i < 300; i++) long_text += "word ";
  auto ids = tok.encode(long_text);
  REQUIRE(ids.size() == 256);
  REQUIRE((ids.front() == 101 && ids.back() == 102 && ids[254] == 2773));
  REQUIRE(tok.encode(long_text, 1000).size() == 302);
  // the reference library: truncation at 5 cuts inside a word's pieces
  REQUIRE(tok.encode("hello world, this is a test", 5) == std::vector<int32_t>{101, 7592, 2088, 1010, 102});
  REQUIRE(tok.encode("unbelievably [MASK] good", 5) == std::vector<int32_t>{101, 4895, 8671, 2666, 102});
  REQUIRE(tok.encode("hello world", 2) == std::vector<int32_t>{101, 102});
  REQUIRE_THROWS_WITH(tok.encode("hello", 1), Catch::Contains("tinygrad::BertTokenizer::encode: max_length 1"));
  auto b = tok.encode_batch({long_text, "short"}, 8);
  REQUIRE((b.seq == 8 && b.ids[7] == 102 && b.ids[8 + 2] == 102 && b.mask[8 + 3] == 0));
}

TEST_CASE("tokenizer: vocabulary lookups and special tokens", "[tokenizer]") {
  TG_REQUIRE_MINILM(dir);
  auto tok = BertTokenizer::from_file(*dir + "/tokenizer.json");  // the file itself, not the directory
  REQUIRE(tok.vocab_size() == 30522);
  REQUIRE(tok.pad_id() == 0);
  for (auto [t, id] : {std::pair{"[PAD]", 0}, {"[UNK]", 100}, {"[CLS]", 101}, {"[SEP]", 102}, {"[MASK]", 103}, {"hello", 7592}, {"##s", 2015}}) {
    REQUIRE(tok.token_to_id(t) == id);
    REQUIRE(tok.id_to_token(id) == t);
  }
  REQUIRE(tok.token_to_id("not-a-token") == -1);
  REQUIRE(tok.id_to_token(-1).empty());
  REQUIRE(tok.id_to_token(30522).empty());
  // added tokens are found in the raw text, before normalization
  REQUIRE(tok.encode("hello[MASK]world") == std::vector<int32_t>{101, 7592, 103, 2088, 102});
  REQUIRE(tok.encode("[mask]") == std::vector<int32_t>{101, 1031, 7308, 1033, 102});
}

TEST_CASE("tokenizer: invalid UTF-8 reads as bytes.decode('utf-8', 'replace') and never crashes", "[tokenizer]") {
  TG_REQUIRE_MINILM(dir);
  auto tok = BertTokenizer::from_file(*dir);
  // expected ids: the Python tokenizers library on the text Python's bytes.decode("utf-8", "replace") gives
  const std::pair<std::string, std::vector<int32_t>> cases[] = {
      {"caf\xc3", {101, 24689, 102}},
      {"\xff\xfe hello", {101, 7592, 102}},
      {"ab\xff" "cd", {101, 5925, 2094, 102}},
      {"[MA\xffSK] x", {101, 1031, 7308, 1033, 1060, 102}},  // U+FFFD stops the [MASK] match; clean_text drops it
      {"\xe0\x80\xaf", {101, 102}},
      {"\xed\xa0\x80 surrogate", {101, 7505, 21799, 102}},
      {"\xf4\x90\x80\x80 too big", {101, 2205, 2502, 102}},
      {"\xc0\xaf overlong", {101, 2058, 10052, 102}},
      {"\xe4\xbd\xa0\xe5\xa5 half", {101, 100, 2431, 102}},
      {"\x80\x80\x80", {101, 102}},
  };
  for (auto& [text, want] : cases) REQUIRE(tok.encode(text) == want);
  // the decoder itself: one U+FFFD per maximal invalid subpart, as Python's
  using tinygrad::text::detail::decode_utf8;
  REQUIRE(decode_utf8("\xe0\x80\xaf") == U"\uFFFD\uFFFD\uFFFD");
  REQUIRE(decode_utf8("\xe4\xbd\xa0\xe5\xa5") == U"\u4F60\uFFFD");
  REQUIRE(decode_utf8("\xf0\x9f\x8d\x95!\xf0\x9f") == U"\U0001F355!\uFFFD");
  // every byte string of length <= 2, and truncated prefixes of multi-byte text: no crash, always [CLS] ... [SEP]
  for (int a = 0; a < 256; a++)
    for (int b = 0; b < 256; b++) {
      auto ids = tok.encode(std::string{char(a), char(b)});
      REQUIRE((ids.size() >= 2 && ids.front() == 101 && ids.back() == 102));
    }
  std::string multi = "naïve 你好 🍕 안녕 ΣΑΣ";
  for (size_t n = 0; n <= multi.size(); n++) REQUIRE(tok.encode(multi.substr(0, n)).back() == 102);
}

TEST_CASE("tokenizer: bad files are StateErrors naming the file and the problem", "[tokenizer]") {
  TG_REQUIRE_MINILM(dir);
  fs::path tmp = fs::temp_directory_path() / ("tg_tokenizer_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  auto expect = [&](const std::string& name, const std::string& content, const std::string& what) {
    std::string path = (tmp / name).string();
    if (!content.empty()) std::ofstream(path, std::ios::binary) << content;
    INFO("file " << path << ", expecting '" << what << "'");
    try {
      BertTokenizer::from_file(path);
      FAIL("loaded");
    } catch (const tinygrad::nn::StateError& e) {
      INFO(e.what());
      CHECK(contains(e.what(), "tinygrad::BertTokenizer: " + path));
      CHECK(contains(e.what(), what));
    }
  };
  expect("missing.json", "", "cannot open the file");
  expect("not_json.json", "this is not json", "malformed JSON: unexpected character 't' at byte 0");
  expect("truncated.json", "{\"model\": {\"type\": \"WordPiece\"", "malformed JSON: unexpected end");
  expect("array.json", "[1, 2]", "not a JSON object");
  std::string real = read_text(*dir + "/tokenizer.json");
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = real;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  expect("bpe.json", replaced(R"("type":"WordPiece","unk_token")", R"("type":"BPE","unk_token")"), "model type \"BPE\" is not supported");
  expect("norm.json", replaced(R"("type":"BertNormalizer")", R"("type":"NFKC")"), "normalizer type \"NFKC\" is not supported");
  expect("pre.json", replaced(R"("type":"BertPreTokenizer")", R"("type":"Metaspace")"), "pre_tokenizer type \"Metaspace\" is not supported");
  expect("unk.json", replaced(R"("unk_token":"[UNK]")", R"("unk_token":"[NOPE]")"), "token \"[NOPE]\" is not in the vocabulary");
  fs::remove_all(tmp);
}

// tests/fuzz/corpus/tokenizer/minilm_small.json: all-MiniLM-L6-v2's tokenizer.json with 235 of its tokens, renumbered
TEST_CASE("tokenizer: every id the file gives is an integer id of its vocabulary", "[tokenizer]") {
  std::string seed = std::string(TG_TEST_SOURCE_DIR) + "/tests/fuzz/corpus/tokenizer/minilm_small.json";
  fs::path tmp = fs::temp_directory_path() / ("tg_tokenizer_ids_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  auto text = [&](const std::string& name, const std::string& content) {
    std::string path = (tmp / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  };
  std::string real = read_text(seed);
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = real;
    size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  auto expect = [&](const std::string& name, const std::string& content, const std::string& what) {
    std::string path = text(name, content);
    INFO("file " << path << ", expecting '" << what << "'");
    try {
      BertTokenizer::from_file(path);
      FAIL("loaded");
    } catch (const tinygrad::nn::StateError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()) == "tinygrad::BertTokenizer: " + path + ": " + what);
    }
  };
  auto ok = BertTokenizer::from_file(seed);
  REQUIRE(ok.vocab_size() == 235);
  REQUIRE(ok.encode("hello world [MASK]") == std::vector<int32_t>{101, 215, 216, 103, 102});
  const std::string cls = R"("[CLS]":{"id":"[CLS]","ids":[101])", outside = ", outside the vocabulary [0, 235)";
  auto cls_ids = [&](const std::string& ids) { return replaced(cls, R"("[CLS]":{"id":"[CLS]","ids":[)" + ids + "]"); };
  const std::string special = "post_processor: special token \"[CLS]\" ";
  expect("cls_neg.json", cls_ids("-5"), special + "has id -5" + outside);
  expect("cls_big.json", cls_ids("1099511627783"), special + "has id 1099511627783" + outside);  // 2^40 + 7: was 7
  expect("cls_past.json", cls_ids("235"), special + "has id 235" + outside);
  expect("cls_frac.json", cls_ids("101.5"), special + "is not an integer id");
  expect("cls_float.json", cls_ids("1e2"), special + "is not an integer id");
  expect("cls_huge.json", cls_ids("99999999999999999999"),
         "malformed JSON: integer too large at byte " + std::to_string(real.find(cls) + cls.size() - 4 + 20));
  expect("pad_neg.json", replaced(R"("pad_id":0)", R"("pad_id":-7)"), "padding.pad_id has id -7" + outside);
  expect("pad_str.json", replaced(R"("pad_id":0)", R"("pad_id":"0")"), "padding.pad_id is not an integer id");
  expect("bert_proc.json",
         replaced(R"("post_processor":{)",
                  R"("post_processor":{"type":"BertProcessing","sep":["[SEP]",102],"cls":["[CLS]",-5]},"x":{)"),
         "post_processor: \"cls\" has id -5" + outside);
  // the vocabulary numbers its tokens 0..N-1: no table sized by an id (2^24 - 1 once allocated 528 MB)
  const std::string hello = R"("hello":215)";
  expect("vocab_sparse.json", replaced(hello, R"("hello":16777215)"),
         "model.vocab: token \"hello\" has id 16777215" + outside);
  expect("vocab_neg.json", replaced(hello, R"("hello":-1)"), "model.vocab: token \"hello\" has id -1" + outside);
  expect("vocab_dup_id.json", replaced(hello, R"("hello":5)"),
         "model.vocab: id 5 is given to both \"[unused4]\" and \"hello\"");
  expect("vocab_dup_token.json", replaced(R"("world":216)", R"("hello":216,"world":216)"),
         "model.vocab: token \"hello\" is listed twice");
  expect("chars.json", replaced(R"("max_input_chars_per_word":100)", R"("max_input_chars_per_word":-1)"),
         "model.max_input_chars_per_word is not a count");
  // added tokens: those in the vocabulary keep its id, the others number on from N
  expect("added_moved.json", replaced(R"("id":100,)", R"("id":7,)"),
         "added token \"[UNK]\" has id 7 but 100 in model.vocab");
  const std::string added = R"("added_tokens":[)";
  auto with_added = [&](const std::string& entries) { return replaced(added, added + entries); };
  expect("added_far.json", with_added(R"({"id":300,"content":"<x>","special":true},)"),
         "added token \"<x>\" has id 300, but the added tokens not in model.vocab must take the ids 235..235");
  expect("added_twice.json", with_added(R"({"id":235,"content":"<x>"},{"id":236,"content":"<x>"},)"),
         "added token \"<x>\" is listed with ids 235 and 236");
  expect("added_same_id.json", with_added(R"({"id":235,"content":"<x>"},{"id":235,"content":"<y>"},)"),
         "added tokens \"<x>\" and \"<y>\" both have id 235");
  auto extra = BertTokenizer::from_file(
      text("added_ok.json", with_added(R"({"id":236,"content":"<y>"},{"id":235,"content":"<x>"},)")));
  REQUIRE(extra.vocab_size() == 237);
  REQUIRE(extra.encode("hello<y>world<x>") == std::vector<int32_t>{101, 215, 236, 216, 235, 102});
  REQUIRE((extra.id_to_token(235) == "<x>" && extra.token_to_id("<y>") == 236));
  // from_json: the same loader on text
  REQUIRE(BertTokenizer::from_json(real).encode("hello") == std::vector<int32_t>{101, 215, 102});
  CHECK_THROWS_WITH(BertTokenizer::from_json(real.substr(0, 100), "mine.json"),
                    "tinygrad::BertTokenizer: mine.json: malformed JSON: unterminated string at byte 100");
  fs::remove_all(tmp);
}
