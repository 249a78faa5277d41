#pragma once
// IR specs (tinygrad's uop/spec.py): which ops, dtypes, args and sources are legal at each stage of the pipeline, so a
// pass that builds a malformed graph fails at its own boundary, not passes later in a renderer or a C compiler.
// Checked after every pass with SPEC=1 or DEBUG>=3 (the tests turn it on); off, a check costs one branch on a flag.
// The specs are data: one row per op (the stages it may appear in, its source count, its arg's kind, the rule its
// dtypes and sources follow), a static_assert that every op has its row, and a short list of program rules for the
// linear program (an order of nodes, which no per-node rule can see).
#include <array>
#include "ops.hpp"

namespace tinygrad {

// the stage boundaries, in pipeline order
enum class Stage : uint8_t {
  TENSOR,     // the tensor graph the scheduler gets (movement ops, REDUCE_AXIS; realized nodes are leaves)
  KERNEL,     // a kernel AST the scheduler made: SINK of STOREs over LOOP/REDUCE RANGEs, movement ops now index math
  OPTIMIZED,  // with its opts and the lowering passes before lane expansion: lanes, thread ids, workgroup memory, TC tiles
  EXPANDED,   // after lane expansion: LANE became vector nodes
  LINEAR,     // the linear program the renderer prints: RANGE/END loops, accumulators, sources before their users
};
// a graph that breaks its stage's spec: a bug in the pass that made it
struct SpecError : Error {
  Stage stage;
  std::string pass;
  Ops op;
  SpecError(Stage s, std::string p, Ops o, const std::string& what) : Error(what), stage(s), pass(std::move(p)), op(o) {}
};

}  // namespace tinygrad

namespace tinygrad::detail {
inline const char* stage_name(Stage s) { static const char* n[] = {"tensor", "kernel", "optimized", "expanded", "linear"}; return n[int(s)]; }

namespace spec {
enum Bits : uint8_t { T = 1, K = 2, O = 4, X = 8, L = 16, KOXL = K | O | X | L, OXL = O | X | L, ALL = T | KOXL };
inline bool at(Stage s, uint8_t bits) { return bits & (1 << int(s)); }
enum class ArgKind : uint8_t { NONE, INT, VEC, STR, BUF, NUM /* int64 or double */, OPT_INT /* none or int64 */,
                              ID /* none, int64 or one int64 in a list: a CONTIGUOUS's identity */ };
inline bool arg_is(const Arg& a, ArgKind k) {
  switch (k) {
    case ArgKind::NONE: return std::holds_alternative<std::monostate>(a);
    case ArgKind::INT: return std::holds_alternative<int64_t>(a);
    case ArgKind::VEC: return std::holds_alternative<std::vector<int64_t>>(a);
    case ArgKind::STR: return std::holds_alternative<std::string>(a);
    case ArgKind::BUF: return std::holds_alternative<std::shared_ptr<Buffer>>(a) && std::get<std::shared_ptr<Buffer>>(a);
    case ArgKind::NUM: return std::holds_alternative<int64_t>(a) || std::holds_alternative<double>(a);
    case ArgKind::OPT_INT: return std::holds_alternative<std::monostate>(a) || std::holds_alternative<int64_t>(a);
    case ArgKind::ID: return arg_is(a, ArgKind::OPT_INT) || (arg_is(a, ArgKind::VEC) && std::get<std::vector<int64_t>>(a).size() == 1);
  }
  return false;
}
inline const char* arg_kind_name(ArgKind k) {
  static const char* n[] = {"no arg", "an int", "a list of ints", "a string", "a buffer", "a number", "no arg or an int", "no arg, an int or {int}"};
  return n[int(k)];
}

// a rule: "" when u is legal at stage s, else what it breaks. The table's row has checked the stage, the source count
// and the arg's kind before.
using Rule = std::string (*)(const UOp& u, Stage s);
using Why = std::string;
inline std::string dt(DType d) { return to_string(d).substr(7); }  // "dtypes.float" -> "float"
inline bool is_index(DType d) { return d == DType::Int32 || d == DType::Int64; }
inline Why src_op(const UOp& u, size_t i, std::initializer_list<Ops> ok) {
  if (std::find(ok.begin(), ok.end(), u.src[i]->op) != ok.end()) return "";
  std::string names;
  for (Ops o : ok) names += (names.empty() ? "" : " or ") + std::string(op_name(o));
  return cat("src[", i, "] must be ", names, ", is ", op_name(u.src[i]->op));
}
inline Why same_dtype(const UOp& u, size_t i) {
  return u.src[i]->dtype == u.dtype ? "" : cat("src[", i, "] is ", dt(u.src[i]->dtype), ", the node ", dt(u.dtype), " (they must agree)");
}
inline Why first(std::initializer_list<Why> ws) {
  for (auto& w : ws) if (!w.empty()) return w;
  return "";
}

// ---- the rules, by family ----
inline Why none(const UOp&, Stage) { return ""; }
// a kernel's SINK holds its STOREs (a tensor graph's holds its roots)
inline Why sink(const UOp& u, Stage s) {
  if (s != Stage::TENSOR) for (size_t i = 0; i < u.src.size(); i++) if (auto w = src_op(u, i, {Ops::STORE}); !w.empty()) return w;
  return "";
}
// a constant's arg holds a value of its dtype: a double for floats, an int64 in the dtype's range for ints and bools;
// in the tensor graph its source (if any) names its device
inline Why const_(const UOp& u, Stage s) {
  if (!u.src.empty() && (s != Stage::TENSOR || u.src[0]->op != Ops::DEVICE)) return "only a tensor-graph CONST has a source, its DEVICE";
  if (is_float(u.dtype) != std::holds_alternative<double>(u.arg))
    return cat("the arg must be ", is_float(u.dtype) ? "a double" : "an int", " for ", dt(u.dtype));
  if (!is_float(u.dtype) && u.dtype != DType::UInt64) {
    int64_t v = std::get<int64_t>(u.arg);
    if (v < int_min(u.dtype) || v > int_max(u.dtype)) return cat("the value ", v, " is outside ", dt(u.dtype));
  }
  return "";
}
// ALU ops: sources of one dtype and width; comparisons give bool; WHERE chooses by a bool. An op whose constant fold
// exists for floats only (EXP2, FDIV, ...) takes floats, one that folds only ints (IDIV, AND, SHL, ...) ints and bools
inline Why alu(const UOp& u, Stage) {
  for (size_t i = 0; i < u.src.size(); i++)
    if (u.src[i]->vcount != u.vcount) return cat("src[", i, "] has ", u.src[i]->vcount, " lanes, the node ", u.vcount);
  if (is_comparison(u.op)) {
    if (u.dtype != DType::Bool) return cat("a comparison gives bool, not ", dt(u.dtype));
    if (u.src[0]->dtype != u.src[1]->dtype) return cat("compares ", dt(u.src[0]->dtype), " with ", dt(u.src[1]->dtype));
    return "";
  }
  if (u.op == Ops::WHERE) {
    if (u.src[0]->dtype != DType::Bool) return cat("the condition must be bool, is ", dt(u.src[0]->dtype));
    return first({same_dtype(u, 1), same_dtype(u, 2)});
  }
  for (size_t i = 0; i < u.src.size(); i++) if (auto w = same_dtype(u, i); !w.empty()) return w;
  const OpInfo& oi = op_info(u.op);
  if (!oi.fold_i && !is_float(u.dtype)) return cat("takes floats, not ", dt(u.dtype));
  if (!oi.fold_f && is_float(u.dtype)) return cat("takes ints or bools, not ", dt(u.dtype));
  return "";
}
inline Why cast(const UOp& u, Stage) {
  if (u.src[0]->vcount != u.vcount) return cat("src[0] has ", u.src[0]->vcount, " lanes, the node ", u.vcount);
  return "";
}
// tensor-graph ops that pass their source's values through
inline Why same_as_src(const UOp& u, Stage) { return same_dtype(u, 0); }
// ASSIGN(view, value): the value written in place through the view's movement ops into the buffer below them
inline Why assign(const UOp& u, Stage) {
  const UOp* b = u.src[0].get();
  while (is_movement(b->op) && !is_leaf(b)) b = b->src[0].get();
  if (!is_leaf(b)) return "an ASSIGN writes through movement ops into a buffer";
  if (u.src[0]->shape != u.shape || u.src[1]->shape != u.shape) return "an ASSIGN's view and value have its shape";
  return first({same_dtype(u, 0), same_dtype(u, 1)});
}
// movement ops: the arg fits the source's rank (and shape)
inline Why movement(const UOp& u, Stage) {
  const Shape& in = u.src[0]->shape;
  const auto& a = u.varg();
  if (u.src.size() > 1) {  // symbolic sizes (tensor/variable.hpp): RESHAPE and EXPAND name their extents, SHRINK and PAD begins and extents
    bool ends = u.op == Ops::SHRINK || u.op == Ops::PAD;
    size_t want = ends ? 2 * in.size() : a.size();
    if (u.src.size() != want + 1) return cat("has ", u.src.size() - 1, " symbolic sizes, not ", want);
    for (size_t i = 1; i < u.src.size(); i++)
      if (u.src[i]->dtype != DType::Int32 && u.src[i]->dtype != DType::Int64) return cat("src[", i, "] is no int32 or int64 size");
    if (ends) return a.empty() ? same_dtype(u, 0) : "a symbolic shrink or pad has no arg";
  }
  size_t n = in.size(), want = u.op == Ops::PAD || u.op == Ops::SHRINK ? 2 * n : u.op == Ops::RESHAPE ? a.size() : n;
  if (a.size() != want) return cat("the arg has ", a.size(), " entries for a source of rank ", n);
  if (auto w = same_dtype(u, 0); !w.empty()) return w;
  switch (u.op) {
    case Ops::RESHAPE:
      // NOTE: a buffer of a concrete tensor named symbolic (Tensor::name_symbolic) holds the elements at the values only
      if (prod(a) != prod(in) && !(u.src.size() > 1 && u.src[0]->op == Ops::BUFFER && prod(in) < prod(a)))
        return cat("reshapes ", to_string(in), " to ", to_string(Shape(a)), ": not as many elements");
      break;
    case Ops::PERMUTE: {
      std::vector<bool> seen(n);
      for (auto p : a) {
        if (p < 0 || p >= int64_t(n) || seen[size_t(p)]) return cat(to_string(Shape(a)), " is not a permutation");
        seen[size_t(p)] = true;
      }
      break;
    }
    case Ops::EXPAND:
      for (size_t i = 0; i < n; i++) if (in[i] != a[i] && in[i] != 1) return cat("expands ", to_string(in), " to ", to_string(Shape(a)));
      break;
    case Ops::PAD: for (auto p : a) if (p < 0) return "a negative pad"; break;
    case Ops::SHRINK:
      for (size_t i = 0; i < n; i++)
        if (a[2 * i] < 0 || a[2 * i] > a[2 * i + 1] || a[2 * i + 1] > in[i]) return cat("shrinks ", to_string(in), " by ", to_string(Shape(a)));
      break;
    default: break;
  }
  return "";
}
inline bool reduce_op_ok(int64_t o, bool wmma) {
  return o == int64_t(Ops::ADD) || o == int64_t(Ops::MUL) || o == int64_t(Ops::MAX) || (wmma && o == int64_t(Ops::WMMA));
}
inline Why reduce_axis(const UOp& u, Stage) {
  const auto& a = u.varg();
  if (a.empty() || !reduce_op_ok(a[0], false)) return "the arg must start with ADD, MUL or MAX";
  for (size_t i = 1; i < a.size(); i++) if (a[i] < 0 || a[i] >= int64_t(u.src[0]->shape.size())) return cat("axis ", a[i], " is out of range");
  return same_dtype(u, 0);
}
inline Why leaf_of_device(const UOp& u, Stage) { return u.src.empty() ? "" : src_op(u, 0, {Ops::DEVICE}); }
inline Why buffer(const UOp& u, Stage) { return u.buffer()->dtype == u.dtype ? "" : cat("its buffer holds ", dt(u.buffer()->dtype)); }
// a loop: [end, id, axis kind] (end 0: a reduce over an empty dim gives its identity); a kernel AST's loops are its
// output's (LOOP) and its reduces' (REDUCE) only
inline Why range(const UOp& u, Stage s) {
  const auto& a = u.varg();
  if (a.size() != 3 || a[0] < 0 || a[1] < 0 || a[2] < 0 || a[2] > int64_t(AxisType::WARP)) return "the arg must be [end >= 0, id >= 0, axis kind]";
  if (!is_index(u.dtype)) return cat("an index is int or long, not ", dt(u.dtype));
  // a symbolic dim's range: its extent, at most the bound, is where the loop ends
  if (!u.src.empty() && (u.src[0]->dtype != u.dtype || u.src[0]->vmax > a[0])) return "src[0], the loop's end, must be an index of at most the end";
  if (s == Stage::KERNEL && a[2] != int64_t(AxisType::LOOP) && a[2] != int64_t(AxisType::REDUCE)) return "a kernel AST's ranges are LOOP or REDUCE";
  return "";
}
// a thread id (GPU: [size, 1 global | 2 local, dim]; CPU: [cores, 0]) or a vector lane ([width, id])
inline Why special(const UOp& u, Stage) {
  const auto& a = u.varg();
  bool ok = u.op == Ops::LANE
                ? a.size() == 2 && a[0] >= 1
                : (a.size() == 2 || a.size() == 3) && a[0] >= 1 && a[1] >= 0 && a[1] <= 2 && (a.size() == 2 || (a[2] >= 0 && a[2] <= 2));
  if (!ok) return cat("the arg ", to_string(Shape(a)), " is malformed");
  return is_index(u.dtype) ? "" : cat("an index is int or long, not ", dt(u.dtype));
}
inline Why define_global(const UOp& u, Stage) { return u.iarg() >= 0 ? "" : "a negative parameter number"; }
inline Why define_var(const UOp& u, Stage) {
  if (u.dtype != DType::Int32) return "a variable is an int32";
  auto& a = u.varg();
  return a.size() == 3 && a[0] <= a[1] && a[2] >= 0 ? "" : "the arg must be {min, max, name id} with min <= max";
}
inline Why bind(const UOp& u, Stage) {
  return first({src_op(u, 0, {Ops::DEFINE_VAR}), src_op(u, 1, {Ops::CONST}), src_op(u, 2, {Ops::DEVICE}), same_dtype(u, 0)});
}
inline Why define_local(const UOp& u, Stage) {
  const auto& a = u.varg();
  return (a.size() == 2 || a.size() == 3) && a[0] >= 0 && a[1] >= 1 ? "" : "the arg must be [id, size (, raw)]";
}
// a buffer's address: INDEX(buffer, index (, bool gate)), of the buffer's dtype
inline Why index(const UOp& u, Stage) {
  return first({src_op(u, 0, {Ops::DEFINE_GLOBAL, Ops::DEFINE_LOCAL}), same_dtype(u, 0),
                is_index(u.src[1]->dtype) && u.src[1]->vcount == 1 ? "" : cat("src[1] must be a scalar int or long index, is ", dt(u.src[1]->dtype)),
                u.src.size() < 3 || (u.src[2]->dtype == DType::Bool && u.src[2]->vcount == 1) ? "" : "src[2], the gate, must be a scalar bool"});
}
// LOAD(INDEX (, BARRIERs it waits for)): the address's dtype and width. With an arg, an ldmatrix (1, 2 transposed): a
// vector of fragments from workgroup memory, each lane's address a scalar
inline Why load(const UOp& u, Stage s) {
  if (auto w = first({src_op(u, 0, {Ops::INDEX}), same_dtype(u, 0)}); !w.empty()) return w;
  if (auto* a = std::get_if<int64_t>(&u.arg)) {
    if (*a < 1 || *a > 2 || u.vcount == 1 || u.src[0]->src[0]->op != Ops::DEFINE_LOCAL)
      return "an arg (ldmatrix: 1 or 2) only on a vector load from workgroup memory";
  } else if (u.src[0]->vcount != u.vcount) return cat("loads ", u.vcount, " lanes from an address of ", u.src[0]->vcount);
  if (u.src.size() > 1 && s == Stage::KERNEL) return "a kernel AST's LOAD has one source";
  for (size_t i = 1; i < u.src.size(); i++) if (auto w = src_op(u, i, {Ops::BARRIER}); !w.empty()) return w;
  return "";
}
// STORE(INDEX, value): a value of the address's dtype and width (a workgroup copy's value may be a global INDEX)
inline Why store(const UOp& u, Stage) {
  if (auto w = src_op(u, 0, {Ops::INDEX}); !w.empty()) return w;
  const UOp &idx = *u.src[0], &v = *u.src[1];
  if (u.dtype != DType::Bool) return "a STORE is bool";
  if (v.dtype != idx.dtype) return cat("stores ", dt(v.dtype), " to a ", dt(idx.dtype), " buffer");
  if (v.vcount != idx.vcount) return cat("stores ", v.vcount, " lanes to an address of ", idx.vcount);
  return "";
}
// REDUCE(value, ranges...): [op], ADD, MUL or MAX (WMMA: a tensor-core accumulator, from opts on); over REDUCE ranges
// in a kernel AST (opts add GROUP and LANE ones)
inline Why reduce(const UOp& u, Stage s) {
  if (u.varg().empty() || !reduce_op_ok(u.varg()[0], s != Stage::KERNEL)) return "the arg must start with the reduce op";
  if (auto w = same_dtype(u, 0); !w.empty()) return w;
  if (u.src[0]->vcount != u.vcount) return cat("src[0] has ", u.src[0]->vcount, " lanes, the node ", u.vcount);
  for (size_t i = 1; i < u.src.size(); i++) {
    if (auto w = src_op(u, i, s == Stage::OPTIMIZED ? std::initializer_list<Ops>{Ops::RANGE, Ops::LANE} : std::initializer_list<Ops>{Ops::RANGE});
        !w.empty())
      return w;
    if (s == Stage::KERNEL && u.src[i]->varg()[2] != int64_t(AxisType::REDUCE)) return cat("src[", i, "] is not a REDUCE range");
  }
  return "";
}
inline Why vectorize(const UOp& u, Stage) {
  if (int(u.src.size()) != u.vcount) return cat(u.src.size(), " sources for ", u.vcount, " lanes");
  for (size_t i = 0; i < u.src.size(); i++) {
    if (auto w = same_dtype(u, i); !w.empty()) return w;
    if (u.src[i]->vcount != 1) return cat("src[", i, "] is not a scalar");
  }
  return "";
}
inline Why gep(const UOp& u, Stage) {
  if (u.iarg() < 0 || u.iarg() >= u.src[0]->vcount) return cat("lane ", u.iarg(), " of ", u.src[0]->vcount);
  return first({same_dtype(u, 0), u.vcount == 1 ? "" : "a GEP takes one lane"});
}
// a workgroup barrier after the stores (and earlier barriers) it orders; arg: copy groups left in flight
inline Why barrier(const UOp& u, Stage) {
  if (u.dtype != DType::Bool) return "a BARRIER is bool";
  for (size_t i = 0; i < u.src.size(); i++) if (auto w = src_op(u, i, {Ops::STORE, Ops::BARRIER}); !w.empty()) return w;
  return "";
}
// a warp's exchange: x of the lane (own ^ mask), mask a power of two below 32
inline Why shuffle(const UOp& u, Stage) {
  int64_t m = u.iarg();
  if (m < 1 || m > 16 || (m & (m - 1))) return cat("lane mask ", m, " is not a power of two below 32");
  return first({same_dtype(u, 0), u.vcount == 1 ? "" : "a SHUFFLE takes one lane"});
}
inline Why wmma(const UOp& u, Stage) { return is_float(u.dtype) ? "" : "a tensor-core product accumulates floats"; }
inline Why end(const UOp& u, Stage) { return first({src_op(u, 0, {Ops::RANGE}), u.dtype == DType::Bool ? "" : "an END is bool"}); }
// the linear program's accumulators: DEFINE_ACC(REDUCE), ACC_UPDATE(REDUCE, value) of the reduce's dtype and width
inline Why acc(const UOp& u, Stage) {
  if (auto w = first({src_op(u, 0, {Ops::REDUCE}), same_dtype(u, 0)}); !w.empty()) return w;
  return u.src[0]->vcount == u.vcount ? "" : "the accumulator's width is its REDUCE's";
}

// ---- the table: one row per op ----
struct OpSpec {
  Ops op;
  uint8_t stages = 0;  // the stages it is legal in (0: none, as yet: no pass makes it)
  int8_t min_src = 0, max_src = 0;  // max -1: any number
  ArgKind arg = ArgKind::NONE;
  Rule rule = none;
};
constexpr std::array<OpSpec, size_t(Ops::COUNT_)> make_table() {
  const OpSpec rows[] = {
      {Ops::SINK, ALL & ~L, 0, -1, ArgKind::NONE, sink},
      {Ops::NOOP}, {Ops::IF}, {Ops::ENDIF},  // no pass makes them yet
      {Ops::ASSIGN, T, 2, 2, ArgKind::NONE, assign},
      {Ops::DEFINE_VAR, ALL, 0, 0, ArgKind::VEC, define_var},
      {Ops::BIND, T, 3, 3, ArgKind::NONE, bind},  // realize lowers it to its variable
      // realized first (realize_copies): never reaches the scheduler unrealized, whose walk stops at realized nodes
      {Ops::COPY},
      // lowered before the scheduler (engine/multi.hpp: realize_multi, realize_collectives), as COPY is
      {Ops::MULTI}, {Ops::ALLREDUCE},
      {Ops::CONST, ALL, 0, 1, ArgKind::NUM, const_},
      {Ops::BUFFER, T, 0, 0, ArgKind::BUF, buffer},
      {Ops::DEVICE, T, 0, 0, ArgKind::STR},
      {Ops::CAST, ALL, 1, 1, ArgKind::NONE, cast},
      {Ops::BITCAST, ALL, 1, 1, ArgKind::NONE, cast},
      {Ops::IOTA, T, 0, 1, ArgKind::INT, leaf_of_device},
      {Ops::REDUCE_AXIS, T, 1, 1, ArgKind::VEC, reduce_axis},
      {Ops::RESHAPE, T, 1, -1, ArgKind::VEC, movement}, {Ops::PERMUTE, T, 1, 1, ArgKind::VEC, movement},
      {Ops::EXPAND, T, 1, -1, ArgKind::VEC, movement}, {Ops::PAD, T, 1, -1, ArgKind::VEC, movement},
      {Ops::SHRINK, T, 1, -1, ArgKind::VEC, movement}, {Ops::FLIP, T, 1, 1, ArgKind::VEC, movement},
      {Ops::CONTIGUOUS, T, 1, 1, ArgKind::ID, same_as_src},  // int arg: a parameter's id; {int}: a clone's (Tensor::clone)
      {Ops::DETACH, T, 1, 1, ArgKind::NONE, same_as_src},
      {Ops::GRAD_RULE, T, 1, -1, ArgKind::VEC, same_as_src},  // src[1:] serve autograd only
      {Ops::DEFINE_GLOBAL, KOXL, 0, 0, ArgKind::INT, define_global},
      {Ops::RANGE, KOXL, 0, 1, ArgKind::VEC, range},
      {Ops::INDEX, KOXL, 2, 3, ArgKind::NONE, index},
      {Ops::LOAD, KOXL, 1, -1, ArgKind::OPT_INT, load},
      {Ops::STORE, KOXL, 2, 2, ArgKind::NONE, store},
      {Ops::REDUCE, KOXL, 2, -1, ArgKind::VEC, reduce},  // in the linear program: read from its DEFINE_ACC after the loop
      {Ops::DEFINE_LOCAL, OXL, 0, 0, ArgKind::VEC, define_local},
      {Ops::SPECIAL, OXL, 0, 0, ArgKind::VEC, special},
      {Ops::VECTORIZE, OXL, 2, -1, ArgKind::NONE, vectorize},
      {Ops::GEP, OXL, 1, 1, ArgKind::INT, gep},
      {Ops::BARRIER, OXL, 0, -1, ArgKind::OPT_INT, barrier},
      {Ops::WMMA, OXL, 2, -1, ArgKind::INT, wmma},
      {Ops::SHUFFLE, OXL, 1, 1, ArgKind::INT, shuffle},
      {Ops::LANE, O, 0, 0, ArgKind::VEC, special},  // the expander turns it into vectors
      {Ops::END, L, 1, 1, ArgKind::NONE, end},
      {Ops::DEFINE_ACC, L, 1, 1, ArgKind::NONE, acc},
      {Ops::ACC_UPDATE, L, 2, 2, ArgKind::NONE, acc},
  };
  std::array<OpSpec, size_t(Ops::COUNT_)> t{};
  for (size_t i = 0; i < t.size(); i++) {
    Ops o = Ops(i);
    int8_t n = is_unary(o) ? 1 : is_binary(o) ? 2 : 3;
    t[i] = is_alu(o) ? OpSpec{o, ALL, n, n, ArgKind::NONE, alu} : OpSpec{Ops::COUNT_};  // COUNT_: no row yet
  }
  for (auto& r : rows) t[size_t(r.op)] = r;
  return t;
}
inline constexpr auto table = make_table();
constexpr bool every_op_has_a_row() {
  for (size_t i = 0; i < table.size(); i++) if (table[i].op != Ops(i)) return false;
  return true;
}
static_assert(every_op_has_a_row(), "spec.hpp: every op needs a row in the spec table");

// codegen's lowering passes (codegen/codegen.hpp) after which the legal op set changes: the stage their output is in
inline constexpr std::pair<const char*, Stage> stage_after[] = {{"expand_lanes", Stage::EXPANDED}};

// u and its sources two levels down, as print_graph prints them
inline std::string snippet(const UOp& u) {
  std::vector<const UOp*> nodes;
  auto add = [&](auto& self, const UOp* x, int depth) -> void {
    if (std::find(nodes.begin(), nodes.end(), x) != nodes.end()) return;
    if (depth < 2) for (auto& s : x->src) self(self, s.get(), depth + 1);
    nodes.push_back(x);
  };
  add(add, &u, 0);
  std::string out;
  for (size_t i = 0; i < nodes.size(); i++) {
    const UOp* x = nodes[i];
    out += cat(x == &u ? "> %" : "  %", i, " = ", op_name(x->op), " ", dt(x->dtype), x->vcount > 1 ? cat("x", x->vcount) : "", " [");
    for (size_t j = 0; j < x->src.size(); j++) {
      auto it = std::find(nodes.begin(), nodes.end(), x->src[j].get());
      out += cat(j ? ", " : "", it == nodes.end() ? std::string(op_name(x->src[j]->op)) : cat("%", it - nodes.begin()));
    }
    out += cat("] ", arg_str(x->arg), x->shape.empty() ? "" : " " + to_string(x->shape), "\n");
  }
  return out;
}
[[noreturn]] inline void fail(const UOp& u, Stage s, std::string_view pass, const std::string& why) {
  throw SpecError(
      s, std::string(pass), u.op,
      cat("tinygrad: IR spec of stage '", stage_name(s), "' broken after pass '", pass, "': ", op_name(u.op), ": ", why, "\n", snippet(u)));
}
// u against its row of stage s's spec
inline void check_node(const UOp& u, Stage s, std::string_view pass) {
  const OpSpec& r = table[size_t(u.op)];
  if (!at(s, r.stages)) fail(u, s, pass, "not legal in this stage");
  if (int(u.src.size()) < r.min_src || (r.max_src >= 0 && int(u.src.size()) > r.max_src))
    fail(u, s, pass,
         cat(u.src.size(), " sources, must be ", int(r.min_src),
             r.max_src == r.min_src ? ""
             : r.max_src < 0        ? " or more"
                                    : cat(" to ", int(r.max_src))));
  if (!arg_is(u.arg, r.arg)) fail(u, s, pass, cat("the arg must be ", arg_kind_name(r.arg), ", is ", arg_str(u.arg)));
  if (u.vcount < 1 || (u.vcount > 1 && s <= Stage::KERNEL)) fail(u, s, pass, cat(u.vcount, " lanes: vectors come with opts"));
  if (auto w = r.rule(u, s); !w.empty()) fail(u, s, pass, w);
}
}  // namespace spec

// checks are on: SPEC=1, DEBUG>=3, or flags().spec set (the tests)
inline bool spec_enabled() { return flags().spec || flags().debug >= 3; }

// every node of a graph against stage s's spec (tensor stage: realized nodes are leaves, their sources unchecked);
// SpecError naming the stage, the pass that made the graph, the op and the node
inline void verify_graph(const UOpRef& sink, Stage s, std::string_view pass) {
  auto descend = [s](const UOp* u) { return s != Stage::TENSOR || !is_leaf(u); };
  for (auto& u : toposort(sink, descend)) {
    if (s == Stage::TENSOR && u->realized) continue;  // a realized node is a buffer
    spec::check_node(*u, s, pass);
  }
}

// the linear program: every node against the linear stage's spec, and the program rules: loops nest (an END closes
// the innermost open RANGE, all close), and a node's sources come before it and are still in scope (the renderer
// declares a value where its node stands). Constants are printed inline; a REDUCE is read from its DEFINE_ACC, which
// names the REDUCE before it stands, and is updated (ACC_UPDATE) and read (the REDUCE) in its scope.
inline void verify_linear(const std::vector<UOpRef>& lin, std::string_view pass = "linearize") {
  using spec::fail;
  const Stage s = Stage::LINEAR;
  std::unordered_map<const UOp*, size_t> live;  // node -> the loop depth it was declared at, while in scope
  std::vector<const UOp*> open;                 // the RANGEs open, outermost first
  std::vector<std::vector<const UOp*>> declared(1);  // per open loop (and the top level): the nodes declared in it
  std::unordered_map<const UOp*, const UOp*> acc;    // REDUCE -> its DEFINE_ACC
  for (auto& u : lin) {
    spec::check_node(*u, s, pass);
    if (live.count(u.get())) fail(*u, s, pass, "stands twice in the program");
    bool reads_later = u->op == Ops::DEFINE_ACC || u->op == Ops::ACC_UPDATE || u->op == Ops::REDUCE;
    if (u->op == Ops::DEFINE_ACC) acc[u->src[0].get()] = u.get();
    if (u->op == Ops::ACC_UPDATE || u->op == Ops::REDUCE) {
      auto it = acc.find(u->op == Ops::REDUCE ? u.get() : u->src[0].get());
      if (it == acc.end() || !live.count(it->second)) fail(*u, s, pass, "its REDUCE's DEFINE_ACC is not declared before it in an enclosing scope");
    }
    for (size_t i = 0; i < u->src.size(); i++) {
      const UOp* x = u->src[i].get();
      if (x->op == Ops::CONST) { spec::check_node(*x, s, pass); continue; }
      if (reads_later && (u->op == Ops::REDUCE || i == 0)) continue;
      if (!live.count(x)) fail(*u, s, pass, cat("src[", i, "] (", op_name(x->op), ") is not declared before it in an enclosing scope"));
    }
    if (u->op == Ops::END) {
      if (open.empty() || open.back() != u->src[0].get()) fail(*u, s, pass, "does not close the innermost open RANGE");
      for (auto* x : declared.back()) live.erase(x);
      declared.pop_back();
      open.pop_back();
      continue;
    }
    live[u.get()] = open.size();
    if (u->op == Ops::RANGE) { open.push_back(u.get()); declared.emplace_back(); }  // a loop's index: in scope inside it
    declared.back().push_back(u.get());
  }
  if (!open.empty()) fail(*open.back(), s, pass, "a RANGE the program never closes");
}

// codegen's checks of one kernel: its AST (stage kernel), what its opts made of it (stage optimized), each lowering
// pass's output, the linear program. Off (spec_enabled() false when it is made), each is one branch.
class SpecCheck {
 public:
  SpecCheck(const UOpRef& ast, const UOpRef& optimized) : on_(spec_enabled()) {
    if (!on_) return;
    verify_graph(ast, Stage::KERNEL, "schedule");
    verify_graph(optimized, Stage::OPTIMIZED, "opts");
  }
  void after(const char* pass, const UOpRef& sink) {
    if (!on_) return;
    for (auto& [name, st] : spec::stage_after) if (std::string_view(name) == pass) stage_ = st;
    verify_graph(sink, stage_, pass);
  }
  void linear(const std::vector<UOpRef>& lin) { if (on_) verify_linear(lin); }

 private:
  bool on_;
  Stage stage_ = Stage::OPTIMIZED;
};

}  // namespace tinygrad::detail
