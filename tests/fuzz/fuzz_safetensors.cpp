// libFuzzer target: the safetensors parser (nn::safe_load_bytes, the checks and loader safe_load uses on a file,
// and the metadata map) on arbitrary bytes. Every input must load, or throw nn::StateError; a crash, a sanitizer
// report or any other exception is a finding. A loaded tensor's buffer must hold exactly its data_offsets' bytes.
//
// tools/ci-sanitize runs it for 20 s over a copy of the seed corpus (test fuzz.safetensors of the sanitizer build, build-asan/;
// tests/fuzz/run.cmake). Longer, by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude \
//       tests/fuzz/fuzz_safetensors.cpp -o /tmp/fuzz_safetensors -ldl -lpthread
//   mkdir -p /tmp/corpus_st && /tmp/fuzz_safetensors -max_total_time=600 -timeout=10 /tmp/corpus_st tests/fuzz/corpus/safetensors
// (new inputs go to /tmp/corpus_st; a finding is written to ./crash-<sha1>: rerun it with /tmp/fuzz_safetensors crash-<sha1>)
#include <tinygrad.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace nn = tinygrad::nn;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    auto read = [&](uint64_t off, uint64_t) { return bytes.data() + off; };
    nn::detail::SafeLayout l("fuzz", size, read);
    try { nn::detail::metadata_map(l); } catch (const nn::StateError&) {}
    auto d = nn::safe_load_bytes(bytes, "CPU", "fuzz");
    size_t i = 0;
    for (auto& kv : d) {  // NOTE: not a structured binding: the lambda captures it (clang 14)
      const tinygrad::Tensor& t = kv.second;
      auto& info = *std::find_if(l.tensors.begin(), l.tensors.end(), [&](auto& x) { return x.name == kv.first; });
      auto buf = t.buffer();
      std::vector<char> host(buf->nbytes());
      buf->copyout(host.data());
      if (t.shape() != info.shape || host.size() != info.end - info.begin ||
          (!host.empty() && std::memcmp(host.data(), bytes.data() + 8 + l.n + info.begin, host.size()) != 0)) {
        std::fprintf(stderr, "tensor %zu loaded wrong\n", i);
        std::abort();
      }
      i++;
    }
  } catch (const nn::StateError&) {
  }
  return 0;
}
