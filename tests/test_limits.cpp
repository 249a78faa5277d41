// Limits and hostile input: shapes whose sizes overflow int64, strict safetensors and IDX parsing,
// empty tensors read back. Each case here crashed, read out of bounds or was silently accepted before.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <tinygrad.hpp>

using namespace tinygrad;
namespace fs = std::filesystem;

namespace {
constexpr int64_t P32 = int64_t(1) << 32, P40 = int64_t(1) << 40, P62 = int64_t(1) << 62;
// 7 * kInv7 == 1 and 5 * kFour5 == 4 (mod 2^64): shapes whose wrapped int64 product equals a small element count
constexpr int64_t kInv7 = 7905747460161236407, kFour5 = 3689348814741910324;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
template <class F>
std::string error_of(F&& f) {
  try { f(); } catch (const Error& e) { return e.what(); }
  return "(no error)";
}

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) : path(fs::temp_directory_path() / ("tg_test_limits_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { std::error_code ec; fs::remove_all(path, ec); }
  std::string operator/(const std::string& f) const { return (path / f).string(); }
};
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  REQUIRE(f.good());
}
// a .safetensors image: 8-byte little-endian header length, header, data
std::string safetensors(const std::string& header, const std::string& data) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[size_t(i)] = char((uint64_t(header.size()) >> (8 * i)) & 0xff);
  return s + header + data;
}
// an IDX image of unsigned bytes: magic, big-endian dims, `ndata` bytes
std::string idx(const std::vector<uint32_t>& dims, size_t ndata) {
  std::string o{'\0', '\0', '\x08', char(dims.size())};
  for (uint32_t d : dims) for (int s = 24; s >= 0; s -= 8) o += char((d >> s) & 0xff);
  return o + std::string(ndata, '\x07');
}
}  // namespace

// ---------------------------------------------------------------------------------------------
// item 6: every product of dims is checked where a shape enters

TEST_CASE("limits: creating a tensor whose element count overflows int64 is a ShapeError naming the op and the shape", "[limits]") {
  auto expect = [](auto&& f, const std::string& op, const std::string& shape) {
    std::string e = error_of(f);
    INFO(e);
    CHECK(contains(e, "tinygrad::" + op));
    CHECK(contains(e, shape));
  };
  // 2^64 elements used to report numel() == 0 and read out of bounds
  expect([] { Tensor::ones({P32, P32}); }, "full", "(4294967296, 4294967296)");
  CHECK_THROWS_AS(Tensor::ones({P32, P32}), ShapeError);
  expect([] { Tensor::zeros({P32, P32}, DType::Int8); }, "full", "(4294967296, 4294967296)");
  expect([] { Tensor::full({3, P62}, 1.0); }, "full", "(3, 4611686018427387904)");
  expect([] { Tensor::empty({P32, P32}); }, "empty", "(4294967296, 4294967296)");
  expect([] { Tensor::rand({P32, P32}); }, "rand", "(4294967296, 4294967296)");
  expect([] { Tensor::randn({P32, P32}); }, "randn", "(4294967296, 4294967296)");
  expect([] { Tensor::uniform({P32, P32}); }, "rand", "(4294967296, 4294967296)");
  expect([] { Tensor::kaiming_uniform({P32, P32}); }, "kaiming_uniform", "(4294967296, 4294967296)");
  // a zero dim does not hide the overflow of the others (their strides still overflow)
  expect([] { Tensor::zeros({P40, P40, 0}); }, "full", "(1099511627776, 1099511627776, 0)");
  expect([] { Tensor::zeros({0, P40, P40}); }, "full", "(0, 1099511627776, 1099511627776)");
  // a product that wraps to exactly the number of values given: accepted before, then read out of bounds
  expect([] { Tensor(std::vector<float>{1.f}, {7, kInv7}); }, "Tensor", "(7, 7905747460161236407)");
  float one = 1;
  expect([&] { Tensor::from_data(&one, {7, kInv7}); }, "from_data", "(7, 7905747460161236407)");
  expect([&] { Tensor::from_bytes(&one, DType::Float32, {7, kInv7}); }, "from_bytes", "(7, 7905747460161236407)");
  expect([&] { Tensor::from_blob(&one, {7, kInv7}, DType::Float32); }, "from_blob", "(7, 7905747460161236407)");
  expect([] { Tensor::arange(0, 1e300); }, "arange", "1e+300");
  CHECK_THROWS_AS(Tensor::arange(0, std::nan("")), ShapeError);
  // static tensors: dyn extents enter through the same creation functions
  CHECK_THROWS_AS((static_tensor<float, dyn, P32>::zeros(P32)), ShapeError);
  // the largest valid shapes still build lazily, and negative dims keep their message
  CHECK(Tensor::ones({P32, P32 / 2 - 1}).numel() == P32 * (P32 / 2 - 1));
  CHECK(Tensor::zeros({P40, 0}).numel() == 0);
  expect([] { Tensor::zeros({2, -3}); }, "full", "negative dimension in (2, -3)");
  // the tensors made before an error still work
  CHECK(Tensor::ones({2, 2}).sum().item<float>() == 4);
}

TEST_CASE("limits: reshape, expand, pad, cat and repeat to an overflowing shape are ShapeErrors", "[limits]") {
  Tensor x = Tensor(std::vector<float>{1, 2, 3, 4});
  auto expect = [](auto&& f, const std::string& op) {
    std::string e = error_of(f);
    INFO(e);
    CHECK(contains(e, "tinygrad::" + op));
  };
  // reshape: wrapped products equal to the element count were accepted
  CHECK_THROWS_AS(x.reshape({5, kFour5}), ShapeError);
  expect([&] { x.reshape({5, kFour5}); }, "reshape");
  CHECK_THROWS_AS(Tensor(std::vector<float>{1}).reshape({7, kInv7}), ShapeError);
  CHECK_THROWS_AS(x.reshape({-1, P32, P32}), ShapeError);
  CHECK_THROWS_AS(Tensor::zeros({0}).reshape({P40, P40, 0}), ShapeError);
  CHECK(x.reshape({-1, 2}).shape() == Shape{2, 2});
  // expand to a huge dim used to segfault on read
  expect([&] { x.reshape({4, 1}).expand({4, P62}); }, "expand");
  expect([&] { x.reshape({4, 1, 1}).expand({-1, P32, P32}); }, "expand");
  expect([&] { (x.reshape({4, 1}) + Tensor::ones({1, P62})); }, "expand");
  CHECK(x.reshape({1, 4}).expand({P62 / 4, 4}).numel() == P62);
  // pad: the added sizes and the padded shape
  expect([&] { x.pad({{0, INT64_MAX}}); }, "pad");
  expect([&] { x.pad({{P62, P62}}); }, "pad");
  expect([&] { x.reshape({2, 2}).pad({{0, P32}, {0, P32}}); }, "pad");
  expect([&] { x.pad({{P62, P62}}, "constant", 1.0); }, "pad");
  // cat's total size, repeat and repeat_interleave
  Tensor big = Tensor::ones({1}).expand({P62});
  expect([&] { Tensor::cat({big, big, big}); }, "cat");
  expect([&] { x.repeat({P32, P32}); }, "repeat");
  expect([&] { x.repeat_interleave(P62); }, "repeat_interleave");
  // sizes given by the caller: their sums and products are checked too
  expect([&] { x.split({P62, P62, P62, P62}); }, "split");
  expect([&] { x.rearrange("(a b) -> a b", {{"a", P62}, {"b", 8}}); }, "rearrange");
  CHECK(x.chunk(INT64_MAX).size() == 4);
  CHECK(Tensor::arange(0, -1e300).numel() == 0);
  // x still works
  CHECK(x.sum().item<float>() == 10);
}

TEST_CASE("limits: buffers whose byte size overflows int64 are ShapeErrors, a failed realize leaves tensors usable", "[limits]") {
  // 2^62 float32 elements are 2^64 bytes: nbytes() wrapped to 0 and a 1-byte allocation was written past
  CHECK_THROWS_AS(Tensor::empty({P62}, DType::Float32), ShapeError);
  CHECK(contains(error_of([] { Buffer("CPU", DType::Float64, P62); }), "tinygrad::Buffer"));
  CHECK_THROWS_AS(Buffer("CPU", DType::Float32, -1), ShapeError);
  Tensor huge = Tensor::ones({P62});  // lazy: fine
  // NOTE: a ShapeError from its output buffer, or first a DeviceError where a GPU's launch grid cannot hold it
  CHECK_THROWS_AS(huge.contiguous().realize(), Error);
  Tensor y = Tensor(std::vector<float>{1, 2}) * 2;
  CHECK(y.to_vector<float>() == std::vector<float>{2, 4});
}

TEST_CASE("limits: slice steps and pool strides beyond a dim work, zero or negative strides are ShapeErrors", "[limits]") {
  Tensor x = Tensor::arange(10);
  // a step past the dim picks one element (it overflowed the stride math before)
  CHECK(x.slice({Slice{std::nullopt, std::nullopt, INT64_MAX}}).to_vector<int32_t>() == std::vector<int32_t>{0});
  CHECK(x.slice({Slice{std::nullopt, std::nullopt, INT64_MIN}}).to_vector<int32_t>() == std::vector<int32_t>{9});
  CHECK(x.slice({Slice{2, std::nullopt, P62}}).to_vector<int32_t>() == std::vector<int32_t>{2});
  Tensor m = Tensor::arange(16).reshape({1, 1, 4, 4}).cast(DType::Float32);
  CHECK(m.pool({2, 2}, {P62, P62}, {1, 1}).shape() == Shape{1, 1, 1, 1, 2, 2});
  CHECK(m.pool({2, 2}, {P62, P62}, {1, 1}).flatten().to_vector<float>() == std::vector<float>{0, 1, 4, 5});
  // a zero stride divided by zero (SIGFPE) in the window arithmetic
  Tensor w = Tensor::ones({1, 1, 2, 2});
  CHECK_THROWS_AS(m.conv2d(w, std::nullopt, 0), ShapeError);
  CHECK_THROWS_AS(m.conv2d(w, {.dilation = 0}), ShapeError);
  CHECK_THROWS_AS(m.pool({2, 2}, {1, -1}, {1, 1}), ShapeError);
  CHECK_THROWS_AS(m.pool({2, 2}, {1, 1}, {INT64_MAX, 1}), ShapeError);
  CHECK(m.conv2d(w).shape() == Shape{1, 1, 3, 3});
}

// ---------------------------------------------------------------------------------------------
// item 10: to_vector of empty tensors

TEST_CASE("limits: to_vector of empty tensors of every shape kind returns empty vectors", "[limits]") {
  // NOTE: an empty std::vector's data() may be nullptr, and memcpy to/from nullptr is undefined even for 0 bytes
  // (UBSan's nonnull check flags it); this test fails under -fsanitize=undefined without the guard
  for (Shape s : {Shape{0}, Shape{0, 3}, Shape{3, 0, 2}, Shape{1, 0}}) {
    INFO(to_string(s));
    CHECK(Tensor::zeros(s).to_vector<float>().empty());
    CHECK(Tensor::empty(s, DType::Int32).to_vector<int32_t>().empty());
    CHECK(Tensor::ones(s, DType::Bool).to_vector<bool>().empty());
    CHECK(Tensor::zeros(s, DType::Int64).to_vector<float>().empty());  // converting path
    CHECK((Tensor::rand(s) + 1).to_vector<float>().empty());            // a kernel's (empty) output
  }
  CHECK(Tensor(std::vector<float>{}).to_vector<float>().empty());
  CHECK(Tensor(std::vector<float>{1, 2, 3}).shrink({{1, 1}}).to_vector<float>().empty());
  CHECK(Tensor::arange(0).to_vector<int32_t>().empty());
  CHECK(Tensor::from_blob(nullptr, {0, 4}, DType::Float32).to_vector<float>().empty());
}

// ---------------------------------------------------------------------------------------------
// item 10: safetensors as strict as the reference implementation

TEST_CASE("limits: safetensors data_offsets must tile the data exactly, other malformed headers, names quoted briefly", "[limits]") {
  TempDir tmp("st");
  int count = 0;
  // loads from a file and from memory give the same error, naming the file (or <memory>)
  auto expect = [&](const std::string& bytes, const std::string& what) {
    std::string path = tmp / ("c" + std::to_string(count++) + ".safetensors");
    write_file(path, bytes);
    INFO("expecting '" << what << "'");
    std::string e = error_of([&] { nn::safe_load(path, "CPU"); });
    INFO(e);
    CHECK(contains(e, path));
    CHECK(contains(e, what));
    CHECK_THROWS_AS(nn::safe_load(path, "CPU"), nn::StateError);
    std::string m = error_of([&] { nn::safe_load_bytes(bytes, "CPU"); });
    CHECK(contains(m, "<memory>"));
    CHECK(contains(m, what));
  };
  auto t = [](const std::string& name, const char* dt, const std::string& shape, int64_t b, int64_t e) {
    return "\"" + name + "\":{\"dtype\":\"" + dt + "\",\"shape\":[" + shape + "],\"data_offsets\":[" + std::to_string(b) + "," +
        std::to_string(e) + "]}";
  };
  const std::string d16(16, '\x01');
  {  // well-formed: two tensors in either header order, zero-size tensors anywhere, a metadata entry
    std::string ok = safetensors("{" + t("b", "F32", "2", 8, 16) + "," + t("a", "F32", "2", 0, 8) + "," + t("z", "F32", "0", 8, 8) + "," +
                                 t("y", "I64", "0,3", 16, 16) + ",\"__metadata__\":{\"k\":\"v\"}}   ", d16);
    std::string path = tmp / "ok.safetensors";
    write_file(path, ok);
    auto d = nn::safe_load(path, "CPU");
    REQUIRE(d.size() == 4);
    CHECK(d.at("b").shape() == Shape{2});
    CHECK(d.at("y").shape() == Shape{0, 3});
    auto m = nn::safe_load_bytes(ok, "CPU");
    CHECK(m.at("a").to_vector<float>() == d.at("a").to_vector<float>());
    CHECK(nn::safe_load_bytes(safetensors("{}", ""), "CPU").empty());
  }
  // overlapping, gaps, trailing bytes, data not covered
  expect(safetensors("{" + t("a", "F32", "2", 0, 8) + "," + t("b", "F32", "2", 4, 12) + "}", std::string(12, '\0')), "overlaps");
  expect(safetensors("{" + t("a", "F32", "2", 0, 8) + "," + t("b", "F32", "2", 0, 8) + "}", std::string(8, '\0')), "overlaps");
  expect(safetensors("{" + t("a", "F32", "1", 0, 4) + "," + t("b", "F32", "1", 8, 12) + "}", std::string(12, '\0')), "belong to no tensor");
  expect(safetensors("{" + t("a", "F32", "1", 4, 8) + "}", std::string(8, '\0')), "belong to no tensor");
  expect(safetensors("{" + t("a", "F32", "1", 0, 4) + "}", std::string(8, '\0')), "4 trailing data bytes");
  expect(safetensors("{}", "x"), "1 trailing data bytes");
  // shapes whose element or byte count overflows, even with a zero dim
  expect(safetensors("{" + t("a", "F32", "1099511627776,1099511627776,0", 0, 0) + "}", ""), "needs more than 2^63 bytes");
  expect(safetensors("{" + t("a", "F64", "2305843009213693952", 0, 0) + "}", ""), "needs more than 2^63 bytes");
  // duplicate names and fields
  expect(safetensors("{" + t("a", "F32", "1", 0, 4) + "," + t("a", "F32", "1", 4, 8) + "}", std::string(8, '\0')), "'a' appears twice");
  expect(safetensors("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", std::string(4, '\0')),
         "'dtype' appears twice");
  // the header: a JSON object starting at its first byte, nothing after it but spaces, UTF-8
  expect(safetensors(" {}", ""), "must start with '{'");
  expect(safetensors("{}x", ""), "trailing characters");
  expect(safetensors("{}{}", ""), "trailing characters");
  expect(safetensors("[]", ""), "not a JSON object");
  expect(safetensors("{\"\xff\":{}}", ""), "not valid UTF-8");
  expect(safetensors("{\"\xc0\xaf\":{}}", ""), "not valid UTF-8");  // overlong '/'
  // a header length of 2^64 - 1, and one past the 100 MB limit (with a file that long: sparse)
  {
    std::string s(8, '\xff');
    expect(s + "{}", "exceeds the file size");
    std::string path = tmp / "huge_header.safetensors";
    uint64_t n = 100'000'001;
    std::string len(8, '\0');
    for (int i = 0; i < 8; i++) len[size_t(i)] = char((n >> (8 * i)) & 0xff);
    write_file(path, len);
    fs::resize_file(path, 8 + n);
    CHECK(contains(error_of([&] { nn::safe_load(path); }), "larger than the limit"));
  }
  // error messages quote at most ~100 bytes of a name
  std::string longname(5000, 'n');
  for (auto& bytes : {safetensors("{" + t(longname, "F32", "1", 0, 8) + "}", std::string(8, '\0')),
                      safetensors("{" + t("a", "F32", "1", 0, 4) + ",\"a\":3}", std::string(4, '\0')),
                      safetensors("{" + t("a", ("X" + longname).c_str(), "1", 0, 4) + "}", std::string(4, '\0')),
                      safetensors("{" + t(longname, "F32", "1", 0, 4) + "," + t(longname, "F32", "1", 4, 8) + "}", std::string(8, '\0'))}) {
    std::string e = error_of([&] { nn::safe_load_bytes(bytes); });
    INFO(e);
    CHECK(e.size() < 400);
  }
  CHECK(contains(error_of([&] { nn::safe_load_bytes(safetensors("{" + t(longname, "F32", "1", 0, 8) + "}", std::string(8, '\0'))); }),
                 "'" + std::string(100, 'n') + "...' (5000 bytes)"));
}

TEST_CASE("limits: safe_load of a directory or a special file names the path", "[limits]") {
  TempDir tmp("stdir");
  std::string e = error_of([&] { nn::safe_load(tmp.path.string()); });
  CHECK(contains(e, tmp.path.string()));
  CHECK(contains(e, "is a directory"));
  CHECK_THROWS_AS(nn::safe_load(tmp.path.string()), nn::StateError);
  CHECK_THROWS_AS(nn::safe_load_metadata(tmp.path.string()), nn::StateError);
  CHECK(contains(error_of([] { nn::safe_load("/dev/null"); }), "not a regular file"));
  CHECK(contains(error_of([&] { nn::safe_load(tmp / "missing"); }), "cannot open"));
}

// ---------------------------------------------------------------------------------------------
// item 10: IDX files

TEST_CASE("limits: IDX dims whose product overflows (with or without a zero dim), short and long files are DatasetErrors", "[limits]") {
  using nn::datasets::DatasetError;
  namespace dd = nn::datasets::detail;
  auto parse = [](const std::string& b, int nd) { return dd::parse_idx(reinterpret_cast<const uint8_t*>(b.data()), b.size(), nd, "img.idx"); };
  auto expect = [&](const std::string& b, int nd, const std::string& what) {
    std::string e = error_of([&] { parse(b, nd); });
    INFO(e);
    CHECK(contains(e, "img.idx"));
    CHECK(contains(e, what));
    CHECK_THROWS_AS(parse(b, nd), DatasetError);
  };
  // accepted before: 0 elements, but the other dims' product is 2^64 - 2^33 + 1
  expect(idx({0, 0xFFFFFFFFu, 0xFFFFFFFFu}, 0), 3, "overflows int64");
  expect(idx({0xFFFFFFFFu, 0xFFFFFFFFu, 0}, 0), 3, "overflows int64");
  expect(idx({0x80000000u, 0x80000000u, 4}, 0), 3, "more than 2^64");
  expect(idx({3, 2, 2}, 11), 3, "needs 12 data bytes, file has 11");
  expect(idx({3, 2, 2}, 13), 3, "needs 12 data bytes, file has 13");
  expect(idx({3, 2, 2}, 12).substr(0, 9), 3, "truncated inside the header");
  expect("", 1, "truncated");
  // zero dims are fine when the rest fits: an empty tensor
  CHECK(parse(idx({0, 28, 28}, 0), 3).shape() == Shape{0, 28, 28});
  CHECK(parse(idx({0, 28, 28}, 0), 3).to_vector<uint8_t>().empty());
  CHECK(parse(idx({2, 1}, 2), 2).to_vector<uint8_t>() == std::vector<uint8_t>{7, 7});
  // the file loader uses the same parser (zlib reads plain files through)
  TempDir tmp("idx");
  write_file(tmp / "z.idx", idx({0, 0xFFFFFFFFu, 0xFFFFFFFFu}, 0));
  CHECK(contains(error_of([&] { dd::read_idx(tmp / "z.idx", 3); }), tmp / "z.idx"));
  CHECK_THROWS_AS(dd::read_idx(tmp / "z.idx", 3), DatasetError);
  CHECK_THROWS_AS(dd::read_idx(tmp.path.string(), 3), DatasetError);  // a directory
}
