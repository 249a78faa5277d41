// Deep and wide graphs: every graph walk is iterative (a chain of any length builds, rewrites, schedules, realizes,
// backpropagates and is destroyed without growing the stack), and kernels are bounded in size and buffer count
// (kernel_limits()): a long chain is cut into pieces that share one program, a wide sum into kernels of few inputs.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

using namespace tinygrad;

namespace {
// the schedule realize would build for t (its buffers numbered in the order of a walk)
detail::ScheduleSpec schedule_of(const Tensor& t) {
  std::unordered_map<const UOp*, int> slots;
  for (auto& u : detail::toposort(t.uop(), [](const UOp* x) { return !detail::is_leaf(x); }))
    if (detail::is_leaf(u.get())) slots.emplace(u.get(), int(slots.size()));
  return detail::create_schedule({t.uop()}, slots, int(slots.size()));
}
// x + 1 + 1 + ... (n times): a chain n ops deep
Tensor chain(Tensor x, int n) {
  for (int i = 0; i < n; i++) x = x + 1.0;
  return x;
}
// restores kernel_limits() at scope exit
struct Limits {
  detail::KernelLimits saved = detail::kernel_limits();
  ~Limits() { detail::kernel_limits() = saved; }
};
}  // namespace

TEST_CASE("deep graphs: a 100,000-node UOp chain is walked, rewritten and destroyed without recursion", "[deep]") {
  const int n = 100000;
  auto x = make_uop(Ops::DEFINE_VAR, DType::Int32, {}, std::vector<int64_t>{0, 10});
  UOpRef y = x;
  for (int i = 0; i < n; i++) y = y + 1;
  CHECK(detail::toposort(y).size() == size_t(n) + 2);  // x, the constant 1, n adds
  // the symbolic rules fold the sum bottom-up, one level at a time
  CHECK(detail::simplify(y) == detail::simplify(x + n));
  auto z = make_uop(Ops::DEFINE_VAR, DType::Int32, {}, std::vector<int64_t>{0, 5});
  CHECK(detail::toposort(detail::substitute(y, {{x.get(), z}})).front() == z);
  y = nullptr;  // the old ~UOp released its sources recursively: a 100,000-node chain overflowed the stack
}

TEST_CASE("deep graphs: graph_rewrite reports rules that loop instead of recursing forever", "[deep]") {
  detail::PatternMatcher swap{
      {detail::UPat::op(Ops::ADD, {detail::UPat::var("a"), detail::UPat::var("b")}), [](const detail::Match& m) { return m["b"] + m["a"]; }}};
  auto x = make_uop(Ops::DEFINE_VAR, DType::Int32, {}, std::vector<int64_t>{0, 10});
  CHECK_THROWS_WITH(graph_rewrite(x + 1, swap), Catch::Contains("graph_rewrite") && Catch::Contains("ADD"));
}

TEST_CASE("deep graphs: a 100,000-op chain realizes exactly, backpropagates and is destroyed", "[deep]") {
  const int n = 100000;
  int64_t compiled = run_stats().kernels_compiled, run = run_stats().kernels_run;
  {
    Tensor x = Tensor(std::vector<float>{1, 2, 3, 4}).requires_grad_();
    Tensor y = chain(x, n);
    // the chain is cut into kernels of at most max_ops nodes; the pieces are alike (one program, launched many
    // times), the last one shorter: at most 2 new programs
    CHECK(y.to_vector<float>() == std::vector<float>{n + 1.f, n + 2.f, n + 3.f, n + 4.f});
    CHECK(run_stats().kernels_run - run > 100);
    CHECK(run_stats().kernels_compiled - compiled <= 2);
    // reading y kept nothing autograd needs from being rebuilt: a new chain over x differentiates to ones
    Tensor loss = chain(x, n).sum();
    CHECK(gradient(loss, {x})[0].to_vector<float>() == std::vector<float>{1, 1, 1, 1});
    loss.backward();
    CHECK(x.grad()->to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  }  // and every node is released (the old destructor recursed once per op)
}

TEST_CASE("deep graphs: a 1,000,000-op chain builds, realizes, backpropagates and is destroyed", "[deep][.slow]") {
  const int n = 1000000;
  double t0 = detail::now_s();
  {
    Tensor x = Tensor(std::vector<float>{1, 2, 3, 4}).requires_grad_();
    Tensor y = chain(x, n);
    CHECK(y.to_vector<float>() == std::vector<float>{n + 1.f, n + 2.f, n + 3.f, n + 4.f});
    CHECK(gradient(chain(x, n).sum(), {x})[0].to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  }
  WARN("1,000,000-op chain: build, realize, gradient, destroy in " << detail::now_s() - t0 << " s");
}

TEST_CASE("kernel limits: a long chain is cut into alike pieces, a short one stays one kernel", "[deep][schedule]") {
  Limits keep;
  detail::kernel_limits().max_ops = 60;
  Tensor x = Tensor(std::vector<float>{1, 2, 3, 4, 5, 6});
  // each `+ 1.0` fuses 3 nodes (the add, the constant's reshape and expand): 20 steps fit in one kernel
  CHECK(schedule_of(chain(x, 20)).kernels.size() == 1);
  auto sp = schedule_of(chain(x, 200));
  REQUIRE(sp.kernels.size() == 10);
  for (size_t i = 1; i + 1 < sp.kernels.size(); i++) CHECK(sp.kernels[i].ast == sp.kernels[0].ast);  // cut from the input up
  int64_t compiled = run_stats().kernels_compiled;
  CHECK(chain(x * 2, 200).to_vector<float>() == std::vector<float>{202, 204, 206, 208, 210, 212});
  CHECK(run_stats().kernels_compiled - compiled <= 3);  // the first piece reads x * 2, the last is shorter
}

TEST_CASE("kernel limits: a wide sum is split into kernels of at most max_buffers buffers, exactly", "[deep][schedule]") {
  Limits keep;
  detail::kernel_limits().max_buffers = 8;
  const int n = 40;
  std::vector<Tensor> ts;
  for (int i = 0; i < n; i++) ts.push_back(Tensor(std::vector<float>{float(i), 1, 2, 3}));
  Tensor s = Tensor::stack(ts).sum(0);
  auto sp = schedule_of(s);
  CHECK(sp.kernels.size() >= size_t(n / 7));
  for (auto& k : sp.kernels) CHECK(k.slots.size() <= 8);
  CHECK(s.to_vector<float>() == std::vector<float>{n * (n - 1) / 2.f, float(n), 2.f * n, 3.f * n});
  // int too: the cut keeps the dtype
  std::vector<Tensor> is;
  for (int i = 0; i < n; i++) is.push_back(Tensor(std::vector<int>{i, -i}));
  CHECK(Tensor::stack(is).sum().item<int>() == 0);
}
