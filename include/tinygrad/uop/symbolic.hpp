#pragma once
// the symbolic simplifier: constant folding, algebraic identities, value-range folding,
// and div/mod folding over linear index expressions.
#include "upat.hpp"

namespace tinygrad {

// evaluate one ALU op on constants, with the dtype's wrap-around and rounding
inline double exec_alu(Ops op, DType dt, const std::vector<double>& v) {
  auto wrap = [&](double x) -> double {
    if (is_float(dt)) return dt == DType::Float32 ? double(float(x)) : dt == DType::Float16 ? f16_to_f32(f32_to_f16(float(x))) : dt == DType::BFloat16 ? bf16_to_f32(f32_to_bf16(float(x))) : x;
    if (dt == DType::Bool) return x != 0;
    int bits = itemsize(dt) * 8;
    if (bits == 64) return is_unsigned(dt) ? double(uint64_t(int64_t(x))) : double(int64_t(x));
    uint64_t m = (uint64_t(1) << bits) - 1, u = uint64_t(int64_t(x)) & m;
    if (!is_unsigned(dt) && (u >> (bits - 1))) return double(int64_t(u) - int64_t(m) - 1);
    return double(u);
  };
  auto I = [&](size_t i) { return int64_t(v[i]); };
  switch (op) {
    case Ops::NEG: return wrap(-v[0]);
    case Ops::EXP2: return wrap(std::exp2(v[0]));
    case Ops::LOG2: return wrap(std::log2(v[0]));
    case Ops::SIN: return wrap(std::sin(v[0]));
    case Ops::SQRT: return wrap(std::sqrt(v[0]));
    case Ops::RECIPROCAL: return wrap(1.0 / v[0]);
    case Ops::TRUNC: return wrap(std::trunc(v[0]));
    case Ops::ADD: return wrap(v[0] + v[1]);
    case Ops::MUL: return wrap(is_float(dt) ? v[0] * v[1] : double(I(0) * I(1)));
    case Ops::FDIV: return wrap(v[0] / v[1]);
    case Ops::IDIV: return I(1) == 0 ? 0 : wrap(double(I(0) / I(1)));
    case Ops::MOD: return I(1) == 0 ? 0 : wrap(double(I(0) % I(1)));
    case Ops::MAX: return wrap(std::isnan(v[0]) || v[0] > v[1] ? v[0] : v[1]);  // NaN propagates, as the rendered MAX
    case Ops::CMPLT: return v[0] < v[1];
    case Ops::CMPNE: return v[0] != v[1];
    case Ops::CMPEQ: return v[0] == v[1];
    case Ops::AND: return wrap(double(I(0) & I(1)));
    case Ops::OR: return wrap(double(I(0) | I(1)));
    case Ops::XOR: return wrap(double(I(0) ^ I(1)));
    case Ops::SHL: return wrap(double(I(0) << I(1)));
    case Ops::SHR: return wrap(double(I(0) >> I(1)));
    case Ops::WHERE: return v[0] != 0 ? v[1] : v[2];
    case Ops::MULACC: return wrap(v[0] * v[1] + v[2]);
    default: throw Error(std::string("tinygrad: exec_alu cannot evaluate ") + op_name(op));
  }
}

namespace detail {
// an integer expression as sum(coeff * term) + k
struct Linear {
  std::vector<std::pair<UOpRef, int64_t>> terms;
  int64_t k = 0;
  void add(const UOpRef& u, int64_t c) {
    if (u->op == Ops::CONST && u->vcount == 1) { k += c * int64_t(u->const_value()); return; }
    if (u->op == Ops::ADD) { add(u->src[0], c); add(u->src[1], c); return; }
    if (u->op == Ops::MUL && u->src[1]->op == Ops::CONST && u->src[1]->vcount == 1) { add(u->src[0], c * int64_t(u->src[1]->const_value())); return; }
    if (u->op == Ops::MUL && u->src[0]->op == Ops::CONST && u->src[0]->vcount == 1) { add(u->src[1], c * int64_t(u->src[0]->const_value())); return; }
    for (auto& [t, tc] : terms) if (t == u) { tc += c; return; }
    terms.emplace_back(u, c);
  }
  // (x // c) * (c*k) + (x % c) * k  ->  x * k   and   ((x // a) % b) * (a*k) + (x % a) * k  ->  (x % (a*b)) * k
  bool merge_divmod() {
    for (size_t i = 0; i < terms.size(); i++) {
      auto& [m, mk] = terms[i];
      if (m->op != Ops::MOD || m->src[1]->op != Ops::CONST || m->src[0]->op != Ops::IDIV || m->src[0]->src[1]->op != Ops::CONST) continue;
      const UOpRef& x = m->src[0]->src[0];
      int64_t a = int64_t(m->src[0]->src[1]->const_value()), b = int64_t(m->src[1]->const_value());
      if (x->vmin < 0 || a <= 0 || b <= 0 || mk % a) continue;
      for (size_t j = 0; j < terms.size(); j++) {
        auto& [r, rk] = terms[j];
        if (r->op == Ops::MOD && r->src[0] == x && r->src[1]->op == Ops::CONST && int64_t(r->src[1]->const_value()) == a && rk * a == mk) {
          int64_t kk = rk;
          terms.erase(terms.begin() + int64_t(std::max(i, j)));
          terms.erase(terms.begin() + int64_t(std::min(i, j)));
          add(mod(x, a * b), kk);
          return true;
        }
      }
    }
    for (size_t i = 0; i < terms.size(); i++) {
      auto& [m, mk] = terms[i];
      if (m->op != Ops::MOD || m->src[1]->op != Ops::CONST || mk == 0) continue;
      int64_t c = int64_t(m->src[1]->const_value());
      if (m->src[0]->vmin < 0) continue;
      for (size_t j = 0; j < terms.size(); j++) {
        auto& [d, dk] = terms[j];
        if (d->op == Ops::IDIV && d->src[0] == m->src[0] && d->src[1] == m->src[1] && dk == c * mk) {
          UOpRef x = m->src[0];
          int64_t kk = mk;
          terms.erase(terms.begin() + int64_t(std::max(i, j)));
          terms.erase(terms.begin() + int64_t(std::min(i, j)));
          add(x, kk);
          return true;
        }
      }
    }
    return false;
  }
  UOpRef build(DType dt) {
    while (merge_divmod()) {}
    std::vector<std::pair<UOpRef, int64_t>> ts;
    for (auto& t : terms) if (t.second != 0) ts.push_back(t);
    std::sort(ts.begin(), ts.end(), [](auto& a, auto& b) { return a.first->key < b.first->key; });
    UOpRef r;
    for (auto& [t, c] : ts) {
      UOpRef term = c == 1 ? t : make_uop(Ops::MUL, dt, {t, const_int(dt, c)});
      r = r ? make_uop(Ops::ADD, dt, {r, term}) : term;
    }
    if (!r) return const_int(dt, k);
    return k ? make_uop(Ops::ADD, dt, {r, const_int(dt, k)}) : r;
  }
  int64_t gcd_all() const {
    int64_t g = std::abs(k);
    for (auto& [t, c] : terms) g = std::gcd(g, std::abs(c));
    return g;
  }
};
inline Linear linear_of(const UOpRef& u) { Linear L; L.add(u, 1); return L; }
inline bool is_int_scalar(const UOpRef& u) { return !is_float(u->dtype) && u->dtype != DType::Bool && u->vcount == 1; }

// x // c or x % c for a positive constant c and x >= 0
inline UOpRef fold_divmod(const UOpRef& root) {
  const UOpRef& x = root->src[0];
  int64_t c = int64_t(root->src[1]->const_value());
  if (c <= 0 || x->vmin < 0 || !is_int_scalar(x)) return nullptr;
  DType dt = x->dtype;
  bool is_div = root->op == Ops::IDIV;
  if (x->vmin == x->vmax) return const_int(dt, is_div ? x->vmin / c : x->vmin % c);
  if (!is_div && x->vmax < c) return x;
  if (is_div && x->vmax < c) return const_int(dt, 0);
  Linear L = linear_of(x);
  bool all_nonneg = L.k >= 0;
  for (auto& [t, tc] : L.terms) all_nonneg &= t->vmin >= 0 && tc >= 0;
  // common factor: (g*a) // (g*b) -> a // b
  if (int64_t g = std::gcd(L.gcd_all(), c); g > 1 && all_nonneg) {
    Linear R; R.k = L.k / g;
    for (auto& [t, tc] : L.terms) R.terms.emplace_back(t, tc / g);
    UOpRef inner = R.build(dt);
    return is_div ? alu(Ops::IDIV, {inner, const_int(dt, c / g)}) : alu(Ops::MUL, {alu(Ops::MOD, {inner, const_int(dt, c / g)}), const_int(dt, g)});
  }
  // split into c * quotient + remainder
  Linear Q, R;
  R.k = L.k % c; Q.k = L.k / c;
  if (L.k < 0) { R.k = L.k; Q.k = 0; }
  bool moved = Q.k != 0;
  for (auto& [t, tc] : L.terms) {
    if (tc % c == 0) { Q.terms.emplace_back(t, tc / c); moved = true; }
    else if (all_nonneg && tc > c) { Q.terms.emplace_back(t, tc / c); R.terms.emplace_back(t, tc % c); moved = true; }
    else R.terms.emplace_back(t, tc);
  }
  UOpRef rem = R.build(dt);
  if (rem->vmin < 0) return nullptr;
  if (!is_div) {
    if (rem->vmax < c) return rem;
    return moved ? alu(Ops::MOD, {rem, const_int(dt, c)}) : nullptr;
  }
  if (rem->vmin / c == rem->vmax / c) { Q.k += rem->vmin / c; return Q.build(dt); }
  if (!moved) return nullptr;
  return Q.build(dt) + alu(Ops::IDIV, {rem, const_int(dt, c)});
}
}  // namespace detail

// ---- the rules ----
inline const PatternMatcher& symbolic() {
  using detail::is_int_scalar;
  static const PatternMatcher pm{
      // constant folding
      {UPat::ops_of({Ops::EXP2, Ops::LOG2, Ops::SIN, Ops::SQRT, Ops::RECIPROCAL, Ops::NEG, Ops::TRUNC, Ops::ADD, Ops::MUL, Ops::IDIV, Ops::MOD,
                     Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR, Ops::XOR, Ops::SHL, Ops::SHR, Ops::FDIV, Ops::WHERE, Ops::MULACC}, "a"),
       [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         std::vector<double> v;
         for (auto& s : a->src) { if (s->op != Ops::CONST || s->vcount != 1) return nullptr; v.push_back(s->const_value()); }
         return a->vcount == 1 ? const_uop(a->dtype, exec_alu(a->op, a->dtype, v)) : nullptr;
       }},
      {UPat::op(Ops::CAST, {UPat::cvar("c")}, "a"), [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         double v = m["c"]->const_value();
         if (!is_float(a->dtype) && !std::isfinite(v)) return nullptr;
         return a->vcount == 1 ? const_uop(a->dtype, exec_alu(Ops::ADD, a->dtype, {is_float(a->dtype) ? v : std::trunc(v), 0})) : nullptr;
       }},
      // a node whose value range is one number is that number
      {UPat::ops_of({Ops::ADD, Ops::MUL, Ops::IDIV, Ops::MOD, Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR, Ops::XOR, Ops::WHERE}, "a"),
       [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         return !is_float(a->dtype) && a->vcount == 1 && a->vmin == a->vmax ? const_int(a->dtype, a->vmin) : nullptr;
       }},
      // identities
      {UPat::var("x") + 0, [](const Match& m) { return m["x"]; }},
      {UPat::var("x") * 1, [](const Match& m) { return m["x"]; }},
      {UPat::var("x") * 0, [](const Match& m) -> UOpRef { return is_float(m["x"]->dtype) ? nullptr : const_int(m["x"]->dtype, 0); }},
      {idiv(UPat::var("x"), UPat::cnst(1)), [](const Match& m) { return m["x"]; }},
      {UPat::op(Ops::FDIV, {UPat::var("x"), UPat::cnst(1)}), [](const Match& m) { return m["x"]; }},
      {UPat::var("x") % UPat::cnst(1), [](const Match& m) { return const_int(m["x"]->dtype, 0); }},
      {UPat::op(Ops::AND, {UPat::var("x"), UPat::cnst(1)}), [](const Match& m) -> UOpRef { return m["x"]->dtype == DType::Bool ? m["x"] : nullptr; }},
      {UPat::op(Ops::AND, {UPat::var("x"), UPat::cnst(0)}), [](const Match& m) { return const_int(m["x"]->dtype, 0); }},
      {UPat::op(Ops::OR, {UPat::var("x"), UPat::cnst(0)}), [](const Match& m) { return m["x"]; }},
      {UPat::op(Ops::AND, {UPat::var("x"), UPat::var("x")}), [](const Match& m) { return m["x"]; }},
      {where(UPat::cnst(1), UPat::var("a"), UPat::var("b")), [](const Match& m) { return m["a"]; }},
      {where(UPat::cnst(0), UPat::var("a"), UPat::var("b")), [](const Match& m) { return m["b"]; }},
      {where(UPat::var("c"), UPat::var("a"), UPat::var("a")), [](const Match& m) { return m["a"]; }},
      {max(UPat::var("x"), UPat::var("x")), [](const Match& m) { return m["x"]; }},
      {UPat::op(Ops::CAST, {UPat::var("x")}, "c"), [](const Match& m) -> UOpRef { return m["c"]->dtype == m["x"]->dtype ? m["x"] : nullptr; }},
      // (x // a) // b -> x // (a*b)
      {idiv(idiv(UPat::var("x"), UPat::cvar("a")), UPat::cvar("b")), [](const Match& m) -> UOpRef {
         int64_t a = int64_t(m["a"]->const_value()), b = int64_t(m["b"]->const_value());
         return a > 0 && b > 0 && m["x"]->vmin >= 0 ? idiv(m["x"], a * b) : nullptr;
       }},
      // (x % (c*k)) % c -> x % c
      {(UPat::var("x") % UPat::cvar("a")) % UPat::cvar("b"), [](const Match& m) -> UOpRef {
         int64_t a = int64_t(m["a"]->const_value()), b = int64_t(m["b"]->const_value());
         return a > 0 && b > 0 && a % b == 0 && m["x"]->vmin >= 0 ? mod(m["x"], b) : nullptr;
       }},
      // (x % (c*k)) // c -> (x // c) % k
      {idiv(UPat::var("x") % UPat::cvar("a"), UPat::cvar("b")), [](const Match& m) -> UOpRef {
         int64_t a = int64_t(m["a"]->const_value()), b = int64_t(m["b"]->const_value());
         return a > 0 && b > 0 && a % b == 0 && m["x"]->vmin >= 0 ? mod(idiv(m["x"], b), a / b) : nullptr;
       }},
      // div/mod folding over linear expressions
      {UPat::op(Ops::IDIV, {UPat::var(), UPat::cvar()}, "d"), [](const Match& m) { return detail::fold_divmod(m["d"]); }},
      {UPat::op(Ops::MOD, {UPat::var(), UPat::cvar()}, "d"), [](const Match& m) { return detail::fold_divmod(m["d"]); }},
      // (x + c1) < c2 -> x < c2 - c1 ; x*c < d -> x < ceil(d/c)
      {(UPat::var("x") + UPat::cvar("c1")) < UPat::cvar("c2"), [](const Match& m) -> UOpRef {
         return is_int_scalar(m["x"]) ? lt(m["x"], int64_t(m["c2"]->const_value() - m["c1"]->const_value())) : nullptr;
       }},
      {(UPat::var("x") * UPat::cvar("c")) < UPat::cvar("d"), [](const Match& m) -> UOpRef {
         int64_t c = int64_t(m["c"]->const_value()), d = int64_t(m["d"]->const_value());
         if (!is_int_scalar(m["x"]) || c <= 0) return nullptr;
         return lt(m["x"], d > 0 ? (d + c - 1) / c : -((-d) / c));
       }},
      // canonical linear form of integer sums: like terms merged, sorted, constant last
      {UPat::ops_of({Ops::ADD, Ops::MUL}, "a"), [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         if (!is_int_scalar(a)) return nullptr;
         if (a->op == Ops::MUL && a->src[1]->op != Ops::CONST) return nullptr;
         if (a->op == Ops::MUL && a->src[0]->op != Ops::ADD && a->src[0]->op != Ops::MUL) return nullptr;
         return detail::linear_of(a).build(a->dtype);
       }},
      // x * c  with c on the right
      {UPat::op(Ops::MUL, {UPat::cvar("c"), UPat::var("x")}), [](const Match& m) -> UOpRef {
         return m["x"]->op == Ops::CONST ? nullptr : make_uop(Ops::MUL, m["x"]->dtype, {m["x"], m["c"]}, {}, m["x"]->vcount);
       }},
  };
  return pm;
}

inline UOpRef simplify(const UOpRef& u) { return graph_rewrite(u, symbolic()); }

}  // namespace tinygrad
