// libFuzzer target: the object loader of the CPU kernels (runtime/elf.hpp, ElfObject::load) on arbitrary bytes. Every
// input must be placed or refused with a reason; a crash, a sanitizer report, a placed object without a symbol or with
// one outside its mapping, or a refusal without a reason is a finding. Nothing placed is run.
//
// tools/ci-sanitize runs it for 20 s over a copy of the seed corpus (test fuzz.elf of the sanitizer build, build-asan/;
// tests/fuzz/run.cmake): two kernels' objects as clang and gcc write them, and the objects of the two reproducers of
// issue 36 (a symbol 1 MiB past its section, a section whose offset plus size overflows). Longer, by hand:
//   clang++ -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude \
//       tests/fuzz/fuzz_elf.cpp -o /tmp/fuzz_elf -ldl -lpthread
//   mkdir -p /tmp/corpus_elf && /tmp/fuzz_elf -max_total_time=600 -timeout=10 /tmp/corpus_elf tests/fuzz/corpus/elf
#include <tinygrad.hpp>

#include <cstdio>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string why;
  auto obj = tinygrad::detail::ElfObject::load(std::string_view(reinterpret_cast<const char*>(data), size), why);
  if (!obj && why.empty()) { std::fprintf(stderr, "refused without a reason\n"); std::abort(); }
  if (obj) {
    for (auto& [name, p] : obj->symbols()) {
      if (!obj->contains(p)) { std::fprintf(stderr, "symbol %s is outside the mapping\n", name.c_str()); std::abort(); }
    }
  }
  return 0;
}
