// libFuzzer target: the IDX parser (nn::datasets::detail::parse_idx, what read_idx runs on a decompressed file) on
// arbitrary bytes, asked for the dims the file declares and for 3 (images). Every input must load, or throw
// DatasetError; a crash, a sanitizer report or any other exception is a finding. A loaded tensor must hold the data.
//
// tools/ci-sanitize runs it for 20 s over a copy of the seed corpus (test fuzz.idx of the sanitizer build, build-asan/;
// tests/fuzz/run.cmake). Longer, by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude \
//       tests/fuzz/fuzz_idx.cpp -o /tmp/fuzz_idx -ldl -lpthread
//   mkdir -p /tmp/corpus_idx && /tmp/fuzz_idx -max_total_time=600 -timeout=10 /tmp/corpus_idx tests/fuzz/corpus/idx
// (new inputs go to /tmp/corpus_idx; a finding is written to ./crash-<sha1>: rerun it with /tmp/fuzz_idx crash-<sha1>)
#include <tinygrad.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ds = tinygrad::nn::datasets;
  for (int nd : {size > 3 ? int(data[3]) : 1, 3}) {
    try {
      tinygrad::Tensor t = ds::detail::parse_idx(data, size, nd, "fuzz", "CPU");
      auto buf = t.buffer();
      size_t head = 4 + 4 * size_t(nd);
      std::vector<uint8_t> host(buf->nbytes());
      buf->copyout(host.data());
      if (int(t.ndim()) != nd || host.size() != size - head || (!host.empty() && std::memcmp(host.data(), data + head, host.size()) != 0)) {
        std::fprintf(stderr, "loaded wrong\n");
        std::abort();
      }
    } catch (const ds::DatasetError&) {
    }
  }
  return 0;
}
