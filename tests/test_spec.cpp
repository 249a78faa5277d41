// The IR specs (include/tinygrad/uop/spec.hpp): each stage's spec accepts what the pipeline makes of a broad set of
// programs (scheduled, optimized for C, CUDA and OpenCL, lowered, linearized: rendering only, no GPU needed), and
// rejects a hand-built malformed graph of each rule family with a SpecError naming the stage, the pass and the op.
// (The whole suite runs with the checks on: tests/main.cpp sets SPEC=1.)
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

using Catch::Matchers::Contains;
using tinygrad::DType;
using tinygrad::Ops;
using tinygrad::Stage;
using tinygrad::Tensor;
using tinygrad::UOpRef;
using tinygrad::make_uop;

namespace {
std::vector<tinygrad::detail::KernelAST> kernels_of(const Tensor& t) {
  std::unordered_map<const tinygrad::UOp*, int> slots;
  int n = 0;
  for (auto& u : tinygrad::detail::toposort(t.uop())) if (tinygrad::detail::is_leaf(u.get()) && !slots.count(u.get())) slots[u.get()] = n++;
  return tinygrad::detail::create_schedule({t.uop()}, slots, n).kernels;
}
// the checks on for a scope, whatever the environment says
struct SpecOn {
  bool was = tinygrad::flags().spec;
  SpecOn() { tinygrad::flags().spec = true; }
  ~SpecOn() { tinygrad::flags().spec = was; }
};

// kernel-level building blocks
const UOpRef g0 = make_uop(Ops::DEFINE_GLOBAL, DType::Float32, {}, int64_t(0)), g1 = make_uop(Ops::DEFINE_GLOBAL, DType::Float32, {}, int64_t(1));
UOpRef range(int64_t n, int64_t id, tinygrad::detail::AxisType t = tinygrad::detail::AxisType::LOOP) {
  return tinygrad::detail::make_range(n, id, t, DType::Int32);
}
UOpRef index(const UOpRef& buf, const UOpRef& i) { return make_uop(Ops::INDEX, buf->dtype, {buf, i}); }
UOpRef load(const UOpRef& buf, const UOpRef& i) { return make_uop(Ops::LOAD, buf->dtype, {index(buf, i)}); }
UOpRef store(const UOpRef& buf, const UOpRef& i, const UOpRef& v) { return make_uop(Ops::STORE, DType::Bool, {index(buf, i), v}); }
UOpRef sink(std::vector<UOpRef> s) { return make_uop(Ops::SINK, DType::Bool, std::move(s)); }
// a kernel AST storing value v (built from r) at r
UOpRef kernel_with(const UOpRef& r, const UOpRef& v) { return sink({store(g0, r, v)}); }

// the SpecError verify_graph throws for sink at stage s, its message matching every part
void rejects(const UOpRef& sink, Stage s, Ops op, std::vector<std::string> parts) {
  try {
    tinygrad::detail::verify_graph(sink, s, "test_pass");
    FAIL("accepted:\n" << tinygrad::print_graph(sink));
  } catch (const tinygrad::SpecError& e) {
    INFO(e.what());
    CHECK(e.stage == s);
    CHECK(e.op == op);
    CHECK(e.pass == "test_pass");
    CHECK_THAT(e.what(), Contains(std::string("stage '") + tinygrad::detail::stage_name(s) + "'") && Contains("after pass 'test_pass'") &&
                             Contains(std::string(tinygrad::op_name(op)) + ":") && Contains("> %"));
    for (auto& p : parts) CHECK_THAT(e.what(), Contains(p));
  }
}
void rejects_linear(const std::vector<UOpRef>& lin, Ops op, const std::string& part) {
  try {
    tinygrad::detail::verify_linear(lin, "test_pass");
    FAIL("accepted");
  } catch (const tinygrad::SpecError& e) {
    INFO(e.what());
    CHECK(e.stage == Stage::LINEAR);
    CHECK(e.op == op);
    CHECK_THAT(e.what(), Contains("stage 'linear'") && Contains(part));
  }
}
}  // namespace

TEST_CASE("spec: every stage accepts what the pipeline makes", "[spec]") {
  SpecOn on;
  auto E = [](tinygrad::Shape s, DType d = DType::Float32) { return Tensor::empty(s, d, "CPU"); };
  Tensor a = E({64, 64}), b = E({64, 64}), v = E({64}), img = E({2, 4, 16, 16}), w = E({8, 4, 3, 3}), big = E({4, 1024});
  Tensor h = E({128, 128}, DType::Float16), h2 = E({128, 128}, DType::Float16), i32 = E({64, 64}, DType::Int32), lng = E({1 << 16});
  std::vector<Tensor> cases{
      ((a + b) * a - 1).relu().exp() / (b + 2), a + v + v.reshape({64, 1}), (a * b).sum(1), a.sum(0), (a * b).sum(), big.max(1), (big > 0).any(1),
      a.softmax(-1), a.log_softmax(0), a.var(1), a.layernorm(), a.argmax(1), a.matmul(b), a.matmul(b.T()), h.matmul(h2),
      h.matmul(h2).cast(DType::Float32), (a.cast(DType::Float16) * 2).cast(DType::BFloat16), img.conv2d(w).relu(), img.max_pool2d(),
      img.avg_pool2d({3, 3}, 1, 1), a.pad({{1, 2}, {3, 0}}) * 2, a.flip({0}) + a, a.shrink({{1, 33}, {2, 62}}).exp(), v.cumsum(0),
      i32 / 3 + (i32 % 7) * (i32 < 5).cast(DType::Int32), a.cast(DType::Int64) / 3, (a < 0).where(a, INFINITY), lng.sum(),
      lng.shrink({{1, (1 << 16) - 3}}) * 2, a.sum(1) + a.max(1), (a - a.mean(1, true)).square().mean(1), Tensor::cat({a, b}, 1) + 1,
      E({0, 3}).sum(0)};  // a reduce over an empty dim: a loop of 0
  tinygrad::CRenderer c(8);
  tinygrad::CUDARenderer cuda(true, true);
  tinygrad::OpenCLRenderer cl(true);
  size_t n = 0;
  for (size_t i = 0; i < cases.size(); i++) {
    INFO("case " << i);
    auto ks = kernels_of(cases[i]);  // the tensor graph and each kernel AST are checked here
    for (auto& k : ks) {
      CHECK_NOTHROW(tinygrad::detail::verify_graph(k.ast, Stage::KERNEL, "schedule"));
      for (tinygrad::Renderer* r : std::initializer_list<tinygrad::Renderer*>{&c, &cuda, &cl}) {
        CHECK_NOTHROW(tinygrad::detail::to_program(k.ast, *r));  // every lowering pass and the linear program
        n++;
      }
    }
  }
  CHECK(n >= 3 * cases.size());
  // and the tensor graphs as the frontend builds them, gradients included
  Tensor x = Tensor::rand({8, 16}).requires_grad_(), y = (x.matmul(Tensor::rand({16, 4})).relu() * 2).sum();
  y.backward();
  CHECK_NOTHROW(tinygrad::detail::verify_graph(make_uop(Ops::SINK, DType::Bool, {x.grad()->uop(), y.uop()}), Stage::TENSOR, "frontend"));
}

TEST_CASE("spec: ops outside their stage, source counts, arg kinds", "[spec]") {
  auto r = range(16, 0);
  // a movement op after rangeify
  rejects(kernel_with(r, make_uop(Ops::RESHAPE, DType::Float32, {load(g1, r)}, std::vector<int64_t>{16})), Stage::KERNEL, Ops::RESHAPE,
          {"not legal in this stage"});
  // a kernel-level op in the tensor graph, lowered ones in the kernel AST
  rejects(sink({make_uop(Ops::RANGE, DType::Int32, {}, std::vector<int64_t>{4, 0, 0})}), Stage::TENSOR, Ops::RANGE, {"not legal"});
  rejects(kernel_with(r, make_uop(Ops::LANE, DType::Int32, {}, std::vector<int64_t>{4, 1})), Stage::KERNEL, Ops::LANE, {"not legal"});
  rejects(kernel_with(r, make_uop(Ops::LANE, DType::Int32, {}, std::vector<int64_t>{4, 1})), Stage::EXPANDED, Ops::LANE, {"not legal"});
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {index(g0, r)})}), Stage::KERNEL, Ops::STORE, {"1 sources, must be 2"});
  rejects(kernel_with(r, make_uop(Ops::GEP, DType::Float32, {load(g1, r)}, 1.5)), Stage::EXPANDED, Ops::GEP, {"the arg must be an int"});
  // vectors come with opts
  auto vec = make_uop(Ops::VECTORIZE, DType::Float32, {load(g1, r), load(g1, r)}, {}, 2);
  rejects(kernel_with(r, make_uop(Ops::GEP, DType::Float32, {vec}, int64_t(0))), Stage::KERNEL, Ops::VECTORIZE, {"not legal"});
  // SINK of a kernel holds STOREs
  rejects(sink({load(g1, r)}), Stage::KERNEL, Ops::SINK, {"src[0] must be STORE"});
}

TEST_CASE("spec: dtypes of constants and ALU ops", "[spec]") {
  auto r = range(16, 0);
  auto x = load(g1, r), xi = make_uop(Ops::CAST, DType::Int32, {x});
  rejects(kernel_with(r, make_uop(Ops::CONST, DType::Float32, {}, int64_t(1))), Stage::KERNEL, Ops::CONST, {"must be a double for float"});
  rejects(kernel_with(r, make_uop(Ops::CAST, DType::Float32, {make_uop(Ops::CONST, DType::Int8, {}, int64_t(300))})), Stage::KERNEL, Ops::CONST,
          {"300 is outside"});
  rejects(kernel_with(r, make_uop(Ops::ADD, DType::Float32, {x, make_uop(Ops::CAST, DType::Float16, {x})})), Stage::KERNEL, Ops::ADD,
          {"src[1] is float16"});
  rejects(kernel_with(r, make_uop(Ops::CMPLT, DType::Float32, {x, x})), Stage::KERNEL, Ops::CMPLT, {"a comparison gives bool"});
  rejects(kernel_with(r, make_uop(Ops::CAST, DType::Float32, {make_uop(Ops::CMPNE, DType::Bool, {x, xi})})), Stage::KERNEL, Ops::CMPNE,
          {"compares float32 with int32"});
  rejects(kernel_with(r, make_uop(Ops::WHERE, DType::Float32, {x, x, x})), Stage::KERNEL, Ops::WHERE, {"the condition must be bool"});
  rejects(kernel_with(r, make_uop(Ops::CAST, DType::Float32, {make_uop(Ops::EXP2, DType::Int32, {xi})})), Stage::KERNEL, Ops::EXP2, {"takes floats"});
  rejects(kernel_with(r, make_uop(Ops::AND, DType::Float32, {x, x})), Stage::KERNEL, Ops::AND, {"takes ints or bools"});
  // ALU sources of one width (after opts)
  auto v2 = make_uop(Ops::VECTORIZE, DType::Float32, {x, x}, {}, 2);
  rejects(kernel_with(r, make_uop(Ops::GEP, DType::Float32, {make_uop(Ops::ADD, DType::Float32, {v2, x}, {}, 2)}, int64_t(0))), Stage::EXPANDED,
          Ops::ADD, {"src[1] has 1 lanes"});
  rejects(kernel_with(r, make_uop(Ops::GEP, DType::Float32, {v2}, int64_t(2))), Stage::EXPANDED, Ops::GEP, {"lane 2 of 2"});
  rejects(kernel_with(r, make_uop(Ops::GEP, DType::Float32, {make_uop(Ops::VECTORIZE, DType::Float32, {x, x, x}, {}, 2)}, int64_t(0))),
          Stage::EXPANDED, Ops::VECTORIZE, {"3 sources for 2 lanes"});
}

TEST_CASE("spec: memory and loops in kernels", "[spec]") {
  auto r = range(16, 0), x = load(g1, r);
  // INDEX's buffer is a DEFINE_GLOBAL or DEFINE_LOCAL; its index an int; its gate a bool
  auto c1 = tinygrad::detail::const_uop(DType::Float32, 1);
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, DType::Float32, {c1, r}), x})}), Stage::KERNEL, Ops::INDEX,
          {"src[0] must be DEFINE_GLOBAL or DEFINE_LOCAL, is CONST"});
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, DType::Float32, {g0, c1}), x})}), Stage::KERNEL, Ops::INDEX,
          {"src[1] must be a scalar int or long index"});
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, DType::Float32, {g0, r, r}), x})}), Stage::KERNEL, Ops::INDEX,
          {"the gate, must be a scalar bool"});
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {make_uop(Ops::INDEX, DType::Float16, {g0, r}), x})}), Stage::KERNEL, Ops::INDEX,
          {"src[0] is float"});
  // STORE's sources and value
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {x, x})}), Stage::KERNEL, Ops::STORE, {"src[0] must be INDEX, is LOAD"});
  rejects(kernel_with(r, make_uop(Ops::CAST, DType::Int32, {x})), Stage::KERNEL, Ops::STORE, {"stores int32 to a float32 buffer"});
  rejects(sink({make_uop(Ops::STORE, DType::Bool, {index(g0, r), make_uop(Ops::LOAD, DType::Float32, {index(g1, r), index(g1, r)})})}), Stage::KERNEL,
          Ops::LOAD, {"one source"});
  // RANGE's arg; a kernel AST's ranges are LOOP or REDUCE
  rejects(kernel_with(r, make_uop(Ops::ADD, DType::Float32,
                                  {x, make_uop(Ops::CAST, DType::Float32, {make_uop(Ops::RANGE, DType::Int32, {}, std::vector<int64_t>{4, 1})})})),
          Stage::KERNEL, Ops::RANGE, {"[end >= 0, id >= 0, axis kind]"});
  auto rl = range(4, 0, tinygrad::detail::AxisType::LOCAL);
  rejects(kernel_with(rl, load(g1, rl)), Stage::KERNEL, Ops::RANGE, {"LOOP or REDUCE"});
  CHECK_NOTHROW(tinygrad::detail::verify_graph(kernel_with(rl, load(g1, rl)), Stage::OPTIMIZED, "opts"));
  // REDUCE: over ranges, of a reduce op, of its value's dtype
  auto rr = range(8, 1, tinygrad::detail::AxisType::REDUCE);
  auto sum = [&](std::vector<UOpRef> src, Ops op = Ops::ADD) {
    return make_uop(Ops::REDUCE, DType::Float32, std::move(src), std::vector<int64_t>{int64_t(op)});
  };
  CHECK_NOTHROW(tinygrad::detail::verify_graph(kernel_with(r, sum({load(g1, r * 8 + rr), rr})), Stage::KERNEL, "schedule"));
  rejects(kernel_with(r, sum({x, x})), Stage::KERNEL, Ops::REDUCE, {"src[1] must be RANGE, is LOAD"});
  rejects(kernel_with(r, sum({x, r})), Stage::KERNEL, Ops::REDUCE, {"not a REDUCE range"});
  rejects(kernel_with(r, sum({load(g1, r * 8 + rr), rr}, Ops::AND)), Stage::KERNEL, Ops::REDUCE, {"the reduce op"});
}

TEST_CASE("spec: tensor graph: movement ops, reduces, buffers", "[spec]") {
  auto x = Tensor::empty({4, 6}, DType::Float32, "CPU").uop();
  auto mv = [&](Ops op, std::vector<int64_t> a) { return sink({make_uop(op, DType::Float32, {x}, std::move(a))}); };
  CHECK_NOTHROW(tinygrad::detail::verify_graph(mv(Ops::PERMUTE, {1, 0}), Stage::TENSOR, "frontend"));
  rejects(mv(Ops::PERMUTE, {1, 1}), Stage::TENSOR, Ops::PERMUTE, {"is not a permutation"});
  rejects(mv(Ops::PERMUTE, {1, 0, 2}), Stage::TENSOR, Ops::PERMUTE, {"3 entries for a source of rank 2"});
  rejects(mv(Ops::RESHAPE, {5, 5}), Stage::TENSOR, Ops::RESHAPE, {"not as many elements"});
  rejects(mv(Ops::EXPAND, {8, 6}), Stage::TENSOR, Ops::EXPAND, {"expands (4, 6) to (8, 6)"});
  rejects(mv(Ops::SHRINK, {0, 5, 0, 6}), Stage::TENSOR, Ops::SHRINK, {"shrinks"});
  rejects(mv(Ops::PAD, {0, -1, 0, 0}), Stage::TENSOR, Ops::PAD, {"a negative pad"});
  rejects(mv(Ops::REDUCE_AXIS, {int64_t(Ops::AND), 0}), Stage::TENSOR, Ops::REDUCE_AXIS, {"ADD, MUL or MAX"});
  rejects(sink({make_uop(Ops::CONTIGUOUS, DType::Float16, {x})}), Stage::TENSOR, Ops::CONTIGUOUS, {"src[0] is float"});
  auto buf = std::make_shared<tinygrad::Buffer>("CPU", DType::Float16, 4);
  rejects(sink({make_uop(Ops::BUFFER, DType::Float32, {}, buf)}), Stage::TENSOR, Ops::BUFFER, {"its buffer holds float16"});
  // the scheduler gets no unrealized COPY (realize_copies runs them first)
  rejects(sink({make_uop(Ops::COPY, DType::Float32, {x, make_uop(Ops::DEVICE, DType::Bool, {}, std::string("CPU"))})}), Stage::TENSOR, Ops::COPY,
          {"not legal"});
}

TEST_CASE("spec: the linear program: loops nest, sources come first and in scope", "[spec]") {
  auto r = range(16, 0), r2 = range(4, 1);
  auto x = load(g1, r), st = store(g0, r, x);
  auto end = [](const UOpRef& rg) { return make_uop(Ops::END, DType::Bool, {rg}); };
  CHECK_NOTHROW(tinygrad::detail::verify_linear({g0, g1, r, index(g1, r), x, index(g0, r), st, end(r)}));
  rejects_linear({g0, g1, r, index(g1, r), x, index(g0, r), st}, Ops::RANGE, "a RANGE the program never closes");
  rejects_linear({g0, g1, r, r2, index(g1, r), x, index(g0, r), st, end(r), end(r2)}, Ops::END, "does not close the innermost open RANGE");
  rejects_linear({g0, g1, r, x, index(g1, r), index(g0, r), st, end(r)}, Ops::LOAD, "src[0] (INDEX) is not declared before it");
  // a value of a closed loop
  auto y = load(g1, r2);
  rejects_linear({g0, g1, r, r2, index(g1, r2), y, end(r2), index(g0, r), store(g0, r, y), end(r)}, Ops::STORE,
                 "src[1] (LOAD) is not declared before it in an enclosing scope");
  // an accumulator: declared, updated in the loop, read after it
  auto rr = range(4, 1, tinygrad::detail::AxisType::REDUCE);
  auto y2 = load(g1, r * 4 + rr), red = make_uop(Ops::REDUCE, DType::Float32, {y2, rr}, std::vector<int64_t>{int64_t(Ops::ADD)});
  auto dacc = make_uop(Ops::DEFINE_ACC, DType::Float32, {red}), upd = make_uop(Ops::ACC_UPDATE, DType::Float32, {red, y2});
  auto addr = r * 4 + rr;
  std::vector<UOpRef> body{rr, addr, index(g1, addr), y2, upd, end(rr), red, index(g0, r), store(g0, r, red), end(r)};
  std::vector<UOpRef> good{g0, g1, r, addr->src[0], dacc};
  good.insert(good.end(), body.begin(), body.end());
  CHECK_NOTHROW(tinygrad::detail::verify_linear(good));
  std::vector<UOpRef> no_acc{g0, g1, r, addr->src[0]};
  no_acc.insert(no_acc.end(), body.begin(), body.end());
  rejects_linear(no_acc, Ops::ACC_UPDATE, "its REDUCE's DEFINE_ACC is not declared");
  rejects_linear({g0, g0}, Ops::DEFINE_GLOBAL, "stands twice");
  rejects_linear({g0, sink({})}, Ops::SINK, "not legal in this stage");
}

TEST_CASE("spec: a malformed kernel fails at its stage through the pipeline, and off nothing is checked", "[spec]") {
  auto r = range(16, 0);
  auto bad = kernel_with(r, make_uop(Ops::WHERE, DType::Float32, {load(g1, r), load(g1, r), load(g1, r)}));
  tinygrad::CRenderer c(1);
  {
    SpecOn on;
    try {
      tinygrad::detail::to_program(bad, c);
      FAIL("to_program accepted a malformed kernel");
    } catch (const tinygrad::SpecError& e) {
      CHECK(e.stage == Stage::KERNEL);
      CHECK(e.pass == "schedule");
      CHECK_THAT(e.what(), Contains("WHERE: the condition must be bool"));
    }
  }
  bool was = tinygrad::flags().spec;
  int debug = tinygrad::flags().debug;
  tinygrad::flags().spec = false;
  tinygrad::flags().debug = 0;
  CHECK_FALSE(tinygrad::detail::spec_enabled());
  CHECK_NOTHROW(tinygrad::detail::to_program(bad, c));  // the renderer prints what it gets
  tinygrad::flags().debug = 3;
  CHECK(tinygrad::detail::spec_enabled());
  tinygrad::flags().spec = was;
  tinygrad::flags().debug = debug;
}

TEST_CASE("spec: every op has a row, and the table's stages", "[spec]") {
  using tinygrad::detail::spec::table;
  for (size_t i = 0; i < table.size(); i++) CHECK(table[i].op == Ops(i));
  // no movement op or REDUCE_AXIS below the tensor graph; no LANE after expansion; loops end only in the linear program
  for (Ops o : tinygrad::detail::ops_where(tinygrad::detail::is_movement)) CHECK(table[size_t(o)].stages == tinygrad::detail::spec::T);
  CHECK(table[size_t(Ops::REDUCE_AXIS)].stages == tinygrad::detail::spec::T);
  CHECK(table[size_t(Ops::LANE)].stages == tinygrad::detail::spec::O);
  CHECK(table[size_t(Ops::END)].stages == tinygrad::detail::spec::L);
  for (Ops o : tinygrad::detail::ops_where(tinygrad::detail::is_alu)) CHECK(table[size_t(o)].stages == tinygrad::detail::spec::ALL);
}
