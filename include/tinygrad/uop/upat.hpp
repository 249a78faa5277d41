#pragma once
// UPat / PatternMatcher / graph_rewrite: every pass is a table of (pattern -> rewrite) rules
// applied bottom-up to a fixed point. Patterns use the same operators as index math:
//   {x + 0, [](auto& m) { return m["x"]; }}
#include <initializer_list>
#include <optional>
#include "ops.hpp"

namespace tinygrad::detail {

struct UPat {
  std::vector<Ops> ops;      // empty: any op
  std::vector<DType> dtypes; // empty: any dtype
  std::optional<std::vector<UPat>> src;  // nullopt: any sources
  std::optional<Arg> arg;
  std::string name;
  bool vec_ok = false;       // also match vector nodes
  bool src_prefix = false;   // src matches the first sources (any more may follow)

  static UPat any(std::string name = "") { UPat p; p.name = std::move(name); return p; }
  static UPat var(std::string name = "", std::vector<DType> dts = {}) { UPat p; p.name = std::move(name); p.dtypes = std::move(dts); return p; }
  static UPat cvar(std::string name = "") { UPat p; p.ops = {Ops::CONST}; p.name = std::move(name); return p; }
  static UPat cnst(double v) { UPat p; p.ops = {Ops::CONST}; p.arg = Arg{}; p.cval = v; return p; }
  static UPat op(Ops o, std::vector<UPat> s = {}, std::string name = "") {
    UPat p;
    p.ops = {o};
    p.src = std::move(s);
    p.name = std::move(name);
    return p;
  }
  static UPat ops_of(std::vector<Ops> o, std::string name = "") { UPat p; p.ops = std::move(o); p.name = std::move(name); return p; }
  UPat named(std::string n) const { UPat p = *this; p.name = std::move(n); return p; }
  UPat with_dtypes(std::vector<DType> d) const { UPat p = *this; p.dtypes = std::move(d); return p; }

  std::optional<double> cval;  // a CONST with this value (int or float)
};

// pattern operators build ALU patterns
inline UPat operator+(UPat a, UPat b) { return UPat::op(Ops::ADD, {std::move(a), std::move(b)}); }
inline UPat operator*(UPat a, UPat b) { return UPat::op(Ops::MUL, {std::move(a), std::move(b)}); }
inline UPat operator%(UPat a, UPat b) { return UPat::op(Ops::MOD, {std::move(a), std::move(b)}); }
inline UPat operator<(UPat a, UPat b) { return UPat::op(Ops::CMPLT, {std::move(a), std::move(b)}); }
inline UPat operator+(UPat a, double c) { return a + UPat::cnst(c); }
inline UPat operator*(UPat a, double c) { return a * UPat::cnst(c); }
inline UPat idiv(UPat a, UPat b) { return UPat::op(Ops::IDIV, {std::move(a), std::move(b)}); }
inline UPat max(UPat a, UPat b) { return UPat::op(Ops::MAX, {std::move(a), std::move(b)}); }
inline UPat where(UPat c, UPat a, UPat b) { return UPat::op(Ops::WHERE, {std::move(c), std::move(a), std::move(b)}); }

// the bindings of one match
struct Match {
  std::vector<std::pair<const std::string*, UOpRef>> binds;
  UOpRef root;
  void* ctx = nullptr;
  const UOpRef& operator[](std::string_view n) const {
    for (auto& [k, v] : binds) if (*k == n) return v;
    throw Error("tinygrad: pattern has no binding named " + std::string(n));
  }
  template <class T> T& context() const { return *static_cast<T*>(ctx); }
};

// a rule is a plain function (a lambda without captures; its context comes in Match::ctx): no std::function per rule
using RewriteFn = UOpRef (*)(const Match&);

inline bool upat_match(const UPat& p, const UOpRef& u, Match& m) {
  if (!p.ops.empty() && std::find(p.ops.begin(), p.ops.end(), u->op) == p.ops.end()) return false;
  if (!p.dtypes.empty() && std::find(p.dtypes.begin(), p.dtypes.end(), u->dtype) == p.dtypes.end()) return false;
  if (p.cval && (u->op != Ops::CONST || u->vcount != 1 || u->const_value() != *p.cval)) return false;
  if (p.arg && !p.cval && !arg_eq(*p.arg, u->arg)) return false;
  size_t mark = m.binds.size();
  if (!p.name.empty()) {
    bool bound = false;
    for (auto& [k, v] : m.binds) if (*k == p.name) { if (v != u) return false; bound = true; break; }
    if (!bound) m.binds.emplace_back(&p.name, u);
  }
  if (!p.src) return true;
  const auto& ps = *p.src;
  if (p.src_prefix ? ps.size() > u->src.size() : ps.size() != u->src.size()) { m.binds.resize(mark); return false; }
  size_t mark2 = m.binds.size();
  bool ok = true;
  for (size_t i = 0; i < ps.size() && ok; i++) ok = upat_match(ps[i], u->src[i], m);
  if (ok) return true;
  m.binds.resize(mark2);
  if (ps.size() == 2 && is_commutative(u->op)) {
    if (upat_match(ps[0], u->src[1], m) && upat_match(ps[1], u->src[0], m)) return true;
  }
  m.binds.resize(mark);
  return false;
}

class PatternMatcher {
 public:
  PatternMatcher(std::initializer_list<std::pair<UPat, RewriteFn>> rules) : PatternMatcher(std::vector<std::pair<UPat, RewriteFn>>(rules)) {}
  explicit PatternMatcher(std::vector<std::pair<UPat, RewriteFn>> rules) : rules_(std::move(rules)), by_op_(size_t(Ops::COUNT_)) {
    for (size_t i = 0; i < rules_.size(); i++) {
      if (rules_[i].first.ops.empty()) for (auto& v : by_op_) v.push_back(i);
      else for (Ops o : rules_[i].first.ops) by_op_[size_t(o)].push_back(i);
    }
  }
  PatternMatcher operator+(const PatternMatcher& o) const {
    auto r = rules_;
    r.insert(r.end(), o.rules_.begin(), o.rules_.end());
    return PatternMatcher(std::move(r));
  }
  // first rule that matches and returns a node
  UOpRef rewrite(const UOpRef& u, void* ctx = nullptr) const {
    for (size_t i : by_op_[size_t(u->op)]) {
      Match m;
      m.ctx = ctx;
      m.root = u;
      if (!detail::upat_match(rules_[i].first, u, m)) continue;
      if (auto r = rules_[i].second(m); r && r != u) return r;
    }
    return nullptr;
  }

 private:
  std::vector<std::pair<UPat, RewriteFn>> rules_;
  std::vector<std::vector<size_t>> by_op_;
};

// the rewrites graph_rewrite has made on this thread (VIZ=1 counts them per stage); a stage a kernel went through
inline int64_t& rewrites_done() { static thread_local int64_t n = 0; return n; }
struct RewriteStage { std::string name; int64_t rewrites = 0; size_t nodes = 0; };  // nodes: the graph's size after it

// rewrite bottom-up until no rule applies: a node's sources first, then the node, then whatever it became.
// keep (optional): nodes left as they are, with everything below them (a realized value in a tensor graph).
// NOTE: iterative (an explicit stack), so a graph of any depth rewrites
inline UOpRef graph_rewrite(const UOpRef& root, const PatternMatcher& pm, void* ctx = nullptr,
                            const std::function<bool(const UOp*)>& keep = nullptr) {
  // node -> (node, its rewrite or null while in progress); holding the key keeps its address from being reused
  std::unordered_map<const UOp*, std::pair<UOpRef, UOpRef>> memo;
  struct Frame { UOpRef u, x, r; int stage; };  // stage 0: enter, 1: sources done, 2: r (what x became) done
  std::vector<Frame> stack{{root, nullptr, nullptr, 0}};
  auto done = [&](const UOp* u) -> const UOpRef* {
    auto it = memo.find(u);
    return it == memo.end() || !it->second.second ? nullptr : &it->second.second;
  };
  while (!stack.empty()) {
    Frame& f = stack.back();
    if (f.stage == 0) {
      auto [it, fresh] = memo.try_emplace(f.u.get(), f.u, nullptr);
      if (!fresh) {
        if (!it->second.second) throw Error(cat("tinygrad: graph_rewrite: the rules rewrite a ", op_name(f.u->op), " into itself"));
        stack.pop_back();
        continue;
      }
      if (keep && keep(f.u.get())) { it->second.second = f.u; stack.pop_back(); continue; }
      f.stage = 1;
      const UOp* u = f.u.get();  // NOTE: push_back moves the frames; u stays alive in memo
      for (size_t i = u->src.size(); i-- > 0;) if (!memo.count(u->src[i].get())) stack.push_back({u->src[i], nullptr, nullptr, 0});
      continue;
    }
    if (f.stage == 1) {
      std::vector<UOpRef> src;
      bool changed = false;
      src.reserve(f.u->src.size());
      for (auto& s : f.u->src) { src.push_back(*done(s.get())); changed |= src.back() != s; }
      f.x = changed ? make_uop(f.u->op, f.u->dtype, std::move(src), f.u->arg, f.u->vcount) : f.u;
      f.r = pm.rewrite(f.x, ctx);
      if (f.r) rewrites_done()++;
      if (f.r && !done(f.r.get())) { f.stage = 2; UOpRef r = f.r; stack.push_back({std::move(r), nullptr, nullptr, 0}); continue; }
    }
    UOpRef out = f.r ? *done(f.r.get()) : f.x;
    memo[f.u.get()].second = out;
    if (f.x != f.u) memo.try_emplace(f.x.get(), f.x, out);
    stack.pop_back();
  }
  return *done(root.get());
}

// replace nodes by other nodes everywhere below root, except below nodes where keep(node) holds (they stay as they are)
template <class F>
UOpRef substitute(const UOpRef& root, const std::unordered_map<const UOp*, UOpRef>& sub, F&& keep) {
  std::unordered_map<const UOp*, UOpRef> memo;
  for (auto& u : toposort(root, [&](const UOp* x) { return !sub.count(x) && !keep(x); })) {
    if (auto it = sub.find(u.get()); it != sub.end()) { memo[u.get()] = it->second; continue; }
    if (keep(u.get())) { memo[u.get()] = u; continue; }
    std::vector<UOpRef> src;
    bool changed = false;
    src.reserve(u->src.size());
    for (auto& s : u->src) { src.push_back(memo.at(s.get())); changed |= src.back() != s; }
    memo[u.get()] = changed ? make_uop(u->op, u->dtype, std::move(src), u->arg, u->vcount) : u;
  }
  return memo.at(root.get());
}
inline UOpRef substitute(const UOpRef& root, const std::unordered_map<const UOp*, UOpRef>& sub) {
  return substitute(root, sub, [](const UOp*) { return false; });
}

}  // namespace tinygrad::detail
