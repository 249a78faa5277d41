// libFuzzer target: text::BertTokenizer on an arbitrary tokenizer.json (BertTokenizer::from_json, the loader from_file
// uses), then encode and encode_batch of a few texts and of the input's first bytes. Every input must load and encode,
// or throw nn::StateError at load (encode may refuse a max_length that leaves no room for the special tokens); every id
// that comes out must be an id of the vocabulary. A crash, a sanitizer report, any other exception or a bad id is a
// finding.
//
// tools/ci-sanitize runs it for 20 s over a copy of the seed corpus (test fuzz.tokenizer of the sanitizer build).
// Longer, by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude \
//       tests/fuzz/fuzz_tokenizer.cpp -o /tmp/fuzz_tokenizer
//   mkdir -p /tmp/corpus_tok
//   /tmp/fuzz_tokenizer -max_total_time=600 -timeout=10 /tmp/corpus_tok tests/fuzz/corpus/tokenizer
#include <tinygrad/text/tokenizer.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tinygrad::text::BertTokenizer;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::optional<BertTokenizer> tok;
  try {
    tok = BertTokenizer::from_json(bytes, "fuzz");
  } catch (const tinygrad::nn::StateError&) {
    return 0;
  }
  auto finding = [](const char* what, int64_t v) {
    std::fprintf(stderr, "finding: %s %lld\n", what, static_cast<long long>(v));
    std::abort();
  };
  int64_t n = int64_t(tok->vocab_size());
  auto check = [&](const std::vector<int32_t>& ids, size_t max_length) {
    if (ids.size() > max_length) finding("more ids than max_length:", int64_t(ids.size()));
    for (int32_t id : ids) {
      if (id < 0 || id >= n) finding("id outside the vocabulary:", id);
      (void)tok->id_to_token(id);
    }
  };
  std::vector<std::string> texts{"hello world, this is a test", "", std::string(bytes.substr(0, 64)),
                                 "na\xc3\xafve \xe4\xbd\xa0\xe5\xa5\xbd [MASK] caf\xc3\xa9!"};
  for (size_t max_length : {size_t(3), size_t(256)}) {
    try {
      for (auto& t : texts) check(tok->encode(t, max_length), max_length);
      auto b = tok->encode_batch(texts, max_length);
      if (b.ids.size() != size_t(b.batch * b.seq) || b.mask.size() != b.ids.size())
        finding("batch of the wrong size:", int64_t(b.ids.size()));
      check(b.ids, b.ids.size());
    } catch (const tinygrad::Error& e) {
      if (std::string_view(e.what()).find("tinygrad::BertTokenizer::encode: max_length") != 0) throw;
    }
  }
  return 0;
}
