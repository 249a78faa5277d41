#pragma once
// BERT WordPiece tokenizer read from a Hugging Face tokenizer.json; it gives the token ids of the Rust `tokenizers`
// library (BertNormalizer, BertPreTokenizer, WordPiece, TemplateProcessing/BertProcessing, added tokens matched in the
// raw text). Opt-in: not part of <tinygrad.hpp>, and it needs nothing of the tensor library.
//
// Input is UTF-8; invalid bytes decode as Rust's String::from_utf8_lossy and Python's bytes.decode("utf-8", "replace")
// do (one U+FFFD per maximal invalid subpart), and clean_text then drops the U+FFFD.
// NOTE: strip_accents does not reorder combining marks canonically: of the marks it keeps (spacing ones), only runs
// like U+1D16D U+1D165 (classes 226, 216) would be reordered by NFD, and the all-MiniLM-L6-v2 vocabulary holds none of
// those 25 marks, so the word is [UNK] in either order.
#include <algorithm>
#include <filesystem>
#include <unordered_map>
#include "../json.hpp"
#include "unicode.hpp"

namespace tinygrad::text {

namespace detail {
inline char32_t lower1(char32_t c) {
  auto it = std::upper_bound(lower, lower + std::size(lower), c, [](char32_t x, const Lower& r) { return x < r.lo; });
  if (it == lower || c > it[-1].hi || (c - it[-1].lo) % char32_t(it[-1].stride)) return c;
  return char32_t(int32_t(c) + it[-1].delta);
}
}  // namespace detail

// Tokenizes text for BERT-style models (all-MiniLM-L6-v2 and the like) exactly as the Hugging Face tokenizer does.
class BertTokenizer {
 public:
  struct Batch {
    int64_t batch = 0, seq = 0;
    std::vector<int32_t> ids, mask;  // row-major batch x seq; padding has the pad id and mask 0
  };

  // reads tokenizer.json (or the tokenizer.json in a directory); unsupported components are StateErrors
  static BertTokenizer from_file(const std::string& path) {
    namespace fs = std::filesystem;
    std::string file = fs::is_directory(path) ? (fs::path(path) / "tokenizer.json").string() : path;
    BertTokenizer t;
    t.file_ = file;
    t.load(tinygrad::detail::parse_json_file(file, "tinygrad::BertTokenizer"));
    return t;
  }
  // the same from the text of a tokenizer.json; `name` stands for the file in errors
  static BertTokenizer from_json(std::string_view json, const std::string& name = "tokenizer.json") {
    BertTokenizer t;
    t.file_ = name;
    t.load(tinygrad::detail::parse_json(json, "tinygrad::BertTokenizer: " + name + ": malformed JSON: "));
    return t;
  }

  // [CLS] tokens [SEP], the tokens cut from the end so that the whole is at most max_length ids
  std::vector<int32_t> encode(std::string_view utf8, size_t max_length = 256) const {
    if (max_length < prefix_.size() + suffix_.size())
      throw Error("tinygrad::BertTokenizer::encode: max_length " + std::to_string(max_length) + " leaves no room for the " +
                  std::to_string(prefix_.size() + suffix_.size()) + " special tokens");
    std::vector<int32_t> ids = prefix_;
    tokenize(detail::decode_utf8(utf8), ids, max_length - suffix_.size());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
    return ids;
  }

  // every text encoded, padded to the longest with the pad id
  Batch encode_batch(const std::vector<std::string>& texts, size_t max_length = 256) const {
    std::vector<std::vector<int32_t>> rows;
    size_t seq = 0;
    for (auto& t : texts) seq = std::max(seq, rows.emplace_back(encode(t, max_length)).size());
    Batch b{int64_t(texts.size()), int64_t(seq), std::vector<int32_t>(texts.size() * seq, pad_id_), std::vector<int32_t>(texts.size() * seq, 0)};
    for (size_t r = 0; r < rows.size(); r++)
      for (size_t k = 0; k < rows[r].size(); k++) b.ids[r * seq + k] = rows[r][k], b.mask[r * seq + k] = 1;
    return b;
  }

  // the token of an id ("" when there is none)
  std::string id_to_token(int32_t id) const { return id >= 0 && size_t(id) < tokens_.size() ? tokens_[size_t(id)] : ""; }
  // the id of a token, or -1
  int32_t token_to_id(std::string_view token) const {
    if (auto it = vocab_.find(std::string(token)); it != vocab_.end()) return it->second;
    for (auto& a : added_) if (a.utf8 == token) return a.id;
    return -1;
  }
  // the number of ids: the vocabulary and the added tokens not in it
  size_t vocab_size() const { return tokens_.size(); }
  int32_t pad_id() const { return pad_id_; }

 private:
  std::string file_;
  bool clean_ = true, chinese_ = true, strip_ = true, lower_ = true;
  std::unordered_map<std::string, int32_t> vocab_;
  std::vector<std::string> tokens_;
  struct Added { std::u32string text; std::string utf8; int32_t id; };
  std::vector<Added> added_;  // matched in the raw text, longest first
  std::string unk_ = "[UNK]", prefix_str_ = "##";
  int32_t unk_id_ = -1, pad_id_ = 0;
  size_t max_chars_ = 100;
  std::vector<int32_t> prefix_, suffix_;  // the post-processor's special tokens around the sequence

  [[noreturn]] void fail(const std::string& why) const { throw nn::StateError("tinygrad::BertTokenizer: " + file_ + ": " + why); }
  const tinygrad::detail::Json& get(const tinygrad::detail::Json& j, std::string_view key, tinygrad::detail::Json::Kind kind,
                                    const std::string& where) const {
    const auto* v = tinygrad::detail::find(j, key);
    if (!v || v->kind != kind) fail(where + " has no valid \"" + std::string(key) + "\"");
    return *v;
  }
  int32_t id_of(const std::string& token, const std::string& where) const {
    int32_t id = token_to_id(token);
    if (id < 0) fail(where + ": token \"" + token + "\" is not in the vocabulary");
    return id;
  }
  static std::string type_of(const tinygrad::detail::Json* j) {
    const auto* t = j ? tinygrad::detail::find(*j, "type") : nullptr;
    return t && t->kind == tinygrad::detail::Json::Str ? t->s : "none";
  }

  // an id the file gives for `what`: an integer in [0, n) (a fraction, a float or anything past int32 is refused,
  // never truncated)
  int32_t file_id(const tinygrad::detail::Json* j, int64_t n, const std::string& what) const {
    using tinygrad::detail::Json;
    if (!j || j->kind != Json::Int) fail(what + " is not an integer id");
    if (j->i < 0 || j->i >= n) fail(what + " has id " + std::to_string(j->i) + ", outside the vocabulary [0, " + std::to_string(n) + ")");
    return int32_t(j->i);
  }

  // Every id the file gives is checked against the vocabulary, as Hugging Face's tokenizers (ids are u32 there, and a
  // model would index its embedding with them): model.vocab must number its N tokens 0..N-1, each id once (nothing
  // allocated by an id's value: an id past N is an error); a token listed twice is an error (serde keeps the last
  // silently); an added token that is in the vocabulary must have its id there, the others take the ids N, N+1, ...
  // (in any order); special-token and pad ids must be ids of this vocabulary.
  void load(const tinygrad::detail::Json& root) {
    using tinygrad::detail::Json, tinygrad::detail::find;
    if (root.kind != Json::Obj) fail("not a JSON object");
    // model: WordPiece
    const Json* model = find(root, "model");
    if (type_of(model) != "WordPiece") fail("model type \"" + type_of(model) + "\" is not supported (only WordPiece)");
    const auto& vocab = get(*model, "vocab", Json::Obj, "model").obj;
    int64_t n = int64_t(vocab.size());
    if (n > INT32_MAX) fail("model.vocab has more than 2^31 - 1 tokens");
    tokens_.assign(vocab.size(), "");
    std::vector<bool> used(vocab.size());
    for (auto& m : vocab) {
      int32_t id = file_id(&m.value, n, "model.vocab: token \"" + m.key + "\"");
      if (!vocab_.emplace(m.key, id).second) fail("model.vocab: token \"" + m.key + "\" is listed twice");
      if (used[size_t(id)])
        fail("model.vocab: id " + std::to_string(id) + " is given to both \"" + tokens_[size_t(id)] + "\" and \"" +
             m.key + "\"");
      used[size_t(id)] = true, tokens_[size_t(id)] = m.key;
    }
    unk_ = get(*model, "unk_token", Json::Str, "model").s;
    unk_id_ = id_of(unk_, "model.unk_token");
    if (const Json* p = find(*model, "continuing_subword_prefix"); p && p->kind == Json::Str) prefix_str_ = p->s;
    if (const Json* m = find(*model, "max_input_chars_per_word"); m && m->kind != Json::Null) {
      if (m->kind != Json::Int || m->i < 0) fail("model.max_input_chars_per_word is not a count");
      max_chars_ = size_t(m->i);
    }
    // added tokens: matched in the raw text before normalization
    std::vector<std::pair<std::string, int64_t>> extra;  // not in the vocabulary: they number on from n
    if (const Json* added = find(root, "added_tokens"); added && added->kind == Json::Arr) {
      for (auto& a : added->arr) {
        const std::string& content = get(a, "content", Json::Str, "added_tokens entry").s;
        const Json* id = find(a, "id");
        if (!id || id->kind != Json::Int) fail("added token \"" + content + "\" has no integer id");
        for (const char* k : {"single_word", "lstrip", "rstrip", "normalized"})
          if (const Json* f = find(a, k); f && f->kind == Json::Bool && f->b)
            fail("added token \"" + content + "\" sets " + k + ", which is not supported");
        if (auto it = vocab_.find(content); it != vocab_.end()) {
          if (id->i != it->second)
            fail("added token \"" + content + "\" has id " + std::to_string(id->i) + " but " +
                 std::to_string(it->second) + " in model.vocab");
          continue;
        }
        auto same = std::find_if(extra.begin(), extra.end(), [&](auto& e) { return e.first == content; });
        if (same == extra.end()) extra.push_back({content, id->i});
        else if (same->second != id->i)
          fail("added token \"" + content + "\" is listed with ids " + std::to_string(same->second) + " and " +
               std::to_string(id->i));
      }
      int64_t total = n + int64_t(extra.size());
      if (total > INT32_MAX) fail("more than 2^31 - 1 tokens");
      tokens_.resize(size_t(total));
      for (auto& [content, id] : extra) {
        if (id < n || id >= total)
          fail("added token \"" + content + "\" has id " + std::to_string(id) +
               ", but the added tokens not in model.vocab must take the ids " + std::to_string(n) + ".." +
               std::to_string(total - 1));
        if (!tokens_[size_t(id)].empty())
          fail("added tokens \"" + tokens_[size_t(id)] + "\" and \"" + content + "\" both have id " + std::to_string(id));
        if (content.empty()) fail("an added token with id " + std::to_string(id) + " is empty");
        tokens_[size_t(id)] = content;
      }
      for (auto& a : added->arr) {
        const std::string& content = find(a, "content")->s;
        int32_t id = int32_t(find(a, "id")->i);
        if (content.empty() || std::any_of(added_.begin(), added_.end(), [&](auto& x) { return x.utf8 == content; }))
          continue;
        added_.push_back({detail::decode_utf8(content), content, id});
      }
    }
    std::stable_sort(added_.begin(), added_.end(), [](auto& a, auto& b) { return a.text.size() > b.text.size(); });
    int64_t size = int64_t(tokens_.size());
    // normalizer: BertNormalizer or none
    const Json* norm = find(root, "normalizer");
    if (norm && norm->kind != Json::Null) {
      if (type_of(norm) != "BertNormalizer") fail("normalizer type \"" + type_of(norm) + "\" is not supported (only BertNormalizer)");
      auto flag = [&](const char* k, bool dflt) { const Json* f = find(*norm, k); return f && f->kind == Json::Bool ? f->b : dflt; };
      clean_ = flag("clean_text", true), chinese_ = flag("handle_chinese_chars", true), lower_ = flag("lowercase", true);
      strip_ = flag("strip_accents", lower_);  // null: follows lowercase
    } else clean_ = chinese_ = strip_ = lower_ = false;
    const Json* pre = find(root, "pre_tokenizer");
    if (type_of(pre) != "BertPreTokenizer") fail("pre_tokenizer type \"" + type_of(pre) + "\" is not supported (only BertPreTokenizer)");
    // post-processor: the special tokens around the sequence
    const Json* post = find(root, "post_processor");
    std::string post_type = post && post->kind != Json::Null ? type_of(post) : "none";
    if (post_type == "TemplateProcessing") {
      const Json& specials = get(*post, "special_tokens", Json::Obj, "post_processor");
      bool seen = false;
      for (auto& piece : get(*post, "single", Json::Arr, "post_processor").arr) {
        if (find(piece, "Sequence")) { seen = true; continue; }
        const Json* sp = find(piece, "SpecialToken");
        if (!sp) fail("post_processor: a template piece is neither SpecialToken nor Sequence");
        const std::string& name = get(*sp, "id", Json::Str, "post_processor SpecialToken").s;
        const Json* tok = find(specials, name);
        if (!tok) fail("post_processor: special token \"" + name + "\" is not in special_tokens");
        for (auto& id : get(*tok, "ids", Json::Arr, "post_processor special token").arr)
          (seen ? suffix_ : prefix_).push_back(file_id(&id, size, "post_processor: special token \"" + name + "\""));
      }
    } else if (post_type == "BertProcessing") {
      for (auto [key, out] : {std::pair{"cls", &prefix_}, std::pair{"sep", &suffix_}}) {
        const Json& p = get(*post, key, Json::Arr, "post_processor");
        if (p.arr.size() != 2 || p.arr[0].kind != Json::Str)
          fail(std::string("post_processor: \"") + key + "\" is not a [token, id] pair");
        out->push_back(file_id(&p.arr[1], size, std::string("post_processor: \"") + key + "\""));
      }
    } else if (post_type != "none") fail("post_processor type \"" + post_type + "\" is not supported (only TemplateProcessing, BertProcessing)");
    pad_id_ = token_to_id("[PAD]") >= 0 ? token_to_id("[PAD]") : 0;
    if (const Json* pad = find(root, "padding"); pad && pad->kind == Json::Obj)
      if (const Json* id = find(*pad, "pad_id"); id && id->kind != Json::Null)
        pad_id_ = file_id(id, size, "padding.pad_id");
  }

  // the normalized form of one code point, appended
  void normalize(char32_t c, std::u32string& out) const {
    if (clean_ && detail::in(detail::removed, c)) return;
    if (clean_ && detail::in(detail::spaces, c)) c = U' ';
    bool cjk = chinese_ && detail::in(detail::chinese, c);
    if (cjk) out += U' ';
    char32_t parts[3] = {c, 0, 0};
    if (strip_ && detail::in(detail::nonspacing, c)) parts[0] = 0;
    else if (strip_ && c >= 0xAC00 && c < 0xAC00 + 11172) {  // Hangul syllable: L V [T] jamo
      char32_t s = c - 0xAC00;
      parts[0] = 0x1100 + s / 588, parts[1] = 0x1161 + s % 588 / 28, parts[2] = s % 28 ? 0x11A7 + s % 28 : 0;
    } else if (strip_) {
      auto it = std::lower_bound(std::begin(detail::decomp), std::end(detail::decomp), c,
                                 [](const detail::Decomp& d, char32_t x) { return d.cp < x; });
      if (it != std::end(detail::decomp) && it->cp == c) std::copy(it->to, it->to + 3, parts);
    }
    for (char32_t p : parts) {
      if (!p) break;
      if (lower_ && p == 0x130) out += U"i\u0307";
      else out += lower_ ? detail::lower1(p) : p;
    }
    if (cjk) out += U' ';
  }

  // the ids of text (no special tokens around it), appended to ids while ids.size() < limit
  void tokenize(const std::u32string& text, std::vector<int32_t>& ids, size_t limit) const {
    std::u32string norm;
    size_t i = 0;
    while (i <= text.size() && ids.size() < limit) {
      const Added* hit = nullptr;
      for (auto& a : added_)
        if (i < text.size() && text.compare(i, a.text.size(), a.text) == 0) { hit = &a; break; }
      if (hit || i == text.size()) {  // the text so far, then the added token
        words(norm, ids, limit);
        norm.clear();
        if (!hit) break;
        if (ids.size() < limit) ids.push_back(hit->id);
        i += hit->text.size();
      } else normalize(text[i++], norm);
    }
  }

  // BertPreTokenizer: split at whitespace, each punctuation char a word of its own; then WordPiece
  void words(const std::u32string& norm, std::vector<int32_t>& ids, size_t limit) const {
    size_t start = 0;
    for (size_t i = 0; i <= norm.size(); i++) {
      bool end = i == norm.size(), space = !end && detail::in(detail::whitespace, norm[i]);
      bool punct = !end && !space && (detail::in(detail::punct, norm[i]));
      if (!end && !space && !punct) continue;
      if (i > start) wordpiece(std::u32string_view(norm).substr(start, i - start), ids, limit);
      if (punct) wordpiece(std::u32string_view(norm).substr(i, 1), ids, limit);
      start = i + 1;
    }
  }

  // greedy longest-match-first; a word with a piece not in the vocabulary, or too long, is one unk
  void wordpiece(std::u32string_view word, std::vector<int32_t>& ids, size_t limit) const {
    if (ids.size() >= limit) return;
    if (word.size() > max_chars_) { ids.push_back(unk_id_); return; }
    std::string utf8;
    std::vector<size_t> at{0};  // byte offset of each char
    for (char32_t c : word) { detail::append_utf8(utf8, c); at.push_back(utf8.size()); }
    std::vector<int32_t> pieces;
    for (size_t s = 0; s < word.size();) {
      size_t e = word.size();
      int32_t id = -1;
      for (; e > s; e--) {
        auto it = vocab_.find((s ? prefix_str_ : "") + utf8.substr(at[s], at[e] - at[s]));
        if (it != vocab_.end()) { id = it->second; break; }
      }
      if (id < 0) { pieces = {unk_id_}; break; }
      pieces.push_back(id);
      s = e;
    }
    for (size_t k = 0; k < pieces.size() && ids.size() < limit; k++) ids.push_back(pieces[k]);
  }
};

}  // namespace tinygrad::text
