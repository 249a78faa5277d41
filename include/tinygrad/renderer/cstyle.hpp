#pragma once
// the C-style renderer family: a linear kernel (from codegen/linearize.hpp) printed as source.
// A language is a traits struct (Lang) plus a few virtual overrides; C for the CPU lives here.
#include <set>
#include "../uop/ops.hpp"

namespace tinygrad {

struct Renderer {
  std::string device;
  int threads = 1;          // CPU cores for the THREAD axis
  bool has_local = false;   // GPU: loop axes become global/local ids (codegen's gpudims), workgroup memory and barriers
  bool aligned_vectors = false;  // vector loads and stores need an address aligned to the vector's size
  int vector_registers = 16;     // CPU: registers a register tile of accumulators may fill
  int64_t global_max[3] = {0x7fffffff, 65535, 65535}, local_max[3] = {1024, 1024, 64}, max_threads = 1024;
  virtual ~Renderer() = default;
  virtual int64_t vector_lanes(DType dt) const = 0;  // lanes for VECTOR opts (1: none)
  virtual std::string render(const std::string& name, const std::vector<UOpRef>& lin) const = 0;
};

class CStyleRenderer : public Renderer {
 public:
  // the per-language table
  struct Lang {
    std::string kernel_prefix;     // before the return type
    std::string buffer_prefix;     // before a buffer's pointer type
    std::string restrict_kw = "restrict";
    std::string fn_prefix = "static inline";  // helper functions in the prelude
    std::string u2f, f2u;          // bodies of the float <-> bits helpers (argument u / f)
    std::string gid[3], lid[3];    // how a global / local id is spelled
    std::string smem_prefix, barrier;  // workgroup memory declaration, workgroup barrier
    std::string vec[3];            // a vector value: vec[0] type vec[1] lanes, vec[2]: C (float4){a, b}
    bool half_as_float = true;     // hold half/bfloat16 values in float, round after each op
  } lang{"", "", "restrict", "static inline", "float f; __builtin_memcpy(&f, &u, 4); return f;", "unsigned int u; __builtin_memcpy(&u, &f, 4); return u;", {}, {}, "", "", {"(", "){", "}"}, true};

  std::string render(const std::string& name, const std::vector<UOpRef>& lin) const override {
    Ctx c;
    std::string body;
    int depth = 1;
    auto line = [&](const std::string& s) { body += std::string(size_t(depth) * 2, ' ') + s + "\n"; };
    for (auto& u : lin) {
      const UOp& x = *u;
      auto S = [&](size_t i) { return get(c, *x.src[i]); };
      std::string T = value_type(x.dtype, x.vcount, c);
      switch (x.op) {
        case Ops::DEFINE_GLOBAL: {
          int64_t i = x.iarg();
          c.r[&x] = cat("data", i);
          c.params.push_back(cat(lang.buffer_prefix, storage_type(x.dtype), "* ", lang.restrict_kw, " data", i));
          c.param_dtypes.push_back(x.dtype);
          c.param_ids.push_back(i);
          break;
        }
        case Ops::DEFINE_LOCAL: {
          c.r[&x] = cat("temp", x.varg()[0]);
          line(cat(lang.smem_prefix, x.dtype == DType::Bool ? storage_type(DType::UInt8) : scalar_type(x.dtype), " ", c.r[&x], "[", x.varg()[1], "];"));
          break;
        }
        case Ops::BARRIER: line(lang.barrier); break;
        case Ops::SPECIAL: {
          int64_t kind = x.varg()[1];  // 0: CPU core, 1: global id, 2: local id
          if (kind == 0) { c.r[&x] = "core_id"; break; }
          int64_t d = x.varg()[2];
          c.r[&x] = cat(kind == 1 ? "gidx" : "lidx", d);
          if (kind == 2) c.local[d] = x.range_end();
          line(cat(value_type(x.dtype, 1, c), " ", c.r[&x], " = ", kind == 1 ? lang.gid[d] : lang.lid[d], "; /* ", x.range_end(), " */"));
          break;
        }
        case Ops::CONST: c.r[&x] = const_str(x); break;
        case Ops::RANGE: {
          std::string v = cat("ridx", x.range_id());
          c.r[&x] = v;
          line(cat("for (", value_type(x.dtype, 1, c), " ", v, " = 0; ", v, " < ", x.range_end(), "; ", v, "++) {"));
          depth++;
          break;
        }
        case Ops::END: depth--; line("}"); break;
        case Ops::INDEX: c.r[&x] = cat("(", S(0), "+", S(1), ")"); break;
        case Ops::LOAD: {
          const UOp& idx = *x.src[0];
          std::string ptr = get(c, idx), v = c.name("val");
          bool gated = idx.src.size() > 2;
          DType st = x.dtype;
          if (idx.src[0]->op == Ops::DEFINE_LOCAL) line(cat(T, " ", v, " = *", ptr, ";"));  // held as a value, no conversion
          else if (x.vcount > 1) {
            line(cat(T, " ", v, gated ? " = " + broadcast(T, render_const(0, st), x.vcount) : "", ";"));
            line(cat(gated ? "if (" + get(c, *idx.src[2]) + ") " : "", vload(v, T, ptr, x.vcount)));
          } else {
            std::string ld = load_value(st, "*" + ptr);
            line(cat(T, " ", v, " = ", gated ? cat(get(c, *idx.src[2]), " ? ", ld, " : ", render_const(0, st)) : ld, ";"));
          }
          c.r[&x] = v;
          break;
        }
        case Ops::STORE: {
          std::string ptr = S(0);
          const UOp& idx = *x.src[0];
          bool local = idx.src[0]->op == Ops::DEFINE_LOCAL;
          if (!local) c.stored.insert(idx.src[0]->iarg());
          std::string gate = idx.src.size() > 2 ? "if (" + get(c, *idx.src[2]) + ") " : "";
          const UOp& val = *x.src[1];
          if (local) line(cat("*", ptr, " = ", S(1), ";"));
          else if (val.vcount > 1) line(gate + vstore(ptr, value_type(val.dtype, val.vcount, c), S(1), val.vcount));
          else line(gate + cat("*", ptr, " = ", store_value(val.dtype, S(1)), ";"));
          break;
        }
        case Ops::DEFINE_ACC: {
          const UOp& red = *x.src[0];
          std::string v = c.name("acc");
          c.r[&red] = v;
          std::string id = render_const(reduce_identity(red.reduce_op(), red.dtype), red.dtype);
          line(cat(T, " ", v, " = ", x.vcount > 1 ? broadcast(T, id, x.vcount) : id, ";"));
          break;
        }
        case Ops::ACC_UPDATE: {
          const UOp& red = *x.src[0];
          std::string a = c.r.at(&red);
          line(cat(a, " = ", alu_expr(red.reduce_op(), red.dtype, x.vcount, {a, S(1)}, {red.dtype, red.dtype}, nullptr, c), ";"));
          break;
        }
        case Ops::REDUCE: break;  // named by its DEFINE_ACC
        case Ops::VECTORIZE: {
          std::vector<std::string> xs;
          for (size_t i = 0; i < x.src.size(); i++) xs.push_back(S(i));
          c.r[&x] = vec(T, xs);
          c.lanes[c.r[&x]] = xs;
          break;
        }
        case Ops::GEP: c.r[&x] = lane(S(0), int(x.iarg())); break;
        default: {
          if (!is_alu(x.op) && x.op != Ops::CAST && x.op != Ops::BITCAST) throw Error(std::string("tinygrad: C renderer cannot render ") + op_name(x.op));
          std::vector<std::string> a;
          std::vector<DType> dts;
          for (size_t i = 0; i < x.src.size(); i++) { a.push_back(S(i)); dts.push_back(x.src[i]->dtype); }
          std::string v = c.name("alu");
          if (x.op == Ops::BITCAST && x.dtype == DType::Bool) {  // NOTE: a bool's byte must be 0 or 1: any other byte is true
            line(cat(T, " ", v, " = (", a[0], "!=0);"));
          } else if (x.op == Ops::BITCAST) {
            line(cat(T, " ", v, ";"));
            line(bitcast(v, T, value_type(dts[0], x.vcount, c), a[0]));
          } else {
            line(cat(T, " ", v, " = ", alu_expr(x.op, x.dtype, x.vcount, a, dts, &x, c), ";"));
          }
          c.r[&x] = v;
        }
      }
    }
    return prelude(c) + kernel_decl(name, c) + " {\n" + params_prelude(c) + body + "}\n";
  }

 protected:
  struct Ctx {
    std::unordered_map<const UOp*, std::string> r;
    std::vector<std::string> params;
    std::vector<DType> param_dtypes;
    std::vector<int64_t> param_ids;
    std::set<std::string> typedefs;
    std::set<int64_t> stored;       // params written by the kernel
    int64_t local[3] = {1, 1, 1};   // local size, from the local ids
    bool uses_half = false, uses_bf16 = false, uses_double = false;
    std::unordered_map<std::string, int> counts;
    std::unordered_map<std::string, std::vector<std::string>> lanes;  // a rendered vector literal -> its lanes
    std::string name(const std::string& p) { return cat(p, counts[p]++); }
  };

  // constants are not in the linear list: they print inline where used
  std::string get(Ctx& c, const UOp& u) const {
    if (auto it = c.r.find(&u); it != c.r.end()) return it->second;
    if (u.op == Ops::CONST) return const_str(u);
    throw Error(std::string("tinygrad: C renderer: ") + op_name(u.op) + " used before it was defined");
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
  virtual std::string vload(const std::string& v, const std::string& T, const std::string& ptr, int) const { return cat("__builtin_memcpy(&", v, ", ", ptr, ", sizeof(", T, "));"); }
  virtual std::string vstore(const std::string& ptr, const std::string& T, const std::string& v, int) const { return cat("__builtin_memcpy(", ptr, ", &", v, ", sizeof(", T, "));"); }
  virtual bool native_vector_ops() const { return true; }  // + - * / & | ^ and conversions on whole vectors
  // a vector's element type (bools are held as ints) and its name: float4, uint4, long2
  std::string vector_elem(DType dt) const { return dt == DType::Bool ? "int" : scalar_type(dt); }
  static std::string vector_name(const std::string& elem, int vc) {
    return cat(elem == "unsigned int" ? "uint" : elem == "long long" ? "long" : elem == "unsigned long long" ? "ulong" : elem, vc);
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
  static const char* fsuffix(DType dt) { return dt == DType::Float64 ? "" : "f"; }

  // ---- defined results on every input (listed in uop/symbolic.hpp, which folds constants the same way) ----
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
      detail::i128 p[4] = {detail::i128(a.vmin) * b.vmin, detail::i128(a.vmin) * b.vmax, detail::i128(a.vmax) * b.vmin, detail::i128(a.vmax) * b.vmax};
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
  static bool div_neg1(DType dt, const UOp* u) { return itemsize(dt) >= 4 && !is_unsigned(dt) && may_be(u, 1, -1) && may_be(u, 0, detail::int_min(dt)); }
  // the op needs more than its C operator
  static bool guarded(Ops op, DType dt, const std::vector<DType>& dts, const UOp* u) {
    if (op == Ops::IDIV || op == Ops::MOD) return div_zero(u) || div_neg1(dt, u);
    if (op == Ops::SHL) return shift_out(dt, u) || may_overflow(op, dt, u);
    if (op == Ops::SHR) return shift_out(dt, u);
    if (op == Ops::CAST) return is_float(dts[0]) && !is_float(dt) && dt != DType::Bool;
    return (op == Ops::ADD || op == Ops::MUL || op == Ops::NEG || op == Ops::MULACC) && may_overflow(op, dt, u);
  }
  // an int op computed in C's unsigned type of the same width, converted back: it wraps (the conversion is defined
  // by C++20 and, as modular, by gcc, clang, nvcc and OpenCL). T, U: the types (C vectors: a cast reinterprets)
  std::string wrapped(Ops op, DType dt, const std::vector<std::string>& a, std::string T = "", std::string U = "") const {
    if (T.empty()) { T = scalar_type(dt); U = scalar_type(itemsize(compute_type(dt)) == 8 ? DType::UInt64 : DType::UInt32); }
    U = "(" + U + ")";
    std::string e = op == Ops::NEG ? "-" + U + a[0] : op == Ops::ADD ? U + a[0] + "+" + U + a[1] : op == Ops::SHL ? U + a[0] + "<<" + a[1]
                  : op == Ops::MUL ? U + a[0] + "*" + U + a[1] : "(" + U + a[0] + "*" + U + a[1] + ")+" + U + a[2];
    return "((" + T + ")(" + e + "))";
  }
  // float -> int: NaN -> 0, +-inf and values out of range saturate, the rest truncates toward zero
  virtual std::string float_to_int(const std::string& x, DType from, DType to) const {
    int digits = itemsize(to) * 8 - !is_unsigned(to);
    int64_t hi = to == DType::UInt64 ? -1 : detail::int_max(to);  // as by wrap_int
    return cat("((", x, "!=", x, ")?0:(", x, "<=", render_const(is_unsigned(to) ? 0.0 : -std::ldexp(1.0, digits), from), ")?", render_int(detail::int_min(to), to),
               ":(", x, ">=", render_const(std::ldexp(1.0, digits), from), ")?", render_int(hi, to), ":(", scalar_type(to), ")", x, ")");
  }
  // an int op that needs a guard or unsigned arithmetic
  std::string guarded_op(Ops op, DType dt, const std::vector<std::string>& a, const std::vector<DType>& dts, const UOp* u) const {
    int bits = itemsize(dt) * 8;
    auto count_ok = [&] { return cat("((", scalar_type(DType::UInt64), ")", a[1], "<", bits, ")"); };
    switch (op) {
      case Ops::IDIV: {
        std::string e = "(" + a[0] + "/" + a[1] + ")";
        if (div_neg1(dt, u)) e = cat("((", a[1], "==-1)?", wrapped(Ops::NEG, dt, a), ":", e, ")");
        return div_zero(u) ? cat("((", a[1], "==0)?0:", e, ")") : e;
      }
      case Ops::MOD: {
        std::string cond = div_zero(u) ? "(" + a[1] + "==0)" : "";
        if (div_neg1(dt, u)) cond += (cond.empty() ? "(" : "||(") + a[1] + "==-1)";
        return cat("(", cond, "?0:(", a[0], "%", a[1], "))");
      }
      case Ops::SHL: {
        std::string e = may_overflow(op, dt, u) ? wrapped(op, dt, a) : "(" + a[0] + "<<" + a[1] + ")";
        return shift_out(dt, u) ? cat("(", count_ok(), "?", e, ":0)") : e;
      }
      case Ops::SHR:
        if (is_unsigned(dt)) return cat("(", count_ok(), "?(", a[0], ">>", a[1], "):0)");
        return cat("(", a[0], ">>(", count_ok(), "?", a[1], ":", bits - 1, "))");  // a count past the width fills with the sign
      case Ops::CAST: return float_to_int(a[0], dts[0], dt);
      default: return wrapped(op, dt, a);
    }
  }
  // one ALU op on scalars
  virtual std::string scalar_op(Ops op, DType dt, const std::vector<std::string>& a, const std::vector<DType>& dts, const UOp* u, const Ctx& c) const {
    std::string f = fsuffix(dt);
    if (guarded(op, dt, dts, u)) return guarded_op(op, dt, a, dts, u);
    switch (op) {
      case Ops::ADD: return "(" + a[0] + "+" + a[1] + ")";
      case Ops::MUL: return "(" + a[0] + "*" + a[1] + ")";
      case Ops::FDIV: return "(" + a[0] + "/" + a[1] + ")";
      case Ops::IDIV: return "(" + a[0] + "/" + a[1] + ")";
      case Ops::MOD: return "(" + a[0] + "%" + a[1] + ")";
      case Ops::NEG: return dt == DType::Bool ? "(!" + a[0] + ")" : "(-" + a[0] + ")";
      case Ops::MAX: return is_float(dt) ? cat("((", a[0], "!=", a[0], "||", a[0], ">", a[1], ")?", a[0], ":", a[1], ")") : cat("((", a[0], ">", a[1], ")?", a[0], ":", a[1], ")");
      case Ops::CMPLT: return "(" + a[0] + "<" + a[1] + ")";
      case Ops::CMPNE: return "(" + a[0] + "!=" + a[1] + ")";
      case Ops::CMPEQ: return "(" + a[0] + "==" + a[1] + ")";
      case Ops::AND: return "(" + a[0] + "&" + a[1] + ")";
      case Ops::OR: return "(" + a[0] + "|" + a[1] + ")";
      case Ops::XOR: return "(" + a[0] + "^" + a[1] + ")";
      case Ops::SHL: return "(" + a[0] + "<<" + a[1] + ")";
      case Ops::SHR: return "(" + a[0] + ">>" + a[1] + ")";
      case Ops::WHERE: return "(" + a[0] + "?" + a[1] + ":" + a[2] + ")";
      case Ops::MULACC: return "((" + a[0] + "*" + a[1] + ")+" + a[2] + ")";
      case Ops::EXP2: return "__builtin_exp2" + f + "(" + a[0] + ")";
      case Ops::LOG2: return "__builtin_log2" + f + "(" + a[0] + ")";
      case Ops::SIN: return "__builtin_sin" + f + "(" + a[0] + ")";
      case Ops::SQRT: return "__builtin_sqrt" + f + "(" + a[0] + ")";
      case Ops::TRUNC: return "__builtin_trunc" + f + "(" + a[0] + ")";
      case Ops::RECIPROCAL: return "(1" + std::string(is_float(dt) && dt != DType::Float64 ? ".0f" : ".0") + "/" + a[0] + ")";
      case Ops::CAST: {
        if (dt == DType::Bool) return "(" + a[0] + "!=0)";
        return "((" + scalar_type(dt) + ")" + a[0] + ")";
      }
      default: (void)c; throw Error(std::string("tinygrad: C renderer has no code for ") + op_name(op));
    }
  }
  // an ALU op on scalars or vectors, rounded to half precision where the result is half (u: the op, or null)
  std::string alu_expr(Ops op, DType dt, int vc, const std::vector<std::string>& a, const std::vector<DType>& dts, const UOp* u, Ctx& c) const {
    std::string e;
    bool native_vec = op == Ops::ADD || op == Ops::MUL || op == Ops::FDIV || (op == Ops::IDIV || op == Ops::MOD || op == Ops::AND || op == Ops::OR || op == Ops::XOR);
    bool plain = dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Bool && !guarded(op, dt, dts, u);
    if (vc == 1) e = scalar_op(op, dt, a, dts, u, c);
    else if (native_vector_ops() && native_vec && plain) e = scalar_op(op, dt, a, dts, u, c);
    else if (native_vector_ops() && (op == Ops::ADD || op == Ops::MUL) && is_int(dt))  // guarded only as it may overflow
      e = wrapped(op, dt, a, value_type(dt, vc, c), value_type(itemsize(dt) == 8 ? DType::UInt64 : DType::UInt32, vc, c));
    else if (native_vector_ops() && op == Ops::CAST && plain && dts[0] != DType::Bool)
      e = "__builtin_convertvector(" + a[0] + ", " + value_type(dt, vc, c) + ")";
    else {  // per lane
      std::vector<std::string> lanes;
      for (int i = 0; i < vc; i++) {
        std::vector<std::string> li;
        for (auto& s : a) { auto it = c.lanes.find(s); li.push_back(it != c.lanes.end() ? it->second[size_t(i)] : lane(s, i)); }
        lanes.push_back(round_half(dt, scalar_op(op, dt, li, dts, u, c)));
      }
      return vec(value_type(dt, vc, c), lanes);
    }
    return round_half(dt, e);
  }
  std::string round_half(DType dt, const std::string& e) const {
    if (dt == DType::Float16) return "tg_h2f(tg_f2h(" + e + "))";
    if (dt == DType::BFloat16) return "tg_b2f(tg_f2b(" + e + "))";
    return e;
  }

  virtual std::string prelude(const Ctx& c) const {
    std::string s;
    for (auto& t : c.typedefs) s += t + "\n";
    bool h = c.uses_half, b = c.uses_bf16;
    for (auto d : c.param_dtypes) { h |= d == DType::Float16; b |= d == DType::BFloat16; }
    if (h || b) s += lang.fn_prefix + " float tg_u2f(unsigned int u) { " + lang.u2f + " }\n" + lang.fn_prefix + " unsigned int tg_f2u(float f) { " + lang.f2u + " }\n";
    for (auto [use, code] : {std::pair{h, kHalfC}, std::pair{b, kBF16C}}) {
      if (!use) continue;
      std::string t = code;
      for (size_t at; (at = t.find("TG_FN")) != std::string::npos;) t.replace(at, 5, lang.fn_prefix);
      s += t;
    }
    return s;
  }
  virtual std::string bitcast(const std::string& v, const std::string& T, const std::string& srcT, const std::string& a) const {
    return cat("{ ", srcT, " tmp = ", a, "; __builtin_memcpy(&", v, ", &tmp, sizeof(", T, ")); }");
  }
  virtual std::string kernel_decl(const std::string& name, const Ctx& c) const { return cat(lang.kernel_prefix, "void ", name, "(", signature(c), ")"); }
  virtual std::string signature(const Ctx&) const { return "void** bufs, const long long* vals, int core_id, int ncores"; }
  virtual std::string params_prelude(const Ctx& c) const {
    std::string s;
    for (size_t i = 0; i < c.params.size(); i++) s += cat("  ", c.params[i], " = (", storage_type(c.param_dtypes[i]), "*)bufs[", c.param_ids[i], "];\n");
    return s + "  (void)vals; (void)core_id; (void)ncores;\n";
  }

  static constexpr const char* kHalfC =
      "TG_FN float tg_h2f(unsigned short h) { unsigned int s = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, r;\n"
      "  if (e == 0) { if (m == 0) r = s; else { e = 113; while (!(m & 0x400u)) { m <<= 1; e--; } m &= 0x3ffu; r = s | (e << 23) | (m << 13); } }\n"
      "  else if (e == 31) r = s | 0x7f800000u | (m << 13); else r = s | ((e + 112) << 23) | (m << 13);\n"
      "  return tg_u2f(r); }\n"
      "TG_FN unsigned short tg_f2h(float f) { unsigned int x = tg_f2u(f);\n"
      "  unsigned int s = (x >> 16) & 0x8000u, m = x & 0x7fffffu; int e = (int)((x >> 23) & 0xffu) - 112;\n"
      "  if (((x >> 23) & 0xffu) == 0xffu) return (unsigned short)(s | 0x7c00u | (m ? 0x200u : 0u));\n"
      "  if (e >= 31) return (unsigned short)(s | 0x7c00u);\n"
      "  if (e <= 0) { if (e < -10) return (unsigned short)s; m |= 0x800000u; unsigned int sh = (unsigned int)(14 - e), hv = m >> sh, rem = m & ((1u << sh) - 1u), mid = 1u << (sh - 1u);\n"
      "    if (rem > mid || (rem == mid && (hv & 1u))) hv++; return (unsigned short)(s | hv); }\n"
      "  unsigned int hv = s | ((unsigned int)e << 10) | (m >> 13), rem = m & 0x1fffu; if (rem > 0x1000u || (rem == 0x1000u && (hv & 1u))) hv++; return (unsigned short)hv; }\n";
  static constexpr const char* kBF16C =
      "TG_FN float tg_b2f(unsigned short h) { return tg_u2f((unsigned int)h << 16); }\n"
      "TG_FN unsigned short tg_f2b(float f) { unsigned int x = tg_f2u(f); if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);\n"
      "  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); }\n";
};

// C for the CPU device
class CRenderer : public CStyleRenderer {
 public:
  explicit CRenderer(int nthreads, int vregs = 16) {
    device = "CPU";
    threads = nthreads;
    vector_registers = vregs;
  }
  int64_t vector_lanes(DType dt) const override {
    if (dt == DType::Bool || dt == DType::Float16 || dt == DType::BFloat16 || itemsize(dt) < 4) return 1;
    return 32 / itemsize(dt);  // one AVX2 register
  }
};

// the GPU languages: thread ids instead of loops, buffers as kernel parameters, math functions by name
class GPURenderer : public CStyleRenderer {
 public:
  GPURenderer() { has_local = true; }
  // float4 / int4 / uint4 loads and stores; arithmetic runs per lane (CUDA has no vector operators)
  int64_t vector_lanes(DType dt) const override { return itemsize(dt) == 4 && dt != DType::Bool ? 4 : 1; }

 protected:
  // parameters in buffer order; a gap (a buffer the kernel never touches) keeps its place
  std::string signature(const Ctx& c) const override {
    int64_t n = 0;
    for (auto i : c.param_ids) n = std::max(n, i + 1);
    std::vector<std::string> ps(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; i++) ps[size_t(i)] = cat(lang.buffer_prefix, "unsigned char* unused", i);
    for (size_t j = 0; j < c.param_ids.size(); j++) {
      int64_t i = c.param_ids[j];
      ps[size_t(i)] = cat(lang.buffer_prefix, c.stored.count(i) ? "" : "const ", storage_type(c.param_dtypes[j]), "* ", lang.restrict_kw, " data", i);
    }
    return join(ps);
  }
  std::string params_prelude(const Ctx&) const override { return ""; }
  std::string vector_type(DType dt, int vc, Ctx&) const override { return vector_name(vector_elem(dt), vc); }
  std::string lane(const std::string& v, int i) const override { return cat(v, ".", "xyzw"[i]); }
  bool native_vector_ops() const override { return false; }
  std::string bitcast(const std::string& v, const std::string& T, const std::string& srcT, const std::string& a) const override {
    return cat("{ union { ", srcT, " a; ", T, " b; } tmp; tmp.a = ", a, "; ", v, " = tmp.b; }");
  }
  virtual bool float_suffix() const = 0;  // CUDA: sinf; OpenCL: overloaded sin
  std::string scalar_op(Ops op, DType dt, const std::vector<std::string>& a, const std::vector<DType>& dts, const UOp* u, const Ctx& c) const override {
    const char* fn = op == Ops::EXP2 ? "exp2" : op == Ops::LOG2 ? "log2" : op == Ops::SIN ? "sin" : op == Ops::SQRT ? "sqrt" : op == Ops::TRUNC ? "trunc" : nullptr;
    if (fn) return cat(fn, float_suffix() && dt != DType::Float64 ? "f" : "", "(", a[0], ")");
    return CStyleRenderer::scalar_op(op, dt, a, dts, u, c);
  }
  std::string scalar_type(DType dt) const override { return dt == DType::Bool ? "bool" : CStyleRenderer::scalar_type(dt); }
};

// CUDA C, compiled by NVRTC
class CUDARenderer : public GPURenderer {
 public:
  CUDARenderer() {
    device = "CUDA";
    lang.kernel_prefix = "extern \"C\" __global__ ";
    lang.restrict_kw = "__restrict__";
    lang.fn_prefix = "__device__ inline";
    lang.u2f = "return __uint_as_float(u);";
    lang.f2u = "return __float_as_uint(f);";
    for (int d = 0; d < 3; d++) { lang.gid[d] = cat("blockIdx.", "xyz"[d]); lang.lid[d] = cat("threadIdx.", "xyz"[d]); }
    lang.smem_prefix = "__shared__ ";
    lang.barrier = "__syncthreads();";
    lang.vec[0] = "make_", lang.vec[1] = "(", lang.vec[2] = ")";
    aligned_vectors = true;
  }

 protected:
  bool float_suffix() const override { return true; }
  std::string vload(const std::string& v, const std::string& T, const std::string& ptr, int) const override { return cat(v, " = *((const ", T, "*)", ptr, ");"); }
  std::string vstore(const std::string& ptr, const std::string& T, const std::string& v, int) const override { return cat("*((", T, "*)", ptr, ") = ", v, ";"); }
  std::string kernel_decl(const std::string& name, const Ctx& c) const override {
    return cat(lang.kernel_prefix, "void __launch_bounds__(", c.local[0] * c.local[1] * c.local[2], ") ", name, "(", signature(c), ")");
  }
  std::string nonfinite(double v, bool f32) const override {
    if (f32) return std::isnan(v) ? "__int_as_float(0x7fc00000)" : v < 0 ? "__int_as_float(0xff800000)" : "__int_as_float(0x7f800000)";
    return std::isnan(v) ? "__longlong_as_double(0x7ff8000000000000ll)" : v < 0 ? "__longlong_as_double(0xfff0000000000000ll)" : "__longlong_as_double(0x7ff0000000000000ll)";
  }
};

// OpenCL C
class OpenCLRenderer : public GPURenderer {
 public:
  OpenCLRenderer() {
    device = "CL";
    lang.kernel_prefix = "__kernel ";
    lang.buffer_prefix = "__global ";
    lang.u2f = "return as_float(u);";
    lang.f2u = "return as_uint(f);";
    for (int d = 0; d < 3; d++) { lang.gid[d] = cat("get_group_id(", d, ")"); lang.lid[d] = cat("get_local_id(", d, ")"); }
    lang.smem_prefix = "__local ";
    lang.barrier = "barrier(CLK_LOCAL_MEM_FENCE);";
    lang.vec[0] = "(", lang.vec[1] = ")(", lang.vec[2] = ")";
  }

 protected:
  bool float_suffix() const override { return false; }
  // vloadN / vstoreN need only the element's alignment
  std::string vload(const std::string& v, const std::string&, const std::string& ptr, int n) const override { return cat(v, " = vload", n, "(0, ", ptr, ");"); }
  std::string vstore(const std::string& ptr, const std::string&, const std::string& v, int n) const override { return cat("vstore", n, "(", v, ", 0, ", ptr, ");"); }
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
  // convert_T_sat: NaN -> 0, saturates, rounds toward zero
  std::string float_to_int(const std::string& x, DType, DType to) const override { return cat("convert_", scalar_type(to), "_sat(", x, ")"); }
  std::string nonfinite(double v, bool f32) const override {
    std::string s = std::isnan(v) ? "NAN" : v < 0 ? "(-INFINITY)" : "INFINITY";
    return f32 ? s : "(double)" + s;
  }
  std::string prelude(const Ctx& c) const override {
    bool dbl = std::find(c.param_dtypes.begin(), c.param_dtypes.end(), DType::Float64) != c.param_dtypes.end();
    return std::string(dbl || c.uses_double ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "") + GPURenderer::prelude(c);
  }
};

}  // namespace tinygrad
