#pragma once
// Byte-level BPE tokenizer of the GPT-2 family (SmolLM2, Llama 3, GPT-2, ...), built from a GGUF file's vocabulary
// (given as vectors) or read from a Hugging Face tokenizer.json; it gives the token ids of the Rust `tokenizers`
// library. Opt-in: not part of <tinygrad.hpp>, and it needs nothing of the tensor library.
//
// The pre-tokenizers are hand-written scanners for each family's regex (no regex engine), with the character classes
// of onig, the regex engine `tokenizers` uses: tools/gen_unicode.py probes them code point by code point (Unicode 16
// letters and numbers; the Digits split uses Rust's char::is_numeric, which knows Unicode 17).
// Input that is not UTF-8 is kept byte for byte (byte-level BPE spells any byte); the pre-tokenizer sees each maximal
// invalid subpart as one U+FFFD (neither letter, number nor space).
#include <algorithm>
#include <array>
#include <filesystem>
#include <span>
#include "../json.hpp"
#include "unicode.hpp"

namespace tinygrad::text {

namespace detail {
// GPT-2's bytes_to_unicode: the printable Latin-1 bytes stand for themselves, the others for U+0100, U+0101, ...
constexpr std::array<char32_t, 256> make_byte_chars() {
  std::array<char32_t, 256> r{};
  char32_t next = 256;
  for (size_t b = 0; b < 256; b++) r[b] = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE ? char32_t(b) : next++;
  return r;
}
inline constexpr std::array<char32_t, 256> byte_chars = make_byte_chars();
constexpr std::array<int16_t, 324> make_char_bytes() {
  std::array<int16_t, 324> r{};
  r.fill(-1);
  for (size_t b = 0; b < 256; b++) r[byte_chars[b]] = int16_t(b);
  return r;
}
inline constexpr std::array<int16_t, 324> char_bytes = make_char_bytes();
// the byte a char of a byte-level token stands for, or -1
constexpr int char_byte(char32_t c) { return c < char_bytes.size() ? char_bytes[c] : -1; }

// the classes the pre-tokenizer regexes test: \p{L}, \p{N}, \s (onig) and char::is_numeric (the Digits split)
enum : uint8_t { kLetter = 1, kNumber = 2, kSpace = 4, kNumeric = 8 };
inline uint8_t char_class(char32_t c) {
  if (c < 0x80) {
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return kLetter;
    if (c >= '0' && c <= '9') return kNumber | kNumeric;
    return c == ' ' || (c >= '\t' && c <= '\r') ? kSpace : 0;
  }
  return uint8_t((in(letter, c) ? kLetter : 0) | (in(number, c) ? kNumber : 0) | (in(space, c) ? kSpace : 0) |
                 (in(numeric, c) ? kNumeric : 0));
}
// open addressing: the first of a table's n slots from hash h on (wrapping round) where done(slot) holds
template <class Done>
size_t probe(size_t h, size_t n, Done done) {
  for (size_t i = h % n;; i = i + 1 == n ? 0 : i + 1) if (done(i)) return i;
}
// strings by index, in one buffer: a vocabulary of 49k short tokens takes ~0.5 MB, as std::strings 1.6 MB
class StringTable {
 public:
  void push(std::string_view s) {
    if (data_.size() + s.size() > UINT32_MAX) throw nn::StateError("tinygrad::BPETokenizer: the vocabulary's strings pass 4 GiB");
    data_ += s, end_.push_back(uint32_t(data_.size()));
  }
  std::string_view operator[](size_t i) const { size_t a = i ? end_[i - 1] : 0; return std::string_view(data_).substr(a, end_[i] - a); }
  size_t size() const { return end_.size(); }

 private:
  std::string data_;
  std::vector<uint32_t> end_;  // NOTE: a vocabulary's bytes stay far below 4 GiB (push refuses more)
};
}  // namespace detail

// the ids of a BPETokenizer's special tokens (-1: none); add_bos: the model wants bos before a prompt (encode does not
// add it). NOTE: outside the class: a nested struct's member initializers are not usable in the class's default
// arguments (g++).
struct BPESpecial {
  int32_t bos = -1, eos = -1, pad = -1, unk = -1;
  bool add_bos = false;
};

// Tokenizes text for byte-level BPE models (SmolLM2, Llama 3, GPT-2) exactly as the Hugging Face tokenizer does.
class BPETokenizer {
 public:
  // the GGUF token types (tokenizer.ggml.token_type)
  enum TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
  using Special = BPESpecial;
  static constexpr const char* known_pre = "gpt2, smollm, llama-bpe";

  // from a GGUF vocabulary: tokens (GPT-2 byte-to-unicode spelled), merges ("a b", best first), token types (empty:
  // all Normal), the pre-tokenizer name (tokenizer.ggml.pre; "gpt-2" is gpt2); errors are nn::StateErrors
  static BPETokenizer from_vocab(std::vector<std::string> tokens, std::vector<std::string> merges,
                                 std::vector<int32_t> token_types, std::string pre, Special special = {}) {
    BPETokenizer t;
    t.file_ = "GGUF vocabulary";
    t.where_ = "tinygrad::BPETokenizer::from_vocab: ";
    if (!token_types.empty() && token_types.size() != tokens.size())
      t.fail("token_types has " + std::to_string(token_types.size()) + " entries for " + std::to_string(tokens.size()) + " tokens");
    if (token_types.empty()) token_types.assign(tokens.size(), Normal);
    t.pre_ = t.family(pre);
    t.ignore_merges_ = t.pre_ == Pre::llama;  // as llama.cpp and Llama 3's tokenizer.json
    t.set_vocab(std::move(tokens), std::move(token_types));
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(merges.size());
    for (size_t r = 0; r < merges.size(); r++) {
      size_t sp = merges[r].find(' ');
      if (sp == std::string::npos || merges[r].find(' ', sp + 1) != std::string::npos)
        t.fail("merge " + std::to_string(r) + " \"" + merges[r] + "\" is not two tokens separated by one space");
      pairs.emplace_back(merges[r].substr(0, sp), merges[r].substr(sp + 1));
    }
    t.set_merges(pairs);
    t.set_special(special);
    return t;
  }
  // reads tokenizer.json (or the tokenizer.json in a directory); unsupported components are nn::StateErrors.
  // tokenizer.json does not name bos/eos: give them in `special` (a TemplateProcessing post-processor gives bos)
  static BPETokenizer from_file(const std::string& path, Special special = {}) {
    namespace fs = std::filesystem;
    std::string file = fs::is_directory(path) ? (fs::path(path) / "tokenizer.json").string() : path;
    BPETokenizer t;
    t.file_ = file;
    t.load(tinygrad::detail::parse_json_file(file, "tinygrad::BPETokenizer"), special);
    return t;
  }
  // the same from the text of a tokenizer.json; `name` stands for the file in errors
  static BPETokenizer from_json(std::string_view json, const std::string& name = "tokenizer.json", Special special = {}) {
    BPETokenizer t;
    t.file_ = name;
    t.load(tinygrad::detail::parse_json(json, "tinygrad::BPETokenizer: " + name + ": malformed JSON: "), special);
    return t;
  }

  // the ids of the text (no bos added). User-defined tokens (added tokens not special) are matched in the text always,
  // control tokens (special, e.g. "<|im_start|>") only with parse_special, as Hugging Face's encode_special_tokens
  // and llama.cpp's parse_special.
  std::vector<int32_t> encode(std::string_view utf8, bool parse_special = false) const {
    std::vector<int32_t> ids;
    Work w;
    if (utf8.size() >= kCacheSize) w.cache.resize(kCacheSize);
    size_t start = 0;
    for (size_t i = 0; i < utf8.size();) {
      const Added* hit = nullptr;
      if (first_[uint8_t(utf8[i])])
        for (auto& a : added_)  // longest first: leftmost-longest as the tokenizers' added vocabulary
          if ((parse_special || !a.control) && utf8.compare(i, a.text.size(), a.text) == 0) { hit = &a; break; }
      if (!hit) { i++; continue; }
      encode_text(utf8.substr(start, i - start), ids, w);
      ids.push_back(hit->id);
      start = i += hit->text.size();
    }
    encode_text(utf8.substr(start), ids, w);
    return ids;
  }

  // the bytes of the ids (not necessarily UTF-8 at the ends: see piece); skip_control leaves out control tokens
  std::string decode(std::span<const int32_t> ids, bool skip_control = false) const {
    std::string r;
    for (int32_t id : ids) {
      check_id(id, "decode");
      if (!skip_control || types_[size_t(id)] != Control) r += pieces_[size_t(id)];
    }
    return r;
  }
  // the raw bytes of one token, for streaming output (a character may span tokens: see Utf8Stream)
  std::string_view piece(int32_t id) const { check_id(id, "piece"); return pieces_[size_t(id)]; }

  // the token of an id as the vocabulary spells it ("" when there is none)
  std::string id_to_token(int32_t id) const { return id >= 0 && size_t(id) < tokens_.size() ? std::string(tokens_[size_t(id)]) : ""; }
  // the id of a token as the vocabulary spells it, or -1
  int32_t token_to_id(std::string_view token) const { return index_[token_slot(token)]; }
  // the token type of an id (TokenType)
  int32_t token_type(int32_t id) const { check_id(id, "token_type"); return types_[size_t(id)]; }
  size_t vocab_size() const { return tokens_.size(); }
  int32_t bos_id() const { return special_.bos; }
  int32_t eos_id() const { return special_.eos; }
  int32_t pad_id() const { return special_.pad; }
  bool add_bos() const { return special_.add_bos; }
  // the pre-tokenizer family: "gpt2", "smollm" or "llama-bpe"
  std::string pre() const { return pre_ == Pre::gpt2 ? "gpt2" : pre_ == Pre::smollm ? "smollm" : "llama-bpe"; }

 private:
  enum class Pre { gpt2, smollm, llama };
  struct Added { std::string text; int32_t id; bool control; };
  struct Sym { int32_t id, prev, next; };
  struct Cand { int32_t rank, pos, left, right, merged; };  // a pair of symbols that a merge may join
  struct Work {  // buffers reused over the pieces of one encode
    std::u32string cp;
    std::vector<uint8_t> cls;
    std::vector<size_t> off;
    std::vector<Sym> sym;
    std::vector<Cand> heap;
    std::string word;
    struct Cached { std::string piece; std::vector<int32_t> ids; };
    std::vector<Cached> cache;  // direct-mapped, for long texts only: their pieces repeat
  };
  static constexpr size_t kCacheSize = 4096, kCachedPiece = 32;  // entries; the longest piece cached, in bytes

  std::string file_, where_ = "tinygrad::BPETokenizer: ";
  Pre pre_ = Pre::gpt2;
  bool ignore_merges_ = false;
  detail::StringTable tokens_, pieces_;
  std::vector<int32_t> types_;
  std::vector<int32_t> index_{-1};  // the ids by their tokens' hashes (open addressing, half full at most; -1: none)
  // the merges, (left id << 32 | right id, rank << 32 | merged id) by the key's hash: open addressing, 3/4 full at most
  // (a key of ~0 is an empty slot; ids are below 2^31)
  std::vector<std::pair<uint64_t, uint64_t>> merges_{{~uint64_t(0), 0}};
  std::array<int32_t, 256> byte_id_{};              // the token of each single byte, or -1
  std::vector<Added> added_;                         // matched in the raw text, longest first
  std::array<bool, 256> first_{};                    // the first bytes of added_
  Special special_;

  // the slot of a token in index_: its own, or the empty one where it would go
  size_t token_slot(std::string_view token) const {
    auto done = [&](size_t i) { return index_[i] < 0 || tokens_[size_t(index_[i])] == token; };
    return detail::probe(std::hash<std::string_view>()(token), index_.size(), done);
  }
  static uint64_t pair_key(int32_t a, int32_t b) { return uint64_t(uint32_t(a)) << 32 | uint32_t(b); }
  // the slot of a merge's key: its own, or the empty one where it would go
  size_t merge_slot(uint64_t key) const {
    auto done = [&](size_t i) { return merges_[i].first == key || merges_[i].first == ~uint64_t(0); };
    return detail::probe(size_t(key * 0x9E3779B97F4A7C15ull), merges_.size(), done);
  }
  [[noreturn]] void fail(const std::string& why) const { throw nn::StateError(where_ + file_ + ": " + why); }
  void check_id(int32_t id, const char* fn) const {
    if (id < 0 || size_t(id) >= tokens_.size())
      throw IndexError(std::string("tinygrad::BPETokenizer::") + fn + ": id " + std::to_string(id) +
                       " is outside the vocabulary [0, " + std::to_string(tokens_.size()) + ")");
  }
  Pre family(const std::string& name) const {
    if (name == "gpt2" || name == "gpt-2") return Pre::gpt2;
    if (name == "smollm") return Pre::smollm;
    if (name == "llama-bpe") return Pre::llama;
    fail("pre-tokenizer \"" + name + "\" is not supported (known: " + known_pre + ")");
  }

  // the tokens by id; the bytes each stands for (a token with a char outside the byte alphabet is its own UTF-8, as
  // the ByteLevel decoder has it; a Byte token "<0xAB>" is that byte)
  void set_vocab(std::vector<std::string> tokens, std::vector<int32_t> types) {
    if (tokens.empty() || tokens.size() > size_t(INT32_MAX)) fail("the vocabulary has " + std::to_string(tokens.size()) + " tokens");
    types_ = std::move(types);
    byte_id_.fill(-1);
    index_.assign(2 * tokens.size() + 1, -1);
    for (size_t id = 0; id < tokens.size(); id++) {
      const std::string& tok = tokens[id];
      int32_t type = types_[id];
      if (type < Normal || type > Byte) fail("token " + std::to_string(id) + " \"" + tok + "\" has type " + std::to_string(type) + ", not 1..6");
      int32_t& slot = index_[token_slot(tok)];
      if (slot >= 0) fail("token \"" + tok + "\" has ids " + std::to_string(slot) + " and " + std::to_string(id));
      slot = int32_t(id);
      tokens_.push(tok);
      std::string bytes;
      auto hex = [&](size_t k) { char h = tok[k]; return h >= '0' && h <= '9' ? h - '0' : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1; };
      if (type == Byte && tok.size() == 6 && tok.compare(0, 3, "<0x") == 0 && tok[5] == '>' && hex(3) >= 0 && hex(4) >= 0) {
        pieces_.push(std::string(1, char(hex(3) * 16 + hex(4))));
        continue;
      }
      bool all = true;
      for (size_t i = 0; i < tok.size() && all;) {
        auto [c, len] = detail::next_utf8(tok, i);
        int b = detail::char_byte(c);
        if (b < 0) all = false;
        else bytes += char(b);
        i += len;
      }
      if (!all) bytes = tok;
      pieces_.push(bytes);
      if (type == Control || type == UserDefined) {
        if (!tok.empty()) added_.push_back({tok, int32_t(id), type == Control});
      } else if (all && bytes.size() == 1) byte_id_[uint8_t(bytes[0])] = int32_t(id);
    }
    std::stable_sort(added_.begin(), added_.end(), [](auto& a, auto& b) { return a.text.size() > b.text.size(); });
    for (auto& a : added_) first_[uint8_t(a.text[0])] = true;
  }

  void set_merges(const std::vector<std::pair<std::string, std::string>>& pairs) {
    if (pairs.size() > size_t(INT32_MAX)) fail("more than 2^31 - 1 merges");
    merges_.assign(pairs.size() * 4 / 3 + 1, {~uint64_t(0), 0});
    for (size_t r = 0; r < pairs.size(); r++) {
      auto& [a, b] = pairs[r];
      std::string what = "merge " + std::to_string(r) + " \"" + a + " " + b + "\"";
      int32_t ia = token_to_id(a), ib = token_to_id(b), im = token_to_id(a + b);
      if (ia < 0 || ib < 0) fail(what + " names a token that is not in the vocabulary: \"" + (ia < 0 ? a : b) + "\"");
      if (im < 0) fail(what + " makes \"" + a + b + "\", which is not in the vocabulary");
      if (auto& slot = merges_[merge_slot(pair_key(ia, ib))]; slot.first != ~uint64_t(0)) fail(what + " is listed twice");
      else slot = {pair_key(ia, ib), uint64_t(r) << 32 | uint32_t(im)};
    }
  }

  void set_special(Special s) {
    for (auto [id, name] : {std::pair{s.bos, "bos"}, std::pair{s.eos, "eos"}, std::pair{s.pad, "pad"}, std::pair{s.unk, "unk"}})
      if (id < -1 || (id >= 0 && size_t(id) >= tokens_.size()))
        fail(std::string(name) + " id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(tokens_.size()) + ")");
    if (s.add_bos && s.bos < 0) fail("add_bos is set but there is no bos id");
    special_ = s;
  }

  static const tinygrad::detail::Json* member(const tinygrad::detail::Json* j, std::string_view key) {
    return j ? tinygrad::detail::find(*j, key) : nullptr;
  }
  static std::string str_of(const tinygrad::detail::Json* j, std::string_view key) {
    const auto* t = member(j, key);
    return t && t->kind == tinygrad::detail::Json::Str ? t->s : "none";
  }
  static bool flag(const tinygrad::detail::Json* j, std::string_view key, bool dflt) {
    const auto* f = member(j, key);
    return f && f->kind == tinygrad::detail::Json::Bool ? f->b : dflt;
  }

  // the pre-tokenizer family of a tokenizer.json pre_tokenizer: ByteLevel (gpt2); Digits(individual) + ByteLevel
  // (smollm); Split(the Llama 3 regex, Isolated) + ByteLevel without its regex (llama-bpe)
  Pre json_family(const tinygrad::detail::Json* pre) const {
    using tinygrad::detail::Json;
    static const std::string llama3 = std::string(R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|)") +
                                      R"( ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    std::vector<const Json*> steps;
    if (str_of(pre, "type") == "Sequence") {
      const Json* s = member(pre, "pretokenizers");
      if (!s || s->kind != Json::Arr) fail("pre_tokenizer Sequence has no \"pretokenizers\" array");
      for (auto& p : s->arr) steps.push_back(&p);
    } else steps.push_back(pre);
    auto byte_level = [&](const Json* p, bool regex) {
      return str_of(p, "type") == "ByteLevel" && !flag(p, "add_prefix_space", true) && flag(p, "use_regex", true) == regex;
    };
    if (steps.size() == 1 && byte_level(steps[0], true)) return Pre::gpt2;
    if (steps.size() == 2 && str_of(steps[0], "type") == "Digits" && flag(steps[0], "individual_digits", false) &&
        byte_level(steps[1], true))
      return Pre::smollm;
    if (steps.size() == 2 && str_of(steps[0], "type") == "Split" && str_of(member(steps[0], "pattern"), "Regex") == llama3 &&
        str_of(steps[0], "behavior") == "Isolated" && !flag(steps[0], "invert", false) && byte_level(steps[1], false))
      return Pre::llama;
    std::string types;
    for (auto* p : steps) types += (types.empty() ? "" : ", ") + str_of(p, "type");
    fail("pre_tokenizer [" + types + "] is none of the known families (" + known_pre +
         ": ByteLevel without prefix space; Digits(individual_digits) then ByteLevel; Split(the Llama 3 regex) then "
         "ByteLevel(use_regex=false))");
  }

  void load(const tinygrad::detail::Json& root, Special special) {
    using tinygrad::detail::Json, tinygrad::detail::find;
    where_ = "tinygrad::BPETokenizer: ";
    if (root.kind != Json::Obj) fail("not a JSON object");
    const Json* model = find(root, "model");
    if (str_of(model, "type") != "BPE") fail("model type \"" + str_of(model, "type") + "\" is not supported (only BPE)");
    for (const char* k : {"dropout", "continuing_subword_prefix", "end_of_word_suffix"})
      if (const Json* v = find(*model, k); v && v->kind != Json::Null && !(v->kind == Json::Str && v->s.empty()))
        fail(std::string("model.") + k + " is set, which is not supported");
    if (flag(model, "byte_fallback", false)) fail("model.byte_fallback is set, which is not supported");
    ignore_merges_ = flag(model, "ignore_merges", false);
    const Json* norm = find(root, "normalizer");
    if (norm && norm->kind != Json::Null) fail("normalizer \"" + str_of(norm, "type") + "\" is not supported (only null)");
    pre_ = json_family(find(root, "pre_tokenizer"));
    if (const Json* dec = find(root, "decoder"); str_of(dec, "type") != "ByteLevel")
      fail("decoder \"" + str_of(dec, "type") + "\" is not supported (only ByteLevel)");
    // vocabulary: ids 0..N-1, each once; added tokens in it keep their id, the others number on from N
    const Json* vocab = find(*model, "vocab");
    if (!vocab || vocab->kind != Json::Obj) fail("model has no valid \"vocab\"");
    size_t n = vocab->obj.size();
    std::vector<std::string> tokens(n);
    std::vector<int32_t> types(n, Normal);
    std::vector<bool> used(n);
    for (auto& m : vocab->obj) {
      if (m.value.kind != Json::Int || m.value.i < 0 || uint64_t(m.value.i) >= n)
        fail("model.vocab: token \"" + m.key + "\" has no id in [0, " + std::to_string(n) + ")");
      size_t id = size_t(m.value.i);
      if (used[id]) fail("model.vocab: id " + std::to_string(id) + " is given to both \"" + tokens[id] + "\" and \"" + m.key + "\"");
      used[id] = true, tokens[id] = m.key;
    }
    if (const Json* added = find(root, "added_tokens"); added && added->kind == Json::Arr) {
      for (auto& a : added->arr) {
        const Json *content = find(a, "content"), *id = find(a, "id");
        if (!content || content->kind != Json::Str || content->s.empty()) fail("an added token has no content");
        std::string what = "added token \"" + content->s + "\"";
        if (!id || id->kind != Json::Int || id->i < 0 || id->i > INT32_MAX - 1) fail(what + " has no valid id");
        for (const char* k : {"single_word", "lstrip", "rstrip"})
          if (flag(&a, k, false)) fail(what + " sets " + k + ", which is not supported");
        size_t i = size_t(id->i);
        if (i >= n && i >= tokens.size()) {
          if (i > n + added->arr.size()) fail(what + " has id " + std::to_string(i) + ", past the vocabulary and the added tokens");
          tokens.resize(i + 1), types.resize(i + 1, 0);
        }
        if (i < n && tokens[i] != content->s)
          fail(what + " has id " + std::to_string(i) + ", which model.vocab gives to \"" + tokens[i] + "\"");
        if (i >= n && types[i] != 0 && tokens[i] != content->s)
          fail("added tokens \"" + tokens[i] + "\" and \"" + content->s + "\" both have id " + std::to_string(i));
        tokens[i] = content->s, types[i] = flag(&a, "special", false) ? Control : UserDefined;
      }
    }
    for (size_t i = n; i < tokens.size(); i++)
      if (types[i] == 0) fail("no token has id " + std::to_string(i) + " (the added tokens must number on from the vocabulary)");
    set_vocab(std::move(tokens), std::move(types));
    if (const Json* unk = find(*model, "unk_token"); unk && unk->kind == Json::Str) {
      if (token_to_id(unk->s) < 0) fail("model.unk_token \"" + unk->s + "\" is not in the vocabulary");
      if (special.unk < 0) special.unk = token_to_id(unk->s);
    }
    const Json* merges = find(*model, "merges");
    if (!merges || merges->kind != Json::Arr) fail("model has no valid \"merges\"");
    std::vector<std::pair<std::string, std::string>> pairs;
    pairs.reserve(merges->arr.size());
    for (auto& m : merges->arr) {  // "a b" (older files) or ["a", "b"]
      std::string where = "model.merges[" + std::to_string(pairs.size()) + "]";
      if (m.kind == Json::Str) {
        size_t sp = m.s.find(' ');
        if (sp == std::string::npos || m.s.find(' ', sp + 1) != std::string::npos)
          fail(where + " \"" + m.s + "\" is not two tokens separated by one space");
        pairs.emplace_back(m.s.substr(0, sp), m.s.substr(sp + 1));
      } else if (m.kind == Json::Arr && m.arr.size() == 2 && m.arr[0].kind == Json::Str && m.arr[1].kind == Json::Str) {
        pairs.emplace_back(m.arr[0].s, m.arr[1].s);
      } else fail(where + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    set_merges(pairs);
    // post-processor: ByteLevel (offsets only), a template with one special token before the sequence (bos), or a
    // Sequence of those (Llama 3)
    std::vector<const Json*> posts;
    if (const Json* post = find(root, "post_processor"); str_of(post, "type") == "Sequence") {
      const Json* ps = find(*post, "processors");
      if (!ps || ps->kind != Json::Arr) fail("post_processor Sequence has no \"processors\" array");
      for (auto& p : ps->arr) posts.push_back(&p);
    } else if (post && post->kind != Json::Null) posts.push_back(post);
    for (const Json* post : posts) {
      std::string post_type = str_of(post, "type");
      if (post_type == "ByteLevel") continue;
      if (post_type != "TemplateProcessing")
        fail("post_processor \"" + post_type + "\" is not supported (only ByteLevel, TemplateProcessing, a Sequence of them)");
      const Json* single = find(*post, "single");
      if (!single || single->kind != Json::Arr) fail("post_processor has no \"single\" template");
      std::vector<std::string> before;
      bool seen = false;
      for (auto& p : single->arr) {
        if (find(p, "Sequence")) { seen = true; continue; }
        std::string id = str_of(find(p, "SpecialToken"), "id");
        if (seen || id == "none" || !before.empty())
          fail("post_processor: only a template of at most one special token before the sequence is supported");
        before.push_back(id);
      }
      if (before.size() == 1) {
        int32_t bos = token_to_id(before[0]);
        if (bos < 0) fail("post_processor: token \"" + before[0] + "\" is not in the vocabulary");
        if (special.bos < 0) special.bos = bos;
        special.add_bos = true;
      }
    }
    set_special(special);
  }

  // text without added tokens: pre-tokenized into pieces, each byte-pair encoded
  void encode_text(std::string_view text, std::vector<int32_t>& ids, Work& w) const {
    if (text.empty()) return;
    w.cp.clear(), w.cls.clear(), w.off.clear();
    for (size_t i = 0; i < text.size();) {
      auto [c, len] = detail::next_utf8(text, i);
      w.cp += c, w.cls.push_back(detail::char_class(c)), w.off.push_back(i);
      i += len;
    }
    w.off.push_back(text.size());
    size_t n = w.cp.size();
    auto emit = [&](size_t b, size_t e) { bpe(text.substr(w.off[b], w.off[e] - w.off[b]), ids, w); };
    if (pre_ == Pre::smollm) {  // every numeric char a piece of its own, then gpt2 between them
      size_t b = 0;
      for (size_t i = 0; i <= n; i++) {
        if (i < n && !(w.cls[i] & detail::kNumeric)) continue;
        split(w, b, i, emit);
        if (i < n) emit(i, i + 1);
        b = i + 1;
      }
    } else split(w, 0, n, emit);
  }

  // the pre-tokenizer regex's matches in cp[b, e), one after the other (every char matches some alternative)
  template <class F>
  void split(const Work& w, size_t b, size_t e, F&& emit) const {
    for (size_t i = b; i < e;) {
      size_t j = pre_ == Pre::llama ? match_llama(w, i, e) : match_gpt2(w, i, e);
      emit(i, j);
      i = j;
    }
  }
  static bool is(const Work& w, size_t i, size_t e, uint8_t cls) { return i < e && (w.cls[i] & cls); }
  static bool other(const Work& w, size_t i, size_t e) { return i < e && !(w.cls[i] & (detail::kLetter | detail::kNumber | detail::kSpace)); }
  static size_t run(const Work& w, size_t i, size_t e, uint8_t cls) { while (is(w, i, e, cls)) i++; return i; }
  static size_t run_other(const Work& w, size_t i, size_t e) { while (other(w, i, e)) i++; return i; }
  // \s+(?!\S)|\s+ at a space: the run, but the last space is left to a following non-space
  static size_t spaces(const Work& w, size_t i, size_t e) {
    size_t k = run(w, i, e, detail::kSpace);
    return k == e || k - 1 == i ? k : k - 1;
  }

  // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  static size_t match_gpt2(const Work& w, size_t i, size_t e) {
    const char32_t* c = w.cp.data();
    if (c[i] == '\'' && i + 1 < e) {
      char32_t d = c[i + 1];
      if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
      if (i + 2 < e && (((d == 'r' || d == 'v') && c[i + 2] == 'e') || (d == 'l' && c[i + 2] == 'l'))) return i + 3;
    }
    size_t sp = c[i] == ' ' ? 1 : 0;
    for (uint8_t cls : {detail::kLetter, detail::kNumber}) {  // ` ?` then the class: the space only before one
      if (is(w, i + sp, e, cls)) return run(w, i + sp, e, cls);
      if (is(w, i, e, cls)) return run(w, i, e, cls);
    }
    if (other(w, i + sp, e)) return run_other(w, i + sp, e);
    if (other(w, i, e)) return run_other(w, i, e);
    return spaces(w, i, e);
  }

  // (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  static size_t match_llama(const Work& w, size_t i, size_t e) {
    const char32_t* c = w.cp.data();
    auto fold = [](char32_t x) { return x == 0x17F ? U's' : x >= 'A' && x <= 'Z' ? x | 0x20 : x; };  // onig: U+017F is s
    auto nl = [&](size_t k) { return k < e && (c[k] == '\r' || c[k] == '\n'); };
    if (c[i] == '\'' && i + 1 < e) {
      char32_t d = fold(c[i + 1]), d2 = i + 2 < e ? fold(c[i + 2]) : 0;
      if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
      if (((d == 'r' || d == 'v') && d2 == 'e') || (d == 'l' && d2 == 'l')) return i + 3;
    }
    if (!nl(i) && !is(w, i, e, detail::kLetter | detail::kNumber) && is(w, i + 1, e, detail::kLetter))
      return run(w, i + 1, e, detail::kLetter);
    if (is(w, i, e, detail::kLetter)) return run(w, i, e, detail::kLetter);
    if (is(w, i, e, detail::kNumber)) return std::min(run(w, i, e, detail::kNumber), i + 3);
    size_t sp = c[i] == ' ' && other(w, i + 1, e) ? 1 : 0;
    if (other(w, i + sp, e)) {
      size_t k = run_other(w, i + sp, e);
      while (nl(k)) k++;
      return k;
    }
    size_t k = run(w, i, e, detail::kSpace);
    for (size_t p = k; p > i; p--) if (nl(p - 1)) return p;  // \s*[\r\n]+: up to the run's last line break
    return spaces(w, i, e);
  }

  // byte-pair encodes one piece: the lowest-ranked adjacent pair merges first, the leftmost of equal pairs
  void bpe(std::string_view bytes, std::vector<int32_t>& ids, Work& w) const {
    Work::Cached* cached = nullptr;
    if (!w.cache.empty() && bytes.size() <= kCachedPiece) {
      cached = &w.cache[std::hash<std::string_view>()(bytes) % kCacheSize];
      if (cached->piece == bytes) { ids.insert(ids.end(), cached->ids.begin(), cached->ids.end()); return; }
      cached->piece = bytes;
      cached->ids.clear();
    }
    size_t first = ids.size();
    bpe_uncached(bytes, ids, w);
    if (cached) cached->ids.assign(ids.begin() + std::ptrdiff_t(first), ids.end());
  }
  void bpe_uncached(std::string_view bytes, std::vector<int32_t>& ids, Work& w) const {
    if (ignore_merges_ && bytes.size() > 1) {  // a piece that is a token is that token
      w.word.clear();
      for (char b : bytes) detail::append_utf8(w.word, detail::byte_chars[uint8_t(b)]);
      if (int32_t id = token_to_id(w.word); id >= 0) { ids.push_back(id); return; }
    }
    auto& sym = w.sym;
    sym.clear();
    for (char b : bytes) {
      int32_t id = byte_id_[uint8_t(b)];
      if (id < 0) {  // a byte without a token: unk when there is one, else dropped (as tokenizers' BPE)
        if (special_.unk < 0) continue;
        id = special_.unk;
      }
      int32_t k = int32_t(sym.size());
      sym.push_back({id, k - 1, k + 1});
    }
    int32_t n = int32_t(sym.size());
    auto later = [](const Cand& a, const Cand& b) { return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos; };
    auto push = [&](int32_t p) {
      if (p < 0 || sym[size_t(p)].next >= n) return;
      int32_t a = sym[size_t(p)].id, b = sym[size_t(sym[size_t(p)].next)].id;
      auto& m = merges_[merge_slot(pair_key(a, b))];
      if (m.first == ~uint64_t(0)) return;
      w.heap.push_back({int32_t(m.second >> 32), p, a, b, int32_t(uint32_t(m.second))});
      std::push_heap(w.heap.begin(), w.heap.end(), later);
    };
    w.heap.clear();
    for (int32_t p = 0; p + 1 < n; p++) push(p);
    while (!w.heap.empty()) {
      std::pop_heap(w.heap.begin(), w.heap.end(), later);
      Cand m = w.heap.back();
      w.heap.pop_back();
      Sym& s = sym[size_t(m.pos)];
      // stale: one of the two merged elsewhere since (a symbol's id only changes by growing, so ids tell)
      if (s.id != m.left || s.next >= n || sym[size_t(s.next)].id != m.right) continue;
      Sym& r = sym[size_t(s.next)];
      s.id = m.merged;
      r.id = -1;
      s.next = r.next;
      if (s.next < n) sym[size_t(s.next)].prev = m.pos;
      push(s.prev);
      push(m.pos);
    }
    for (int32_t p = 0; p < n; p = sym[size_t(p)].next) ids.push_back(sym[size_t(p)].id);
  }
};

// Holds back an incomplete UTF-8 sequence at the end of streamed bytes (a character may span tokens), so each chunk
// given out ends on a whole character; invalid bytes pass through as they are.
struct Utf8Stream {
  // the held bytes and these, up to the last whole character
  std::string push(std::string_view bytes) {
    held_ += bytes;
    size_t k = held_.size();
    for (size_t back = 1; back <= 3 && back <= held_.size(); back++) {  // a lead byte among the last 3
      uint8_t c = uint8_t(held_[held_.size() - back]);
      if ((c & 0xC0) == 0x80) continue;
      size_t need = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 1;
      // incomplete when it wants more and what follows it is a valid start
      if (need > back && detail::next_utf8(held_, held_.size() - back).second == back) k = held_.size() - back;
      break;
    }
    std::string out = held_.substr(0, k);
    held_.erase(0, k);
    return out;
  }
  // what is held back (an incomplete sequence at the end of the stream)
  std::string flush() { return std::exchange(held_, std::string()); }

 private:
  std::string held_;
};

}  // namespace tinygrad::text
