// dtype promotion at run time: tinygrad's lattice as a literal table (written out from tinygrad's
// dtype.py promo_lattice, with weakint/weakfloat/fp8 collapsed since this library has none of them),
// checked against least_upper_dtype and against what every Tensor op produces; then weak C++ scalars.
// test_dtype_static.cpp checks the same table at compile time.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include "promotion_table.hpp"

using tinygrad::DType;
using tinygrad::Tensor;

namespace {
using namespace promo;

Tensor ones_of(DType dt, tinygrad::Shape s = {3}) { return Tensor::ones(std::move(s), dt); }
}  // namespace

TEST_CASE("dtype: least_upper_dtype is tinygrad's lattice", "[dtype]") {
  for (int i = 0; i < 13; i++)
    for (int j = 0; j < 13; j++) {
      INFO(tinygrad::to_string(kAll[i]) << " + " << tinygrad::to_string(kAll[j]) << " -> want " << tinygrad::to_string(kPromo[i][j]));
      CHECK(tinygrad::least_upper_dtype(kAll[i], kAll[j]) == kPromo[i][j]);
    }
  // the rows the library's users hit most, spelled out
  CHECK(tinygrad::least_upper_dtype(I8, U8) == I16);
  CHECK(tinygrad::least_upper_dtype(F16, BF16) == F32);
  CHECK(tinygrad::least_upper_dtype(I32, F16) == F16);
  CHECK(tinygrad::least_upper_dtype(B, I8) == I8);
  CHECK(tinygrad::least_upper_dtype(U64, I64) == F16);
  CHECK(tinygrad::least_upper_dtype(I32, U32) == I64);
  CHECK(tinygrad::least_upper_dtype(U32, U64) == U64);
  CHECK(tinygrad::least_upper_dtype(I64, F32) == F32);
}

TEST_CASE("dtype: every binary Tensor op follows the promotion table", "[dtype]") {
  for (int i = 0; i < 13; i++)
    for (int j = 0; j < 13; j++) {
      DType a = kAll[i], b = kAll[j], want = kPromo[i][j];
      INFO(tinygrad::to_string(a) << " op " << tinygrad::to_string(b) << " -> want " << tinygrad::to_string(want));
      Tensor x = ones_of(a, {2, 3}), y = ones_of(b, {3});
      CHECK((x + y).dtype() == want);
      CHECK((x * y).dtype() == want);
      CHECK(x.maximum(y).dtype() == want);
      CHECK(Tensor::ones({3}, B).where(x, y).dtype() == want);
      CHECK((x < y).dtype() == B);
      CHECK((x == y).dtype() == B);
      if (want != B) CHECK((x - y).dtype() == want);
      CHECK((x / y).dtype() == (tinygrad::is_float(want) ? want : F32));
      CHECK(x.reshape({2, 3}).matmul(y.reshape({3, 1})).dtype() == want);
    }
}

TEST_CASE("dtype: promoted ops compute in the promoted dtype", "[dtype]") {
  // int8 + uint8 -> int16: neither side wraps
  Tensor a = Tensor(std::vector<int8_t>{127, -128}) + Tensor(std::vector<uint8_t>{255, 255});
  CHECK(a.dtype() == I16);
  CHECK(a.to_vector<int16_t>() == std::vector<int16_t>{382, 127});
  // int32 * uint32 -> int64
  Tensor b = Tensor(std::vector<int32_t>{-2, 70000}) * Tensor(std::vector<uint32_t>{4000000000u, 70000});
  CHECK(b.dtype() == I64);
  CHECK(b.to_vector<int64_t>() == std::vector<int64_t>{-8000000000LL, 4900000000LL});
  // float16 + bfloat16 -> float32, exact for these values
  Tensor c = Tensor(std::vector<float>{1.5f, 1024.f}).cast(F16) + Tensor(std::vector<float>{0.25f, 3.f}).cast(BF16);
  CHECK(c.dtype() == F32);
  CHECK(c.to_vector<float>() == std::vector<float>{1.75f, 1027.f});
  // int32 + float16 -> float16
  Tensor d = Tensor(std::vector<int32_t>{3, -7}) + Tensor(std::vector<float>{0.5f, 0.25f}).cast(F16);
  CHECK(d.dtype() == F16);
  CHECK(d.to_vector<float>() == std::vector<float>{3.5f, -6.75f});
  // bool + int8 -> int8
  Tensor e = Tensor(std::vector<bool>{true, false}) + Tensor(std::vector<int8_t>{127, -5});
  CHECK(e.dtype() == I8);
  CHECK(e.to_vector<int8_t>() == std::vector<int8_t>{-128, -5});
  // uint8 < int8 compares in int16
  CHECK((Tensor(std::vector<uint8_t>{200}) < Tensor(std::vector<int8_t>{-1})).to_vector<bool>() == std::vector<bool>{false});
  // float32 + float64 -> float64 keeps double precision
  Tensor f = Tensor(std::vector<float>{1.f}) + Tensor(std::vector<double>{1e-12});
  CHECK(f.dtype() == F64);
  CHECK(f.item<double>() == 1.0 + 1e-12);
}

TEST_CASE("dtype: weak C++ scalars take the tensor's dtype unless their kind is wider", "[dtype][weak]") {
  SECTION("int8 tensor + 1 stays int8") {
    Tensor t = Tensor(std::vector<int8_t>{1, 127}) + 1;
    CHECK(t.dtype() == I8);
    CHECK(t.to_vector<int8_t>() == std::vector<int8_t>{2, -128});
    CHECK((1 + Tensor(std::vector<int8_t>{1})).dtype() == I8);
    CHECK((Tensor(std::vector<int8_t>{1}) * 3).dtype() == I8);
    CHECK((Tensor(std::vector<uint8_t>{1}) - 1).dtype() == U8);
    CHECK((Tensor(std::vector<int16_t>{1}) + 1).dtype() == I16);
    CHECK((Tensor(std::vector<int64_t>{1}) + 1).dtype() == I64);
    CHECK((Tensor(std::vector<uint64_t>{1}) + 1).dtype() == U64);
  }
  SECTION("float16 * 2.5 stays float16") {
    Tensor h = Tensor(std::vector<float>{1.5f, -2.f}).cast(F16) * 2.5;
    CHECK(h.dtype() == F16);
    CHECK(h.to_vector<float>() == std::vector<float>{3.75f, -5.f});
    CHECK((Tensor::ones({2}, BF16) * 2.5).dtype() == BF16);
    CHECK((Tensor::ones({2}, F64) + 0.1).dtype() == F64);
    CHECK((Tensor::ones({2}, F64) + 0.1).to_vector<double>() == std::vector<double>{1.1, 1.1});
    CHECK((Tensor::ones({2}, F16) + 1).dtype() == F16);
  }
  SECTION("int tensor * 2.5 becomes float32") {
    Tensor t = Tensor(std::vector<int32_t>{2, -3}) * 2.5;
    CHECK(t.dtype() == F32);
    CHECK(t.to_vector<float>() == std::vector<float>{5.f, -7.5f});
    CHECK((Tensor(std::vector<int8_t>{1}) + 0.5).dtype() == F32);
    CHECK((Tensor(std::vector<uint64_t>{1}) + 0.5).dtype() == F32);
    CHECK((Tensor(std::vector<int32_t>{1}) * 2.0).dtype() == I32);  // an integral double is an int literal
  }
  SECTION("bool + 1 becomes int32, bool * 2.5 float32") {
    Tensor t = Tensor(std::vector<bool>{true, false}) + 1;
    CHECK(t.dtype() == I32);
    CHECK(t.to_vector<int>() == std::vector<int>{2, 1});
    Tensor f = Tensor(std::vector<bool>{true, false}) * 2.5;
    CHECK(f.dtype() == F32);
    CHECK(f.to_vector<float>() == std::vector<float>{2.5f, 0.f});
  }
  SECTION("comparisons with scalars give bool; maximum/where with scalars keep the dtype") {
    CHECK((Tensor(std::vector<int8_t>{1}) < 1).dtype() == B);
    CHECK((Tensor(std::vector<int8_t>{1}) == 1.5).dtype() == B);
    CHECK(Tensor(std::vector<int8_t>{1}).maximum(3).dtype() == I8);
    CHECK(Tensor::ones({2}, F16).maximum(0.5).dtype() == F16);
    CHECK(Tensor(std::vector<bool>{true}).where(Tensor::ones({1}, F16), 2.0).dtype() == F16);
    CHECK(Tensor(std::vector<int8_t>{1}).relu().dtype() == I8);
    CHECK(Tensor::ones({2}, BF16).relu().dtype() == BF16);
  }
  SECTION("weak_result directly") {
    CHECK(tinygrad::weak_result(I8, false, false) == I8);
    CHECK(tinygrad::weak_result(I8, true, false) == F32);
    CHECK(tinygrad::weak_result(F16, true, false) == F16);
    CHECK(tinygrad::weak_result(B, false, false) == I32);
    CHECK(tinygrad::weak_result(B, false, true) == B);
    CHECK(tinygrad::weak_result(B, true, false) == F32);
  }
}

TEST_CASE("dtype: metadata and defaults", "[dtype]") {
  CHECK(tinygrad::itemsize(B) == 1);
  CHECK(tinygrad::itemsize(F16) == 2);
  CHECK(tinygrad::itemsize(BF16) == 2);
  CHECK(tinygrad::itemsize(U32) == 4);
  CHECK(tinygrad::itemsize(F64) == 8);
  int nf = 0, ni = 0, nu = 0;
  for (DType d : kAll) { nf += tinygrad::is_float(d); ni += tinygrad::is_int(d); nu += tinygrad::is_unsigned(d); }
  CHECK(nf == 4);
  CHECK(ni == 8);
  CHECK(nu == 4);
  CHECK_FALSE(tinygrad::is_int(B));
  CHECK(tinygrad::is_bool(B));
  CHECK(tinygrad::to_string(BF16) == "dtypes.bfloat16");
  CHECK(tinygrad::to_string(U8) == "dtypes.uint8");
  CHECK(tinygrad::dtypes::default_float == F32);
  CHECK(tinygrad::dtypes::default_int == I32);
  CHECK(Tensor(std::vector<int>{1}).dtype() == I32);
  CHECK(Tensor(std::vector<float>{1}).dtype() == F32);
  CHECK(Tensor::arange(3).dtype() == I32);
  CHECK(Tensor::arange(0.5, 3).dtype() == F32);
  CHECK(Tensor::zeros({2}).dtype() == F32);
  CHECK(Tensor::rand({2}).dtype() == F32);
}
