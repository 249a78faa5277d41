// The op table (include/tinygrad/uop/ops.hpp) is the one place an op is defined; these tests walk it:
// - every ALU op folds constants to what a kernel computes on the default device (CPU; DEV=CL), for every dtype it is
//   defined on, edge values included (x / 0, MIN / -1, overflow, shifts past the width, NaN, inf);
// - every op that reaches a kernel has a render rule in C, CUDA and OpenCL (rendering only: no GPU needed);
// - every float-valued ALU op has a gradient rule, checked numerically (a rule may say no gradient flows: trunc);
//   the others (comparisons: bool valued; bit ops and int division: ints only) carry none.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

using tinygrad::DType;
using tinygrad::Ops;
using tinygrad::Tensor;
using tinygrad::UOpRef;

namespace {
const DType kFloats[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Float64};
const DType kInts[] = {DType::Bool, DType::Int8, DType::UInt8, DType::Int16, DType::UInt16, DType::Int32, DType::UInt32, DType::Int64, DType::UInt64};

size_t arity(Ops op) { return tinygrad::detail::is_unary(op) ? 1 : tinygrad::detail::is_binary(op) ? 2 : 3; }
bool defined_on(Ops op, DType dt) {
  return is_float(dt) ? tinygrad::detail::op_info(op).fold_f != nullptr : tinygrad::detail::op_info(op).fold_i != nullptr;
}
// the dtype of source i (WHERE's condition is a bool)
DType src_dtype(Ops op, DType dt, size_t i) { return op == Ops::WHERE && i == 0 ? DType::Bool : dt; }

// a value as the dtype holds it: ints wrapped (in an int64), floats rounded (in a double)
struct Value { int64_t i = 0; double f = 0; };
std::vector<Value> values_of(DType dt) {
  std::vector<Value> vs;
  if (is_float(dt)) {
    for (double f : {0.0, -0.0, 0.5, -1.5, 3.0, 100.25, 1e30, double(INFINITY), -double(INFINITY), double(NAN)}) {
      char b[8];
      tinygrad::detail::store_from_double(b, dt, 0, f);
      vs.push_back({0, tinygrad::detail::load_as_double(b, dt, 0)});
    }
    return vs;
  }
  int64_t lo = tinygrad::detail::int_min(dt), hi = tinygrad::detail::int_max(dt);
  std::set<int64_t> seen;
  for (int64_t v : {int64_t(0), int64_t(1), int64_t(-1), int64_t(2), int64_t(3), int64_t(-7), int64_t(7), int64_t(8), int64_t(31),
                    int64_t(32), int64_t(63), int64_t(64), int64_t(100), lo, hi, lo + 1})
    if (int64_t w = tinygrad::detail::wrap_int(dt, uint64_t(v)); seen.insert(w).second) vs.push_back({w, double(w)});
  return vs;
}
UOpRef const_of(DType dt, const Value& v) { return is_float(dt) ? tinygrad::detail::const_uop(dt, v.f) : tinygrad::detail::const_int(dt, v.i); }

// a realized buffer of dtype dt holding the values
Tensor buffer_of(DType dt, const std::vector<Value>& vs) {
  size_t sz = size_t(tinygrad::itemsize(dt));
  std::vector<char> bytes(vs.size() * sz);
  for (size_t k = 0; k < vs.size(); k++) {
    if (is_float(dt)) tinygrad::detail::store_from_double(bytes.data(), dt, k, vs[k].f);
    else std::memcpy(bytes.data() + k * sz, &vs[k].i, sz);  // little-endian: the low bytes
  }
  return Tensor::from_bytes(bytes.data(), dt, {int64_t(vs.size())}).realize();
}
// element k of a realized buffer, as the dtype holds it
Value read(const std::vector<char>& host, DType dt, size_t k) {
  if (is_float(dt)) return {0, tinygrad::detail::load_as_double(host.data(), dt, k)};
  uint64_t bits = 0;
  std::memcpy(&bits, host.data() + k * size_t(tinygrad::itemsize(dt)), size_t(tinygrad::itemsize(dt)));
  return {dt == DType::Bool ? int64_t(bits != 0) : tinygrad::detail::wrap_int(dt, bits), 0};
}
// equal where the dtype rounds (transcendental functions may differ by a few ulp between libm and the device)
bool same(DType dt, const Value& got, const Value& want) {
  if (!is_float(dt)) return got.i == want.i;
  if (std::isnan(got.f) || std::isnan(want.f)) return std::isnan(got.f) && std::isnan(want.f);
  if (got.f == want.f) return true;
  double tol = dt == DType::Float16 ? 0x1p-9 : dt == DType::BFloat16 ? 0x1p-6 : dt == DType::Float32 ? 0x1p-20 : 0x1p-48;
  return std::isfinite(got.f) && std::isfinite(want.f) && std::abs(got.f - want.f) <= tol * std::max(1.0, std::abs(want.f));
}

// every tuple of the dtype's values as the op's sources, one column per source, padded to a multiple of 32 elements
std::vector<std::vector<Value>> operand_columns(Ops op, DType dt) {
  size_t n = arity(op);
  std::vector<std::vector<Value>> vals(n), cols(n);
  for (size_t i = 0; i < n; i++)
    vals[i] = src_dtype(op, dt, i) == DType::Bool && dt != DType::Bool ? std::vector<Value>{{0, 0}, {1, 1}} : values_of(src_dtype(op, dt, i));
  size_t total = 1;
  for (auto& v : vals) total *= v.size();
  for (size_t k = 0; k < (total + 31) / 32 * 32; k++)
    for (size_t i = 0, r = k % total; i < n; r /= vals[i].size(), i++) cols[i].push_back(vals[i][r % vals[i].size()]);
  return cols;
}

template <class R>
struct Spy : R {  // a renderer that notes the ops it is asked to render
  using R::R;
  mutable std::set<Ops> seen;
  std::string render(const std::string& name, const std::vector<UOpRef>& lin) const override {
    for (auto& u : lin) seen.insert(u->op);
    return R::render(name, lin);
  }
};
std::vector<tinygrad::detail::KernelAST> kernels_of(const Tensor& t) {
  std::unordered_map<const tinygrad::UOp*, int> slots;
  int n = 0;
  for (auto& u : tinygrad::detail::toposort(t.uop())) if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
  return tinygrad::detail::create_schedule({t.uop()}, slots, n).kernels;
}
}  // namespace

TEST_CASE("op table: one row per op, groups read from it", "[op_table]") {
  std::set<std::string> names;
  for (size_t i = 0; i < size_t(Ops::COUNT_); i++) {
    Ops op = Ops(i);
    INFO(tinygrad::op_name(op));
    CHECK(names.insert(tinygrad::op_name(op)).second);
    CHECK(tinygrad::detail::is_alu(op) == (tinygrad::detail::op_info(op).fold_f || tinygrad::detail::op_info(op).fold_i));  // an ALU op folds
    if (tinygrad::detail::is_commutative(op)) CHECK(tinygrad::detail::is_binary(op));
  }
  CHECK(tinygrad::detail::ops_where(tinygrad::detail::is_alu).size() == 23);
  CHECK(tinygrad::detail::is_expensive(Ops::SIN));
  CHECK_FALSE(tinygrad::detail::is_expensive(Ops::ADD));
}

TEST_CASE("op table: every ALU op folds constants as the device computes them", "[op_table]") {
  for (Ops op : tinygrad::detail::ops_where(tinygrad::detail::is_alu)) {
    for (auto dts : {std::begin(kFloats), std::begin(kInts)}) {
      for (auto it = dts; it != (dts == std::begin(kFloats) ? std::end(kFloats) : std::end(kInts)); ++it) {
        DType dt = *it;
        if (!defined_on(op, dt)) continue;
        INFO(tinygrad::op_name(op) << " on " << tinygrad::to_string(dt));
        auto cols = operand_columns(op, dt);
        std::vector<UOpRef> srcs;
        for (size_t i = 0; i < cols.size(); i++) srcs.push_back(buffer_of(src_dtype(op, dt, i), cols[i]).uop());
        Tensor out(tinygrad::detail::alu(op, srcs), tinygrad::default_device());
        auto buf = out.buffer();
        std::vector<char> host(buf->nbytes());
        buf->copyout(host.data());
        for (size_t k = 0; k < cols[0].size(); k++) {
          std::vector<UOpRef> cs;
          for (size_t i = 0; i < cols.size(); i++) cs.push_back(const_of(src_dtype(op, dt, i), cols[i][k]));
          UOpRef folded = tinygrad::detail::simplify(tinygrad::detail::alu(op, cs));
          REQUIRE(folded->op == Ops::CONST);
          Value want = is_float(folded->dtype) ? Value{0, folded->const_value()} : Value{std::get<int64_t>(folded->arg), 0},
              got = read(host, out.dtype(), k);
          if (!same(out.dtype(), got, want)) {
            std::string in;
            for (auto& c : cs) in += tinygrad::detail::arg_str(c->arg) + " ";
            FAIL("sources " << in << "-> device " << (is_float(out.dtype()) ? std::to_string(got.f) : std::to_string(got.i)) << ", folded "
                            << (is_float(out.dtype()) ? std::to_string(want.f) : std::to_string(want.i)));
          }
        }
      }
    }
  }
}

TEST_CASE("op table: every op that reaches a kernel has a render rule in every language", "[op_table]") {
  Spy<tinygrad::detail::CRenderer> c(4);
  Spy<tinygrad::detail::CUDARenderer> cuda;
  Spy<tinygrad::detail::OpenCLRenderer> cl;
  std::vector<Tensor> ts;
  // each ALU op on each dtype it is defined on (64 elements: the C heuristic makes vectors), and CAST, BITCAST
  for (Ops op : tinygrad::detail::ops_where(tinygrad::detail::is_alu))
    for (DType dt : {DType::Float32, DType::Float16, DType::Float64, DType::Bool, DType::Int8, DType::Int32, DType::UInt32, DType::Int64}) {
      if (!defined_on(op, dt)) continue;
      std::vector<UOpRef> srcs;
      for (size_t i = 0; i < arity(op); i++) srcs.push_back(Tensor::empty({64}, src_dtype(op, dt, i)).uop());
      ts.push_back(Tensor(tinygrad::detail::alu(op, srcs), tinygrad::default_device()));
    }
  Tensor a = Tensor::empty({64, 64}), b = Tensor::empty({64, 64});
  ts.push_back(a.cast(DType::Int32) + a.bitcast(DType::Int32) + a.cast(DType::Bool).cast(DType::Int32));
  // the kernel level: reduces (accumulators), workgroup reduces on the GPU (local memory, barriers), gated loads
  for (Tensor t : std::initializer_list<Tensor>{(a * b).sum(1),
                   (a * b).sum(), a.max(0), a.matmul(b), a.pad({{1, 1}, {0, 0}}).exp2()}) ts.push_back(t);
  for (auto& t : ts)
    for (auto& k : kernels_of(t))
      for (const tinygrad::Renderer* r : std::initializer_list<const tinygrad::Renderer*>{&c, &cuda, &cl}) {
        INFO(r->device << ": " << tinygrad::print_graph(k.ast));
        CHECK_NOTHROW(tinygrad::detail::to_program(k.ast, *r));
      }
  std::set<Ops> seen;
  for (auto* s : {&c.seen, &cuda.seen, &cl.seen}) seen.insert(s->begin(), s->end());
  for (Ops op : {Ops::CAST, Ops::BITCAST, Ops::DEFINE_LOCAL, Ops::BARRIER, Ops::SPECIAL, Ops::DEFINE_ACC, Ops::VECTORIZE}) CHECK(seen.count(op));
  for (size_t i = 0; i < size_t(Ops::COUNT_); i++) {
    Ops op = Ops(i);
    INFO(tinygrad::op_name(op));
    if (tinygrad::detail::is_alu(op)) CHECK((c.seen.count(op) && cuda.seen.count(op) && cl.seen.count(op)));  // every ALU op was rendered
    if (!seen.count(op)) continue;
    CHECK((c.rules[i] || c.code_for_op[i]));
    CHECK((cuda.rules[i] || cuda.code_for_op[i]));
    CHECK((cl.rules[i] || cl.code_for_op[i]));
  }
}

TEST_CASE("op table: every float-valued ALU op has a gradient rule", "[op_table][gradient]") {
  const std::vector<float> x0{0.7f, 1.3f, 1.9f, 0.6f}, x1{1.1f, 0.8f, 2.0f, 1.6f}, x2{0.9f, 1.7f, 0.5f, 1.2f}, dir{1, -1, 1, 1};
  const std::vector<float>* base[] = {&x0, &x1, &x2};
  for (Ops op : tinygrad::detail::ops_where(tinygrad::detail::is_alu)) {
    INFO(tinygrad::op_name(op));
    if (!tinygrad::detail::op_info(op).fold_f || tinygrad::detail::is_comparison(op)) {  // not float valued: no rule
      std::vector<UOpRef> srcs(arity(op), Tensor::empty({4}, DType::Int32).uop());
      Tensor y(tinygrad::detail::alu(op, srcs), tinygrad::default_device());
      CHECK(tinygrad::detail::grad_rule(y.uop(), Tensor::ones({4}, DType::Int32), y.device()).empty());
      continue;
    }
    // y = op(xs), loss = sum(y); WHERE's condition is x0 < 1 (no gradient flows through it)
    auto f = [&](const std::vector<Tensor>& xs) {
      std::vector<UOpRef> srcs;
      for (size_t i = 0; i < xs.size(); i++) srcs.push_back(op == Ops::WHERE && i == 0 ? (xs[0] < 1.0).uop() : xs[i].uop());
      return Tensor(tinygrad::detail::alu(op, srcs), xs[0].device());
    };
    std::vector<Tensor> xs;
    for (size_t i = 0; i < arity(op); i++) xs.push_back(Tensor(*base[i]).requires_grad_());
    Tensor y = f(xs);
    REQUIRE_FALSE(tinygrad::detail::grad_rule(y.uop(), Tensor::ones({4}), y.device()).empty());
    auto gs = tinygrad::gradient(y.sum(), xs);
    // the directional derivative along dir, against central differences
    for (size_t i = 0; i < xs.size(); i++) {
      auto at = [&](float eps) {
        std::vector<Tensor> p;
        for (size_t j = 0; j < xs.size(); j++) {
          std::vector<float> v = *base[j];
          if (j == i) for (size_t k = 0; k < v.size(); k++) v[k] += eps * dir[k];
          p.push_back(Tensor(v));
        }
        return f(p).sum().item<double>();
      };
      double numeric = (at(1e-2f) - at(-1e-2f)) / 2e-2, analytic = (gs[i] * Tensor(dir)).sum().item<double>();
      INFO("source " << i);
      CHECK(analytic == Approx(numeric).epsilon(2e-2).margin(1e-3));
    }
  }
}
