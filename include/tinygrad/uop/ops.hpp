#pragma once
// UOp: the one IR. Immutable (op, dtype, src, arg), hash-consed: building the same node twice
// returns the same pointer, so equality is pointer equality and subgraphs are cache keys.
#include <memory>
#include "../dtype.hpp"
#include "../runtime/device.hpp"
#if TINYGRAD_WITH_INTERNALS
#include <atomic>
#include <cmath>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#endif

namespace tinygrad {

namespace detail {
// what an ALU op's constant fold reads: the sources as doubles (f: floats as the kernel holds them) and, when all are
// ints or bools, as the kernel holds them (u: their bits, s: signed); uns: unsigned or bool sources; bits: their width
struct FoldArgs { double f[3]; uint64_t u[3]; int64_t s[3]; bool uns; uint64_t bits; DType dt; };
}  // namespace detail

// THE op table: one row per op, the one place an op is defined. A row: name, family, flags, and for an ALU op how a
// constant folds, computing what the kernels compute (tests/test_op_table.cpp checks it on the devices): TG_FOLD_F on
// doubles x, y, z (the result is rounded to the dtype), TG_FOLD_I on ints a, b, c (s, uns, bits, dt as in FoldArgs;
// the result wraps to the dtype). Adding an ALU op: its row, its render rule (renderer/cstyle.hpp), its gradient rule
// (tensor/gradient.hpp). Defined results (the renderers guard the same cases): int x / 0 = 0, x % 0 = 0, MIN / -1 = MIN,
// MIN % -1 = 0; +, *, negation and << wrap; a shift by a count outside [0, bits) gives 0 (>> of a negative: -1).
#define TG_OPS(X)                                                                                                   \
  X(SINK) X(NOOP) X(CONST) X(BUFFER) X(DEVICE) X(DEFINE_VAR) X(BIND)                                                \
  X(EXP2, UNARY, EXPENSIVE, TG_FOLD_F(std::exp2(x)))                                                                \
  X(LOG2, UNARY, EXPENSIVE, TG_FOLD_F(std::log2(x)))                                                                \
  X(SIN, UNARY, EXPENSIVE, TG_FOLD_F(std::sin(x)))                                                                  \
  X(SQRT, UNARY, EXPENSIVE, TG_FOLD_F(std::sqrt(x)))                                                                \
  X(RECIPROCAL, UNARY, EXPENSIVE, TG_FOLD_F(1.0 / x))                                                               \
  X(NEG, UNARY, 0, TG_FOLD_F(-x), TG_FOLD_I(dt == DType::Bool ? !a : 0 - a))                                        \
  X(TRUNC, UNARY, 0, TG_FOLD_F(std::trunc(x)))                                                                      \
  X(ADD, BINARY, COMMUTATIVE, TG_FOLD_F(x + y), TG_FOLD_I(a + b))                                                   \
  X(MUL, BINARY, COMMUTATIVE, TG_FOLD_F(x * y), TG_FOLD_I(a * b))                                                   \
  X(IDIV, BINARY, 0, nullptr, TG_FOLD_I(b == 0 ? 0 : uns ? a / b : s[1] == -1 ? 0 - a : uint64_t(s[0] / s[1])))     \
  X(MOD, BINARY, 0, nullptr, TG_FOLD_I(b == 0 || (!uns && s[1] == -1) ? 0 : uns ? a % b : uint64_t(s[0] % s[1])))   \
  X(MAX, BINARY, COMMUTATIVE, TG_FOLD_F(x != x || x > y ? x : y),  /* NaN wins, as rendered */                      \
    TG_FOLD_I(uns ? std::max(a, b) : uint64_t(std::max(s[0], s[1]))))                                               \
  X(CMPLT, BINARY, COMPARISON, TG_FOLD_F(x < y), TG_FOLD_I(uns ? a < b : s[0] < s[1]))                              \
  X(CMPNE, BINARY, COMMUTATIVE | COMPARISON, TG_FOLD_F(x != y), TG_FOLD_I(a != b))                                  \
  X(CMPEQ, BINARY, COMMUTATIVE | COMPARISON, TG_FOLD_F(x == y), TG_FOLD_I(a == b))                                  \
  X(AND, BINARY, COMMUTATIVE, nullptr, TG_FOLD_I(a & b))                                                            \
  X(OR, BINARY, COMMUTATIVE, nullptr, TG_FOLD_I(a | b))                                                             \
  X(XOR, BINARY, COMMUTATIVE, nullptr, TG_FOLD_I(a ^ b))                                                            \
  X(SHL, BINARY, 0, nullptr, TG_FOLD_I(b < bits ? a << b : 0))                                                      \
  X(SHR, BINARY, 0, nullptr, TG_FOLD_I(b < bits ? (uns ? a >> b : uint64_t(s[0] >> b)) : !uns && s[0] < 0 ? ~uint64_t(0) : 0)) \
  X(FDIV, BINARY, 0, TG_FOLD_F(x / y))                                                                              \
  X(WHERE, TERNARY, 0, TG_FOLD_F(x != 0 ? y : z), TG_FOLD_I(a != 0 ? b : c))                                        \
  X(MULACC, TERNARY, 0, TG_FOLD_F(x * y + z), TG_FOLD_I(a * b + c))                                                 \
  X(CAST) X(BITCAST) X(IOTA)                                                                                        \
  X(REDUCE_AXIS, OTHER, EXPENSIVE)  /* recomputed per use, its whole loop would run again */                        \
  X(RESHAPE, MOVEMENT) X(PERMUTE, MOVEMENT) X(EXPAND, MOVEMENT) X(PAD, MOVEMENT) X(SHRINK, MOVEMENT) X(FLIP, MOVEMENT) \
  X(CONTIGUOUS) X(DETACH) X(GRAD_RULE) X(COPY) X(ASSIGN)                                                            \
  X(MULTI) X(ALLREDUCE)  /* many devices (engine/multi.hpp) */                                                      \
  X(DEFINE_GLOBAL) X(DEFINE_LOCAL) X(RANGE) X(END) X(INDEX) X(LOAD) X(STORE) X(REDUCE) X(DEFINE_ACC) X(ACC_UPDATE)  \
  X(SPECIAL) X(LANE) X(VECTORIZE) X(GEP) X(BARRIER) X(IF) X(ENDIF) X(WMMA)  /* tensor-core tile product: a REDUCE's src and reduce op (TC opt) */ \
  X(SHUFFLE)  /* SHUFFLE(x; mask): x of the warp's lane (own lane ^ mask): a group reduce across a warp */

enum class Ops : uint8_t {
#define TG_X(n, ...) n,
  TG_OPS(TG_X)
#undef TG_X
  COUNT_
};
// GRAD_RULE(value, inputs...; {rule, params...}): the value, whose gradient autograd takes from a rule of its own
// (tensor/gradient.hpp) instead of from the ops that computed it. Conv (value, x, w; groups, strides, dilations,
// pads): a convolution's formulas (the window view's index math is far slower). Elementwise (value, x, dvalue/dx):
// the derivative given with the value, as erf and gelu do (their polynomials' own derivative was 50 kernels a gelu
// backward); it is computed only where a backward pass reads it
namespace detail { enum class GradRule : int64_t { Conv, Elementwise }; }


struct UOp;
using UOpRef = std::shared_ptr<const UOp>;

// NOTE: what follows is the IR itself; a TU of a separate-compilation program that is not the library's sees the op
// names and UOpRef only (the Tensor methods that use more are compiled in the implementation TU)
#if TINYGRAD_WITH_INTERNALS
namespace detail {
// one row of the op table
struct OpInfo {
  enum Family : uint8_t { OTHER, UNARY, BINARY, TERNARY, MOVEMENT };
  enum Flags : uint8_t { COMMUTATIVE = 1, COMPARISON = 2, EXPENSIVE = 4 };  // EXPENSIVE: the scheduler never recomputes it
  const char* name;
  Family family = OTHER;
  int flags = 0;
  double (*fold_f)(const FoldArgs&) = nullptr;    // ALU ops: the constant fold on floats (null: ints only)
  uint64_t (*fold_i)(const FoldArgs&) = nullptr;  // and on ints and bools (null: floats only)
  static const OpInfo table[];
};
// NOTE: defined outside the class so the rows name Family and Flags unqualified
#define TG_FOLD(T, e) [](const FoldArgs& v) {                 \
    [[maybe_unused]] auto& [f, u, s, uns, bits, dt] = v;      \
    [[maybe_unused]] auto& [x, y, z] = f;                     \
    [[maybe_unused]] auto& [a, b, c] = u;                     \
    return T(e); }
#define TG_FOLD_F(e) TG_FOLD(double, e)
#define TG_FOLD_I(e) TG_FOLD(uint64_t, e)
#define TG_X(n, ...) OpInfo{#n, __VA_ARGS__},
inline constexpr OpInfo OpInfo::table[] = {TG_OPS(TG_X)};
#undef TG_X
#undef TG_FOLD_I
#undef TG_FOLD_F
#undef TG_FOLD
static_assert(std::size(OpInfo::table) == size_t(Ops::COUNT_), "one row per op");

inline constexpr const OpInfo& op_info(Ops o) { return OpInfo::table[size_t(o)]; }
inline constexpr bool is_unary(Ops o) { return op_info(o).family == OpInfo::UNARY; }
inline constexpr bool is_binary(Ops o) { return op_info(o).family == OpInfo::BINARY; }
inline constexpr bool is_ternary(Ops o) { return op_info(o).family == OpInfo::TERNARY; }
inline constexpr bool is_alu(Ops o) { return is_unary(o) || is_binary(o) || is_ternary(o); }
inline constexpr bool is_commutative(Ops o) { return op_info(o).flags & OpInfo::COMMUTATIVE; }
inline constexpr bool is_comparison(Ops o) { return op_info(o).flags & OpInfo::COMPARISON; }
inline constexpr bool is_expensive(Ops o) { return op_info(o).flags & OpInfo::EXPENSIVE; }
inline constexpr bool is_movement(Ops o) { return op_info(o).family == OpInfo::MOVEMENT; }
// the ops of a group, in table order
inline std::vector<Ops> ops_where(bool (*in)(Ops)) {
  std::vector<Ops> r;
  for (size_t i = 0; i < size_t(Ops::COUNT_); i++) if (in(Ops(i))) r.push_back(Ops(i));
  return r;
}
}  // namespace detail
inline const char* op_name(Ops o) { return detail::op_info(o).name; }

namespace detail {
// axis kinds of a RANGE (codegen)
// KBLOCK: the outer part of a reduce axis split by OptOp::KBLOCK, a loop outside every other (partial results pass
// through the output buffer)
// WARP: the 32 lanes of a warp that share a tensor-core tile (TC); codegen's gpudims puts it on local x
enum class AxisType : int64_t { LOOP = 0, REDUCE = 1, THREAD = 2, GLOBAL = 3, LOCAL = 4, GROUP = 5, KBLOCK = 6, WARP = 7 };
}  // namespace detail

using Arg = std::variant<std::monostate, int64_t, double, std::vector<int64_t>, std::string, std::shared_ptr<Buffer>>;

namespace detail {
// Where a node's value lives once it is realized: a buffer (RealizedBuffer), or for a value of several devices the
// MULTI node of its devices' buffers (RealizedMulti). Written once, by the thread that realizes the node (under the
// engine's lock), and read without a lock by every thread that builds the same hash-consed node: the pointer is
// published with release and read with acquire, so a reader that sees it also sees the owner, which never
// changes afterwards. A second set() keeps the first value (both hold the same value).
template <class T>
class Realized {
  std::atomic<T*> ptr_{nullptr};
  std::shared_ptr<T> own_;
  static std::mutex& set_mutex() { static std::mutex m; return m; }
 public:
  std::shared_ptr<T> get() const { return ptr_.load(std::memory_order_acquire) ? own_ : nullptr; }
  void set(std::shared_ptr<T> b) {
    std::lock_guard lk(set_mutex());
    if (ptr_.load(std::memory_order_relaxed) || !b) return;
    own_ = std::move(b);
    ptr_.store(own_.get(), std::memory_order_release);
  }
  explicit operator bool() const { return ptr_.load(std::memory_order_acquire) != nullptr; }
  T* operator->() const { return ptr_.load(std::memory_order_acquire); }
};
using RealizedBuffer = Realized<Buffer>;
using RealizedMulti = Realized<const UOp>;
}  // namespace detail

struct UOp : std::enable_shared_from_this<UOp> {
  Ops op;
  DType dtype;
  int vcount;                // vector lanes (1 = scalar)
  std::vector<UOpRef> src;
  Arg arg;
  Shape shape;               // tensor-level nodes; empty for scalars and kernel-level nodes
  // symbolic dims (tensor/variable.hpp): empty, or per dim its extent as an int32 expression of variables (null: the dim
  // is as long as shape says). A symbolic dim's shape entry is its bound, the expression's max: buffers are laid out at
  // the bounds and kernels touch the first `extent` elements of the dim only
  std::vector<UOpRef> dyn;
  uint64_t key;              // structural hash, stable across processes for kernel graphs
  int64_t vmin = 0, vmax = 0;  // value range of integer/bool nodes
  mutable detail::RealizedBuffer realized;  // set once this node's value lives in a buffer
  bool grad_dep = false;     // a float value a gradient can flow through to a parameter (see is_param)
  // a value of several devices (engine/multi.hpp): a MULTI, a DEVICE of several ("CPU:0,CPU:1"), or a node above one
  bool multi = false;
  // a multi value once realized: MULTI(DEVICE, each device's realized node), set once under the engine's lock
  mutable detail::RealizedMulti multi_value;

  UOp(Ops o, DType d, int vc, std::vector<UOpRef> s, Arg a) : op(o), dtype(d), vcount(vc), src(std::move(s)), arg(std::move(a)) {}
  ~UOp();

  // ---- arg accessors ----
  int64_t iarg() const { return std::get<int64_t>(arg); }
  const std::vector<int64_t>& varg() const { return std::get<std::vector<int64_t>>(arg); }
  double const_value() const { return std::holds_alternative<double>(arg) ? std::get<double>(arg) : double(std::get<int64_t>(arg)); }
  bool is_const(double v) const { return op == Ops::CONST && vcount == 1 && const_value() == v; }
  Ops reduce_op() const { return Ops(varg()[0]); }                     // REDUCE_AXIS / REDUCE
  std::vector<int64_t> reduce_axes() const { return {varg().begin() + 1, varg().end()}; }
  int64_t range_end() const { return varg()[0]; }                       // RANGE / SPECIAL / LANE
  int64_t range_id() const { return varg()[1]; }
  const std::shared_ptr<Buffer>& buffer() const { return std::get<std::shared_ptr<Buffer>>(arg); }
  // a leaf's value: a BUFFER's own buffer, else the buffer it was realized into (null before that)
  std::shared_ptr<Buffer> leaf_buffer() const { return op == Ops::BUFFER ? buffer() : realized.get(); }
  // a parameter's identity: CONTIGUOUS with a process-unique id, never merged with an equal value
  bool is_param() const { return op == Ops::CONTIGUOUS && std::holds_alternative<int64_t>(arg); }
  // a layout for devices without workgroups (a CPU conv's weight, output channels innermost): CONTIGUOUS of arg {-1},
  // which a schedule for workgroups drops (its source read as it is)
  static constexpr int64_t kCpuLayout = -1;
  bool is_cpu_layout() const {
    return op == Ops::CONTIGUOUS && std::holds_alternative<std::vector<int64_t>>(arg) && varg() == std::vector<int64_t>{kCpuLayout};
  }
  int64_t numel() const { return detail::prod(shape); }
};

namespace detail {
// a node that holds its value: a buffer, or a node realize() has computed
inline bool is_leaf(const UOp* u) { return u->op == Ops::BUFFER || bool(u->realized); }
struct InternTable {
  std::recursive_mutex mu;
  std::unordered_multimap<uint64_t, const UOp*> map;
  static InternTable& get() { static auto* t = new InternTable(); return *t; }  // NOTE: leaked on purpose, outlives static UOps
};
inline uint64_t arg_hash(const Arg& a) {
  return std::visit([](const auto& v) -> uint64_t {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::monostate>) return 0;
    else if constexpr (std::is_same_v<T, int64_t>) return hash_mix(1, uint64_t(v));
    else if constexpr (std::is_same_v<T, double>) { uint64_t b; std::memcpy(&b, &v, 8); return hash_mix(2, b); }
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) { uint64_t h = 3; for (auto x : v) h = hash_mix(h, uint64_t(x)); return h; }
    else if constexpr (std::is_same_v<T, std::string>) return hash_mix(4, hash_bytes(v));
    else return hash_mix(5, uint64_t(reinterpret_cast<uintptr_t>(v.get())));
  }, a);
}
inline bool arg_eq(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) { double y = std::get<double>(b); return std::memcmp(x, &y, 8) == 0; }  // NaN-safe, -0 != 0
  return a == b;
}
using tinygrad::detail::i128;
inline int64_t int_min(DType d) {
  if (d == DType::Bool) return 0;
  if (is_unsigned(d)) return 0;
  int bits = itemsize(d) * 8;
  return bits >= 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
}
inline int64_t int_max(DType d) {
  if (d == DType::Bool) return 1;
  int bits = itemsize(d) * 8 - (is_unsigned(d) ? 0 : 1);
  return bits >= 63 ? INT64_MAX : (int64_t(1) << bits) - 1;
}
void compute_vrange(UOp& u);
Shape infer_shape(const UOp& u);
std::vector<UOpRef> infer_dyn(const UOp& u);

// NOTE: releasing a node's sources recurses once per level of its graph (a 100k-op chain overflowed the stack):
// past 64 levels the sources go to the list of the outermost release on this thread, which empties it in a loop
inline void release_sources(std::vector<UOpRef>& src) {
  thread_local int depth = 0;
  thread_local std::vector<UOpRef>* pending = nullptr;  // trivially destructible: safe in destructors run at exit
  if (depth >= 64) { for (auto& s : src) pending->push_back(std::move(s)); return; }
  std::vector<UOpRef> q;  // allocates only for a graph deeper than 64
  bool outer = depth++ == 0;
  if (outer) pending = &q;
  src.clear();
  if (outer) {
    while (!q.empty()) { UOpRef x = std::move(q.back()); q.pop_back(); }
    pending = nullptr;
  }
  depth--;
}
}  // namespace detail

inline UOp::~UOp() {
  {
    auto& t = detail::InternTable::get();
    std::lock_guard lk(t.mu);
    auto [b, e] = t.map.equal_range(key);
    for (auto it = b; it != e; ++it) if (it->second == this) { t.map.erase(it); break; }
  }
  // only sources that die with this node recurse (use_count() is a hint: a source that another thread drops
  // meanwhile dies at a depth of its own)
  if (std::any_of(src.begin(), src.end(), [](const UOpRef& s) { return s.use_count() == 1; })) detail::release_sources(src);
}

// the one constructor: returns the existing node when an identical one is alive
inline UOpRef make_uop(Ops op, DType dtype, std::vector<UOpRef> src = {}, Arg arg = {}, int vcount = 1) {
  uint64_t h = detail::hash_mix(detail::hash_mix(detail::hash_mix(uint64_t(op) + 1, uint64_t(dtype)), uint64_t(vcount)), detail::arg_hash(arg));
  for (auto& s : src) h = detail::hash_mix(h, s->key);
  auto& t = detail::InternTable::get();
  std::lock_guard lk(t.mu);
  auto [b, e] = t.map.equal_range(h);
  for (auto it = b; it != e; ++it) {
    const UOp* u = it->second;
    if (u->op != op || u->dtype != dtype || u->vcount != vcount || u->src.size() != src.size() || !detail::arg_eq(u->arg, arg)) continue;
    bool same = true;
    for (size_t i = 0; i < src.size() && same; i++) same = u->src[i] == src[i];
    if (!same) continue;
    // NOTE: the node's own weak_ptr<UOp>: converting it to weak_ptr<const UOp> (weak_from_this() const) locks and
    // drops a temporary reference, and where another thread dropped the last one meanwhile, that drop runs ~UOp here,
    // which erases from the table under this walk (the mutex is recursive): a use-after-free under BEAM's renders
    if (auto sp = const_cast<UOp*>(u)->weak_from_this().lock()) return sp;
  }
  auto u = std::make_shared<UOp>(op, dtype, vcount, std::move(src), std::move(arg));
  u->key = h;
  u->shape = detail::infer_shape(*u);
  u->dyn = detail::infer_dyn(*u);
  if (std::none_of(u->dyn.begin(), u->dyn.end(), [](const UOpRef& d) { return bool(d); })) u->dyn.clear();  // no symbolic dim left
  detail::compute_vrange(*u);
  // NOTE: non-float values carry no gradient (comparisons, int casts): reading them needs no graph
  if (is_float(dtype)) {
    u->grad_dep = u->is_param();
    if (op != Ops::DETACH && op != Ops::MULTI) for (auto& s : u->src) u->grad_dep |= s->grad_dep;  // NOTE: shard() and to(devices) start a new value
  }
  u->multi = op == Ops::MULTI || (op == Ops::DEVICE && std::get<std::string>(u->arg).find(',') != std::string::npos);
  if (op != Ops::MULTI) for (auto& s : u->src) u->multi |= s->multi;
  t.map.emplace(h, u.get());
  return u;
}

// ---- small builders ----
namespace detail {
inline UOpRef const_uop(DType dt, double v, int vcount = 1) {
  if (is_float(dt)) return make_uop(Ops::CONST, dt, {}, v, vcount);
  if (dt == DType::Bool) return make_uop(Ops::CONST, dt, {}, int64_t(v != 0), vcount);
  return make_uop(Ops::CONST, dt, {}, int64_t(v), vcount);
}
// what a reduce starts from: ADD 0, MUL 1, MAX the dtype's least value (-inf for floats)
inline double reduce_identity(Ops op, DType dt) { return op == Ops::ADD || op == Ops::WMMA ? 0 : op == Ops::MUL ? 1 : detail::dtype_min(dt); }
inline UOpRef const_int(DType dt, int64_t v) { return is_float(dt) ? make_uop(Ops::CONST, dt, {}, double(v)) : make_uop(Ops::CONST, dt, {}, v); }
// a concrete extent among symbolic ones (a movement op's src[1..]): int32 where it fits, as variables are
inline UOpRef size_const(int64_t n) { return const_int(n > INT32_MAX ? DType::Int64 : DType::Int32, n); }
inline bool is_buffer_view(const UOp* u) { return u->op == Ops::BUFFER || (u->op == Ops::RESHAPE && u->src[0]->op == Ops::BUFFER); }
// a RESHAPE or EXPAND of x to shape (the bounds) whose dims dyn names are symbolic (their extents in src[1..]; dyn empty
// or null: concrete)
inline UOpRef sym_movement(Ops op, const UOpRef& x, const Shape& shape, const std::vector<UOpRef>& dyn) {
  if (dyn.empty()) return make_uop(op, x->dtype, {x}, std::vector<int64_t>(shape));
  std::vector<UOpRef> src{x};
  for (size_t i = 0; i < shape.size(); i++) src.push_back(dyn[i] ? dyn[i] : size_const(shape[i]));
  return make_uop(op, x->dtype, std::move(src), std::vector<int64_t>(shape));
}
// a BUFFER (reshaped) over a realized node's value (a leaf, or a RESHAPE of one); a symbolic value keeps its extents
inline UOpRef buffer_view(const UOpRef& u) {
  if (is_buffer_view(u.get())) return u;
  auto b = make_uop(Ops::BUFFER, u->dtype, {}, u->realized ? u->realized.get() : u->src[0]->realized.get());
  if (b->shape == u->shape && u->dyn.empty()) return b;
  return sym_movement(Ops::RESHAPE, b, u->shape, u->dyn);
}

inline DType alu_dtype(Ops op, const std::vector<UOpRef>& src) {
  if (is_comparison(op)) return DType::Bool;
  if (op == Ops::WHERE) return src[1]->dtype;
  return src[0]->dtype;
}
inline UOpRef alu(Ops op, std::vector<UOpRef> src) {
  int vc = 1;
  for (auto& s : src) vc = std::max(vc, s->vcount);
  DType dt = alu_dtype(op, src);
  return make_uop(op, dt, std::move(src), {}, vc);
}
inline UOpRef cast_uop(const UOpRef& x, DType dt) { return x->dtype == dt ? x : make_uop(Ops::CAST, dt, {x}, {}, x->vcount); }

// symbolic variables (tensor/variable.hpp). DEFINE_VAR is an int32 whose value a kernel takes as an argument; its arg
// is {min, max, name id}, so the simplifier folds with its range and two variables of one name and range are one node.
// BIND(DEFINE_VAR, CONST value) is a variable with its value, in the tensor graph only: realize reads the value and
// lowers the BIND to its variable, so the plan and the kernels are the same for every value.
struct VarNames {
  std::mutex mu;
  std::unordered_map<std::string, int64_t> ids;
  std::deque<std::string> names;  // NOTE: a deque: references stay valid as names are added
  static VarNames& get() { static auto* v = new VarNames(); return *v; }  // NOTE: leaked on purpose, like InternTable
};
inline UOpRef define_var(const std::string& name, int64_t lo, int64_t hi) {
  auto& v = VarNames::get();
  int64_t id;
  {
    std::lock_guard lk(v.mu);
    auto [it, fresh] = v.ids.try_emplace(name, int64_t(v.names.size()));
    if (fresh) v.names.push_back(name);
    id = it->second;
  }
  return make_uop(Ops::DEFINE_VAR, DType::Int32, {}, std::vector<int64_t>{lo, hi, id});
}
inline const std::string& var_name(const UOp& var) {
  auto& v = VarNames::get();
  std::lock_guard lk(v.mu);
  return v.names.at(size_t(var.varg()[2]));
}
inline UOpRef bind_var(const UOpRef& var, int64_t value, const std::string& device) {
  return make_uop(Ops::BIND, DType::Int32, {var, const_int(DType::Int32, value), make_uop(Ops::DEVICE, DType::Bool, {}, device)});
}
}  // namespace detail

// index-math operators on UOpRefs: patterns and lowering read like algebra
inline UOpRef operator+(const UOpRef& a, const UOpRef& b) { return detail::alu(Ops::ADD, {a, b}); }
inline UOpRef operator*(const UOpRef& a, const UOpRef& b) { return detail::alu(Ops::MUL, {a, b}); }
inline UOpRef operator+(const UOpRef& a, int64_t b) { return a + detail::const_int(a->dtype, b); }
inline UOpRef operator-(const UOpRef& a, int64_t b) { return a + detail::const_int(a->dtype, -b); }
inline UOpRef operator*(const UOpRef& a, int64_t b) { return a * detail::const_int(a->dtype, b); }
inline UOpRef operator-(const UOpRef& a) { return a * detail::const_int(a->dtype, -1); }
inline UOpRef operator-(const UOpRef& a, const UOpRef& b) { return a + (-b); }
namespace detail {
inline UOpRef idiv(const UOpRef& a, int64_t b) { return alu(Ops::IDIV, {a, const_int(a->dtype, b)}); }
inline UOpRef mod(const UOpRef& a, int64_t b) { return alu(Ops::MOD, {a, const_int(a->dtype, b)}); }
inline UOpRef lt(const UOpRef& a, int64_t b) { return alu(Ops::CMPLT, {a, const_int(a->dtype, b)}); }
inline UOpRef ge(const UOpRef& a, int64_t b) { return alu(Ops::XOR, {lt(a, b), const_uop(DType::Bool, 1)}); }
inline UOpRef logical_and(const UOpRef& a, const UOpRef& b) { return alu(Ops::AND, {a, b}); }
}  // namespace detail

// ---- value ranges (for the symbolic simplifier) ----
inline void detail::compute_vrange(UOp& u) {
  // NOTE: floats have no integer range: comparisons of them must never fold
  if (is_float(u.dtype)) { u.vmin = INT64_MIN; u.vmax = INT64_MAX; return; }
  int64_t lo = int_min(u.dtype), hi = int_max(u.dtype);
  // NOTE: a uint64 past INT64_MAX has no int64 range: a uint64 node other than a constant below INT64_MAX may be anything
  if (u.dtype == DType::UInt64 && !(u.op == Ops::CONST && u.vcount == 1 && std::get<int64_t>(u.arg) >= 0 && std::get<int64_t>(u.arg) < INT64_MAX)) {
    u.vmin = lo; u.vmax = hi; return;
  }
  auto S = [&](size_t i) -> const UOp& { return *u.src[i]; };
  // an exact result range; one that leaves the dtype wraps around, so it says nothing
  auto exact = [&](i128 l, i128 h) { if (l >= lo && h <= hi) { lo = int64_t(l); hi = int64_t(h); } };
  switch (u.op) {
    case Ops::CONST: lo = hi = std::get<int64_t>(u.arg); break;  // a vector constant holds its value in every lane
    case Ops::VECTORIZE: lo = hi = S(0).vmin; for (auto& s : u.src) { lo = std::min(lo, s->vmin); hi = std::max(hi, s->vmax); } break;
    case Ops::GEP: lo = S(0).vmin; hi = S(0).vmax; break;
    case Ops::REDUCE: {  // MAX: a value of the source (the identity if empty); ADD: n of them
      i128 n = 1;
      for (size_t i = 1; i < u.src.size(); i++)
        n = std::min<i128>(n * (S(i).op == Ops::RANGE ? std::min<int64_t>(S(i).range_end(), int64_t(1) << 32) : 0), i128(1) << 64);
      if (u.reduce_op() == Ops::MAX) { if (n > 0) { lo = S(0).vmin; hi = S(0).vmax; } }
      else if (u.reduce_op() == Ops::ADD) exact(std::min<i128>(n * S(0).vmin, 0), std::max<i128>(n * S(0).vmax, 0));
      break;
    }
    case Ops::RANGE: case Ops::SPECIAL: case Ops::LANE: lo = 0; hi = std::max<int64_t>(0, u.range_end() - 1); break;
    case Ops::DEFINE_VAR: lo = u.varg()[0]; hi = u.varg()[1]; break;
    case Ops::BIND: lo = S(0).vmin; hi = S(0).vmax; break;  // the variable's range, not its value: one plan for all
    case Ops::NEG: if (u.dtype != DType::Bool) exact(-i128(S(0).vmax), -i128(S(0).vmin)); break;
    case Ops::ADD: exact(i128(S(0).vmin) + S(1).vmin, i128(S(0).vmax) + S(1).vmax); break;
    case Ops::MUL: {
      i128 c[4] = {i128(S(0).vmin) * S(1).vmin, i128(S(0).vmin) * S(1).vmax, i128(S(0).vmax) * S(1).vmin, i128(S(0).vmax) * S(1).vmax};
      exact(*std::min_element(c, c + 4), *std::max_element(c, c + 4)); break;
    }
    case Ops::IDIV:
      if (S(1).vmin == S(1).vmax && S(1).vmin > 0) { lo = S(0).vmin / S(1).vmin; hi = S(0).vmax / S(1).vmin; }
      break;
    case Ops::MOD:
      if (S(1).vmin == S(1).vmax && S(1).vmin > 0) {
        int64_t c = S(1).vmin;
        if (S(0).vmin >= 0) { lo = 0; hi = std::min(c - 1, S(0).vmax); } else { lo = -(c - 1); hi = c - 1; }
      }
      break;
    case Ops::MAX: lo = std::max(S(0).vmin, S(1).vmin); hi = std::max(S(0).vmax, S(1).vmax); break;
    case Ops::CMPLT: lo = S(0).vmax < S(1).vmin ? 1 : 0; hi = S(0).vmin >= S(1).vmax ? 0 : 1; break;
    case Ops::CMPNE: case Ops::CMPEQ: {
      bool disjoint = S(0).vmax < S(1).vmin || S(0).vmin > S(1).vmax;
      bool same = S(0).vmin == S(0).vmax && S(1).vmin == S(1).vmax && S(0).vmin == S(1).vmin;
      bool ne_true = disjoint, ne_false = same;
      if (u.op == Ops::CMPNE) { lo = ne_true; hi = !ne_false; } else { lo = ne_false; hi = !ne_true; }
      break;
    }
    case Ops::AND:
      if (u.dtype == DType::Bool) {
        lo = S(0).vmin & S(1).vmin;
        hi = S(0).vmax & S(1).vmax;
      } else if (S(0).vmin >= 0 && S(1).vmin >= 0) {
        lo = 0;
        hi = std::min(S(0).vmax, S(1).vmax);
      }
      break;
    case Ops::OR: if (u.dtype == DType::Bool) { lo = S(0).vmin | S(1).vmin; hi = S(0).vmax | S(1).vmax; } break;
    case Ops::XOR:
      if (u.dtype == DType::Bool && S(1).vmin == 1 && S(1).vmax == 1) { lo = 1 - S(0).vmax; hi = 1 - S(0).vmin; }
      else if (u.dtype != DType::Bool && S(0).vmin >= 0 && S(1).vmin >= 0) {  // below the next power of two of both
        lo = 0;
        for (hi = 1; hi <= std::max(S(0).vmax, S(1).vmax) && hi < (int64_t(1) << 62); hi *= 2) {}
        hi -= 1;
      }
      break;
    case Ops::WHERE: if (!is_float(u.dtype)) { lo = std::min(S(1).vmin, S(2).vmin); hi = std::max(S(1).vmax, S(2).vmax); } break;
    case Ops::CAST:
      if (!is_float(S(0).dtype) && S(0).dtype != DType::UInt64 && S(0).vmin >= lo && S(0).vmax <= hi) {
        lo = S(0).vmin;
        hi = S(0).vmax;
      }
      break;
    default: break;
  }
  u.vmin = lo; u.vmax = hi;
}

// ---- shapes of tensor-level nodes ----
inline Shape detail::infer_shape(const UOp& u) {
  switch (u.op) {
    case Ops::BUFFER: return {u.buffer()->size};
    case Ops::IOTA: return {u.iarg()};
    case Ops::RESHAPE: case Ops::EXPAND: return std::get<std::vector<int64_t>>(u.arg);
    case Ops::PERMUTE: { Shape s; for (auto a : u.varg()) s.push_back(u.src[0]->shape[size_t(a)]); return s; }
    case Ops::PAD: case Ops::SHRINK: {
      Shape s = u.src[0]->shape;
      // a symbolic shrink or pad: src[1..n] the begins (pads before), src[n+1..2n] the result's extents (int32 scalars),
      // each dim as long as its extent's max
      if (u.src.size() > 1) { for (size_t i = 0; i < s.size(); i++) s[i] = u.src[1 + s.size() + i]->vmax; return s; }
      if (u.op == Ops::PAD) { for (size_t i = 0; i < s.size(); i++) s[i] += u.varg()[2 * i] + u.varg()[2 * i + 1]; return s; }
      for (size_t i = 0; i < s.size(); i++) s[i] = u.varg()[2 * i + 1] - u.varg()[2 * i];
      return s;
    }
    case Ops::REDUCE_AXIS: { Shape s = u.src[0]->shape; for (auto a : u.reduce_axes()) s[size_t(a)] = 1; return s; }
    case Ops::MULTI: {  // src[0] the DEVICE of all, then one part per device; arg the axis they split (-1: each holds all)
      Shape s = u.src[1]->shape;
      size_t a = size_t(u.iarg());
      if (u.iarg() >= 0) { s[a] = 0; for (size_t i = 1; i < u.src.size(); i++) s[a] += u.src[i]->shape[a]; }
      return s;
    }
    case Ops::CONST: case Ops::DEVICE: case Ops::DEFINE_GLOBAL: case Ops::RANGE: case Ops::SPECIAL: case Ops::LANE: case Ops::SINK:
    case Ops::DEFINE_VAR: case Ops::BIND:
      return {};
    default: return u.src.empty() ? Shape{} : u.src[0]->shape;
  }
}

// the symbolic dims of a tensor-level node: RESHAPE and EXPAND name their result's extents in src[1..] (when symbolic),
// a symbolic SHRINK or PAD in src[n+1..2n]; the others keep their source's
inline std::vector<UOpRef> detail::infer_dyn(const UOp& u) {
  auto exts = [&](size_t from) {
    std::vector<UOpRef> d;
    for (size_t i = 0; i < u.shape.size(); i++) d.push_back(u.src[from + i]->op == Ops::CONST ? nullptr : u.src[from + i]);
    return d;
  };
  switch (u.op) {
    case Ops::RESHAPE: case Ops::EXPAND: return u.src.size() > 1 ? exts(1) : std::vector<UOpRef>{};
    case Ops::SHRINK: case Ops::PAD: return u.src.size() > 1 ? exts(1 + u.shape.size()) : u.src[0]->dyn;
    case Ops::PERMUTE: {
      if (u.src[0]->dyn.empty()) return {};
      std::vector<UOpRef> d;
      for (auto a : u.varg()) d.push_back(u.src[0]->dyn[size_t(a)]);
      return d;
    }
    case Ops::REDUCE_AXIS: {
      auto d = u.src[0]->dyn;
      if (!d.empty()) for (auto a : u.reduce_axes()) d[size_t(a)] = nullptr;
      return d;
    }
    case Ops::BUFFER: case Ops::IOTA: case Ops::CONST: case Ops::DEVICE: case Ops::DEFINE_VAR: case Ops::BIND: return {};
    default:
      if (u.shape.empty()) return {};
      for (auto& s : u.src) if (!s->dyn.empty() && s->shape.size() == u.shape.size()) return s->dyn;
      return {};
  }
}

// ---- graph walks ----
namespace detail {
// post-order (sources first), each node once; the sources of a node where descend(node) is false are not visited
template <class F>
std::vector<UOpRef> toposort(const UOpRef& root, F&& descend) {
  std::vector<UOpRef> out;
  std::unordered_set<const UOp*> seen{root.get()};
  std::vector<std::pair<const UOp*, size_t>> stack{{root.get(), 0}};
  if (!descend(root.get())) stack.back().second = root->src.size();
  while (!stack.empty()) {
    auto& [u, i] = stack.back();
    if (i < u->src.size()) {
      const UOp* s = u->src[i++].get();
      if (seen.insert(s).second) stack.push_back({s, descend(s) ? 0 : s->src.size()});
    } else {
      stack.pop_back();
      // NOTE: a node is reached through its parent's src (alive while root is), the root through root
      out.push_back(stack.empty() ? root : stack.back().first->src[stack.back().second - 1]);
    }
  }
  return out;
}
inline std::vector<UOpRef> toposort(const UOpRef& root) { return toposort(root, [](const UOp*) { return true; }); }
}  // namespace detail

// printable form (DEBUG=5, errors)
namespace detail {
inline std::string arg_str(const Arg& a) {
  return std::visit([](const auto& v) -> std::string {
    using T = std::decay_t<decltype(v)>;
    if constexpr (std::is_same_v<T, std::monostate>) return "None";
    else if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double>) return detail::cat(v);
    else if constexpr (std::is_same_v<T, std::vector<int64_t>>) return to_string(Shape(v));
    else if constexpr (std::is_same_v<T, std::string>) return detail::cat("'", v, "'");
    else return "<buffer>";
  }, a);
}
}  // namespace detail
inline std::string print_graph(const UOpRef& root) {
  auto topo = detail::toposort(root);
  std::unordered_map<const UOp*, size_t> id;
  std::string s;
  for (auto& u : topo) {
    id[u.get()] = id.size();
    s += detail::cat("%", id[u.get()], " = ", op_name(u->op), " ", to_string(u->dtype).substr(7), u->vcount > 1 ? detail::cat("x", u->vcount) : "",
                     " [");
    for (size_t i = 0; i < u->src.size(); i++) s += detail::cat(i ? ", %" : "%", id[u->src[i].get()]);
    // NOTE: a variable by its name and range, not its name's id (which depends on the order a process met the names:
    // BEAM's disk cache is keyed by this text)
    std::string arg =
        u->op == Ops::DEFINE_VAR ? detail::cat(detail::var_name(*u), "[", u->varg()[0], "..", u->varg()[1], "]") : detail::arg_str(u->arg);
    s += detail::cat("] ", arg, u->shape.empty() ? "" : " ", u->shape.empty() ? "" : to_string(u->shape), "\n");
  }
  return s;
}

#endif  // TINYGRAD_WITH_INTERNALS
#undef TG_OPS

}  // namespace tinygrad
