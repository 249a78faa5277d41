// nn/gguf.hpp: the GGUF writer and reader round trip every metadata type, every ggml type, v2 and v3, alignments 32
// and 64; malformed files (every truncation, bad counts, types, offsets, shapes) fail with a StateError naming the
// file and the field; the real SmolLM2-135M file reads as python's gguf package reads it (numbers below from
// gguf 0.x's GGUFReader), and our writer re-emits it byte for byte.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>
#include <tinygrad/nn/gguf.hpp>
#include "smollm2.hpp"

#include <array>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

using namespace tinygrad::nn;

namespace {
using Bytes = std::vector<uint8_t>;

uint32_t crc32(std::span<const uint8_t> b) {  // zlib's CRC-32, to compare with python's zlib.crc32
  static const auto table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (uint8_t x : b) c = table[(c ^ x) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

Bytes random_bytes(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  Bytes b(n);
  for (auto& x : b) x = uint8_t(g());
  return b;
}

// the message of the StateError that parsing b throws ("no error" when it parses)
std::string parse_error(const Bytes& b) {
  try {
    GGUFFile::parse(b, "t.gguf");
  } catch (const StateError& e) {
    return e.what();
  }
  return "no error";
}
std::string write_error(const GGUFMetadata& m, const std::vector<GGUFTensorData>& t, uint32_t version = 3) {
  try {
    gguf_write_bytes(m, t, version);
  } catch (const StateError& e) {
    return e.what();
  }
  return "no error";
}
#define REQUIRE_PARSE_ERROR(bytes, text)                                     \
  do {                                                                       \
    std::string msg_ = parse_error(bytes);                                   \
    INFO(msg_);                                                              \
    REQUIRE(msg_.find("tinygrad::gguf: t.gguf: ") == 0);                     \
    REQUIRE(msg_.find(text) != std::string::npos);                           \
  } while (0)

// a GGUF file written by hand, for the malformed ones the writer refuses to make
struct Raw {
  Bytes b;
  Raw& u32(uint64_t v) { for (int i = 0; i < 4; i++) b.push_back(uint8_t(v >> (8 * i))); return *this; }
  Raw& u64(uint64_t v) { for (int i = 0; i < 8; i++) b.push_back(uint8_t(v >> (8 * i))); return *this; }
  Raw& u8(uint8_t v) { b.push_back(v); return *this; }
  Raw& str(const std::string& s) { u64(s.size()); b.insert(b.end(), s.begin(), s.end()); return *this; }
  Raw& head(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) { b = {'G', 'G', 'U', 'F'}; u32(version); u64(n_tensors); return u64(n_kv); }
  Raw& tensor(const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(ne.size());
    for (auto x : ne) u64(x);
    return u32(type).u64(offset);
  }
  Raw& data(size_t n) {  // pad to 32, then n bytes
    while (b.size() % 32) b.push_back(0);
    b.resize(b.size() + n, 7);
    return *this;
  }
};

}  // namespace

TEST_CASE("gguf: every metadata type round-trips, v2 and v3, alignment 32 and 64", "[gguf]") {
  GGUFMetadata m = {
      {"u8", GGUFValue::of(GGUFType::UINT8, uint64_t(255))},
      {"i8", GGUFValue::of(GGUFType::INT8, int64_t(-128))},
      {"u16", GGUFValue::of(GGUFType::UINT16, uint64_t(65535))},
      {"i16", GGUFValue::of(GGUFType::INT16, int64_t(-32768))},
      {"u32", GGUFValue::u32(4000000000u)},
      {"i32", GGUFValue::i32(-2000000000)},
      {"f32", GGUFValue::f32(0.1f)},
      {"bool", GGUFValue::boolean(true)},
      {"str", GGUFValue::str(std::string("h\xc3\xa9llo \0 world", 13))},  // a NUL inside
      {"u64", GGUFValue::of(GGUFType::UINT64, UINT64_MAX)},
      {"i64", GGUFValue::of(GGUFType::INT64, INT64_MIN)},
      {"f64", GGUFValue::of(GGUFType::FLOAT64, 1e-300)},
      {"i64 as u32", GGUFValue::of(GGUFType::UINT32, int64_t(7))},  // the writer takes either integer kind
      {"a.str", GGUFValue::strings({"a", "", "\xf0\x9f\x8d\x95"})},
      {"a.empty", GGUFValue::strings({})},
      {"a.u8", GGUFValue::array(GGUFType::UINT8, std::vector<uint64_t>{0, 1, 255})},
      {"a.i8", GGUFValue::array(GGUFType::INT8, std::vector<int64_t>{-128, 127})},
      {"a.u16", GGUFValue::array(GGUFType::UINT16, std::vector<uint64_t>{65535})},
      {"a.i16", GGUFValue::array(GGUFType::INT16, std::vector<int64_t>{-1, 2})},
      {"a.u32", GGUFValue::array(GGUFType::UINT32, std::vector<uint64_t>{1, 2, 3})},
      {"a.i32", GGUFValue::array(GGUFType::INT32, std::vector<int64_t>{-5, 5})},
      {"a.u64", GGUFValue::array(GGUFType::UINT64, std::vector<uint64_t>{UINT64_MAX})},
      {"a.i64", GGUFValue::array(GGUFType::INT64, std::vector<int64_t>{INT64_MIN, INT64_MAX})},
      {"a.f32", GGUFValue::array(GGUFType::FLOAT32, std::vector<double>{1.5, -0.25})},
      {"a.f64", GGUFValue::array(GGUFType::FLOAT64, std::vector<double>{3.141592653589793})},
      {"a.bool", GGUFValue::array(GGUFType::BOOL, std::vector<bool>{true, false, true})},
  };
  Bytes w0 = random_bytes(4 * 4 * 3 * 5, 1);
  for (uint32_t version : {2u, 3u})
    for (uint32_t align : {0u, 32u, 64u}) {
      INFO("version " << version << ", alignment " << align);
      GGUFMetadata mm = m;
      if (align) mm.insert(mm.begin() + 3, {"general.alignment", GGUFValue::u32(align)});
      Bytes w1 = random_bytes(20, 2);
      Bytes b = gguf_write_bytes(mm, {{"w0", {4, 3, 5}, GGMLType::F32, w0}, {"w1", {10}, GGMLType::F16, w1}}, version);
      auto f = GGUFFile::parse(b, "mem");
      REQUIRE(f.version() == version);
      REQUIRE(f.alignment() == (align ? align : 32));
      REQUIRE(f.data_offset() % f.alignment() == 0);
      REQUIRE(f.file_size() == b.size());
      REQUIRE(f.metadata().size() == mm.size());
      for (size_t i = 0; i < mm.size(); i++) {  // in order, each value equal (the f32 as float)
        INFO(mm[i].first);
        REQUIRE(f.metadata()[i].first == mm[i].first);
        const GGUFValue &a = f.metadata()[i].second, &e = mm[i].second;
        REQUIRE((a.type == e.type && (a.type != GGUFType::ARRAY || a.elem == e.elem)));
        if (mm[i].first == "i64 as u32") REQUIRE(a.as_uint() == 7);
        else REQUIRE(a.data == e.data);
      }
      REQUIRE(f.get_uint("u8") == 255);
      REQUIRE(f.get_int("i8") == -128);
      REQUIRE(f.get_int("u32") == 4000000000);
      REQUIRE(f.get_float("f32") == double(0.1f));
      REQUIRE(f.get_float("f64") == 1e-300);
      REQUIRE(f.get_bool("bool"));
      REQUIRE(f.get_string("str") == std::string("h\xc3\xa9llo \0 world", 13));
      REQUIRE(f.get_uint("u64") == UINT64_MAX);
      REQUIRE(f.get_int("i64") == INT64_MIN);
      REQUIRE(f.get_array_strings("a.str") == std::vector<std::string>{"a", "", "\xf0\x9f\x8d\x95"});
      REQUIRE(f.get_array_strings("a.empty").empty());
      REQUIRE(f.get_array_ints("a.u8") == std::vector<int64_t>{0, 1, 255});
      REQUIRE(f.get_array_ints("a.i64") == std::vector<int64_t>{INT64_MIN, INT64_MAX});
      REQUIRE(f.get_array_floats("a.f32") == std::vector<double>{1.5, -0.25});
      REQUIRE((f.has("u8") && !f.has("nope") && f.find("nope") == nullptr && f.find("a.bool")->size() == 3));
      REQUIRE(f.tensors().size() == 2);
      const GGUFTensor* t0 = f.find_tensor("w0");
      REQUIRE((t0 && t0->ne == std::vector<int64_t>{4, 3, 5} && t0->shape() == std::vector<int64_t>{5, 3, 4} && t0->numel() == 60));
      REQUIRE((t0->type == GGMLType::F32 && t0->nbytes == 240 && t0->offset == f.data_offset()));
      REQUIRE(std::equal(f.data(*t0).begin(), f.data(*t0).end(), w0.begin(), w0.end()));
      const GGUFTensor* t1 = f.find_tensor("w1");
      REQUIRE((t1->offset % f.alignment() == 0 && t1->offset == f.data_offset() + 256));
      REQUIRE(std::equal(f.data(*t1).begin(), f.data(*t1).end(), w1.begin(), w1.end()));
      REQUIRE(f.find_tensor("w2") == nullptr);
      // re-written from what was read: the same bytes
      std::vector<GGUFTensorData> again;
      for (auto& t : f.tensors()) again.push_back({t.name, t.ne, t.type, f.data(t)});
      REQUIRE(gguf_write_bytes(f.metadata(), again, version) == b);
    }
}

TEST_CASE("gguf: typed reads name the key and both types", "[gguf]") {
  GGUFMetadata m = {{"general.name", GGUFValue::str("x")}, {"n", GGUFValue::u32(3)}, {"neg", GGUFValue::i32(-1)},
                    {"big", GGUFValue::of(GGUFType::UINT64, UINT64_MAX)}, {"toks", GGUFValue::strings({"a"})},
                    {"big.a", GGUFValue::array(GGUFType::UINT64, std::vector<uint64_t>{UINT64_MAX})}};
  auto f = GGUFFile::parse(gguf_write_bytes(m, {}), "t.gguf");
  auto msg = [&](auto&& fn) {
    try { fn(); } catch (const StateError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  REQUIRE(msg([&] { f.get_int("general.name"); }) == "tinygrad::gguf: t.gguf: key 'general.name' is STRING, not an integer");
  REQUIRE(msg([&] { f.get_string("n"); }) == "tinygrad::gguf: t.gguf: key 'n' is UINT32, not a string");
  REQUIRE(msg([&] { f.get_float("n"); }) == "tinygrad::gguf: t.gguf: key 'n' is UINT32, not a float");
  REQUIRE(msg([&] { f.get_array_ints("toks"); }) == "tinygrad::gguf: t.gguf: key 'toks' is ARRAY of STRING, not an array of integers");
  REQUIRE(msg([&] { f.get_uint("neg"); }) == "tinygrad::gguf: t.gguf: key 'neg' is -1, not an unsigned integer");
  REQUIRE(msg([&] { f.get_int("big"); }).find("more than int64 holds") != std::string::npos);
  REQUIRE(msg([&] { f.get_array_ints("big.a"); }).find("more than int64 holds") != std::string::npos);
  REQUIRE(msg([&] { f.get_int("missing"); }) == "tinygrad::gguf: t.gguf: no metadata key 'missing'");
}

TEST_CASE("gguf: every ggml type's byte size, through the writer and the reader", "[gguf]") {
  std::vector<GGUFTensorData> ts;
  std::vector<Bytes> data;
  for (const auto& info : tinygrad::nn::detail::ggml_types) data.push_back(random_bytes(size_t(2 * 3 * info.bytes), uint32_t(info.type)));
  size_t i = 0;
  for (const auto& info : tinygrad::nn::detail::ggml_types) {
    ts.push_back({std::string("t.") + info.name, {2 * info.block, 3}, info.type, data[i]});
    i++;
  }
  Bytes b = gguf_write_bytes({}, ts);
  auto f = GGUFFile::parse(b);
  REQUIRE(f.tensors().size() == ts.size());
  for (size_t k = 0; k < ts.size(); k++) {
    const GGUFTensor& t = f.tensors()[k];
    auto info = ggml_type_info(t.type);
    INFO(info.name);
    REQUIRE((t.name == ts[k].name && t.type == ts[k].type && t.ne == ts[k].ne));
    REQUIRE(t.nbytes == uint64_t(6 * info.bytes));
    REQUIRE((t.offset % 32 == 0 && t.numel() == 6 * info.block));
    REQUIRE(std::equal(f.data(t).begin(), f.data(t).end(), data[k].begin(), data[k].end()));
  }
  // an empty tensor (ggml allows a 0 dim) and a 0-dim one (a scalar)
  Bytes one = random_bytes(4, 9);
  auto g = GGUFFile::parse(gguf_write_bytes({}, {{"e", {0, 3}, GGMLType::Q4_0, {}}, {"s", {}, GGMLType::F32, one}}));
  REQUIRE((g.tensors()[0].nbytes == 0 && g.tensors()[0].numel() == 0 && g.tensors()[1].shape().empty() && g.tensors()[1].nbytes == 4));
}

TEST_CASE("gguf: gguf_write and open: a file, memory-mapped", "[gguf]") {
  auto path = (std::filesystem::temp_directory_path() / ("tg_gguf_" + std::to_string(::getpid()) + ".gguf")).string();
  Bytes w = random_bytes(18 * 4, 3);
  GGUFMetadata m = {{"general.architecture", GGUFValue::str("llama")}, {"general.alignment", GGUFValue::u32(64)}};
  std::vector<GGUFTensorData> ts = {{"q", {64, 2}, GGMLType::Q4_0, w}, {"b", {3}, GGMLType::F32, {w.data(), 12}}};
  gguf_write(path, m, ts);
  {
    std::ifstream in(path, std::ios::binary);
    Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(file == gguf_write_bytes(m, ts));
  }
  std::span<const uint8_t> q;
  {
    auto f = GGUFFile::open(path);
    auto copy = f;  // copies share the mapping
    q = copy.data(*f.find_tensor("q"));
    REQUIRE((f.alignment() == 64 && f.get_string("general.architecture") == "llama"));
  }
  // drop_metadata: the keys gone, the header's pages given back (a vocabulary of 3000 strings: 8+ pages), the tensors
  // still read from the file
  std::vector<std::string> vocab;
  for (int i = 0; i < 3000; i++) vocab.push_back("token number " + std::to_string(i));
  m.push_back({"tokenizer.ggml.tokens", GGUFValue::strings(vocab)});
  gguf_write(path, m, ts);
  {
    auto f = GGUFFile::open(path);
    REQUIRE(f.data_offset() > 2 * 4096);
    f.drop_metadata();
    REQUIRE((!f.has("general.architecture") && f.metadata().empty()));
    REQUIRE_THROWS_AS(f.get_string("general.architecture"), StateError);
    auto d = f.data(*f.find_tensor("q"));
    REQUIRE(Bytes(d.begin(), d.end()) == w);
    REQUIRE(f.find_tensor("b")->nbytes == 12);
  }
  std::filesystem::remove(path);
  REQUIRE_THROWS_AS(GGUFFile::open(path), StateError);
  auto dir = std::filesystem::temp_directory_path().string();
  try {
    GGUFFile::open(dir);
    FAIL("a directory opened");
  } catch (const StateError& e) {
    REQUIRE(std::string(e.what()) == "tinygrad::gguf: " + dir + " is a directory, not a GGUF file");
  }
}

TEST_CASE("gguf: the writer checks what the reader checks", "[gguf]") {
  Bytes b = random_bytes(64, 4);
  auto t = [&](std::vector<int64_t> ne, GGMLType ty, size_t n, std::string name = "w") { return GGUFTensorData{name, ne, ty, {b.data(), n}}; };
  REQUIRE(write_error({}, {t({4}, GGMLType::F32, 12)}) == "tinygrad::gguf_write: tensor 'w': ne [4] of type F32 needs 16 bytes, it has 12");
  REQUIRE(write_error({}, {t({16}, GGMLType::Q4_0, 18)}) ==
          "tinygrad::gguf_write: tensor 'w': ne [16] of type Q4_0: ne[0] = 16 is not a multiple of the block size 32 of Q4_0");
  REQUIRE(write_error({}, {t({1}, GGMLType::F32, 4), t({1}, GGMLType::F32, 4)}) == "tinygrad::gguf_write: tensor 'w' appears twice");
  REQUIRE(write_error({}, {t({1, 1, 1, 1, 1}, GGMLType::F32, 4)}).find("5 dimensions, ggml allows at most 4") != std::string::npos);
  REQUIRE(write_error({}, {t({-1}, GGMLType::F32, 4)}).find("dimension 0 is -1 (negative)") != std::string::npos);
  REQUIRE(write_error({}, {t({1}, GGMLType::F32, 4, std::string(64, 'x'))}).find("longer than ggml's 63 bytes") != std::string::npos);
  REQUIRE(write_error({}, {t({1}, GGMLType(5), 4)}) == "tinygrad::gguf_write: tensor 'w': unknown ggml type 5");
  REQUIRE(write_error({{"k", GGUFValue::u32(1)}, {"k", GGUFValue::u32(2)}}, {}) == "tinygrad::gguf_write: key 'k' appears twice");
  REQUIRE(write_error({{"", GGUFValue::u32(1)}}, {}) == "tinygrad::gguf_write: an empty key");
  REQUIRE(write_error({{"k", GGUFValue::of(GGUFType::UINT8, uint64_t(256))}}, {}) == "tinygrad::gguf_write: key 'k': 256 does not fit UINT8");
  REQUIRE(write_error({{"k", GGUFValue::of(GGUFType::INT8, int64_t(-129))}}, {}) == "tinygrad::gguf_write: key 'k': -129 does not fit INT8");
  REQUIRE(write_error({{"k", GGUFValue::of(GGUFType::UINT32, int64_t(-1))}}, {}) == "tinygrad::gguf_write: key 'k': -1 does not fit UINT32");
  REQUIRE(write_error({{"k", GGUFValue::of(GGUFType::INT64, UINT64_MAX)}}, {}).find("does not fit INT64") != std::string::npos);
  REQUIRE(write_error({{"k", GGUFValue::of(GGUFType::UINT32, std::string("x"))}}, {}).find("cannot hold a string") != std::string::npos);
  REQUIRE(write_error({{"k", GGUFValue::array(GGUFType::ARRAY, std::vector<uint64_t>{})}}, {}).find("nested arrays") != std::string::npos);
  REQUIRE(write_error({{"k", GGUFValue::array(GGUFType::INT32, std::vector<std::string>{})}}, {}).find("cannot hold strings") != std::string::npos);
  REQUIRE(write_error({{"general.alignment", GGUFValue::u32(48)}}, {}) == "tinygrad::gguf_write: key 'general.alignment': 48 is not a power of two");
  REQUIRE(write_error({{"general.alignment", GGUFValue::i32(32)}}, {}).find("must be UINT32") != std::string::npos);
  REQUIRE(write_error({}, {}, 1) == "tinygrad::gguf_write: version 1 is not supported (2 and 3 are)");
}

TEST_CASE("gguf: a file truncated at any byte fails", "[gguf]") {
  // every part of the format, and the last tensor a multiple of 32 bytes, so no prefix is a valid file
  GGUFMetadata m = {{"a", GGUFValue::str("xyz")}, {"b", GGUFValue::boolean(false)},
                    {"c", GGUFValue::array(GGUFType::INT16, std::vector<int64_t>{1, 2})},
                    {"d", GGUFValue::strings({"p", "qr"})}, {"general.alignment", GGUFValue::u32(32)}};
  Bytes w = random_bytes(50, 5);
  Bytes b = gguf_write_bytes(m, {{"q", {32}, GGMLType::Q4_1, {w.data(), 20}}, {"f", {8}, GGMLType::F32, {w.data(), 32}}});
  REQUIRE(parse_error(b) == "no error");
  for (size_t n = 0; n < b.size(); n++) {
    INFO("truncated to " << n << " of " << b.size() << " bytes");
    REQUIRE(parse_error(Bytes(b.begin(), b.begin() + std::ptrdiff_t(n))).find("tinygrad::gguf: t.gguf: ") == 0);
  }
  // the header 24 bytes, the keys 144, tensor infos 66 (the second at 201), padding to 256, 'q' 20 (+ 12), 'f' 32
  REQUIRE(b.size() == 320);
  REQUIRE_PARSE_ERROR(Bytes(b.begin(), b.begin() + 210),
                      "tensor 'f': truncated: dimension count at offset 210 needs 4 bytes, the file (210 bytes) has 0 left");
  REQUIRE_PARSE_ERROR(Bytes(b.begin(), b.begin() + 20), "truncated: metadata count at offset 16 needs 8 bytes");
  REQUIRE_PARSE_ERROR(Bytes(b.begin(), b.begin() + 100),
                      "key 'd': truncated: value type at offset 100 needs 4 bytes, the file (100 bytes) has 0 left");
  REQUIRE_PARSE_ERROR(Bytes(b.begin(), b.end() - 1),
                      "tensor 'f': data [32, 64) (from the data section at 256) lies past the end of the file (319 bytes)");
}

TEST_CASE("gguf: malformed headers fail naming the field", "[gguf]") {
  REQUIRE(parse_error(Raw().head(0, 0).b) == "no error");  // an empty file: a header, no keys or tensors
  Bytes bad = Raw().head(0, 0).b;
  bad[0] = 'g';
  REQUIRE(parse_error(bad) == "tinygrad::gguf: t.gguf: not a GGUF file: the magic is 'gGUF', not 'GGUF'");
  REQUIRE_PARSE_ERROR(Bytes{}, "truncated: magic at offset 0 needs 4 bytes, the file (0 bytes) has 0 left");
  REQUIRE_PARSE_ERROR(Raw().head(0, 0, 1).b, "GGUF version 1 is not supported (it used 32-bit counts)");
  REQUIRE_PARSE_ERROR(Raw().head(0, 0, 4).b, "GGUF version 4 is not supported (2 and 3 are)");
  REQUIRE_PARSE_ERROR(Raw().head(0, 0, 0x03000000).b, "a big-endian file?");
  REQUIRE_PARSE_ERROR(Raw().head(0, uint64_t(1) << 62).b, "a header of 4611686018427387904 keys and 0 tensors cannot fit in the 0 bytes left");
  REQUIRE_PARSE_ERROR(Raw().head(UINT64_MAX, 0).b, "cannot fit");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(8).u64(uint64_t(1) << 62).b, "key 'k': string length of 4611686018427387904 bytes exceeds");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(8).u64(100).str("").b, "key 'k': truncated: string length at offset 45 needs 100 bytes");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).u64(UINT64_MAX).u64(0).b, "key 0: key length of 18446744073709551615 bytes exceeds ggml's limit");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(4).u64(uint64_t(1) << 29).u64(0).b,
                      "key 'k': array count 536870912 cannot fit in the 8 bytes left (each takes at least 4)");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(0).u64((uint64_t(1) << 30) + 1).b, "array count 1073741825 exceeds the limit");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(8).u64(UINT64_MAX / 2).b, "exceeds the limit");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(13).u64(0).b, "key 'k': unknown value type 13");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(77).u64(0).b, "key 'k': unknown array element type 77");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(9).u64(0).b, "key 'k': nested arrays are not supported");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(7).u8(2).b, "key 'k': bool byte is 2, not 0 or 1");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(7).u64(2).u8(1).u8(255).b, "key 'k': bool byte is 255, not 0 or 1");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("").u32(0).u8(0).u8(0).b, "key 0: the key is empty");
  REQUIRE_PARSE_ERROR(Raw().head(0, 2).str("k").u32(0).u8(0).str("k").u32(0).u8(0).b, "key 'k': duplicate key");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("general.alignment").u32(10).u64(32).b, "key 'general.alignment': is UINT64, not UINT32");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("general.alignment").u32(4).u32(24).b, "key 'general.alignment': 24 is not a power of two");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("general.alignment").u32(4).u32(0).b, "0 is not a power of two");
  // a string value far past the end of the file: the count fails before anything is allocated
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).str("k").u32(9).u32(8).u64(2).str("a").u64(uint64_t(1) << 29).b,
                      "truncated: string length at offset 66 needs 536870912 bytes");
}

TEST_CASE("gguf: malformed tensor infos and data fail naming the tensor", "[gguf]") {
  auto one = [](const std::string& name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset, size_t data) {
    return Raw().head(1, 0).tensor(name, std::move(ne), type, offset).data(data).b;
  };
  REQUIRE(parse_error(one("w", {4, 2}, 0, 0, 32)) == "no error");
  REQUIRE(parse_error(one("w", {}, 0, 0, 4)) == "no error");  // 0 dims: a scalar
  REQUIRE_PARSE_ERROR(one("w", {4}, 5, 0, 32), "tensor 'w': unknown ggml type id 5");
  REQUIRE_PARSE_ERROR(one("w", {4}, 1000, 0, 32), "tensor 'w': unknown ggml type id 1000");
  REQUIRE_PARSE_ERROR(one("w", {1, 1, 1, 1, 1}, 0, 0, 32), "tensor 'w': 5 dimensions, ggml allows at most 4");
  REQUIRE_PARSE_ERROR(one("w", {UINT64_MAX}, 0, 0, 32), "tensor 'w': ne[0] = 18446744073709551615 is negative as int64");
  REQUIRE_PARSE_ERROR(one("w", {48, 2}, 2, 0, 64), "tensor 'w': ne [48, 2] of type Q4_0: ne[0] = 48 is not a multiple of the block size 32 of Q4_0");
  REQUIRE_PARSE_ERROR(one("w", {1}, 2, 0, 64), "ne[0] = 1 is not a multiple of the block size 32");
  REQUIRE_PARSE_ERROR(one("w", {uint64_t(1) << 31, uint64_t(1) << 31}, 0, 0, 32),
                      "tensor 'w': ne [2147483648, 2147483648] of type F32: its byte size overflows");
  REQUIRE_PARSE_ERROR(one("w", {uint64_t(1) << 32, uint64_t(1) << 32, 4}, 0, 0, 32), "its element count overflows int64");
  REQUIRE_PARSE_ERROR(one("w", {uint64_t(1) << 32, uint64_t(1) << 32, 0}, 0, 0, 32), "its element count overflows int64");
  REQUIRE_PARSE_ERROR(one("w", {8}, 0, 16, 64), "tensor 'w': data offset 16 is not a multiple of the alignment 32");
  REQUIRE_PARSE_ERROR(one("w", {8}, 0, 32, 64),
                      "tensor 'w': data offset 32 leaves a gap: ggml requires the tensors dense and in order, so it must be 0");
  REQUIRE_PARSE_ERROR(one("w", {16}, 0, 0, 63), "tensor 'w': data [0, 64) (from the data section at 64) lies past the end of the file (127 bytes)");
  REQUIRE_PARSE_ERROR(one(std::string(64, 'n'), {1}, 0, 0, 4), "the name is 64 bytes, ggml allows at most 63");
  REQUIRE(parse_error(one(std::string(63, 'n'), {1}, 0, 0, 4)) == "no error");
  // a tensor info past the end of the file, and a data section that starts past it
  REQUIRE_PARSE_ERROR(Raw().head(1, 0).str("w").u32(1).u64(4).u32(0).b, "tensor 'w': truncated: data offset at offset 49 needs 8 bytes");
  REQUIRE_PARSE_ERROR(Raw().head(0, 1).u64(0).b, "a header of 1 keys and 0 tensors cannot fit in the 8 bytes left");
  REQUIRE_PARSE_ERROR(Raw().head(1, 0).tensor("w", {}, 0, 0).b, "the data section (at offset 49 rounded up to the alignment 32) starts past the end");
  auto two = [](const std::string& a, uint64_t oa, const std::string& b, uint64_t ob, size_t data) {
    return Raw().head(2, 0).tensor(a, {16}, 0, oa).tensor(b, {16}, 0, ob).data(data).b;
  };
  REQUIRE(parse_error(two("a", 0, "b", 64, 128)) == "no error");
  REQUIRE_PARSE_ERROR(two("a", 0, "b", 32, 128), "tensor 'b': data at [32, 96) overlaps tensor 'a' at [0, 64)");
  REQUIRE_PARSE_ERROR(two("a", 0, "b", 0, 128), "tensor 'b': data at [0, 64) overlaps tensor 'a' at [0, 64)");
  REQUIRE_PARSE_ERROR(two("a", 64, "b", 0, 128), "tensor 'a': data offset 64 leaves a gap");
  REQUIRE_PARSE_ERROR(two("a", 0, "a", 64, 128), "tensor 'a': duplicate tensor name");
  REQUIRE_PARSE_ERROR(two("a", 0, "b", 64, 127),
                      "tensor 'b': data [64, 128) (from the data section at 96) lies past the end of the file (223 bytes)");
  REQUIRE_PARSE_ERROR(two("a", 0, "b", UINT64_MAX - 31, 128), "tensor 'b': data offset 18446744073709551584 leaves a gap");
}

TEST_CASE("gguf: SmolLM2-135M-Instruct.Q4_1.gguf reads as python's gguf reads it", "[gguf]") {
  TG_REQUIRE_SMOLLM2(path);
  auto f = GGUFFile::open(*path);
  REQUIRE((f.version() == 3 && f.file_size() == 98362432 && f.alignment() == 32 && f.data_offset() == 1785664));
  REQUIRE(f.metadata().size() == 33);
  REQUIRE(f.get_string("general.architecture") == "llama");
  REQUIRE(f.get_int("llama.block_count") == 30);
  REQUIRE(f.get_int("llama.context_length") == 8192);
  REQUIRE(f.get_int("llama.embedding_length") == 576);
  REQUIRE(f.get_int("llama.feed_forward_length") == 1536);
  REQUIRE(f.get_int("llama.attention.head_count") == 9);
  REQUIRE(f.get_int("llama.attention.head_count_kv") == 3);
  REQUIRE(f.get_int("llama.rope.dimension_count") == 64);
  REQUIRE(f.get_int("llama.vocab_size") == 49152);
  REQUIRE(f.get_float("llama.rope.freq_base") == 100000.0);
  REQUIRE(f.get_float("llama.attention.layer_norm_rms_epsilon") == double(1e-5f));
  REQUIRE(f.at("llama.rope.freq_base").type == GGUFType::FLOAT32);
  REQUIRE(f.get_string("tokenizer.ggml.model") == "gpt2");
  REQUIRE(f.get_string("tokenizer.ggml.pre") == "smollm");
  REQUIRE((!f.get_bool("tokenizer.ggml.add_bos_token") && !f.get_bool("tokenizer.ggml.add_space_prefix")));
  REQUIRE((f.get_int("tokenizer.ggml.bos_token_id") == 1 && f.get_int("tokenizer.ggml.eos_token_id") == 2));
  REQUIRE((f.get_int("tokenizer.ggml.unknown_token_id") == 0 && f.get_int("tokenizer.ggml.padding_token_id") == 2));
  REQUIRE(f.get_array_strings("general.languages") == std::vector<std::string>{"en"});
  const auto& tokens = f.get_array_strings("tokenizer.ggml.tokens");
  REQUIRE((tokens.size() == 49152 && tokens[0] == "<|endoftext|>" && tokens[2] == "<|im_end|>" && tokens.back() == "ectable"));
  const auto& merges = f.get_array_strings("tokenizer.ggml.merges");
  REQUIRE((merges.size() == 48900 && merges[0] == "\xc4\xa0 t" && merges[2] == "i n"));
  auto types = f.get_array_ints("tokenizer.ggml.token_type");
  REQUIRE((types.size() == 49152 && std::count(types.begin(), types.end(), 1) == 49135 && std::count(types.begin(), types.end(), 3) == 17));
  REQUIRE(f.get_string("tokenizer.chat_template").rfind("{% for message in messages %}", 0) == 0);

  REQUIRE(f.tensors().size() == 272);
  std::map<GGMLType, int> by_type;
  for (auto& t : f.tensors()) by_type[t.type]++;
  REQUIRE(by_type == std::map<GGMLType, int>{{GGMLType::Q4_1, 210}, {GGMLType::Q8_0, 1}, {GGMLType::F32, 61}});
  const GGUFTensor* emb = f.find_tensor("token_embd.weight");
  REQUIRE((emb && emb->type == GGMLType::Q8_0 && emb->ne == std::vector<int64_t>{576, 49152} && emb->shape() == std::vector<int64_t>{49152, 576}));
  REQUIRE((emb->offset == 1785664 && emb->nbytes == 30081024 && crc32(f.data(*emb)) == 1942243198u));
  const GGUFTensor* down = f.find_tensor("blk.0.ffn_down.weight");
  REQUIRE((down->type == GGMLType::Q4_1 && down->ne == std::vector<int64_t>{1536, 576} &&
           down->offset == 31868992 && crc32(f.data(*down)) == 1770886920u));
  const GGUFTensor* norm = f.find_tensor("output_norm.weight");
  REQUIRE((norm->type == GGMLType::F32 && norm->offset == 98360128 && norm->nbytes == 2304 && crc32(f.data(*norm)) == 3330350700u));
  // every tensor: "name type ne offset nbytes crc32\n" lines, the CRC-32 of them all as python computed it
  std::string listing;
  for (auto& t : f.tensors()) {
    std::string ne;
    for (auto x : t.ne) ne += (ne.empty() ? "" : ",") + std::to_string(x);
    listing += t.name + " " + to_string(t.type) + " " + ne + " " + std::to_string(t.offset) + " " + std::to_string(t.nbytes) + " " +
               std::to_string(crc32(f.data(t))) + "\n";
  }
  REQUIRE(listing.size() == 16448);
  REQUIRE(crc32({reinterpret_cast<const uint8_t*>(listing.data()), listing.size()}) == 1863644625u);
  // our writer re-emits the file byte for byte (the metadata in file order, each tensor padded to 32)
  std::vector<GGUFTensorData> ts;
  for (auto& t : f.tensors()) ts.push_back({t.name, t.ne, t.type, f.data(t)});
  Bytes again = gguf_write_bytes(f.metadata(), ts, f.version());
  REQUIRE((again.size() == f.file_size() && std::equal(again.begin(), again.end(), f.bytes().begin())));
}
