#pragma once
// the symbolic simplifier: constant folding, algebraic identities, value-range folding,
// and div/mod folding over linear index expressions.
#include "upat.hpp"

namespace tinygrad::detail {

// Constants fold as the kernels compute them (renderer/cstyle.hpp): ALU ops as the op table says (uop/ops.hpp); a float
// -> int cast truncates, NaN -> 0, +-inf and out-of-range values saturate.
// an int of dtype dt held in an int64: wrapped to dt's width and sign-extended (a uint64 keeps its bit pattern)
inline int64_t wrap_int(DType dt, uint64_t x) {
  if (dt == DType::Bool) return x != 0;
  int bits = itemsize(dt) * 8;
  if (bits == 64) return int64_t(x);
  uint64_t m = (uint64_t(1) << bits) - 1;
  x &= m;
  return !is_unsigned(dt) && (x >> (bits - 1)) ? int64_t(x | ~m) : int64_t(x);
}
// float -> int (or bool), saturating
inline int64_t float_to_int(double x, DType dt) {
  if (dt == DType::Bool) return x != 0;
  if (std::isnan(x)) return 0;
  int digits = itemsize(dt) * 8 - !is_unsigned(dt);
  double hi = std::ldexp(1.0, digits);  // max + 1, exact
  if (x <= (is_unsigned(dt) ? 0.0 : -hi)) return int_min(dt);
  if (x >= hi) return wrap_int(dt, digits == 64 ? ~uint64_t(0) : (uint64_t(1) << digits) - 1);
  return x >= 0x1p63 ? int64_t(uint64_t(x)) : int64_t(x);
}
inline double int_to_float(int64_t v, DType from) { return from == DType::UInt64 ? double(uint64_t(v)) : double(v); }
// a double rounded to a float dtype
inline double round_float(DType dt, double x) {
  return dt == DType::Float32    ? double(float(x))
         : dt == DType::Float16  ? f16_to_f32(f32_to_f16(float(x)))
         : dt == DType::BFloat16 ? bf16_to_f32(f32_to_bf16(float(x)))
                                 : x;
}

inline int64_t ival(const UOpRef& u) { return std::get<int64_t>(u->arg); }  // an int constant
inline int64_t wadd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
inline int64_t wmul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }
inline bool fits(DType dt, i128 lo, i128 hi) { return lo >= int_min(dt) && hi <= int_max(dt); }
// an integer expression as sum(coeff * term) + k; the sums wrap like the dtype, so the form is exact only where
// range() fits the dtype
struct Linear {
  std::vector<std::pair<UOpRef, int64_t>> terms;
  int64_t k = 0;
  void add(const UOpRef& root, int64_t coeff) {
    // NOTE: an explicit stack, not recursion: a sum can be as deep as the kernel is long
    std::vector<std::pair<const UOpRef*, int64_t>> stack{{&root, coeff}};
    while (!stack.empty()) {
      auto [p, c] = stack.back();
      const UOpRef& u = *p;
      stack.pop_back();
      if (u->op == Ops::CONST && u->vcount == 1) { k = wadd(k, wmul(c, ival(u))); continue; }
      if (u->op == Ops::ADD) { stack.push_back({&u->src[1], c}); stack.push_back({&u->src[0], c}); continue; }
      if (u->op == Ops::MUL && u->src[1]->op == Ops::CONST && u->src[1]->vcount == 1) {
        stack.push_back({&u->src[0], wmul(c, ival(u->src[1]))});
        continue;
      }
      if (u->op == Ops::MUL && u->src[0]->op == Ops::CONST && u->src[0]->vcount == 1) {
        stack.push_back({&u->src[1], wmul(c, ival(u->src[0]))});
        continue;
      }
      bool found = false;
      for (auto& [t, tc] : terms) if (t == u) { tc = wadd(tc, c); found = true; break; }
      if (!found) terms.emplace_back(u, c);
    }
  }
  std::pair<i128, i128> range() const {
    i128 lo = k, hi = k;
    for (auto& [t, c] : terms) { i128 a = i128(c) * t->vmin, b = i128(c) * t->vmax; lo += std::min(a, b); hi += std::max(a, b); }
    return {lo, hi};
  }
  // (x // c) * (c*k) + (x % c) * k  ->  x * k   and   ((x // a) % b) * (a*k) + (x % a) * k  ->  (x % (a*b)) * k
  bool merge_divmod() {
    for (size_t i = 0; i < terms.size(); i++) {
      auto& [m, mk] = terms[i];
      if (m->op != Ops::MOD || m->src[1]->op != Ops::CONST || m->src[0]->op != Ops::IDIV || m->src[0]->src[1]->op != Ops::CONST) continue;
      UOpRef x = m->src[0]->src[0];  // NOTE: a copy: erasing the terms below may free m (a term this loop made)
      int64_t a = ival(m->src[0]->src[1]), b = ival(m->src[1]);
      if (x->vmin < 0 || a <= 0 || b <= 0 || mk % a || i128(a) * b > int_max(x->dtype)) continue;
      for (size_t j = 0; j < terms.size(); j++) {
        auto& [r, rk] = terms[j];
        if (r->op == Ops::MOD && r->src[0] == x && r->src[1]->op == Ops::CONST && ival(r->src[1]) == a && i128(rk) * a == mk) {
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
      int64_t c = ival(m->src[1]);
      if (m->src[0]->vmin < 0) continue;
      for (size_t j = 0; j < terms.size(); j++) {
        auto& [d, dk] = terms[j];
        if (d->op == Ops::IDIV && d->src[0] == m->src[0] && d->src[1] == m->src[1] && dk == i128(c) * mk) {
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
    for (auto& [t, c] : terms) if (int64_t w = wrap_int(dt, uint64_t(c))) ts.emplace_back(t, w);
    std::sort(ts.begin(), ts.end(), [](auto& a, auto& b) { return a.first->key < b.first->key; });
    UOpRef r;
    for (auto& [t, c] : ts) {
      UOpRef term = c == 1 ? t : make_uop(Ops::MUL, dt, {t, const_int(dt, c)});
      r = r ? make_uop(Ops::ADD, dt, {r, term}) : term;
    }
    int64_t kw = wrap_int(dt, uint64_t(k));
    if (!r) return const_int(dt, kw);
    return kw ? make_uop(Ops::ADD, dt, {r, const_int(dt, kw)}) : r;
  }
};
inline Linear linear_of(const UOpRef& u) { Linear L; L.add(u, 1); return L; }
inline bool is_int_scalar(const UOpRef& u) { return !is_float(u->dtype) && u->dtype != DType::Bool && u->vcount == 1; }

// x // c or x % c for a positive constant c and x >= 0 (a linear x that cannot wrap)
inline UOpRef fold_divmod(const UOpRef& root) {
  const UOpRef& x = root->src[0];
  if (!is_int_scalar(x) || x->dtype == DType::UInt64) return nullptr;
  int64_t c = ival(root->src[1]);
  if (c <= 0 || x->vmin < 0) return nullptr;
  DType dt = x->dtype;
  bool is_div = root->op == Ops::IDIV;
  if (x->vmin == x->vmax) return const_int(dt, is_div ? x->vmin / c : x->vmin % c);
  if (!is_div && x->vmax < c) return x;
  if (is_div && x->vmax < c) return const_int(dt, 0);
  Linear L = linear_of(x);
  if (auto [lo, hi] = L.range(); !fits(dt, lo, hi)) return nullptr;
  bool all_nonneg = L.k >= 0;
  for (auto& [t, tc] : L.terms) all_nonneg &= t->vmin >= 0 && tc >= 0;
  // a common factor g of c and the large terms, the small terms and k % g within [0, g): x = g*N + s with 0 <= s < g,
  // so x // (g*b) = N // b and x % (g*b) = (N % b)*g + s (s never carries past a multiple of g): (32*r + 8*u + l) // 256
  // with u < 4, l < 8 is r // 8, a quantized weight's super-block for every lane of its sub-block
  if (all_nonneg) {
    std::vector<int64_t> gs;
    for (auto& [t, tc] : L.terms) if (int64_t g = std::gcd(tc, c); g > 1) gs.push_back(g);
    std::sort(gs.rbegin(), gs.rend());
    for (int64_t g : gs) {
      Linear N, S;
      N.k = L.k / g, S.k = L.k % g;
      for (auto& [t, tc] : L.terms) (tc % g == 0 ? N.terms.emplace_back(t, tc / g) : S.terms.emplace_back(t, tc));
      if (S.range().second >= g) continue;
      UOpRef inner = N.build(dt);
      if (is_div) return alu(Ops::IDIV, {inner, const_int(dt, c / g)});
      UOpRef m = alu(Ops::MUL, {alu(Ops::MOD, {inner, const_int(dt, c / g)}), const_int(dt, g)});
      return S.terms.empty() && S.k == 0 ? m : alu(Ops::ADD, {m, S.build(dt)});
    }
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
// sum over r of (a == r ? x : 0) = (0 <= a < n ? x[r := a] : 0), a not depending on r: a one-hot gather (an
// Embedding, Tensor::gather) reads one element instead of walking the whole axis. r := a is clamped into [0, n), so
// every load in x reads where it read before. A CAST between the REDUCE and the WHERE moves outside (cast(0) = 0).
inline UOpRef fold_onehot_reduce(const UOpRef& red) {
  if (red->varg()[0] != int64_t(Ops::ADD) || red->vcount != 1) return nullptr;
  UOpRef v = red->src[0]->op == Ops::CAST ? red->src[0]->src[0] : red->src[0];
  if (v->op != Ops::WHERE || v->vcount != 1) return nullptr;
  const UOpRef& c = v->src[0];
  bool eq = c->op == Ops::CMPEQ;
  if ((!eq && c->op != Ops::CMPNE) || !v->src[eq ? 2 : 1]->is_const(0)) return nullptr;
  const UOpRef& x = v->src[eq ? 1 : 2];
  for (size_t i = 1; i < red->src.size(); i++) {
    const UOpRef& r = red->src[i];
    for (int side = 0; side < 2; side++) {
      UOpRef rr = c->src[size_t(side)], a = c->src[size_t(1 - side)];
      if (rr->op == Ops::CAST && is_int(rr->dtype) && is_int(rr->src[0]->dtype) && fits(rr->dtype, r->vmin, r->vmax)) rr = rr->src[0];
      if (rr != r || !is_int(a->dtype) || a->vcount != 1) continue;
      auto topo = toposort(a);
      if (std::find(topo.begin(), topo.end(), r) != topo.end()) continue;
      int64_t n = r->range_end();
      UOpRef valid = ge(a, 0);
      if (fits(a->dtype, n, n)) valid = logical_and(valid, lt(a, n));
      UOpRef at = cast_uop(alu(Ops::WHERE, {valid, a, const_int(a->dtype, 0)}), r->dtype);
      UOpRef out = alu(Ops::WHERE, {valid, substitute(x, {{r.get(), at}}), const_uop(x->dtype, 0)});
      out = cast_uop(out, red->src[0]->dtype);
      if (red->src.size() == 2) return out;
      std::vector<UOpRef> src{out};
      for (size_t j = 1; j < red->src.size(); j++) if (j != i) src.push_back(red->src[j]);
      return make_uop(Ops::REDUCE, red->dtype, src, red->arg);
    }
  }
  return nullptr;
}

// ---- the rules ----
inline const PatternMatcher& symbolic() {
  using detail::is_int_scalar;
  static const PatternMatcher pm{
      // constant folding
      {UPat::ops_of(ops_where(is_alu), "a"),
       [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         if (a->vcount != 1) return nullptr;
         DType sdt = a->src[a->op == Ops::WHERE ? 1 : 0]->dtype;
         FoldArgs v{{}, {}, {}, is_unsigned(sdt) || sdt == DType::Bool, uint64_t(itemsize(sdt)) * 8, a->dtype};
         bool ints = true;
         for (size_t i = 0; i < a->src.size(); i++) {
           auto& s = a->src[i];
           if (s->op != Ops::CONST || s->vcount != 1) return nullptr;
           v.f[i] = is_float(s->dtype) ? detail::round_float(s->dtype, s->const_value()) : s->const_value();  // as the kernel holds it
           if (auto* x = std::get_if<int64_t>(&s->arg)) {
             v.s[i] = *x;
             v.u[i] = uint64_t(*x);
           } else
             ints = false;
         }
         // ints exactly (a double holds 53 bits), floats in double rounded to their dtype
         auto& op = op_info(a->op);
         if (ints ? !op.fold_i : !op.fold_f) throw Error(cat("tinygrad: cannot fold ", op.name, ints ? " on ints" : " on floats"));
         if (ints) return const_int(a->dtype, detail::wrap_int(a->dtype, op.fold_i(v)));
         double r = op.fold_f(v);
         return const_uop(a->dtype, a->dtype == DType::Bool ? double(r != 0) : detail::round_float(a->dtype, r));
       }},
      {UPat::op(Ops::CAST, {UPat::cvar("c")}, "a"),
       [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         auto& c = m["c"];
         if (a->vcount != 1) return nullptr;
         auto* i = std::get_if<int64_t>(&c->arg);
         double f = i ? detail::int_to_float(*i, c->dtype) : detail::round_float(c->dtype, c->const_value());
         if (is_float(a->dtype)) return const_uop(a->dtype, detail::round_float(a->dtype, f));
         return const_int(a->dtype, i ? detail::wrap_int(a->dtype, uint64_t(*i)) : detail::float_to_int(f, a->dtype));
       }},
      // x / 0 = x % 0 = 0 for ints (as the kernels compute it)
      {idiv(UPat::var("x"), UPat::cnst(0)), [](const Match& m) { return const_int(m["x"]->dtype, 0); }},
      {UPat::var("x") % UPat::cnst(0), [](const Match& m) { return const_int(m["x"]->dtype, 0); }},
      // a node whose value range is one number is that number
      {UPat::ops_of({Ops::ADD, Ops::MUL, Ops::IDIV, Ops::MOD, Ops::MAX, Ops::CMPLT, Ops::CMPNE, Ops::CMPEQ, Ops::AND, Ops::OR, Ops::XOR, Ops::WHERE},
                    "a"),
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
      {idiv(idiv(UPat::var("x"), UPat::cvar("a")), UPat::cvar("b")),
       [](const Match& m) -> UOpRef {
         int64_t a = detail::ival(m["a"]), b = detail::ival(m["b"]);
         return a > 0 && b > 0 && m["x"]->vmin >= 0 && detail::i128(a) * b <= detail::int_max(m["x"]->dtype) ? idiv(m["x"], a * b) : nullptr;
       }},
      // (x % (c*k)) % c -> x % c
      {(UPat::var("x") % UPat::cvar("a")) % UPat::cvar("b"),
       [](const Match& m) -> UOpRef {
         int64_t a = detail::ival(m["a"]), b = detail::ival(m["b"]);
         return a > 0 && b > 0 && a % b == 0 && m["x"]->vmin >= 0 ? mod(m["x"], b) : nullptr;
       }},
      // (x % (c*k)) // c -> (x // c) % k
      {idiv(UPat::var("x") % UPat::cvar("a"), UPat::cvar("b")),
       [](const Match& m) -> UOpRef {
         int64_t a = detail::ival(m["a"]), b = detail::ival(m["b"]);
         return a > 0 && b > 0 && a % b == 0 && m["x"]->vmin >= 0 ? mod(idiv(m["x"], b), a / b) : nullptr;
       }},
      // div/mod folding over linear expressions
      {UPat::op(Ops::IDIV, {UPat::var(), UPat::cvar()}, "d"), [](const Match& m) { return detail::fold_divmod(m["d"]); }},
      {UPat::op(Ops::MOD, {UPat::var(), UPat::cvar()}, "d"), [](const Match& m) { return detail::fold_divmod(m["d"]); }},
      // (x + c1) < c2 -> x < c2 - c1 ; x*c < d -> x < ceil(d/c)  (where the sum or product cannot wrap)
      {(UPat::var("x") + UPat::cvar("c1")) < UPat::cvar("c2"),
       [](const Match& m) -> UOpRef {
         auto& x = m["x"];
         if (!is_int_scalar(x)) return nullptr;
         detail::i128 c1 = detail::ival(m["c1"]), d = detail::i128(detail::ival(m["c2"])) - c1;
         return detail::fits(x->dtype, x->vmin + c1, x->vmax + c1) && detail::fits(x->dtype, d, d) ? lt(x, int64_t(d)) : nullptr;
       }},
      {(UPat::var("x") * UPat::cvar("c")) < UPat::cvar("d"),
       [](const Match& m) -> UOpRef {
         auto& x = m["x"];
         if (!is_int_scalar(x)) return nullptr;
         int64_t c = detail::ival(m["c"]), d = detail::ival(m["d"]);
         if (c <= 0 || !detail::fits(x->dtype, detail::i128(x->vmin) * c, detail::i128(x->vmax) * c)) return nullptr;
         return lt(x, int64_t(d > 0 ? (detail::i128(d) + c - 1) / c : -((-detail::i128(d)) / c)));
       }},
      // canonical linear form of integer sums: like terms merged, sorted, constant last
      {UPat::ops_of({Ops::ADD, Ops::MUL}, "a"),
       [](const Match& m) -> UOpRef {
         auto& a = m["a"];
         if (!is_int_scalar(a)) return nullptr;
         if (a->op == Ops::MUL && a->src[1]->op != Ops::CONST) return nullptr;
         if (a->op == Ops::MUL && a->src[0]->op != Ops::ADD && a->src[0]->op != Ops::MUL) return nullptr;
         return detail::linear_of(a).build(a->dtype);
       }},
      {UPat::ops_of({Ops::REDUCE}, "red"), [](const Match& m) { return detail::fold_onehot_reduce(m["red"]); }},
      // x * c  with c on the right
      {UPat::op(Ops::MUL, {UPat::cvar("c"), UPat::var("x")}),
       [](const Match& m) -> UOpRef {
         return m["x"]->op == Ops::CONST ? nullptr : make_uop(Ops::MUL, m["x"]->dtype, {m["x"], m["c"]}, {}, m["x"]->vcount);
       }},
  };
  return pm;
}

inline UOpRef simplify(const UOpRef& u) { return graph_rewrite(u, symbolic()); }
// what x moves by when range r steps by one, simplified (a constant where x is affine in r)
inline UOpRef step_of(const UOpRef& x, const UOpRef& r) { return simplify(substitute(x, {{r.get(), r + 1}}) - x); }

// idx simplified where gate holds: ranges the gate bounds (r < c, !(r < c)) are narrowed while simplifying, so the
// divisions and modulos that only the excluded values needed fold away (a reshape below a pad: the shifted index
// is negative only where the pad's gate is false). Outside the gate the result may differ: it is never read there.
inline UOpRef simplify_given(const UOpRef& idx, const UOpRef& gate) {
  std::map<const UOp*, std::tuple<UOpRef, int64_t, int64_t>> bound;  // range -> (range, lo, hi): where gate holds
  std::vector<const UOp*> todo{gate.get()};
  while (!todo.empty()) {
    const UOp* g = todo.back();
    todo.pop_back();
    if (g->op == Ops::AND && g->dtype == DType::Bool) { todo.push_back(g->src[0].get()); todo.push_back(g->src[1].get()); continue; }
    bool negated = g->op == Ops::XOR && g->src[1]->is_const(1);
    const UOp* c = negated ? g->src[0].get() : g;
    if (c->op != Ops::CMPLT || c->src[0]->op != Ops::RANGE || c->src[1]->op != Ops::CONST || c->src[1]->vcount != 1) continue;
    auto& [r, lo, hi] = bound.try_emplace(c->src[0].get(), c->src[0], c->src[0]->vmin, c->src[0]->vmax).first->second;
    int64_t k = std::get<int64_t>(c->src[1]->arg);
    if (negated) lo = std::max(lo, k); else hi = std::min(hi, k - 1);
  }
  std::unordered_map<const UOp*, UOpRef> narrow, back;
  for (auto& [key, b] : bound) {
    auto& [r, lo, hi] = b;
    if (lo > hi || (lo == r->vmin && hi == r->vmax)) continue;
    // NOTE: the narrowed range stands in for r - lo; its id is outside the kernel's ids
    auto n = make_uop(Ops::RANGE, r->dtype, {}, std::vector<int64_t>{hi - lo + 1, -1 - r->range_id(), r->varg()[2]});
    narrow[key] = n + const_int(r->dtype, lo);
    back[n.get()] = r + const_int(r->dtype, -lo);
  }
  if (narrow.empty()) return idx;
  UOpRef out = simplify(substitute(simplify(substitute(idx, narrow)), back));
  return toposort(out).size() < toposort(idx).size() ? out : idx;
}

// a symbolic size readable by people: pos+1
inline std::string sym_str(const UOpRef& e) {
  std::unordered_map<const UOp*, std::string> s;
  for (auto& x : toposort(e)) {
    auto a = [&](size_t i) { return s.at(x->src[i].get()); };
    switch (x->op) {
      case Ops::CONST: s[x.get()] = std::to_string(x->iarg()); break;
      case Ops::DEFINE_VAR: s[x.get()] = var_name(*x); break;
      case Ops::BIND: case Ops::CAST: s[x.get()] = a(0); break;
      case Ops::ADD: s[x.get()] = "(" + a(0) + "+" + a(1) + ")"; break;
      case Ops::MUL: s[x.get()] = "(" + a(0) + "*" + a(1) + ")"; break;
      case Ops::IDIV: s[x.get()] = "(" + a(0) + "//" + a(1) + ")"; break;
      case Ops::MOD: s[x.get()] = "(" + a(0) + "%" + a(1) + ")"; break;
      case Ops::MAX: s[x.get()] = "max(" + a(0) + ", " + a(1) + ")"; break;
      default: s[x.get()] = op_name(x->op); break;
    }
  }
  std::string r = s.at(e.get());
  return r.size() > 1 && r[0] == '(' && r.back() == ')' ? r.substr(1, r.size() - 2) : r;
}
}  // namespace tinygrad::detail
