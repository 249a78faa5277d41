#pragma once
// the C-style renderer family: a linear kernel (from codegen/linearize.hpp) printed as source.
// A language is a traits struct (Lang) plus a few virtual overrides; C for the CPU lives here.
#include <set>
#include "../uop/ops.hpp"

namespace tinygrad {

struct Renderer {
  std::string device;
  int threads = 1;          // CPU cores for the THREAD axis
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
    bool half_as_float = true;     // hold half/bfloat16 values in float, round after each op
  } lang;

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
          c.params.push_back(cat(lang.buffer_prefix, storage_type(x.dtype), "* restrict data", i));
          c.param_dtypes.push_back(x.dtype);
          break;
        }
        case Ops::SPECIAL: c.r[&x] = special_name(x); break;
        case Ops::CONST: c.r[&x] = render_const(x.const_value(), x.dtype); break;
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
          if (x.vcount > 1) {
            line(cat(T, " ", v, gated ? " = {0}" : "", ";"));
            line(cat(gated ? "if (" + get(c, *idx.src[2]) + ") " : "", "__builtin_memcpy(&", v, ", ", ptr, ", sizeof(", T, "));"));
          } else {
            std::string ld = load_value(st, "*" + ptr);
            line(cat(T, " ", v, " = ", gated ? cat(get(c, *idx.src[2]), " ? ", ld, " : ", render_const(0, st)) : ld, ";"));
          }
          c.r[&x] = v;
          break;
        }
        case Ops::STORE: {
          std::string ptr = S(0);
          const UOp& val = *x.src[1];
          if (val.vcount > 1) line(cat("__builtin_memcpy(", ptr, ", &", S(1), ", sizeof(", value_type(val.dtype, val.vcount, c), "));"));
          else line(cat("*", ptr, " = ", store_value(val.dtype, S(1)), ";"));
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
          line(cat(a, " = ", alu_expr(red.reduce_op(), red.dtype, x.vcount, {a, S(1)}, {red.dtype, red.dtype}, c), ";"));
          break;
        }
        case Ops::REDUCE: break;  // named by its DEFINE_ACC
        case Ops::VECTORIZE: {
          std::string s = "(" + T + "){";
          for (size_t i = 0; i < x.src.size(); i++) s += (i ? ", " : "") + S(i);
          c.r[&x] = s + "}";
          break;
        }
        case Ops::GEP: c.r[&x] = cat(S(0), "[", x.iarg(), "]"); break;
        default: {
          if (!is_alu(x.op) && x.op != Ops::CAST && x.op != Ops::BITCAST) throw Error(std::string("tinygrad: C renderer cannot render ") + op_name(x.op));
          std::vector<std::string> a;
          std::vector<DType> dts;
          for (size_t i = 0; i < x.src.size(); i++) { a.push_back(S(i)); dts.push_back(x.src[i]->dtype); }
          std::string v = c.name("alu");
          if (x.op == Ops::BITCAST) {
            line(cat(T, " ", v, ";"));
            line(cat("{ ", value_type(dts[0], x.vcount, c), " tmp = ", a[0], "; __builtin_memcpy(&", v, ", &tmp, sizeof(", T, ")); }"));
          } else {
            line(cat(T, " ", v, " = ", alu_expr(x.op, x.dtype, x.vcount, a, dts, c), ";"));
          }
          c.r[&x] = v;
        }
      }
    }
    std::string src = prelude(c);
    src += cat(lang.kernel_prefix, "void ", name, "(", signature(c), ") {\n");
    src += params_prelude(c);
    return src + body + "}\n";
  }

 protected:
  struct Ctx {
    std::unordered_map<const UOp*, std::string> r;
    std::vector<std::string> params;
    std::vector<DType> param_dtypes;
    std::set<std::string> typedefs;
    bool uses_half = false, uses_bf16 = false;
    std::unordered_map<std::string, int> counts;
    std::string name(const std::string& p) { return cat(p, counts[p]++); }
  };

  // constants are not in the linear list: they print inline where used
  std::string get(Ctx& c, const UOp& u) const {
    if (auto it = c.r.find(&u); it != c.r.end()) return it->second;
    if (u.op == Ops::CONST) return render_const(u.const_value(), u.dtype);
    throw Error(std::string("tinygrad: C renderer: ") + op_name(u.op) + " used before it was defined");
  }
  static double reduce_identity(Ops op, DType dt) {
    if (op == Ops::ADD) return 0;
    if (op == Ops::MUL) return 1;
    return is_float(dt) ? -INFINITY : double(detail::dtype_min(dt));
  }
  static std::string broadcast(const std::string& T, const std::string& x, int n) {
    std::string s = "(" + T + "){";
    for (int i = 0; i < n; i++) s += (i ? ", " : "") + x;
    return s + "}";
  }

  // how a value of dtype dt is held in a variable
  virtual std::string scalar_type(DType dt) const {
    if ((dt == DType::Float16 || dt == DType::BFloat16) && lang.half_as_float) return "float";
    if (dt == DType::Bool) return "_Bool";
    return info(dt).cname;
  }
  // how an element is stored in memory
  virtual std::string storage_type(DType dt) const {
    if (dt == DType::Float16 || dt == DType::BFloat16) return "unsigned short";
    return scalar_type(dt);
  }
  std::string value_type(DType dt, int vc, Ctx& c) const {
    if (dt == DType::Float16) c.uses_half = true;
    if (dt == DType::BFloat16) c.uses_bf16 = true;
    if (vc == 1) return scalar_type(dt);
    std::string base = dt == DType::Bool ? "int" : scalar_type(dt);
    std::string name = cat(base == "unsigned int" ? "uint" : base == "long long" ? "long" : base == "unsigned long long" ? "ulong" : base, vc);
    int bytes = (dt == DType::Bool ? 4 : base == "float" ? 4 : itemsize(dt)) * vc;
    c.typedefs.insert(cat("typedef ", base, " ", name, " __attribute__((vector_size(", bytes, ")));"));
    return name;
  }
  virtual std::string special_name(const UOp& x) const { (void)x; return "core_id"; }
  std::string load_value(DType dt, const std::string& e) const {
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
      if (std::isnan(v)) return f ? "__builtin_nanf(\"\")" : "__builtin_nan(\"\")";
      if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f ? "__builtin_inff()" : "__builtin_inf()");
      char b[64];
      std::snprintf(b, sizeof b, f ? "%.9g" : "%.17g", v);
      std::string s = b;
      if (s.find_first_of(".e") == std::string::npos) s += ".0";
      return s + (f ? "f" : "");
    }
    if (dt == DType::Bool) return v != 0 ? "1" : "0";
    if (dt == DType::Int64) return v == double(INT64_MIN) ? "(-9223372036854775807ll-1)" : cat(int64_t(v), "ll");
    if (dt == DType::UInt64) return cat(uint64_t(v), "ull");
    if (dt == DType::UInt32) return cat(uint64_t(v), "u");
    if (dt == DType::Int32 && v == double(INT32_MIN)) return "(-2147483647-1)";
    return cat(int64_t(v));
  }
  static const char* fsuffix(DType dt) { return dt == DType::Float64 ? "" : "f"; }
  // one ALU op on scalars
  virtual std::string scalar_op(Ops op, DType dt, const std::vector<std::string>& a, const std::vector<DType>& dts, const Ctx& c) const {
    std::string f = fsuffix(dt);
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
      default: (void)dts; (void)c; throw Error(std::string("tinygrad: C renderer has no code for ") + op_name(op));
    }
  }
  // an ALU op on scalars or vectors, rounded to half precision where the result is half
  std::string alu_expr(Ops op, DType dt, int vc, const std::vector<std::string>& a, const std::vector<DType>& dts, Ctx& c) const {
    std::string e;
    bool native_vec = op == Ops::ADD || op == Ops::MUL || op == Ops::FDIV || (op == Ops::IDIV || op == Ops::MOD || op == Ops::AND || op == Ops::OR || op == Ops::XOR);
    if (vc == 1) e = scalar_op(op, dt, a, dts, c);
    else if (native_vec && dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Bool) e = scalar_op(op, dt, a, dts, c);
    else if (op == Ops::CAST && dt != DType::Float16 && dt != DType::BFloat16 && dt != DType::Bool && dts[0] != DType::Bool)
      e = "__builtin_convertvector(" + a[0] + ", " + value_type(dt, vc, c) + ")";
    else {  // per lane
      e = "(" + value_type(dt, vc, c) + "){";
      for (int i = 0; i < vc; i++) {
        std::vector<std::string> li;
        for (auto& s : a) li.push_back(s + "[" + std::to_string(i) + "]");
        e += (i ? ", " : "") + round_half(dt, scalar_op(op, dt, li, dts, c));
      }
      return e + "}";
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
    if (h) s += kHalfC;
    if (b) s += kBF16C;
    return s;
  }
  virtual std::string signature(const Ctx&) const { return "void** bufs, const long long* vals, int core_id, int ncores"; }
  virtual std::string params_prelude(const Ctx& c) const {
    std::string s;
    for (size_t i = 0; i < c.params.size(); i++) s += cat("  ", c.params[i], " = (", storage_type(c.param_dtypes[i]), "*)bufs[", i, "];\n");
    return s + "  (void)vals; (void)core_id; (void)ncores;\n";
  }

  static constexpr const char* kHalfC =
      "static inline float tg_h2f(unsigned short h) { unsigned int s = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, r;\n"
      "  if (e == 0) { if (m == 0) r = s; else { e = 113; while (!(m & 0x400u)) { m <<= 1; e--; } m &= 0x3ffu; r = s | (e << 23) | (m << 13); } }\n"
      "  else if (e == 31) r = s | 0x7f800000u | (m << 13); else r = s | ((e + 112) << 23) | (m << 13);\n"
      "  float f; __builtin_memcpy(&f, &r, 4); return f; }\n"
      "static inline unsigned short tg_f2h(float f) { unsigned int x; __builtin_memcpy(&x, &f, 4);\n"
      "  unsigned int s = (x >> 16) & 0x8000u, m = x & 0x7fffffu; int e = (int)((x >> 23) & 0xffu) - 112;\n"
      "  if (((x >> 23) & 0xffu) == 0xffu) return (unsigned short)(s | 0x7c00u | (m ? 0x200u : 0u));\n"
      "  if (e >= 31) return (unsigned short)(s | 0x7c00u);\n"
      "  if (e <= 0) { if (e < -10) return (unsigned short)s; m |= 0x800000u; unsigned int sh = (unsigned int)(14 - e), hv = m >> sh, rem = m & ((1u << sh) - 1u), mid = 1u << (sh - 1u);\n"
      "    if (rem > mid || (rem == mid && (hv & 1u))) hv++; return (unsigned short)(s | hv); }\n"
      "  unsigned int hv = s | ((unsigned int)e << 10) | (m >> 13), rem = m & 0x1fffu; if (rem > 0x1000u || (rem == 0x1000u && (hv & 1u))) hv++; return (unsigned short)hv; }\n";
  static constexpr const char* kBF16C =
      "static inline float tg_b2f(unsigned short h) { unsigned int r = (unsigned int)h << 16; float f; __builtin_memcpy(&f, &r, 4); return f; }\n"
      "static inline unsigned short tg_f2b(float f) { unsigned int x; __builtin_memcpy(&x, &f, 4); if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);\n"
      "  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); }\n";
};

// C for the CPU device
class CRenderer : public CStyleRenderer {
 public:
  explicit CRenderer(int nthreads) { device = "CPU"; threads = nthreads; }
  int64_t vector_lanes(DType dt) const override {
    if (dt == DType::Bool || dt == DType::Float16 || dt == DType::BFloat16 || itemsize(dt) < 4) return 1;
    return 32 / itemsize(dt);  // one AVX2 register
  }
};

}  // namespace tinygrad
