// Errors a person can read: each bad input throws the right tinygrad::Error subclass, its message
// names the op and the shapes involved, and the library keeps working afterwards. Then the CPU
// device's failure modes: no C compiler, a corrupt disk-cache entry, a kernel that fails to compile.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <sys/stat.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <random>

using Catch::Matchers::Contains;
using tinygrad::DType;
using tinygrad::Shape;
using tinygrad::Slice;
using tinygrad::Tensor;

namespace {
// run f, expect exactly an E (another exception type escapes and fails the test); return what()
template <class E, class F>
std::string thrown(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  FAIL_CHECK("no exception was thrown");
  return {};
}

// after an error the library still computes: a fresh graph realizes to the right numbers
void still_works() {
  Tensor a(std::vector<float>{1, 2, 3, 4}, {2, 2});
  CHECK(((a * 2 + 1).sum(0)).to_vector<float>() == std::vector<float>{10, 14});
  CHECK(a.matmul(a).to_vector<float>() == std::vector<float>{7, 10, 15, 22});
}

Tensor f32(const Shape& s) {
  std::vector<float> v(size_t(tinygrad::detail::prod(s)));
  for (size_t i = 0; i < v.size(); i++) v[i] = float(i);
  return Tensor(v, s);
}

// set an environment variable for one scope, restoring the old value (or its absence) after
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(std::string n, const std::string& v) : name(std::move(n)) {
    if (const char* o = std::getenv(name.c_str())) old = o;
    ::setenv(name.c_str(), v.c_str(), 1);
  }
  ~EnvVar() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

// a constant no other kernel (in this process or in an earlier run's disk cache) has used
int unique_constant() {
  static std::mt19937 g(std::random_device{}() ^ uint32_t(::getpid()));
  return int(std::uniform_int_distribution<int>(1000000, 99999999)(g));
}

// the source of the loaded program whose code contains `needle`
std::string loaded_source_with(const std::string& needle) {
  for (auto& ck : tinygrad::detail::loaded_programs())
    if (ck->spec.src.find(needle) != std::string::npos) return ck->spec.src;
  return {};
}
}  // namespace

// ============================================================================================
// shape, index and dtype errors
// ============================================================================================

TEST_CASE("errors: broadcast mismatch names the op and both shapes", "[errors]") {
  Tensor a = f32({2, 3}), b = f32({4});
  auto m = thrown<tinygrad::ShapeError>([&] { (void)(a + b); });
  CHECK_THAT(m, Contains("add") && Contains("(2, 3)") && Contains("(4,)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)(a * f32({3, 2})); });
  CHECK_THAT(m, Contains("mul") && Contains("(2, 3)") && Contains("(3, 2)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)(a - f32({2, 2})); });
  CHECK_THAT(m, Contains("sub") && Contains("(2, 3)") && Contains("(2, 2)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.maximum(f32({5, 1, 2})); });
  CHECK_THAT(m, Contains("maximum") && Contains("(2, 3)") && Contains("(5, 1, 2)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)Tensor::ones({2, 3}, DType::Bool).where(f32({3}), f32({4})); });
  CHECK_THAT(m, Contains("where") && Contains("(3,)") && Contains("(4,)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)(a / f32({3, 3})); });
  CHECK_THAT(m, Contains("div") && Contains("(2, 3)") && Contains("(3, 3)"));
  still_works();
}

TEST_CASE("errors: matmul mismatch names both shapes", "[errors]") {
  auto m = thrown<tinygrad::ShapeError>([&] { (void)f32({2, 3}).matmul(f32({4, 5})); });
  CHECK_THAT(m, Contains("matmul") && Contains("(2, 3)") && Contains("(4, 5)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)f32({7}).matmul(f32({6})); });
  CHECK_THAT(m, Contains("matmul") && Contains("(7,)") && Contains("(6,)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)f32({2, 3, 4}).matmul(f32({2, 5, 6})); });
  CHECK_THAT(m, Contains("matmul") && Contains("(2, 3, 4)") && Contains("(2, 5, 6)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)f32({}).matmul(f32({3})); });
  CHECK_THAT(m, Contains("matmul") && Contains("()") && Contains("(3,)"));
  // batch dims that do not broadcast
  m = thrown<tinygrad::ShapeError>([&] { (void)f32({2, 3, 4}).matmul(f32({3, 4, 5})); });
  CHECK_THAT(m, Contains("(2, 3"));
  still_works();
}

TEST_CASE("errors: reshape, expand, pad and creation sizes", "[errors]") {
  Tensor a = f32({2, 3});
  auto m = thrown<tinygrad::ShapeError>([&] { (void)a.reshape({4, 2}); });
  CHECK_THAT(m, Contains("reshape") && Contains("(2, 3)") && Contains("(4, 2)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.reshape({-1, 4}); });
  CHECK_THAT(m, Contains("reshape") && Contains("(2, 3)") && Contains("(-1, 4)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.reshape({-1, -1}); });
  CHECK_THAT(m, Contains("reshape") && Contains("-1"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.reshape({-2, -3}); });
  CHECK_THAT(m, Contains("reshape"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.expand({4, 3}); });
  CHECK_THAT(m, Contains("expand") && Contains("(2, 3)") && Contains("(4, 3)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.expand({3}); });
  CHECK_THAT(m, Contains("expand") && Contains("(2, 3)") && Contains("(3,)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.pad({{0, 0}, {-2, -2}}); });
  CHECK_THAT(m, Contains("pad") && Contains("(2, 3)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.pad({{1, 1}}); });
  CHECK_THAT(m, Contains("pad") && Contains("(2, 3)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.permute({1, 0, 2}); });
  CHECK_THAT(m, Contains("permute") && Contains("(2, 3)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)a.permute({1, 1}); });
  CHECK_THAT(m, Contains("permute") && Contains("repeated"));
  m = thrown<tinygrad::ShapeError>([&] { (void)Tensor(std::vector<float>{1, 2, 3}, {2, 2}); });
  CHECK_THAT(m, Contains("3 values") && Contains("(2, 2)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)Tensor::full({2, -3}, 1); });
  CHECK_THAT(m, Contains("full") && Contains("(2, -3)"));
  still_works();
}

TEST_CASE("errors: conv2d shape mismatches", "[errors]") {
  Tensor x = f32({1, 3, 5, 5});
  auto m = thrown<tinygrad::ShapeError>([&] { (void)x.conv2d(f32({2, 4, 3, 3})); });
  CHECK_THAT(m, Contains("conv2d") && Contains("(1, 3, 5, 5)") && Contains("(2, 4, 3, 3)") && Contains("channels"));
  m = thrown<tinygrad::ShapeError>([&] { (void)x.conv2d(f32({2, 3, 3})); });
  CHECK_THAT(m, Contains("conv2d") && Contains("(1, 3, 5, 5)") && Contains("(2, 3, 3)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)f32({1, 4, 5, 5}).conv2d(f32({3, 2, 3, 3}), {.groups = 2}); });
  CHECK_THAT(m, Contains("conv2d") && Contains("groups"));
  m = thrown<tinygrad::ShapeError>([&] { (void)x.conv2d(f32({2, 3, 7, 7})); });
  CHECK_THAT(m, Contains("conv2d") && Contains("(7, 7)") && Contains("(1, 3, 5, 5)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)x.conv2d(f32({2, 3, 3, 3}), std::nullopt, {1, 1, 1}); });
  CHECK_THAT(m, Contains("conv2d") && Contains("stride"));
  still_works();
}

TEST_CASE("errors: out-of-range axes are IndexErrors naming the op", "[errors]") {
  Tensor a = f32({2, 3});
  auto m = thrown<tinygrad::IndexError>([&] { (void)a.sum(2); });
  CHECK_THAT(m, Contains("sum") && Contains("axis 2") && Contains("rank 2"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.sum(-3); });
  CHECK_THAT(m, Contains("sum") && Contains("axis -3"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.max({0, 5}); });
  CHECK_THAT(m, Contains("max") && Contains("axis 5"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.mean(4); });
  CHECK_THAT(m, Contains("mean") && Contains("axis 4"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.permute({0, 2}); });
  CHECK_THAT(m, Contains("permute") && Contains("axis 2"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.transpose(0, 2); });
  CHECK_THAT(m, Contains("transpose") && Contains("axis 2"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.flip(3); });
  CHECK_THAT(m, Contains("flip") && Contains("axis 3"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.flip(-3); });
  CHECK_THAT(m, Contains("flip"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.shape(2); });
  CHECK_THAT(m, Contains("shape") && Contains("axis 2"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.softmax(2); });
  CHECK_THAT(m, Contains("axis 2"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.squeeze(2); });
  CHECK_THAT(m, Contains("squeeze"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.unsqueeze(4); });
  CHECK_THAT(m, Contains("unsqueeze"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.flatten(0, 2); });
  CHECK_THAT(m, Contains("flatten"));
  still_works();
}

TEST_CASE("errors: slice and shrink out of bounds", "[errors]") {
  Tensor a = f32({3, 4});
  auto m = thrown<tinygrad::IndexError>([&] { (void)a[3]; });
  CHECK_THAT(m, Contains("slice") && Contains("index 3") && Contains("size 3"));
  m = thrown<tinygrad::IndexError>([&] { (void)a[-4]; });
  CHECK_THAT(m, Contains("slice") && Contains("index -4"));
  m = thrown<tinygrad::IndexError>([&] { (void)a[{Slice{}, 4}]; });
  CHECK_THAT(m, Contains("slice") && Contains("index 4") && Contains("dim 1") && Contains("size 4"));
  m = thrown<tinygrad::IndexError>([&] { (void)a[{0, 0, 0}]; });
  CHECK_THAT(m, Contains("slice") && Contains("too many") && Contains("(3, 4)"));
  m = thrown<tinygrad::IndexError>([&] { (void)a[{Slice{0, 2, 0}}]; });
  CHECK_THAT(m, Contains("slice") && Contains("step"));
  m = thrown<tinygrad::IndexError>([&] { (void)a[{tinygrad::Ellipsis{}, tinygrad::Ellipsis{}}]; });
  CHECK_THAT(m, Contains("ellipsis"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.shrink({{1, 5}, {0, 4}}); });
  CHECK_THAT(m, Contains("shrink") && Contains("[1, 5)") && Contains("(3, 4)"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.shrink({{0, 3}, {-1, 2}}); });
  CHECK_THAT(m, Contains("shrink") && Contains("[-1, 2)"));
  m = thrown<tinygrad::IndexError>([&] { (void)a.shrink({{2, 1}, {0, 4}}); });
  CHECK_THAT(m, Contains("shrink"));
  auto sm = thrown<tinygrad::ShapeError>([&] { (void)a.shrink({{0, 3}}); });
  CHECK_THAT(sm, Contains("shrink") && Contains("(3, 4)"));
  // out-of-range slice *bounds* clamp like Python instead of throwing
  CHECK(a[{Slice{-100, 100}}].shape() == Shape{3, 4});
  still_works();
}

TEST_CASE("errors: an index value out of range is an IndexError naming the op, the index and the size", "[errors]") {
  using tinygrad::IndexError;
  using tinygrad::nn::embedding;
  // a MiniLM-sized table: 30522 rows; ids made from host data (a tokenizer's) are checked when the op is built, ids on
  // a GPU at the next sync (each check here reads the result back)
  Tensor w = Tensor::arange(30522 * 2).reshape({30522, 2}).cast(DType::Float32);
  auto ids = [](std::vector<int64_t> v) { return Tensor(v).reshape({1, int64_t(v.size())}); };
  auto emb = [&](const Tensor& i) { return thrown<IndexError>([&] { (void)embedding(i, w).sum().item<float>(); }); };
  auto msg = [](const std::string& i) {
    return "tinygrad::nn::embedding: index " + i + " is out of bounds for size 30522 (valid indices are 0..30521)";
  };
  CHECK(emb(ids({101, 30522, 102})) == msg("30522"));
  CHECK(emb(ids({-1})) == msg("-1"));
  CHECK(emb(ids({INT32_MAX})) == msg("2147483647"));
  CHECK(emb(Tensor(std::vector<int32_t>{5, INT32_MIN})) == msg("-2147483648"));
  CHECK(emb(Tensor(std::vector<uint64_t>{UINT64_MAX})) == msg("18446744073709551615"));
  CHECK(emb(Tensor::full({3}, 40000, DType::Int32)) == msg("40000"));
  // a big buffer: scanned once (its min and max are kept), still an error the second time; the views of it too
  std::vector<int32_t> many(100000, 7);
  many[77777] = 30522;
  Tensor big(many);
  for (int k = 0; k < 2; k++) CHECK(emb(big) == msg("30522"));
  CHECK(emb(big.reshape({1000, 100}).permute({1, 0}).cast(DType::Int64)) == msg("30522"));
  // in range: the right rows, and everything usable after the errors
  CHECK(embedding(ids({0, 30521, 7}), w).to_vector<float>() == std::vector<float>{0, 1, 61042, 61043, 14, 15});
  CHECK(embedding(big.shrink({{0, 2}}), w).to_vector<float>() == std::vector<float>{14, 15, 14, 15});
  // the other ops that take indices: gather, scatter, scatter_reduce, getitem (negatives count from the end), one_hot
  Tensor a = f32({3, 4}), i2 = Tensor(std::vector<int32_t>{0, 4}).reshape({1, 2});
  auto i32 = [](std::vector<int32_t> v) { return Tensor(v); };
  CHECK(thrown<IndexError>([&] { (void)a.gather(1, i2).sum().item<float>(); }) ==
        "tinygrad::gather: index 4 is out of bounds for dim 1 with size 4 (valid indices are 0..3)");
  CHECK(thrown<IndexError>([&] { (void)a.scatter(0, i2, 1.0).sum().item<float>(); }) ==
        "tinygrad::scatter: index 4 is out of bounds for dim 0 with size 3 (valid indices are 0..2)");
  CHECK_THAT(thrown<IndexError>([&] { (void)a.scatter_reduce(0, i2, f32({1, 2}), "sum").sum().item<float>(); }),
             Contains("tinygrad::scatter_reduce: index 4"));
  CHECK(thrown<IndexError>([&] { (void)a[i32({-4})].sum().item<float>(); }) ==
        "tinygrad::getitem: index -4 is out of bounds for dim 0 with size 3 (valid indices are -3..2)");
  CHECK_THAT(thrown<IndexError>([&] { (void)a[{Slice{}, i32({1, 4})}].sum().item<float>(); }),
             Contains("getitem: index 4") && Contains("dim 1 with size 4"));
  CHECK(thrown<IndexError>([&] { (void)i32({0, 3}).one_hot(3).sum().item<int>(); }) ==
        "tinygrad::one_hot: index 3 is out of bounds for size 3 (valid indices are 0..2)");
  CHECK_THAT(thrown<IndexError>([&] { (void)i32({-1, 2}).one_hot().sum().item<int>(); }), Contains("one_hot: index -1"));
  CHECK(a[i32({-3, 2})].shape() == Shape{2, 4});
  CHECK(i32({2, 0}).one_hot(3).to_vector<int>() == std::vector<int>{0, 0, 1, 1, 0, 0});
  // a narrow dtype that cannot leave the range is not even scanned
  CHECK(embedding(Tensor(std::vector<uint8_t>{255}), w).to_vector<float>() == std::vector<float>{510, 511});
  // indices computed lazily are checked on the device: the error comes at the next sync (to_vector, item), once
  Tensor lazy = embedding(ids({30521}) + 1, w);
  CHECK(thrown<IndexError>([&] { (void)lazy.to_vector<float>(); }) == msg("30522"));
  CHECK(lazy.to_vector<float>() == std::vector<float>{0, 0});  // the clamp: a zero row; the error was raised once
  Tensor scores = Tensor(std::vector<float>{0, 9, 1, 3, 2, 8}).reshape({2, 3});
  CHECK(thrown<IndexError>([&] { (void)a.gather(0, (scores.argmax(1) * 2).reshape({2, 1})).sum().item<float>(); }) ==
        "tinygrad::gather: index 4 is out of bounds for dim 0 with size 3 (valid indices are 0..2)");
  CHECK(embedding(ids({30520}) + 1, w).to_vector<float>() == std::vector<float>{61042, 61043});
  CHECK(a.gather(0, scores.argmax(1).reshape({2, 1})).to_vector<float>() == std::vector<float>{4, 8});
  // and indices that live on a device other than the host's (OpenCL here, a GPU elsewhere)
  std::string dev = tinygrad::host_device() == "CL" ? "CPU" : "CL";
  bool other = true;
  try { tinygrad::runtime(dev); } catch (const tinygrad::DeviceError&) { other = false; }
  if (other) {
    Tensor wd = w.to(dev), bad = Tensor(std::vector<int32_t>{3, -1}, {}, dev);
    CHECK(thrown<IndexError>([&] { (void)embedding(bad, wd).sum().item<float>(); }) == msg("-1"));
    CHECK(embedding(Tensor(std::vector<int32_t>{3}, {}, dev), wd).to_vector<float>() == std::vector<float>{6, 7});
  }
  still_works();
}

TEST_CASE("errors: item() on a non-scalar, dtype errors", "[errors]") {
  auto m = thrown<tinygrad::ShapeError>([&] { (void)f32({2, 2}).item<float>(); });
  CHECK_THAT(m, Contains("item") && Contains("(2, 2)"));
  m = thrown<tinygrad::ShapeError>([&] { (void)f32({0}).item<float>(); });
  CHECK_THAT(m, Contains("item") && Contains("(0,)"));
  CHECK(f32({1, 1, 1}).item<float>() == 0.f);  // one element of any rank is fine

  auto d = thrown<tinygrad::DTypeError>([&] { (void)f32({2}).idiv(f32({2})); });
  CHECK_THAT(d, Contains("idiv") && Contains("float32"));
  d = thrown<tinygrad::DTypeError>([&] { (void)(f32({2}) & f32({2})); });
  CHECK_THAT(d, Contains("bitwise_and"));
  d = thrown<tinygrad::DTypeError>([&] { (void)f32({2}).bitcast(DType::Int16); });
  CHECK_THAT(d, Contains("bitcast") && Contains("float32") && Contains("int16"));
  d = thrown<tinygrad::DTypeError>([&] { (void)(Tensor::ones({2}, DType::Bool) - Tensor::ones({2}, DType::Bool)); });
  CHECK_THAT(d, Contains("sub") && Contains("bool"));
  still_works();
}

TEST_CASE("errors: every error is a tinygrad::Error and a std::runtime_error", "[errors]") {
  CHECK_THROWS_AS(f32({2}) + f32({3}), tinygrad::Error);
  CHECK_THROWS_AS(f32({2}).sum(1), tinygrad::Error);
  CHECK_THROWS_AS(f32({2}).idiv(f32({2})), std::runtime_error);
  auto m = thrown<tinygrad::DeviceError>([&] { (void)Tensor(std::vector<float>{1, 2}, {2}, "NOPE"); });
  CHECK_THAT(m, Contains("NOPE"));
  m = thrown<tinygrad::DeviceError>([&] { Tensor::full({2}, 1, std::nullopt, "NOPE").realize(); });
  CHECK_THAT(m, Contains("NOPE"));
  still_works();
}

// ============================================================================================
// the CPU device's failure modes
// ============================================================================================

TEST_CASE("errors: no C compiler is a DeviceError naming CC, and fixing CC recovers", "[errors][device][cpu]") {
  if (tinygrad::default_device() != "CPU") return;  // the C compiler's failure modes
  int k = unique_constant();
  Tensor x(std::vector<int>{1, 2, 3});
  Tensor y = x * k + 7;  // a new kernel: the compiler must run
  {
    EnvVar cc("CC", "/nonexistent/cc");
    auto m = thrown<tinygrad::DeviceError>([&] { y.realize(); });
    CHECK_THAT(m, Contains("CC") && Contains("/nonexistent/cc"));
    CHECK_FALSE(y.is_realized());
  }
  // CC restored: the same tensor realizes
  CHECK(y.to_vector<int>() == std::vector<int>{k + 7, 2 * k + 7, 3 * k + 7});
  still_works();
}

TEST_CASE("errors: a corrupt disk-cache entry is recompiled, not loaded", "[errors][device][cpu]") {
  if (tinygrad::default_device() != "CPU") return;  // the C compiler's failure modes
  namespace fs = std::filesystem;
  int k = unique_constant();
  auto build = [&] { return Tensor(std::vector<int>{4, 5, 6}) * k + 11; };
  Tensor y = build();
  y.realize();
  std::string src = loaded_source_with(std::to_string(k));
  REQUIRE_FALSE(src.empty());

  // the entry: <cache_dir>/cpu/<hash(compiler key + source)>.ref naming the shared object and its hash
  auto dir = tinygrad::detail::cache_dir() / "cpu";
  if (const char* cd = std::getenv("CACHEDIR")) CHECK(fs::equivalent(fs::path(cd) / "cpu", dir));
  std::string key = tinygrad::runtime("CPU").compiler->cache_key();
  fs::path ref = dir / (tinygrad::detail::hex64(tinygrad::detail::hash_bytes(key + src)) + ".ref");
  REQUIRE(fs::exists(ref));
  std::string so_name;
  std::getline(std::ifstream(ref), so_name);
  fs::path so = dir / so_name;
  REQUIRE(fs::exists(so));
  auto good_size = fs::file_size(so);
  REQUIRE(good_size > 16);

  // unload first (a truncated file must never be mapped), then corrupt it
  tinygrad::clear_program_cache();
  fs::resize_file(so, 5);
  REQUIRE(fs::file_size(so) == 5);

  int64_t compiled = tinygrad::run_stats().kernels_compiled, built = tinygrad::run_stats().schedules_built;
  Tensor y2 = build();
  CHECK(y2.to_vector<int>() == std::vector<int>{4 * k + 11, 5 * k + 11, 6 * k + 11});
  CHECK(tinygrad::run_stats().schedules_built == built + 1);  // the schedule cache was cleared too
  CHECK(tinygrad::run_stats().kernels_compiled == compiled + 1);
  // the entry was rewritten whole
  std::string so_name2;
  std::getline(std::ifstream(ref), so_name2);
  CHECK(fs::file_size(dir / so_name2) == good_size);

  SECTION("a .ref naming a missing shared object also recompiles") {
    tinygrad::clear_program_cache();
    std::ofstream(ref, std::ios::trunc) << "b_missing.so\n0123456789abcdef\n";
    CHECK(build().to_vector<int>() == std::vector<int>{4 * k + 11, 5 * k + 11, 6 * k + 11});
  }
  SECTION("a garbage .ref also recompiles") {
    tinygrad::clear_program_cache();
    std::ofstream(ref, std::ios::trunc) << "x";
    CHECK(build().to_vector<int>() == std::vector<int>{4 * k + 11, 5 * k + 11, 6 * k + 11});
  }
  still_works();
}

TEST_CASE("errors: a kernel that fails to compile is a CompileError with the log and the source", "[errors][device][cpu]") {
  if (tinygrad::default_device() != "CPU") return;  // the C compiler's failure modes
  namespace fs = std::filesystem;
  fs::path tmp = fs::temp_directory_path() / ("tinygrad_fake_cc_" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  fs::path script = tmp / "cc";
  std::ofstream(script) << "#!/bin/sh\necho boom\nexit 1\n";
  fs::permissions(script, fs::perms::owner_all);

  int k = unique_constant();
  Tensor y = Tensor(std::vector<int>{1, 2}) * k - 5;
  {
    EnvVar cc("CC", script.string());
    try {
      y.realize();
      FAIL_CHECK("no CompileError");
    } catch (const tinygrad::CompileError& e) {
      std::string what = e.what();
      CHECK_THAT(what, Contains("boom"));
      CHECK_THAT(e.log, Contains("boom"));
      CHECK_THAT(e.source, Contains(std::to_string(k)));  // the rendered kernel, with its constant
      CHECK_THAT(e.source, Contains("void "));
      CHECK_THAT(what, Contains(std::to_string(k)));      // what() carries the source too
      CHECK_THAT(what, Contains(script.string()));        // and names the compiler
    }
    CHECK_FALSE(y.is_realized());
  }
  fs::remove_all(tmp);
  CHECK(y.to_vector<int>() == std::vector<int>{k - 5, 2 * k - 5});
  still_works();
}
