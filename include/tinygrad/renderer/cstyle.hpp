#pragma once
// the C-style renderer family: a linear kernel (from codegen/linearize.hpp) printed as source.
// A language is a traits struct (Lang), rules (one per op) and a few spellings (types, constants, vector accesses);
// C for the CPU is the base, a GPU language replaces only the rules it spells differently.
#include <array>
#include <functional>
#include <set>
#include "../uop/ops.hpp"
#include "../uop/symbolic.hpp"

namespace tinygrad::detail {

struct Renderer {
  std::string device;
  int threads = 1;          // CPU cores for the THREAD axis
  bool has_local = false;   // GPU: loop axes become global/local ids (codegen's gpudims), workgroup memory and barriers
  bool tensor_cores = false;  // mma.sync m16n8k16 for float16/bfloat16 (NVIDIA sm_80+): the TC opt
  bool wgmma = false;         // and Hopper's warpgroup MMA (sm_90a): TC's wgmma tiles
  bool aligned_vectors = false;  // vector loads and stores need an address aligned to the vector's size
  int vector_registers = 16;     // CPU: registers a register tile of accumulators may fill
  int warp = 0;                  // GPU: the lanes of a warp that exchange values (SHUFFLE); 0: none
  int64_t global_max[3] = {0x7fffffff, 65535, 65535}, local_max[3] = {1024, 1024, 64}, max_threads = 1024;
  virtual ~Renderer() = default;
  virtual int64_t vector_lanes(DType dt) const = 0;  // lanes for VECTOR opts (1: none)
  virtual std::string render(const std::string& name, const std::vector<UOpRef>& lin) const = 0;
};

class CStyleRenderer : public Renderer {
 public:
  // an INDEX with a mask that can be false (one folded to true, a padded tile's row always in range, is none)
  static bool masked(const UOp& idx) { return idx.src.size() > 2 && !idx.src[2]->is_const(1); }
  // a raw workgroup buffer (the arg's third entry) holds elements as memory does (a staged TC tile), else values
  static bool raw_local(const UOp& buf) { return buf.op == Ops::DEFINE_LOCAL && buf.varg().size() > 2 && buf.varg()[2]; }
  // the dynamic workgroup memory a raw buffer takes (GPU renderers place raw buffers there, 16-byte aligned)
  static int64_t dynamic_smem(const UOp& buf) { return raw_local(buf) ? (buf.varg()[1] * itemsize(buf.dtype) + 15) / 16 * 16 : 0; }
  // a vector value kept in a register (see CAST's vector rule)
  static constexpr const char* kRegC =
      "#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)\n#define TG_REG(T, v) ({T r_ = (v); __asm__(\"\" : \"+x\"(r_)); r_;})\n"
      "#elif defined(__GNUC__) && !defined(__clang__) && defined(__aarch64__)\n#define TG_REG(T, v) ({T r_ = (v); __asm__(\"\" : \"+w\"(r_)); r_;})\n"
      "#else\n#define TG_REG(T, v) (v)\n#endif\n";
  // float <-> half / bfloat16 by integer bit work (TG_FN: the language's helper prefix); half to float by the
  // compiler's _Float16 where the CPU converts in hardware (x86 F16C: vcvtph2ps, exact for every half, also vectorised;
  // AArch64: fcvt), or F16C's builtin where the compiler has no _Float16 (clang 14): a dequantized fp16 scale took ~20
  // branchy ops and a loop for subnormals
  static constexpr const char* kHalfC =
      "#if defined(__FLT16_MAX__) && (defined(__F16C__) || defined(__aarch64__))\n"
      "TG_FN float tg_h2f(unsigned short h) { _Float16 x; __builtin_memcpy(&x, &h, 2); return (float)x; }\n"
      "#elif defined(__F16C__)\n"  // clang 14 has no _Float16 on x86: the instruction by its builtin
      "typedef short tg_h8 __attribute__((vector_size(16)));\n"
      "TG_FN float tg_h2f(unsigned short h) { tg_h8 v = {(short)h}; return __builtin_ia32_vcvtph2ps(v)[0]; }\n"
      "#else\n"
      "TG_FN float tg_h2f(unsigned short h) { unsigned int s = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, r;\n"
      "  if (e == 0) { if (m == 0) r = s; else { e = 113; while (!(m & 0x400u)) { m <<= 1; e--; } m &= 0x3ffu; r = s | (e << 23) | (m << 13); } }\n"
      "  else if (e == 31) r = s | 0x7f800000u | (m << 13); else r = s | ((e + 112) << 23) | (m << 13);\n"
      "  return tg_u2f(r); }\n"
      "#endif\n"
      "TG_FN unsigned short tg_f2h(float f) { unsigned int x = tg_f2u(f);\n"
      "  unsigned int s = (x >> 16) & 0x8000u, m = x & 0x7fffffu; int e = (int)((x >> 23) & 0xffu) - 112;\n"
      "  if (((x >> 23) & 0xffu) == 0xffu) return (unsigned short)(s | 0x7c00u | (m ? 0x200u : 0u));\n"
      "  if (e >= 31) return (unsigned short)(s | 0x7c00u);\n"
      "  if (e <= 0) { if (e < -10) return (unsigned short)s; m |= 0x800000u; unsigned int sh = (unsigned int)(14 - e), hv = m >> sh, rem = m & "
      "((1u << sh) - 1u), mid = 1u << (sh - 1u);\n"
      "    if (rem > mid || (rem == mid && (hv & 1u))) hv++; return (unsigned short)(s | hv); }\n"
      "  unsigned int hv = s | ((unsigned int)e << 10) | (m >> 13), rem = m & 0x1fffu; if (rem > 0x1000u || (rem == 0x1000u && (hv & 1u))) hv++; "
      "return (unsigned short)hv; }\n";
  static constexpr const char* kBF16C =
      "TG_FN float tg_b2f(unsigned short h) { return tg_u2f((unsigned int)h << 16); }\n"
      "TG_FN unsigned short tg_f2b(float f) { unsigned int x = tg_f2u(f); if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | "
      "0x40u);\n"
      "  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); }\n";
  // the per-language table
  struct Lang {
    std::string kernel_prefix{};   // before the return type
    std::string buffer_prefix{};   // before a buffer's pointer type
    std::string restrict_kw = "restrict";
    std::string fn_prefix = "static inline";  // helper functions in the prelude
    std::string u2f, f2u;          // bodies of the float <-> bits helpers (argument u / f)
    std::string gid[3]{}, lid[3]{};  // how a global / local id is spelled
    std::string smem_prefix{}, barrier{};  // workgroup memory declaration, workgroup barrier
    std::string shuffle_xor{};     // x of the warp's lane own ^ mask: the call up to its arguments "x, mask)"; empty: none
    std::string vec[3];            // a vector value: vec[0] type vec[1] lanes, vec[2]: C (float4){a, b}
    bool half_as_float = true;     // hold half/bfloat16 values in float, round after each op
    std::string math_prefix = "__builtin_";  // math functions: C __builtin_sqrtf, CUDA sqrtf, OpenCL sqrt
    bool math_f = true;            // a float's math function ends in f
    const char* half_fns = kHalfC;  // tg_h2f / tg_f2h: float <-> half bits (the portable ones: integer bit work)
    const char* bf16_fns = kBF16C;  // tg_b2f / tg_f2b: float <-> bfloat16 bits
  } lang{.u2f = "float f; __builtin_memcpy(&f, &u, 4); return f;",
         .f2u = "unsigned int u; __builtin_memcpy(&u, &f, 4); return u;",
         .vec = {"(", "){", "}"}};

  // what the rules see and write while one kernel renders
  struct Ctx {
    std::unordered_map<const UOp*, std::string> r;  // a node's name (or inline expression)
    std::vector<std::string> params;
    std::vector<DType> param_dtypes;
    std::vector<int64_t> param_ids;
    std::vector<std::string> vars;  // the variables' names, in the order a launch passes their values
    std::set<std::string> typedefs;
    std::vector<std::string> fns;   // helper functions the rules use, in the order they need (after the types)
    void need(const std::string& f) { if (std::find(fns.begin(), fns.end(), f) == fns.end()) fns.push_back(f); }
    std::set<int64_t> stored;       // params written by the kernel
    int64_t local[3] = {1, 1, 1};   // local size, from the local ids
    int64_t smem = 0;               // dynamic workgroup memory handed out (bytes)
    bool uses_half = false, uses_bf16 = false, uses_double = false;
    std::unordered_map<std::string, int> counts;
    std::unordered_map<std::string, std::vector<std::string>> lanes;  // a rendered vector literal -> its lanes
    std::set<const UOp*> prefetch;  // loads that prefetch ahead of themselves (CRenderer::plan)
    std::string body;
    int depth = 1;                  // open blocks (RANGE ... END)
    std::string name(const std::string& p) { return cat(p, counts[p]++); }
    void line(const std::string& s) { body += std::string(size_t(depth) * 2, ' ') + s + "\n"; }
  };
  // an ALU op (or a CAST) on scalars, or on whole vectors (vc lanes); u: its node, or null for an accumulator's update
  // (its sources' value ranges are unknown: the guards assume the worst)
  struct Alu { Ops op; DType dt; int vc; const std::vector<std::string>& a; const std::vector<DType>& dts; const UOp* u; Ctx& c; };
  using AluRule = std::function<std::string(const Alu&)>;
  using Rule = std::function<void(Ctx&, const UOp&)>;
  // The rules, one per op (as tinygrad's cstyle: code_for_op and string_rewrite). An ALU op's (and CAST's) is its
  // expression on scalars: alu_expr applies it per lane, or once where whole_vector has a rule that gives an
  // expression, and rounds halves. Any other op's writes its lines and names the node in c.r. A language replaces
  // only the rules it spells differently.
  std::array<AluRule, size_t(Ops::COUNT_)> code_for_op, whole_vector;
  std::array<Rule, size_t(Ops::COUNT_)> rules;

  CStyleRenderer();
  CStyleRenderer(const CStyleRenderer&) = delete;  // NOTE: the rules hold `this`
  CStyleRenderer& operator=(const CStyleRenderer&) = delete;

  // NOTE: a loop over the linear list, not a graph_rewrite: the order is the linearizer's, and control flow is the
  // ctx's block depth (RANGE opens a block, END closes it)
  std::string render(const std::string& name, const std::vector<UOpRef>& lin) const override {
    Ctx c;
    plan(c, lin);
    for (auto& u : lin) {
      value_type(u->dtype, u->vcount, c);  // notes the types the prelude needs
      if (auto& rule = rules[size_t(u->op)]) rule(c, *u);
      else if (code_for_op[size_t(u->op)]) alu_rule(c, *u);
      else throw Error(std::string("tinygrad: C renderer cannot render ") + op_name(u->op));
    }
    return prelude(c) + kernel_decl(name, c) + " {\n" + params_prelude(c) + c.body + "}\n";
  }

 protected:
  virtual void plan(Ctx&, const std::vector<UOpRef>&) const {}  // a language's look at the whole kernel before it renders
  // constants are not in the linear list: they print inline where used
  std::string get(Ctx& c, const UOp& u) const {
    if (auto it = c.r.find(&u); it != c.r.end()) return it->second;
    if (u.op == Ops::CONST) return const_str(u);
    throw Error(std::string("tinygrad: C renderer: ") + op_name(u.op) + " used before it was defined");
  }
  // an ALU op's value: a variable
  void alu_rule(Ctx& c, const UOp& x) const {
    std::vector<std::string> a;
    std::vector<DType> dts;
    for (auto& s : x.src) { a.push_back(get(c, *s)); dts.push_back(s->dtype); }
    std::string v = c.name("alu");
    c.line(cat(value_type(x.dtype, x.vcount, c), " ", v, " = ", alu_expr(x.op, x.dtype, x.vcount, a, dts, &x, c), ";"));
    c.r[&x] = v;
  }
  // an ALU op on scalars or vectors, rounded to half precision where the result is half (u: the op, or null)
  std::string alu_expr(Ops op, DType dt, int vc, const std::vector<std::string>& a, const std::vector<DType>& dts, const UOp* u, Ctx& c) const {
    auto& rule = code_for_op[size_t(op)];
    if (!rule) throw Error(std::string("tinygrad: C renderer has no code for ") + op_name(op));
    if (vc == 1) return round_half(dt, rule({op, dt, 1, a, dts, u, c}));
    bool bool_ok = op == Ops::CMPLT || op == Ops::CMPNE || op == Ops::CMPEQ || op == Ops::WHERE;  // (their rules take bool lanes)
    if (auto& w = whole_vector[size_t(op)]; w && dt != DType::Float16 && dt != DType::BFloat16 && (dt != DType::Bool || bool_ok))
      if (std::string e = w({op, dt, vc, a, dts, u, c}); !e.empty()) return e;
    std::vector<std::string> lanes;
    for (int i = 0; i < vc; i++) {
      std::vector<std::string> li;
      for (auto& s : a) { auto it = c.lanes.find(s); li.push_back(it != c.lanes.end() ? it->second[size_t(i)] : lane(s, i)); }
      lanes.push_back(round_half(dt, rule({op, dt, 1, li, dts, u, c})));
    }
    return vec(value_type(dt, vc, c), lanes);
  }
  std::string round_half(DType dt, const std::string& e) const {
    if (dt == DType::Float16) return "tg_h2f(tg_f2h(" + e + "))";
    if (dt == DType::BFloat16) return "tg_b2f(tg_f2b(" + e + "))";
    return e;
  }
  std::string broadcast(const std::string& T, const std::string& x, int n) const { return vec(T, std::vector<std::string>(size_t(n), x)); }
  static std::string join(const std::vector<std::string>& xs) {
    std::string s;
    for (size_t i = 0; i < xs.size(); i++) s += (i ? ", " : "") + xs[i];
    return s;
  }
  // vectors: GCC vector extensions in C; the GPU languages override the accesses
  std::string vec(const std::string& T, const std::vector<std::string>& xs) const { return lang.vec[0] + T + lang.vec[1] + join(xs) + lang.vec[2]; }
  virtual std::string lane(const std::string& v, int i) const { return cat(v, "[", i, "]"); }
  virtual std::string vload(const std::string& v, const std::string& T, const std::string& ptr, int) const {
    return cat("__builtin_memcpy(&", v, ", ", ptr, ", sizeof(", T, "));");
  }
  virtual std::string vstore(const std::string& ptr, const std::string& T, const std::string& v, int) const {
    return cat("__builtin_memcpy(", ptr, ", &", v, ", sizeof(", T, "));");
  }
  // a vector's element type (bools are held as ints) and its name: float4, uint4, long2
  std::string vector_elem(DType dt) const { return dt == DType::Bool ? "int" : scalar_type(dt); }
  // one word (a C typedef's name), as OpenCL spells them: uchar8, char8, ushort8, uint8, long4, ulong4
  static std::string vector_name(const std::string& elem, int vc) {
    std::string e = elem == "signed char" ? "char" : elem == "long long" ? "long" : elem == "unsigned long long" ? "ulong" : elem;
    if (e.rfind("unsigned ", 0) == 0) e = "u" + e.substr(9);
    return cat(e, vc);
  }
  // C declares its vector types as GCC vectors; the GPU languages have them built in
  virtual std::string vector_type(DType dt, int vc, Ctx& c) const {
    std::string base = vector_elem(dt), name = vector_name(base, vc);
    int bytes = (dt == DType::Bool ? 4 : base == "float" ? 4 : itemsize(dt)) * vc;
    c.typedefs.insert(cat("typedef ", base, " ", name, " __attribute__((vector_size(", bytes, ")));"));
    return name;
  }

  // how a value of dtype dt is held in a variable
  virtual std::string scalar_type(DType dt) const {
    if ((dt == DType::Float16 || dt == DType::BFloat16) && lang.half_as_float) return "float";
    if (dt == DType::Bool) return "_Bool";
    return info(dt).cname;
  }
  // how an element is stored in memory (a bool in a byte: loads read any nonzero byte as true)
  virtual std::string storage_type(DType dt) const {
    if (dt == DType::Float16 || dt == DType::BFloat16) return "unsigned short";
    if (dt == DType::Bool) return scalar_type(DType::UInt8);
    return scalar_type(dt);
  }
  std::string value_type(DType dt, int vc, Ctx& c) const {
    if (dt == DType::Float16) c.uses_half = true;
    if (dt == DType::BFloat16) c.uses_bf16 = true;
    if (dt == DType::Float64) c.uses_double = true;
    return vc == 1 ? scalar_type(dt) : vector_type(dt, vc, c);
  }
  static bool is_half(DType dt) { return dt == DType::Float16 || dt == DType::BFloat16; }
  // a bitcast to or from a half or bfloat16 (held as a float where lang.half_as_float)
  bool half_bits(const UOp& x) const { return lang.half_as_float && (is_half(x.dtype) || is_half(x.src[0]->dtype)); }
  std::string load_value(DType dt, const std::string& e) const {
    if (dt == DType::Bool) return "(" + e + "!=0)";
    if (dt == DType::Float16) return "tg_h2f(" + e + ")";
    if (dt == DType::BFloat16) return "tg_b2f(" + e + ")";
    return e;
  }
  std::string store_value(DType dt, const std::string& e) const {
    if (dt == DType::Float16) return "tg_f2h(" + e + ")";
    if (dt == DType::BFloat16) return "tg_f2b(" + e + ")";
    return e;
  }
  virtual std::string render_const(double v, DType dt) const {
    if (is_float(dt)) {
      bool f = dt != DType::Float64;
      if (std::isnan(v) || std::isinf(v)) return nonfinite(v, f);
      char b[64];
      std::snprintf(b, sizeof b, f ? "%.9g" : "%.17g", v);
      std::string s = b;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s + (f ? "f" : "");
    }
    return render_int(int64_t(v), dt);
  }
  // an int constant held as by wrap_int (a uint64 as its bit pattern)
  virtual std::string render_int(int64_t v, DType dt) const {
    if (dt == DType::Bool) return v != 0 ? "1" : "0";
    if (dt == DType::Int64) return v == INT64_MIN ? "(-9223372036854775807ll-1)" : cat(v, "ll");
    if (dt == DType::UInt64) return cat(uint64_t(v), "ull");
    if (dt == DType::UInt32) return cat(uint64_t(v), "u");
    if (dt == DType::Int32 && v == INT32_MIN) return "(-2147483647-1)";
    return cat(v);
  }
  std::string const_str(const UOp& u) const {
    auto* i = std::get_if<int64_t>(&u.arg);
    return i && !is_float(u.dtype) ? render_int(*i, u.dtype) : render_const(u.const_value(), u.dtype);
  }
  virtual std::string nonfinite(double v, bool f32) const {
    if (std::isnan(v)) return f32 ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
    return std::string(v < 0 ? "-" : "") + (f32 ? "__builtin_inff()" : "__builtin_inf()");
  }

  // ---- defined results on every input (the op table in uop/ops.hpp says which; constants fold the same way) ----
  // C leaves int division by 0, MIN / -1, signed overflow, shifts past the width and float -> int of values out of
  // range undefined: such an op gets a guard, or computes in unsigned, unless its sources' value ranges rule the case
  // out (index math: constant divisors > 0, small sums), so the usual kernel renders as plain C. u: the op (or null).
  static bool may_be(const UOp* u, size_t i, int64_t v) { return !u || (u->src[i]->vmin <= v && v <= u->src[i]->vmax); }
  // C computes an int op in int for narrower types (promotion), else in the type itself
  static DType compute_type(DType dt) { return itemsize(dt) < 4 ? DType::Int32 : dt; }
  // the exact result of a + b, a * b, -a or a << b may leave the signed type C computes it in
  static bool may_overflow(Ops op, DType dt, const UOp* u) {
    DType ct = compute_type(dt);
    if (is_float(dt) || dt == DType::Bool || is_unsigned(ct)) return false;
    if (!u || op == Ops::MULACC) return true;
    const UOp &a = *u->src[0], &b = *u->src[op == Ops::NEG ? 0 : 1];
    detail::i128 lo, hi;
    if (op == Ops::ADD) { lo = detail::i128(a.vmin) + b.vmin; hi = detail::i128(a.vmax) + b.vmax; }
    else if (op == Ops::NEG) { lo = -detail::i128(a.vmax); hi = -detail::i128(a.vmin); }
    else if (op == Ops::MUL) {
      detail::i128 p[4] = {detail::i128(a.vmin) * b.vmin, detail::i128(a.vmin) * b.vmax, detail::i128(a.vmax) * b.vmin,
                           detail::i128(a.vmax) * b.vmax};
      lo = *std::min_element(p, p + 4); hi = *std::max_element(p, p + 4);
    } else if (op == Ops::SHL) {
      if (a.vmin < 0 || b.vmin < 0 || b.vmax >= itemsize(dt) * 8) return true;
      lo = 0; hi = detail::i128(a.vmax) << b.vmax;
    } else return false;
    return lo < detail::int_min(ct) || hi > detail::int_max(ct);
  }
  // the shift count (source 1) may be outside [0, bits)
  static bool shift_out(DType dt, const UOp* u) { return !u || u->src[1]->vmin < 0 || u->src[1]->vmax >= itemsize(dt) * 8; }
  // a division that may divide by 0, or MIN by -1 (narrower ints compute in int: MIN / -1 fits)
  static bool div_zero(const UOp* u) { return may_be(u, 1, 0); }
  static bool div_neg1(DType dt, const UOp* u) {
    return itemsize(dt) >= 4 && !is_unsigned(dt) && may_be(u, 1, -1) && may_be(u, 0, detail::int_min(dt));
  }
  // an int op computed in C's unsigned type of the same width, converted back: it wraps (the conversion is defined by
  // C++20 and, as modular, by gcc, clang, nvcc and OpenCL). T: the type, U: the cast to the unsigned type
  std::pair<std::string, std::string> wrap_types(const Alu& x) const {
    // NOTE: cat, not "(" + string: gcc 12 at -O2 warns (-Wrestrict, a false positive) on that form
    return {value_type(x.dt, x.vc, x.c), cat("(", value_type(itemsize(x.dt) == 8 ? DType::UInt64 : DType::UInt32, x.vc, x.c), ")")};
  }
  // rule f, computed in unsigned where the op may overflow (a shift's count stays as it is)
  AluRule or_wrapped(AluRule f) const {
    return [this, f](const Alu& x) {
      if (!may_overflow(x.op, x.dt, x.u)) return f(x);
      auto [T, U] = wrap_types(x);
      std::vector<std::string> ua;
      for (size_t i = 0; i < x.a.size(); i++) ua.push_back(x.op == Ops::SHL && i == 1 ? x.a[i] : U + x.a[i]);
      return "((" + T + ")" + f({x.op, x.dt, x.vc, ua, x.dts, x.u, x.c}) + ")";
    };
  }
  // a shift count inside [0, bits)
  std::string count_ok(const Alu& x) const { return cat("((", scalar_type(DType::UInt64), ")", x.a[1], "<", itemsize(x.dt) * 8, ")"); }

  virtual std::string prelude(const Ctx& c) const {
    std::string s;
    for (auto& t : c.typedefs) s += t + "\n";
    for (auto& f : c.fns) s += f;
    bool h = c.uses_half, b = c.uses_bf16;
    for (auto d : c.param_dtypes) { h |= d == DType::Float16; b |= d == DType::BFloat16; }
    if (h || b)
      s += lang.fn_prefix + " float tg_u2f(unsigned int u) { " + lang.u2f + " }\n" + lang.fn_prefix + " unsigned int tg_f2u(float f) { " + lang.f2u +
           " }\n";
    for (auto [use, code] : {std::pair{h, lang.half_fns}, std::pair{b, lang.bf16_fns}}) {
      if (!use) continue;
      std::string t = code;
      for (size_t at; (at = t.find("TG_FN")) != std::string::npos;) t.replace(at, 5, lang.fn_prefix);
      s += t;
    }
    return s;
  }
  virtual std::string kernel_decl(const std::string& name, const Ctx& c) const {
    return cat(lang.kernel_prefix, "void ", name, "(", signature(c), ")");
  }
  virtual std::string signature(const Ctx&) const { return "void** bufs, const long long* vals, int core_id, int ncores"; }
  virtual std::string params_prelude(const Ctx& c) const {
    std::string s;
    for (size_t i = 0; i < c.params.size(); i++)
      s += cat("  ", c.params[i], " = (", storage_type(c.param_dtypes[i]), "*)bufs[", c.param_ids[i], "];\n");
    for (size_t j = 0; j < c.vars.size(); j++) s += cat("  const int ", c.vars[j], " = (int)vals[", j, "];\n");
    return s + "  (void)vals; (void)core_id; (void)ncores;\n";
  }

};

// C for the CPU: the base rules
inline CStyleRenderer::CStyleRenderer() {
  auto S = [this](Ctx& c, const UOp& x, size_t i) { return get(c, *x.src[i]); };
  auto set = [](auto& table, std::initializer_list<std::pair<Ops, typename std::decay_t<decltype(table)>::value_type>> rs) {
    for (auto& [op, f] : rs) table[size_t(op)] = f;
  };
  auto infix = [](const char* o) { return AluRule([o](const Alu& x) { return "(" + x.a[0] + o + x.a[1] + ")"; }); };
  auto math = [this](const char* fn) {
    return AluRule(
        [this, fn](const Alu& x) { return cat(lang.math_prefix, fn, lang.math_f && x.dt != DType::Float64 ? "f" : "", "(", x.a[0], ")"); });
  };
  set(code_for_op,
      {
          {Ops::EXP2, math("exp2")},
          {Ops::LOG2, math("log2")},
          {Ops::SIN, math("sin")},
          {Ops::SQRT, math("sqrt")},
          {Ops::TRUNC, math("trunc")},
          {Ops::RECIPROCAL, [](const Alu& x) { return cat("(1", is_float(x.dt) && x.dt != DType::Float64 ? ".0f" : ".0", "/", x.a[0], ")"); }},
          {Ops::NEG, or_wrapped([](const Alu& x) { return (x.dt == DType::Bool ? "(!" : "(-") + x.a[0] + ")"; })},
          {Ops::ADD, or_wrapped(infix("+"))},
          {Ops::MUL, or_wrapped(infix("*"))},
          {Ops::FDIV, infix("/")},
          {Ops::IDIV,
           [this](const Alu& x) {
             std::string e = "(" + x.a[0] + "/" + x.a[1] + ")";
             if (div_neg1(x.dt, x.u)) {
               auto [T, U] = wrap_types(x);
               e = cat("((", x.a[1], "==-1)?((", T, ")(-", U, x.a[0], ")):", e, ")");
             }
             return div_zero(x.u) ? cat("((", x.a[1], "==0)?0:", e, ")") : e;
           }},
          {Ops::MOD,
           [](const Alu& x) {
             std::string cond = div_zero(x.u) ? "(" + x.a[1] + "==0)" : "";
             if (div_neg1(x.dt, x.u)) cond += (cond.empty() ? "(" : "||(") + x.a[1] + "==-1)";
             return cond.empty() ? "(" + x.a[0] + "%" + x.a[1] + ")" : cat("(", cond, "?0:(", x.a[0], "%", x.a[1], "))");
           }},
          {Ops::MAX,
           [](const Alu& x) {
             auto &a = x.a[0], &b = x.a[1];
             return is_float(x.dt) ? cat("((", a, "!=", a, "||", a, ">", b, ")?", a, ":", b, ")") : cat("((", a, ">", b, ")?", a, ":", b, ")");
           }},
          {Ops::CMPLT, infix("<")},
          {Ops::CMPNE, infix("!=")},
          {Ops::CMPEQ, infix("==")},
          {Ops::AND, infix("&")},
          {Ops::OR, infix("|")},
          {Ops::XOR, infix("^")},
          {Ops::SHL,
           [this, shl = or_wrapped(infix("<<"))](const Alu& x) { return shift_out(x.dt, x.u) ? cat("(", count_ok(x), "?", shl(x), ":0)") : shl(x); }},
          {Ops::SHR,
           [this](const Alu& x) {  // a count past the width fills with the sign
             if (!shift_out(x.dt, x.u)) return "(" + x.a[0] + ">>" + x.a[1] + ")";
             if (is_unsigned(x.dt)) return cat("(", count_ok(x), "?(", x.a[0], ">>", x.a[1], "):0)");
             return cat("(", x.a[0], ">>(", count_ok(x), "?", x.a[1], ":", itemsize(x.dt) * 8 - 1, "))");
           }},
          {Ops::WHERE, [](const Alu& x) { return "(" + x.a[0] + "?" + x.a[1] + ":" + x.a[2] + ")"; }},
          {Ops::MULACC, or_wrapped([](const Alu& x) { return "((" + x.a[0] + "*" + x.a[1] + ")+" + x.a[2] + ")"; })},
          // float -> int: NaN -> 0, +-inf and values out of range saturate, the rest truncates toward zero
          {Ops::CAST,
           [this](const Alu& x) {
             const std::string &a = x.a[0], T = scalar_type(x.dt);
             if (x.dt == DType::Bool) return "(" + a + "!=0)";
             if (!is_float(x.dts[0]) || is_float(x.dt)) return "((" + T + ")" + a + ")";
             int digits = itemsize(x.dt) * 8 - !is_unsigned(x.dt);
             int64_t hi = x.dt == DType::UInt64 ? -1 : detail::int_max(x.dt);  // as by wrap_int
             return cat("((", a, "!=", a, ")?0:(", a, "<=", render_const(is_unsigned(x.dt) ? 0.0 : -std::ldexp(1.0, digits), x.dts[0]), ")?",
                        render_int(detail::int_min(x.dt), x.dt), ":(", a, ">=", render_const(std::ldexp(1.0, digits), x.dts[0]), ")?",
                        render_int(hi, x.dt), ":(", T, ")", a, ")");
           }},
      });
  // GCC vector extensions apply C's operators and conversions to whole vectors, where the op needs no guard
  // ("": per lane; whole_vector is never asked for half results, for bool results only by the comparisons and WHERE)
  auto same = [this](const Alu& x) { return code_for_op[size_t(x.op)](x); };  // (an overflowing + or * computes in unsigned vectors)
  // lanes of 4 bytes: a bool vector's lanes are ints (0 or 1), a half's are floats
  auto lanes4 = [this](DType t) {
    return t == DType::Float32 || t == DType::Int32 || t == DType::UInt32 || t == DType::Bool || (is_half(t) && lang.half_as_float);
  };
  // a comparison of 4-byte lanes is one vector compare (its lanes 0 or -1, negated to a bool's 0 or 1), a WHERE on them
  // a bitwise select on that mask: per lane, gcc compared and selected one lane at a time (a masked row sum 2.8x slower)
  auto compare = [lanes4, same](const Alu& x) { return lanes4(x.dts[0]) ? "(-" + same(x) + ")" : std::string(); };
  auto divmod = [same](const Alu& x) { return div_zero(x.u) || div_neg1(x.dt, x.u) ? "" : same(x); };
  set(whole_vector, {
                        {Ops::ADD, same},
                        {Ops::MUL, same},
                        {Ops::FDIV, same},
                        {Ops::AND, same},
                        {Ops::OR, same},
                        {Ops::XOR, same},
                        // a shift whose count stays inside the lanes' width (a quantized weight's nibbles): per lane, gcc
                        // shifted one byte at a time
                        {Ops::SHL, [same](const Alu& x) { return shift_out(x.dt, x.u) ? std::string() : same(x); }},
                        {Ops::SHR, [same](const Alu& x) { return shift_out(x.dt, x.u) ? std::string() : same(x); }},
                        {Ops::CMPLT, compare},
                        {Ops::CMPNE, compare},
                        {Ops::CMPEQ, compare},
                        {Ops::WHERE,
                         [this, lanes4](const Alu& x) {
                           if (!lanes4(x.dt)) return std::string();  // (never asked for half results)
                           std::string T = value_type(x.dt, x.vc, x.c), I = value_type(DType::Int32, x.vc, x.c), m = "(-" + x.a[0] + ")";
                           return cat("((", T, ")((((", I, ")", x.a[1], ")&", m, ")|(((", I, ")", x.a[2], ")&~", m, ")))");
                         }},
                        {Ops::IDIV, divmod},
                        {Ops::MOD, divmod},
                        // a float max (NaN wins) as a bitwise select on the lanes' comparison mask, not a ?: per lane: a relu fused into
                        // a conv's loads, a max-pool's accumulator
                        {Ops::MAX,
                         [this](const Alu& x) {
                           if (!is_float(x.dt)) return std::string();
                           std::string T = value_type(x.dt, x.vc, x.c),
                                       I = value_type(x.dt == DType::Float64 ? DType::Int64 : DType::Int32, x.vc, x.c);
                           auto &a = x.a[0], &b = x.a[1];
                           std::string m = cat("((", I, ")((", a, "!=", a, ")|(", a, ">", b, ")))");
                           return cat("((", T, ")((((", I, ")", a, ")&", m, ")|(((", I, ")", b, ")&~", m, ")))");
                         }},
                        {Ops::CAST,
                         [this](const Alu& x) {
                           if ((is_float(x.dts[0]) && !is_float(x.dt)) || x.dts[0] == DType::Bool) return std::string();
                           // NOTE: gcc turns 8- and 16-bit lanes to floats one lane at a time (an extract and a convert each:
                           // quantized matvecs ran 40x slower than clang's); through int32 lanes it is a widen and one convert.
                           // And it widens lanes read straight from memory or a bitcast one at a time too: TG_REG passes them
                           // through a register first (an empty asm under gcc on x86-64 and arm64), and the widening is one
                           // vpmovsxbd, as clang's (a Q8_0 matvec: 2.2x, at clang's speed; through 16-bit lanes, as before, gcc
                           // split each vector in four)
                           std::string v = x.a[0];
                           if (is_int(x.dts[0]) && itemsize(x.dts[0]) < 4 && (is_float(x.dt) || itemsize(x.dt) >= 4)) {
                             x.c.need(kRegC);
                             v = cat("TG_REG(", value_type(x.dts[0], x.vc, x.c), ", ", v, ")");
                           }
                           if (is_float(x.dt) && is_int(x.dts[0]) && itemsize(x.dts[0]) < 4)
                             v = cat("__builtin_convertvector(", v, ", ", value_type(DType::Int32, x.vc, x.c), ")");
                           return cat("__builtin_convertvector(", v, ", ", value_type(x.dt, x.vc, x.c), ")");
                         }},
                    });
  set(rules, {
    {Ops::DEFINE_GLOBAL, [this](Ctx& c, const UOp& x) {
       int64_t i = x.iarg();
       c.r[&x] = cat("data", i);
       c.params.push_back(cat(lang.buffer_prefix, storage_type(x.dtype), "* ", lang.restrict_kw, " data", i));
       c.param_dtypes.push_back(x.dtype);
       c.param_ids.push_back(i);
     }},
    {Ops::DEFINE_VAR, [](Ctx& c, const UOp& x) {
       // NOTE: a prefix: no variable's name meets the kernel's own names; two variables of one name (other ranges) get
       // a number each
       std::string n = "var_" + var_name(x);
       c.r[&x] = std::find(c.vars.begin(), c.vars.end(), n) == c.vars.end() ? n : c.name(n + "_");
       c.vars.push_back(c.r[&x]);
     }},
    {Ops::DEFINE_LOCAL, [this](Ctx& c, const UOp& x) {
       c.r[&x] = cat("temp", x.varg()[0]);
       // a raw buffer (the arg's third entry) holds elements as memory does (a staged TC tile), else values
       std::string T = raw_local(x) || x.dtype == DType::Bool ? storage_type(x.dtype == DType::Bool ? DType::UInt8 : x.dtype) : scalar_type(x.dtype);
       c.line(cat(lang.smem_prefix, T, " ", c.r[&x], "[", x.varg()[1], "];"));
     }},
    {Ops::BARRIER, [this](Ctx& c, const UOp&) { c.line(lang.barrier); }},
    {Ops::SHUFFLE, [this, S](Ctx& c, const UOp& x) {
       if (lang.shuffle_xor.empty()) throw Error(cat("tinygrad: the ", device, " renderer has no warps: SHUFFLE"));
       std::string v = c.name("val");
       c.line(cat(value_type(x.dtype, 1, c), " ", v, " = ", lang.shuffle_xor, S(c, x, 0), ", ", x.iarg(), ");"));
       c.r[&x] = v;
     }},
    {Ops::SPECIAL, [this](Ctx& c, const UOp& x) {
       int64_t kind = x.varg()[1];  // 0: CPU core, 1: global id, 2: local id
       if (kind == 0) { c.r[&x] = "core_id"; return; }
       int64_t d = x.varg()[2];
       c.r[&x] = cat(kind == 1 ? "gidx" : "lidx", d);
       if (kind == 2) c.local[d] = x.range_end();
       c.line(cat(value_type(x.dtype, 1, c), " ", c.r[&x], " = ", kind == 1 ? lang.gid[d] : lang.lid[d], "; /* ", x.range_end(), " */"));
     }},
    {Ops::CONST, [this](Ctx& c, const UOp& x) { c.r[&x] = const_str(x); }},
    {Ops::RANGE, [this, S](Ctx& c, const UOp& x) {
       std::string v = c.r[&x] = cat("ridx", x.range_id());
       // a symbolic dim's loop ends at its extent (src[0]), not its bound
       c.line(cat("for (", value_type(x.dtype, 1, c), " ", v, " = 0; ", v, " < ", x.src.empty() ? cat(x.range_end()) : S(c, x, 0), "; ", v, "++) {"));
       c.depth++;
     }},
    {Ops::END, [](Ctx& c, const UOp&) { c.depth--; c.line("}"); }},
    {Ops::INDEX, [S](Ctx& c, const UOp& x) { c.r[&x] = cat("(", S(c, x, 0), "+", S(c, x, 1), ")"); }},
    {Ops::LOAD, [this](Ctx& c, const UOp& x) {
       const UOp& idx = *x.src[0];
       std::string T = value_type(x.dtype, x.vcount, c), ptr = get(c, idx), v = c.name("val");
       bool gated = masked(idx);
       if (idx.src[0]->op == Ops::DEFINE_LOCAL)
         c.line(cat(T, " ", v, " = ", raw_local(*idx.src[0]) ? load_value(x.dtype, "*" + ptr) : "*" + ptr, ";"));  // values: no conversion
       else if (x.vcount > 1) {
         c.line(cat(T, " ", v, gated ? " = " + broadcast(T, render_const(0, x.dtype), x.vcount) : "", ";"));
         c.line(cat(gated ? "if (" + get(c, *idx.src[2]) + ") " : "", vload(v, T, ptr, x.vcount)));
       } else {
         std::string ld = load_value(x.dtype, "*" + ptr);
         c.line(cat(T, " ", v, " = ", gated ? cat(get(c, *idx.src[2]), " ? ", ld, " : ", render_const(0, x.dtype)) : ld, ";"));
       }
       c.r[&x] = v;
     }},
    {Ops::STORE, [this, S](Ctx& c, const UOp& x) {
       const UOp &idx = *x.src[0], &val = *x.src[1];
       std::string ptr = S(c, x, 0), gate = masked(idx) ? "if (" + get(c, *idx.src[2]) + ") " : "";
       bool local = idx.src[0]->op == Ops::DEFINE_LOCAL;
       if (!local) c.stored.insert(idx.src[0]->iarg());
       if (local) c.line(gate + cat("*", ptr, " = ", raw_local(*idx.src[0]) ? store_value(val.dtype, S(c, x, 1)) : S(c, x, 1), ";"));
       else if (val.vcount > 1) c.line(gate + vstore(ptr, value_type(val.dtype, val.vcount, c), S(c, x, 1), val.vcount));
       else c.line(gate + cat("*", ptr, " = ", store_value(val.dtype, S(c, x, 1)), ";"));
     }},
    {Ops::DEFINE_ACC, [this](Ctx& c, const UOp& x) {
       const UOp& red = *x.src[0];
       std::string T = value_type(x.dtype, x.vcount, c), v = c.r[&red] = c.name("acc");
       std::string id = render_const(reduce_identity(red.reduce_op(), red.dtype), red.dtype);
       c.line(cat(T, " ", v, " = ", x.vcount > 1 ? broadcast(T, id, x.vcount) : id, ";"));
     }},
    {Ops::ACC_UPDATE, [this, S](Ctx& c, const UOp& x) {
       const UOp& red = *x.src[0];
       std::string a = c.r.at(&red);
       c.line(cat(a, " = ", alu_expr(red.reduce_op(), red.dtype, x.vcount, {a, S(c, x, 1)}, {red.dtype, red.dtype}, nullptr, c), ";"));
     }},
    {Ops::REDUCE, [](Ctx&, const UOp&) {}},  // named by its DEFINE_ACC
    {Ops::VECTORIZE, [this, S](Ctx& c, const UOp& x) {
       std::vector<std::string> xs;
       for (size_t i = 0; i < x.src.size(); i++) xs.push_back(S(c, x, i));
       c.r[&x] = vec(value_type(x.dtype, x.vcount, c), xs);
       c.lanes[c.r[&x]] = xs;
     }},
    {Ops::GEP, [this, S](Ctx& c, const UOp& x) { c.r[&x] = lane(S(c, x, 0), int(x.iarg())); }},
    {Ops::BITCAST, [this, S](Ctx& c, const UOp& x) {
       std::string T = value_type(x.dtype, x.vcount, c), a = S(c, x, 0), v = c.r[&x] = c.name("alu");
       if (x.dtype == DType::Bool) return c.line(cat(T, " ", v, " = (", a, "!=0);"));  // NOTE: a bool's byte must be 0 or 1: any other byte is true
       if (half_bits(x)) {  // NOTE: a half or bfloat16 is held as a float: reinterpret its 16 storage bits, not the float's
         value_type(x.src[0]->dtype, 1, c), value_type(x.dtype, 1, c);  // (marks the conversion helpers as used)
         std::vector<std::string> xs;  // per lane (a vector's: a gathered fp16 field)
         for (int i = 0; i < x.vcount; i++) {
           std::string bits = cat("((unsigned short)", store_value(x.src[0]->dtype, x.vcount == 1 ? a : lane(a, i)), ")");
           xs.push_back(is_half(x.dtype) ? load_value(x.dtype, bits) : cat("((", scalar_type(x.dtype), ")", bits, ")"));
         }
         return c.line(cat(T, " ", v, " = ", x.vcount == 1 ? xs[0] : vec(T, xs), ";"));
       }
       c.line(cat(T, " ", v, ";"));
       c.line(cat("{ ", value_type(x.src[0]->dtype, x.vcount, c), " tmp = ", a, "; __builtin_memcpy(&", v, ", &tmp, sizeof(", T, ")); }"));
     }},
  });
}

// C for the CPU device
class CRenderer : public CStyleRenderer {
 public:
  explicit CRenderer(int nthreads, int vregs = 16, int vbytes = 32) : vector_bytes_(vbytes) {
    device = "CPU";
    threads = nthreads;
    vector_registers = vregs;
    // NOTE: the address ahead as an integer (a pointer past its buffer would be undefined behaviour); a prefetch
    // never faults
    rules[size_t(Ops::LOAD)] = [this, base = rules[size_t(Ops::LOAD)]](Ctx& c, const UOp& x) {
      if (c.prefetch.count(&x))
        c.line(cat("__builtin_prefetch((const void*)((__UINTPTR_TYPE__)", get(c, *x.src[0]), " + ", prefetch_bytes, "));"));
      base(c, x);
    };
    // float exp2 and log2 inline (kExp2C, kLog2C), on scalars and on whole vectors: libm's are a call a lane, which gcc
    // and clang cannot vectorize (the exact gelu's erfc, 6 exp2 an element in a matmul's epilogue, made MiniLM 3x slower)
    struct Fn { Ops op; const char *code, *name; };
    for (Fn f : {Fn{Ops::EXP2, kExp2C, "tg_exp2f"}, Fn{Ops::LOG2, kLog2C, "tg_log2f"}}) {
      code_for_op[size_t(f.op)] = [this, base = code_for_op[size_t(f.op)], f](const Alu& x) {
        return x.dt == DType::Float64 ? base(x) : cat(helper(f.code, f.name, 1, x.c), "(", x.a[0], ")");
      };
      whole_vector[size_t(f.op)] = [this, f](const Alu& x) {
        return x.dt == DType::Float64 ? std::string() : cat(helper(f.code, f.name, x.vc, x.c), "(", x.a[0], ")");
      };
    }
  }
  // exp2 of float32 lanes (TG_F, TG_I: the float and int vector types): n = round(x) (by adding 1.5 * 2^23), f = x - n
  // in [-0.5, 0.5], 2^f by a polynomial (a relative minimax fit, 0.02 ulp; with its rounding <= 1 ulp of exp2f over
  // every float), times 2^n as two exponent-bit factors 2^(n/2) 2^(n - n/2): the first product is exact, the second
  // rounds once, so denormal results are as libm's. x is clamped to 129 first (overflow to inf, no shift overflows); a
  // lane of x <= -151 (0, as -inf, a softmax's masked scores) computes 2^0 and is cleared at the end: through the
  // products it would underflow, which costs an Intel core a microcode assist a lane (a causal softmax on a Xeon: 44x
  // the time of the same kernel on a Zen 4). NaN gives NaN. Selects are bit masks (C has no ?: on vectors; TG_M: a
  // lane's mask, TG_B / TG_R: a float's bits and back), the integer constants float bits (129, 1.5 * 2^23)
  static constexpr const char* kExp2C =
      "TG_FN TG_F TG_NAME(TG_F x) {\n"
      "  TG_I lo = TG_M(x > -151.0f), hi = TG_M(x < 129.0f), nan = TG_M(x != x);\n"
      "  TG_F c = TG_R(((TG_B(x) & hi) | (~hi & 1124139008)) & lo);\n"
      "  TG_F t = c + 12582912.0f, f = c - (t - 12582912.0f);\n"
      "  TG_I n = TG_B(t) - 1262485504, n1 = n >> 1;\n"
      "  TG_F p = 1.0f + f * (0.693147203f + f * (0.240226479f + f * (0.0555033247f + f * (0.00961843738f + f * (0.00133988757f + f * "
      "0.000153533585f)))));\n"
      "  p = p * TG_R((n1 + 127) << 23) * TG_R((n - n1 + 127) << 23);\n"
      "  return TG_R((TG_B(x) & nan) | (TG_B(p) & ~nan & lo));\n}\n";
  // log2 of float32 lanes: x = 2^k m, m in [sqrt 0.5, sqrt 2) by integer work on the bits (denormals scaled by 2^23
  // first), ln m = f + q, q = -f^2/2 + f^3 P(f) with f = m - 1 (P: a relative minimax fit, 0.05 ulp); log2 m =
  // f log2e + q log2e with log2e in two parts, so the large term rounds once (an FMA) (<= 1.1 ulp of log2f, sampled
  // over every float). 0 -> -inf, +inf -> inf, negatives and NaN -> NaN (their sign bit is cleared first: no int
  // subtraction overflows). Integer constants: float bits (sqrt 0.5, 1.5 * 2^23, 23, -inf, NaN)
  static constexpr const char* kLog2C =
      "TG_FN TG_F TG_NAME(TG_F x) {\n"
      "  TG_I sub = TG_M(x < 1.17549435e-38f), pos = TG_M(x > 0.0f), fin = pos & TG_M(x <= 3.40282347e38f), zero = TG_M(x == 0.0f);\n"
      "  TG_I t = (((TG_B(x * 8388608.0f) & sub) | (TG_B(x) & ~sub)) & 2147483647) - 1060439283;\n"
      "  TG_F k = TG_R((t >> 23) + 1262485504) - 12582912.0f - TG_R(sub & 1102577664);\n"
      "  TG_F f = TG_R((t & 8388607) + 1060439283) - 1.0f, z = f * f;\n"
      "  TG_F q = z * (f * (0.333333313f + f * (-0.250008225f + f * (0.200012267f + f * (-0.166233554f + f * (0.142017707f + f * "
      "(-0.131602183f + f * (0.12761502f + f * -0.0763431042f))))))) - 0.5f);\n"
      "  TG_F r = k + (f * 1.44269502f + (f * 1.92596303e-08f + q * 1.44269502f));\n"
      "  return TG_R((TG_B(r) & fin) | (zero & -8388608) | (TG_B(x) & pos & ~fin) | (~pos & ~zero & 2143289344));\n}\n";

  int64_t vector_lanes(DType dt) const override {
    if (dt == DType::Bool || dt == DType::Float16 || dt == DType::BFloat16 || itemsize(dt) < 4) return 1;
    return vector_bytes_ / itemsize(dt);  // one vector register
  }

 protected:
  int vector_bytes_;
  // Loads that stream: in an innermost reduce loop, from a buffer, at an address that depends on every loop open there
  // (each element is read once: a matvec's weight rows, not a matmul's operands, which the loops reuse from cache),
  // where the loops read 16 KB or more through it. Each prefetches the memory prefetch_bytes ahead of itself, one load
  // per cache line of a stream (the loads at constant offsets of one address). The hardware prefetcher ramps up too
  // slowly for a matvec's many short rows read side by side: a Q8_0 matvec over 100 MB of weights ran at 10.5 GB/s on
  // 2 cores of the VM, with this at 27-46.
  // (where two loops reach one element, as a conv's input at x + kx, it is read again from cache: no stream)
  static constexpr int64_t prefetch_bytes = 4096;
  // the loops map some two of their steps to one address: constant strides that do not nest (unknown strides: no)
  static bool rereads(const UOpRef& idx, const std::vector<UOpRef>& loops) {
    std::vector<std::pair<int64_t, int64_t>> se;  // (|stride|, extent)
    for (auto& r : loops) {
      UOpRef d = step_of(idx, r);
      if (d->op != Ops::CONST) return false;
      se.push_back({std::abs(int64_t(d->const_value())), r->range_end()});
    }
    std::sort(se.begin(), se.end());
    for (size_t i = 0; i + 1 < se.size(); i++) if (se[i + 1].first < se[i].first * se[i].second) return true;
    return false;
  }
  void plan(Ctx& c, const std::vector<UOpRef>& lin) const override {
    std::vector<UOpRef> open;
    std::vector<std::pair<const UOp*, std::vector<UOpRef>>> loads;  // a load and the loops open at it
    std::set<const UOp*> outer, reducing;                          // loops with a loop inside; loops that reduce
    for (auto& u : lin) {
      if (u->op == Ops::RANGE) { if (!open.empty()) outer.insert(open.back().get()); open.push_back(u); }
      else if (u->op == Ops::END && !open.empty()) open.pop_back();
      else if (u->op == Ops::ACC_UPDATE && !open.empty()) reducing.insert(open.back().get());
      else if (u->op == Ops::LOAD && !open.empty() && u->src[0]->src[0]->op == Ops::DEFINE_GLOBAL) loads.push_back({u.get(), open});
    }
    std::set<std::tuple<const UOp*, const UOp*, int64_t>> lines;  // (buffer, address less its constant, cache line)
    for (auto& [ld, at] : loads) {
      if (outer.count(at.back().get()) || !reducing.count(at.back().get())) continue;
      const UOpRef& idx = ld->src[0]->src[1];
      if ((idx->vmax - idx->vmin + 1) * itemsize(ld->dtype) < (int64_t(16) << 10)) continue;  // the span it reads
      std::set<const UOp*> deps;
      for (auto& t : toposort(idx)) deps.insert(t.get());
      if (!std::all_of(at.begin(), at.end(), [&](const UOpRef& r) { return deps.count(r.get()); }) || rereads(idx, at)) continue;
      bool off = idx->op == Ops::ADD && idx->src[1]->op == Ops::CONST;
      const UOp* base = off ? idx->src[0].get() : idx.get();
      int64_t line = (off ? int64_t(idx->src[1]->const_value()) : 0) * itemsize(ld->dtype) / 64;
      if (lines.insert({ld->src[0]->src[0].get(), base, line}).second) c.prefetch.insert(ld);
    }
  }

 private:
  // the name of the float32 helper fn (a template of TG_ names) for vc lanes, its text added to the prelude. A scalar
  // one is plain C (a vector of one lane would keep clang from vectorizing the loop around it)
  std::string helper(const char* code, const std::string& fn, int vc, Ctx& c) const {
    if (vc == 1)
      c.need(cat(lang.fn_prefix, " int tg_bits(float f) { int i; __builtin_memcpy(&i, &f, 4); return i; }\n", lang.fn_prefix,
              " float tg_float(int i) { float f; __builtin_memcpy(&f, &i, 4); return f; }\n"));
    std::string name = vc == 1 ? fn : cat(fn, vc), t = code;
    std::pair<const char*, std::string> subs[] = {{"TG_FN", lang.fn_prefix},
                                                  {"TG_M(", vc == 1 ? "-(" : "("},  // a scalar comparison is 0 or 1, a lane's 0 or -1
                                                  {"TG_B(", vc == 1 ? "tg_bits(" : "(TG_I)("},
                                                  {"TG_R(", vc == 1 ? "tg_float(" : "(TG_F)("},
                                                  {"TG_F", vc == 1 ? "float" : vector_type(DType::Float32, vc, c)},
                                                  {"TG_I", vc == 1 ? "int" : vector_type(DType::Int32, vc, c)},
                                                  {"TG_NAME", name}};
    for (auto& [k, v] : subs)
      for (size_t at; (at = t.find(k)) != std::string::npos;) t.replace(at, std::string(k).size(), v);
    c.need(t);
    return name;
  }
};

// the GPU languages: thread ids instead of loops, buffers as kernel parameters, math functions by name
class GPURenderer : public CStyleRenderer {
 public:
  GPURenderer() {
    has_local = true;
    lang.math_prefix = "";
    whole_vector = {};  // arithmetic runs per lane (CUDA has no vector operators)
    // a bitcast through a union
    rules[size_t(Ops::BITCAST)] = [this, base = rules[size_t(Ops::BITCAST)]](Ctx& c, const UOp& x) {
      if (x.dtype == DType::Bool || half_bits(x)) return base(c, x);
      std::string T = value_type(x.dtype, x.vcount, c), a = get(c, *x.src[0]), v = c.r[&x] = c.name("alu");
      c.line(cat(T, " ", v, ";"));
      c.line(cat("{ union { ", value_type(x.src[0]->dtype, x.vcount, c), " a; ", T, " b; } tmp; tmp.a = ", a, "; ", v, " = tmp.b; }"));
    };
  }
  // float4 / int4 / uint4 loads and stores
  int64_t vector_lanes(DType dt) const override { return itemsize(dt) == 4 && dt != DType::Bool ? 4 : 1; }

 protected:
  // the variables' values first, then the buffers in their order; a gap (a buffer the kernel never touches) keeps its
  // place
  std::string signature(const Ctx& c) const override {
    int64_t n = 0;
    for (auto i : c.param_ids) n = std::max(n, i + 1);
    std::vector<std::string> ps;
    for (auto& v : c.vars) ps.push_back("const int " + v);
    size_t nv = ps.size();
    ps.resize(nv + size_t(n));
    for (int64_t i = 0; i < n; i++) ps[nv + size_t(i)] = cat(lang.buffer_prefix, "unsigned char* unused", i);
    for (size_t j = 0; j < c.param_ids.size(); j++) {
      int64_t i = c.param_ids[j];
      ps[nv + size_t(i)] =
          cat(lang.buffer_prefix, c.stored.count(i) ? "" : "const ", storage_type(c.param_dtypes[j]), "* ", lang.restrict_kw, " data", i);
    }
    return join(ps);
  }
  std::string params_prelude(const Ctx&) const override { return ""; }
  std::string vector_type(DType dt, int vc, Ctx&) const override { return vector_name(vector_elem(dt), vc); }
  std::string lane(const std::string& v, int i) const override { return cat(v, ".", "xyzw"[i]); }
  std::string scalar_type(DType dt) const override { return dt == DType::Bool ? "bool" : CStyleRenderer::scalar_type(dt); }
};

// a WMMA's arg, written by the TC opt (codegen/gemm.hpp) and read by the CUDA renderer: the operands' dtype and where
// their registers come from. Stored in the UOp as one integer (encode / decode: the only two places that know the bits)
struct WmmaArg {
  DType dt;
  int pairs = 0;      // fragments loaded from memory: bit p set, register p is one 32-bit load of two neighbouring elements
  bool b_hi = false;  // staged tiles: B's registers are the second half of its fragment load
  bool a_mn = false, b_mn = false;  // wgmma: A's tile is m-major, B's n-major (else k-major)
  bool inflight = false;            // wgmma: a K step's group stays in flight until the next one's is issued
  int64_t encode() const {
    return int64_t(dt) | int64_t(pairs) << 8 | int64_t(b_hi) << 16 | int64_t(a_mn) << 17 | int64_t(b_mn) << 18 | int64_t(inflight) << 19;
  }
  static WmmaArg decode(int64_t a) {
    return {.dt = DType(a & 0xff), .pairs = int(a >> 8 & 0xff), .b_hi = (a >> 16 & 1) != 0, .a_mn = (a >> 17 & 1) != 0, .b_mn = (a >> 18 & 1) != 0,
            .inflight = (a >> 19 & 1) != 0};
  }
};

// CUDA C, compiled by NVRTC
class CUDARenderer : public GPURenderer {
 public:
  explicit CUDARenderer(bool mma = true, bool warpgroup_mma = false) {
    tensor_cores = mma;
    wgmma = mma && warpgroup_mma;
    device = "CUDA";
    lang.kernel_prefix = "extern \"C\" __global__ ";
    lang.restrict_kw = "__restrict__";
    lang.fn_prefix = "__device__ inline";
    lang.u2f = "return __uint_as_float(u);";
    lang.f2u = "return __float_as_uint(f);";
    for (int d = 0; d < 3; d++) { lang.gid[d] = cat("blockIdx.", "xyz"[d]); lang.lid[d] = cat("threadIdx.", "xyz"[d]); }
    lang.smem_prefix = "__shared__ ";
    lang.barrier = "__syncthreads();";
    lang.shuffle_xor = "__shfl_xor_sync(0xffffffffu, ";
    warp = 32;
    lang.vec[0] = "make_", lang.vec[1] = "(", lang.vec[2] = ")";
    lang.half_fns = kHalfPTX;
    lang.bf16_fns = kBF16PTX;
    aligned_vectors = true;
    // the TC opt: a WMMA node of 4 lanes names its 6 fragment registers (A: 4, B: 2): from its 12 values (TF32: 6),
    // each register one 32-bit load of two neighbouring elements (WmmaArg's pairs) or two values packed by a cvt, or
    // (a staged tile) from its 2 ldmatrix fragments; the REDUCE over it updates its float4 accumulator with one mma.sync
    // a step. A WMMA of more than 4 lanes is a wgmma tile's (below)
    // raw workgroup buffers (staged tiles) are 16-byte aligned parts of the dynamic workgroup memory (launch.smem)
    rules[size_t(Ops::DEFINE_LOCAL)] = [this, base = rules[size_t(Ops::DEFINE_LOCAL)]](Ctx& c, const UOp& x) {
      if (!raw_local(x)) return base(c, x);
      if (c.smem == 0)
        c.line(
            cat("extern __shared__ __align__(", wgmma ? 1024 : 16, ") unsigned char tg_dsmem[];"));  // wgmma: 128-byte swizzles from 1024-byte lines
      std::string T = storage_type(x.dtype), v = c.r[&x] = cat("temp", x.varg()[0]);
      c.line(cat(T, "* ", v, " = (", T, "*)(tg_dsmem + ", c.smem, ");"));
      c.smem += dynamic_smem(x);
    };
    // staged tiles (codegen/gemm.hpp's tc_stage, simt_stage): a STORE of an address into workgroup memory copies the bytes there
    // (cp.async of 4, 8 or 16 bytes; a gate on the source fills zeros, one on the destination skips the copy), a vector
    // LOAD from workgroup memory with an arg is an ldmatrix of 2 (.x4) or 1 (.x2) 16x8 fragments (arg 2: .trans), and a BARRIER with an
    // arg commits the copies issued so far as a group and waits until at most arg groups are in flight
    // a pair of halves (codegen/gemm.hpp's tile_stores) is one 4-byte store, packed by one conversion of two floats (a
    // cast of a float to the half is its float: rounded once, in the pack)
    rules[size_t(Ops::STORE)] = [this, base = rules[size_t(Ops::STORE)]](Ctx& c, const UOp& x) {
      const UOp &idx = *x.src[0], &val = *x.src[1];
      if (idx.src[0]->op != Ops::DEFINE_LOCAL && val.op == Ops::VECTORIZE && val.vcount == 2 && is_half(val.dtype)) {
        std::string lanes[2];
        for (int i = 0; i < 2; i++) {
          const UOp& v = *val.src[size_t(i)];
          lanes[i] = get(c, v.op == Ops::CAST && v.src[0]->dtype == DType::Float32 ? *v.src[0] : v);
        }
        c.typedefs.insert(kPackFns);
        c.stored.insert(idx.src[0]->iarg());
        return c.line(cat(masked(idx) ? "if (" + get(c, *idx.src[2]) + ") " : "", "*((unsigned int*)", get(c, idx), ") = tg_pack2_",
                          val.dtype == DType::BFloat16 ? "bf16" : "f16", "(", lanes[0], ", ", lanes[1], ");"));
      }
      if (idx.src[0]->op != Ops::DEFINE_LOCAL || val.op != Ops::INDEX) return base(c, x);
      c.typedefs.insert(kStageFns);
      c.line(cat(idx.src.size() > 2 ? "if (" + get(c, *idx.src[2]) + ") " : "", "tg_cp", val.vcount * itemsize(val.dtype), "(", get(c, idx), ", ",
                 get(c, val), ", ", val.src.size() > 2 ? get(c, *val.src[2]) : "true", ");"));
    };
    rules[size_t(Ops::LOAD)] = [this, base = rules[size_t(Ops::LOAD)]](Ctx& c, const UOp& x) {
      const UOp& idx = *x.src[0];
      if (idx.src[0]->op != Ops::DEFINE_LOCAL || x.vcount == 1) return base(c, x);
      std::string v = c.r[&x] = c.name(std::holds_alternative<int64_t>(x.arg) ? "frag" : "val");
      if (!std::holds_alternative<int64_t>(x.arg)) {  // a vector of a raw buffer (TILE's tiles)
        std::string T = value_type(x.dtype, x.vcount, c);
        c.line(cat(T, " ", v, " = *((", T, "*)", get(c, idx), ");"));
        return;
      }
      c.typedefs.insert(kStageFns);
      c.line(cat("unsigned int ", v, "[", x.vcount / 2, "]; tg_ldsm_x", x.vcount / 2, x.iarg() == 2 ? "_t(" : "(", v, ", ", get(c, idx), ");"));
    };
    // (on a wgmma device the copies are fenced for the async proxy, through which wgmma reads workgroup memory)
    rules[size_t(Ops::BARRIER)] = [this](Ctx& c, const UOp& x) {
      if (std::holds_alternative<int64_t>(x.arg))
        c.line(cat("asm volatile(\"cp.async.commit_group;\\n\\tcp.async.wait_group ", x.iarg(), wgmma ? ";\\n\\tfence.proxy.async.shared::cta" : "",
                   ";\" ::: \"memory\");"));
      c.line(lang.barrier);
    };
    // wgmma tiles: a WMMA of more than 4 lanes names the start of its warpgroup's A and B tiles; the REDUCE over it is
    // an array of the thread's accumulators, updated by one helper call a K step
    rules[size_t(Ops::DEFINE_ACC)] = [base = rules[size_t(Ops::DEFINE_ACC)]](Ctx& c, const UOp& x) {
      const UOp& red = *x.src[0];
      if (red.reduce_op() != Ops::WMMA || x.vcount <= 4) return base(c, x);
      c.line(cat("float ", c.r[&red] = c.name("acc"), "[", x.vcount, "] = {};"));
    };
    // (the first read of an accumulator whose last wgmma was left in flight waits for it, the whole array its operand:
    // the compiler then reads no register of it before)
    rules[size_t(Ops::GEP)] = [this, base = rules[size_t(Ops::GEP)]](Ctx& c, const UOp& x) {
      const UOp& red = *x.src[0];
      if (red.vcount <= 4) return base(c, x);
      std::string a = get(c, red);
      if (WmmaArg::decode(red.src[0]->iarg()).inflight && c.counts["wgmma wait " + a]++ == 0) {
        c.typedefs.insert(wgmma_wait_fn(red.vcount));
        c.line(cat("tg_wgmma_wait", red.vcount, "(", a, ");"));
      }
      c.r[&x] = cat(a, "[", x.iarg(), "]");
    };
    rules[size_t(Ops::WMMA)] = [this](Ctx& c, const UOp& x) {
      std::string t = mma_type(x);
      if (x.vcount > 4) {
        c.r[&x] = cat(get(c, *x.src[0]), ", ", get(c, *x.src[1]));
        c.typedefs.insert(kStageFns);
        c.typedefs.insert(wgmma_fn(x));
        return;
      }
      std::vector<std::string> regs;
      if (x.src.size() == 2) {  // staged: A's and B's fragments from ldmatrix
        for (int64_t p = 0; p < 6; p++)
          regs.push_back(cat(get(c, *x.src[p < 4 ? 0 : 1]), "[", p < 4 ? p : p - 4 + 2 * int64_t(WmmaArg::decode(x.iarg()).b_hi), "]"));
        c.r[&x] = join(regs);
        c.typedefs.insert(mma_fns(t));
        return;
      }
      for (size_t p = 0; p < 6; p++)
        regs.push_back(t == "tf32" ? cat("tg_pack_tf32(", get(c, *x.src[p]), ")")  // TF32: one value a register
                       : WmmaArg::decode(x.iarg()).pairs >> p & 1 ? cat("*(const unsigned int*)", get(c, *x.src[2 * p]->src[0]))
                                                  : cat("tg_pack_", t, "(", get(c, *x.src[2 * p]), ", ", get(c, *x.src[2 * p + 1]), ")"));
      c.r[&x] = join(regs);
      c.typedefs.insert(mma_fns(t));
    };
    rules[size_t(Ops::ACC_UPDATE)] = [this, base = rules[size_t(Ops::ACC_UPDATE)]](Ctx& c, const UOp& x) {
      const UOp& red = *x.src[0];
      if (red.reduce_op() != Ops::WMMA) return base(c, x);
      std::string a = c.r.at(&red);
      if (x.vcount > 4) return c.line(cat(wgmma_name(*x.src[1]), "(", a, ", ", get(c, *x.src[1]), ");"));
      c.line(cat(a, " = tg_mma_", mma_type(*x.src[1]), "(", a, ", ", get(c, *x.src[1]), ");"));
    };
  }
  // a wgmma tile's K step (64 of K: four m64nNk16 after one another; TF32: 32, four m64nNk8), then waited for (or the
  // step before it, where WmmaArg's inflight: tg_wgmma_waitN waits for the last after the loop), for one warpgroup: d += A B with
  // A's 64 x 64 and B's 64 x N tiles at a and b in workgroup memory, 128-byte swizzled (codegen/gemm.hpp's tc_swizzle): k-major
  // rows of 64, or m-/n-major blocks of 64 rows (WmmaArg's a_mn, b_mn), a block 8 KB on. Descriptor: the start, the
  // distance between blocks of 64 m or n (m-/n-major; 8192 bytes), between 8 rows of k or of m/n (1024), 128-byte swizzle
  static std::string wgmma_name(const UOp& w) {
    WmmaArg a = WmmaArg::decode(w.iarg());
    return cat("tg_wgmma_", mma_type(w), "_n", w.vcount * 2, "_", int(a.a_mn), int(a.b_mn), a.inflight ? "_f" : "");
  }
  static std::string operands(int64_t n) {  // "+f"(d[0]), ... "+f"(d[n - 1])
    std::string outs;
    for (int64_t i = 0; i < n; i++) outs += cat(i ? ", " : "", "\"+f\"(d[", i, "])");
    return outs;
  }
  static std::string wgmma_wait_fn(int64_t n) {
    return cat("__device__ inline void tg_wgmma_wait", n, "(float (&d)[", n, "]) {\n  asm volatile(\"wgmma.wait_group.sync.aligned 0;\" : ",
               operands(n), " :: \"memory\");\n}");
  }
  static std::string wgmma_fn(const UOp& w) {
    std::string t = mma_type(w);
    WmmaArg a = WmmaArg::decode(w.iarg());
    int64_t n = w.vcount * 2, ta = a.a_mn, tb = a.b_mn;
    std::string regs, outs = operands(n / 2);
    for (int64_t i = 0; i < n / 2; i++) regs += cat(i ? ", " : "", "%", i);
    std::string f = cat("__device__ inline unsigned long long tg_wg_desc(const void* p) { "
                        "return (unsigned long long)((tg_smem(p) & 0x3FFFF) >> 4) | 512ull << 16 | 64ull << 32 | 1ull << 62; }\n",
                        "__device__ inline void ", wgmma_name(w), "(float (&d)[", n / 2, "], const void* a, const void* b) {\n",
                        "  unsigned long long da = tg_wg_desc(a), db = tg_wg_desc(b);\n"
                        "  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n");
    // a k-major step is 32 bytes on in its rows (16 halves, TF32's 8 floats: k-major only, no transposes), an m-/n-major
    // one 16 rows of 128 bytes on
    bool tf32 = t == "tf32";
    for (int64_t k = 0; k < 4; k++)
      f += cat("  asm volatile(\"{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n", n, tf32 ? "k8" : "k16", ".f32.", t, ".", t,
               " {", regs, "}, %", n / 2, ", %", n / 2 + 1, ", p, 1, 1", tf32 ? "" : cat(", ", ta, ", ", tb), "; }\"\n      : ", outs,
               "\n      : \"l\"(da + ", k * (ta ? 128 : 2), "), \"l\"(db + ", k * (tb ? 128 : 2), "));\n");
    return f + cat("  asm volatile(\"wgmma.commit_group.sync.aligned;\\n\\twgmma.wait_group.sync.aligned ", int(a.inflight),
                   ";\" ::: \"memory\");\n}");
  }
  static std::string mma_type(const UOp& wmma) {
    DType dt = WmmaArg::decode(wmma.iarg()).dt;
    return dt == DType::BFloat16 ? "bf16" : dt == DType::Float32 ? "tf32" : "f16";
  }
  // c += A B for one warp with float32 accumulation (t: f16 or bf16, m16n8k16: A 16x16 row, B 16x8 col; tf32:
  // m16n8k8), and the packing of values into a register: two floats holding half (bfloat16) values, the first in the
  // low half, or one float rounded to TF32
  static std::string mma_fns(const std::string& t) {
    std::string pack = t == "tf32" ? "__device__ inline unsigned int tg_pack_tf32(float f) { "
                                     "unsigned int r; asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(f)); return r; }\n"
                                   : cat("__device__ inline unsigned int tg_pack_", t, "(float lo, float hi) { unsigned int r; asm(\"cvt.rn.", t,
                                         "x2.f32 %0, %1, %2;\" : \"=r\"(r) : \"f\"(hi), \"f\"(lo)); return r; }\n");
    std::string shape = t == "tf32" ? "m16n8k8" : "m16n8k16";
    return cat(pack,
               "__device__ inline float4 tg_mma_", t, "(float4 c, unsigned int a0, unsigned int a1, unsigned int a2, unsigned int a3, "
               "unsigned int b0, unsigned int b1) {\n",
               "  asm(\"mma.sync.aligned.", shape, ".row.col.f32.", t, ".", t, ".f32 {%0, %1, %2, %3}, "
               "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\"\n",
               "      : \"+f\"(c.x), \"+f\"(c.y), \"+f\"(c.z), \"+f\"(c.w) : "
               "\"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3), \"r\"(b0), \"r\"(b1));\n  return c;\n}");
  }
  // two floats as the halves (bfloat16s) of one 32-bit word, the first in the low bits: one cvt (sm_80 on, as tensor cores)
  static constexpr const char* kPackFns =
      "__device__ inline unsigned int tg_pack2_f16(float lo, float hi) { unsigned int r; asm(\"cvt.rn.f16x2.f32 %0, %1, %2;\" : \"=r\"(r) : "
      "\"f\"(hi), \"f\"(lo)); return r; }\n"
      "__device__ inline unsigned int tg_pack2_bf16(float lo, float hi) { unsigned int r; asm(\"cvt.rn.bf16x2.f32 %0, %1, %2;\" : \"=r\"(r) : "
      "\"f\"(hi), \"f\"(lo)); return r; }\n";
  // staged tiles: a workgroup address as PTX wants it, cp.async of 16, 8 or 4 bytes (zeros where !ok), ldmatrix .x4/.x2 (.trans)
  static constexpr const char* kStageFns =
      "__device__ inline unsigned int tg_smem(const void* p) { unsigned int a; asm(\"{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; "
      "}\" : \"=r\"(a) : \"l\"(p)); return a; }\n"
      "__device__ inline void tg_cp16(void* s, const void* g, bool ok) { asm volatile(\"cp.async.cg.shared.global [%0], [%1], 16, %2;\" :: "
      "\"r\"(tg_smem(s)), \"l\"(g), \"r\"(ok ? 16 : 0) : \"memory\"); }\n"
      "__device__ inline void tg_cp8(void* s, const void* g, bool ok) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 8, %2;\" :: "
      "\"r\"(tg_smem(s)), \"l\"(g), \"r\"(ok ? 8 : 0) : \"memory\"); }\n"
      "__device__ inline void tg_cp4(void* s, const void* g, bool ok) { asm volatile(\"cp.async.ca.shared.global [%0], [%1], 4, %2;\" :: "
      "\"r\"(tg_smem(s)), \"l\"(g), \"r\"(ok ? 4 : 0) : \"memory\"); }\n"
      "__device__ inline void tg_ldsm_x4(unsigned int* r, const void* p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, "
      "%3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(tg_smem(p))); }\n"
      "__device__ inline void tg_ldsm_x4_t(unsigned int* r, const void* p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, "
      "%2, %3}, [%4];\" : \"=r\"(r[0]), \"=r\"(r[1]), \"=r\"(r[2]), \"=r\"(r[3]) : \"r\"(tg_smem(p))); }\n"
      "__device__ inline void tg_ldsm_x2(unsigned int* r, const void* p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, "
      "[%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(tg_smem(p))); }\n"
      "__device__ inline void tg_ldsm_x2_t(unsigned int* r, const void* p) { asm volatile(\"ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, "
      "%1}, [%2];\" : \"=r\"(r[0]), \"=r\"(r[1]) : \"r\"(tg_smem(p))); }\n";
  // the hardware's conversions (one cvt instruction each; bfloat16 rounding needs sm_80), in PTX: no CUDA header needed
  static constexpr const char* kHalfPTX =
      "TG_FN float tg_h2f(unsigned short h) { float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f; }\n"
      "TG_FN unsigned short tg_f2h(float f) { unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n";
  static constexpr const char* kBF16PTX =
      "TG_FN float tg_b2f(unsigned short h) { return tg_u2f((unsigned int)h << 16); }\n"
      "#if __CUDA_ARCH__ >= 800\n"
      "TG_FN unsigned short tg_f2b(float f) { unsigned short h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h; }\n"
      "#else\n"
      "TG_FN unsigned short tg_f2b(float f) { unsigned int x = tg_f2u(f); if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | "
      "0x40u);\n"
      "  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); }\n"
      "#endif\n";

 protected:
  std::string vload(const std::string& v, const std::string& T, const std::string& ptr, int) const override {
    return cat(v, " = *((const ", T, "*)", ptr, ");");
  }
  std::string vstore(const std::string& ptr, const std::string& T, const std::string& v, int) const override {
    return cat("*((", T, "*)", ptr, ") = ", v, ";");
  }
  std::string kernel_decl(const std::string& name, const Ctx& c) const override {
    return cat(lang.kernel_prefix, "void __launch_bounds__(", c.local[0] * c.local[1] * c.local[2], ") ", name, "(", signature(c), ")");
  }
  std::string nonfinite(double v, bool f32) const override {
    if (f32) return std::isnan(v) ? "__int_as_float(0x7fc00000)" : v < 0 ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
    return std::isnan(v) ? "__longlong_as_double(0x7ff8000000000000ll)"
           : v < 0       ? "__longlong_as_double(0xfff0000000000000ll)"
                         : "__longlong_as_double(0x7ff0000000000000ll)";
  }
};

// OpenCL C
class OpenCLRenderer : public GPURenderer {
 public:
  explicit OpenCLRenderer(bool has_fp16 = false) : fp16(has_fp16) {
    device = "CL";
    lang.kernel_prefix = "__kernel ";
    lang.buffer_prefix = "__global ";
    lang.u2f = "return as_float(u);";
    lang.f2u = "return as_uint(f);";
    for (int d = 0; d < 3; d++) { lang.gid[d] = cat("get_group_id(", d, ")"); lang.lid[d] = cat("get_local_id(", d, ")"); }
    lang.smem_prefix = "__local ";
    lang.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
    lang.shuffle_xor = "sub_group_shuffle_xor(";  // cl_khr_subgroup_shuffle; never made for OpenCL (warp 0: sub-group sizes vary)
    lang.vec[0] = "(", lang.vec[1] = ")(", lang.vec[2] = ")";
    lang.math_f = false;  // sin is overloaded
    lang.half_fns = fp16 ? kHalfFP16 : kHalfCL;
    // float -> int by convert_T_sat: NaN -> 0, saturates, rounds toward zero
    code_for_op[size_t(Ops::CAST)] = [this, base = code_for_op[size_t(Ops::CAST)]](const Alu& x) {
      return is_float(x.dts[0]) && !is_float(x.dt) && x.dt != DType::Bool ? cat("convert_", scalar_type(x.dt), "_sat(", x.a[0], ")") : base(x);
    };
  }
  // float <-> half by the device: the core vload_half / vstore_half_rte (through private memory, no extension needed),
  // or with cl_khr_fp16 the native conversions. NOTE: a NaN's half bits are the device's own (PoCL: 0x7fff), so f2h
  // writes sign | 0x7e00 as the integer path does
  static constexpr const char* kHalfCL =
      "TG_FN float tg_h2f(ushort h) { return vload_half(0, (const half*)&h); }\n"
      "TG_FN ushort tg_f2h(float f) { uint u = as_uint(f); ushort h; vstore_half_rte(f, 0, (half*)&h); return (u & 0x7fffffffu) > 0x7f800000u ? "
      "(ushort)((u >> 16 & 0x8000u) | 0x7e00u) : h; }\n";
  static constexpr const char* kHalfFP16 =
      "TG_FN float tg_h2f(ushort h) { return convert_float(as_half(h)); }\n"
      "TG_FN ushort tg_f2h(float f) { uint u = as_uint(f); return (u & 0x7fffffffu) > 0x7f800000u ? (ushort)((u >> 16 & 0x8000u) | 0x7e00u) : "
      "as_ushort(convert_half_rte(f)); }\n";
  bool fp16;  // the device has cl_khr_fp16

 protected:
  // vloadN / vstoreN need only the element's alignment
  std::string vload(const std::string& v, const std::string&, const std::string& ptr, int n) const override {
    return cat(v, " = vload", n, "(0, ", ptr, ");");
  }
  std::string vstore(const std::string& ptr, const std::string&, const std::string& v, int n) const override {
    return cat("vstore", n, "(", v, ", 0, ", ptr, ");");
  }
  std::string scalar_type(DType dt) const override {
    switch (dt) {
      case DType::Int8: return "char";
      case DType::UInt8: return "uchar";
      case DType::UInt16: return "ushort";
      case DType::UInt32: return "uint";
      case DType::Int64: return "long";
      case DType::UInt64: return "ulong";
      default: return GPURenderer::scalar_type(dt);
    }
  }
  std::string render_int(int64_t v, DType dt) const override {
    std::string s = GPURenderer::render_int(v, dt);  // long long is reserved: 1ll -> 1l
    if (dt == DType::Int64 || dt == DType::UInt64) for (size_t at; (at = s.find("ll")) != std::string::npos;) s.erase(at, 1);
    return s;
  }
  std::string nonfinite(double v, bool f32) const override {
    std::string s = std::isnan(v) ? "NAN" : v < 0 ? "(-INFINITY)" : "INFINITY";
    return f32 ? s : "(double)" + s;
  }
  std::string prelude(const Ctx& c) const override {
    auto param = [&](DType dt) { return std::find(c.param_dtypes.begin(), c.param_dtypes.end(), dt) != c.param_dtypes.end(); };
    return std::string(param(DType::Float64) || c.uses_double ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") +
           (fp16 && (param(DType::Float16) || c.uses_half) ? "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" : "") + GPURenderer::prelude(c);
  }
};

}  // namespace tinygrad::detail

namespace tinygrad {
// what a device of its own subclasses (register_renderer); the built-in renderers are internal
using detail::CRenderer;
using detail::CStyleRenderer;
using detail::CUDARenderer;
using detail::OpenCLRenderer;
using detail::Renderer;
}  // namespace tinygrad
