// libFuzzer target: the GGUF reader (nn::GGUFFile::parse, the checks GGUFFile::open runs on a mapped file) and the
// writer on arbitrary bytes. Every input must parse, or throw nn::StateError; a crash, a sanitizer report or any other
// exception is a finding. For a parsed file: every tensor's first and last data byte are read (inside the input),
// every typed accessor either answers or throws StateError, and the writer re-emits the file so that reading and
// writing it again gives the same bytes (the writer accepts everything the reader accepts).
//
// tools/ci-sanitize runs it for 20 s over a copy of the seed corpus (test fuzz.gguf of the sanitizer build, build-asan/;
// tests/fuzz/run.cmake). Longer, by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude \
//       tests/fuzz/fuzz_gguf.cpp -o /tmp/fuzz_gguf
//   mkdir -p /tmp/corpus_gguf && /tmp/fuzz_gguf -max_total_time=600 -timeout=10 -rss_limit_mb=2048 /tmp/corpus_gguf tests/fuzz/corpus/gguf
// (new inputs go to /tmp/corpus_gguf; a finding is written to ./crash-<sha1>: rerun it with /tmp/fuzz_gguf crash-<sha1>)
#include <tinygrad/nn/gguf.hpp>

#include <cstdio>
#include <cstdlib>

namespace {
void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_gguf: %s\n", what);
    std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace nn = tinygrad::nn;
  std::span<const uint8_t> bytes(data, size);
  nn::GGUFFile f;
  try {
    f = nn::GGUFFile::parse(bytes, "fuzz");
  } catch (const nn::StateError&) {
    return 0;
  }
  volatile uint8_t sink = 0;
  check(f.version() == 2 || f.version() == 3, "version");
  check(f.alignment() && (f.alignment() & (f.alignment() - 1)) == 0, "alignment");
  uint64_t end = 0;
  for (auto& t : f.tensors()) {
    check(f.find_tensor(t.name) == &t, "find_tensor");
    check(t.offset >= f.data_offset() && t.offset % f.alignment() == f.data_offset() % f.alignment() && t.offset >= end, "offset");
    check(t.offset <= size && t.nbytes <= size - t.offset, "bounds");
    auto d = f.data(t);
    check(d.data() == data + t.offset && d.size() == t.nbytes, "data");
    if (!d.empty()) sink = uint8_t(sink ^ d.front() ^ d.back());
    end = t.offset + t.nbytes;
    check(t.numel() >= 0 && t.shape().size() == t.ne.size(), "shape");
  }
  for (auto& kv : f.metadata()) {  // NOTE: not a structured binding: the lambdas capture the key (clang 14)
    const std::string& key = kv.first;
    check(f.find(key) == &kv.second, "find");
    auto any = [&](auto&& read) {
      try { read(); } catch (const nn::StateError&) {}
    };
    auto touch = [&](uint64_t x) { sink = uint8_t(sink ^ uint8_t(x)); };
    any([&] { touch(uint64_t(f.get_int(key))); });
    any([&] { touch(f.get_uint(key)); });
    any([&] { touch(f.get_float(key) > 0); });
    any([&] { touch(f.get_bool(key)); });
    any([&] { touch(f.get_string(key).size()); });
    any([&] { touch(f.get_array_strings(key).size()); });
    any([&] { touch(f.get_array_ints(key).size()); });
    any([&] { touch(f.get_array_floats(key).size()); });
  }
  // NOTE: a StateError from the writer here escapes: a finding
  std::vector<nn::GGUFTensorData> ts;
  for (auto& t : f.tensors()) ts.push_back({t.name, t.ne, t.type, f.data(t)});
  auto w1 = nn::gguf_write_bytes(f.metadata(), ts, f.version());
  auto g = nn::GGUFFile::parse(w1, "rewritten");
  std::vector<nn::GGUFTensorData> ts2;
  for (auto& t : g.tensors()) ts2.push_back({t.name, t.ne, t.type, g.data(t)});
  check(nn::gguf_write_bytes(g.metadata(), ts2, g.version()) == w1, "write(read(write(read(x)))) != write(read(x))");
  return 0;
}
