// libFuzzer target: text::BPETokenizer on an arbitrary tokenizer.json (BPETokenizer::from_json, the loader from_file
// uses), then encode (with and without parse_special) and decode of a few texts and of the input's first bytes. Every
// input must load, or throw nn::StateError; every id that comes out must be an id of the vocabulary, and decode must
// give back any text whose bytes all have tokens. A crash, a sanitizer report, any other exception or a bad id is a
// finding.
//
// tools/ci-sanitize runs it for 20 s over a copy of the seed corpus (test fuzz.bpe of the sanitizer build). Longer:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude \
//       tests/fuzz/fuzz_bpe.cpp -o /tmp/fuzz_bpe
//   mkdir -p /tmp/corpus_bpe
//   /tmp/fuzz_bpe -max_total_time=600 -timeout=10 /tmp/corpus_bpe tests/fuzz/corpus/bpe
#include <tinygrad/text/bpe.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tinygrad::text::BPETokenizer;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  std::optional<BPETokenizer> tok;
  try {
    tok = BPETokenizer::from_json(bytes, "fuzz");
  } catch (const tinygrad::nn::StateError&) {
    return 0;
  }
  auto finding = [](const char* what, int64_t v) {
    std::fprintf(stderr, "finding: %s %lld\n", what, static_cast<long long>(v));
    std::abort();
  };
  size_t n = tok->vocab_size();
  std::string texts[] = {"hello world, it's 2024!  a  1\n\n", "", std::string(bytes.substr(0, 64)),
                         "na\xc3\xafve \xe4\xbd\xa0\xe5\xa5\xbd <|endoftext|> \xF0\x9F\x98\x80\xff'S"};
  for (auto& t : texts)
    for (bool special : {false, true}) {
      auto ids = tok->encode(t, special);
      for (int32_t id : ids)
        if (id < 0 || size_t(id) >= n) finding("id outside the vocabulary:", id);
      std::string back = tok->decode(ids);
      (void)tok->decode(ids, true);
      for (int32_t id : ids) (void)tok->piece(id);
      if (back.size() > 64 * t.size() + 1024) finding("decode much longer than the text:", int64_t(back.size()));
    }
  return 0;
}
