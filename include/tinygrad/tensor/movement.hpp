#pragma once
// Tensor methods: movement and indexing.
// A CRTP mixin of Tensor (see tensor.hpp): T is Tensor, every method is composed from Tensor's primitives.
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include "mixin.hpp"

namespace tinygrad {
class Tensor;
// one entry of t[{...}]: an Index, or an integer Tensor (fancy indexing, lazy: one-hot compare + sum)
using TensorIndex = std::variant<int64_t, Slice, NewAxis, Ellipsis, Tensor>;
// what t.unique() returns: the distinct values, each element's index into them (inverse) and their counts
template <class T>
struct UniqueResult {
  T values, inverse, counts;
};
}  // namespace tinygrad

namespace tinygrad::detail {

// the least and greatest of the first `count` values of an integer buffer in host memory; a big buffer is scanned once
using IndexRange = std::optional<std::pair<i128, i128>>;
TINYGRAD_API IndexRange host_index_range(const std::shared_ptr<Buffer>& b, int64_t count) TINYGRAD_DEF({
  struct Seen { std::weak_ptr<Buffer> buf; int64_t count; i128 mn, mx; };
  static std::mutex mu;
  static std::unordered_map<const Buffer*, Seen> seen;
  bool cache = count >= 4096;  // NOTE: a small buffer is scanned faster than looked up
  if (cache) {
    std::lock_guard lk(mu);
    auto it = seen.find(b.get());
    if (it != seen.end() && it->second.buf.lock() == b && it->second.count == count)
      return std::pair{it->second.mn, it->second.mx};
  }
  IndexRange r;
  auto scan = [&](auto* p) {
    auto a = p[0], z = p[0];
    for (int64_t i = 1; i < count; i++) a = std::min(a, p[i]), z = std::max(z, p[i]);
    r = std::pair{i128(a), i128(z)};
  };
  const void* p = b->ptr();
  switch (b->dtype) {
    case DType::Int8: scan(static_cast<const int8_t*>(p)); break;
    case DType::Int16: scan(static_cast<const int16_t*>(p)); break;
    case DType::Int32: scan(static_cast<const int32_t*>(p)); break;
    case DType::Int64: scan(static_cast<const int64_t*>(p)); break;
    case DType::UInt8: scan(static_cast<const uint8_t*>(p)); break;
    case DType::UInt16: scan(static_cast<const uint16_t*>(p)); break;
    case DType::UInt32: scan(static_cast<const uint32_t*>(p)); break;
    case DType::UInt64: scan(static_cast<const uint64_t*>(p)); break;
    default: return r;
  }
  if (cache) {
    std::lock_guard lk(mu);
    if (seen.size() >= 1024) std::erase_if(seen, [](auto& e) { return e.second.buf.expired(); });
    if (seen.size() >= 1024) seen.clear();
    seen[b.get()] = Seen{b, count, r->first, r->second};
  }
  return r;
})

// IndexError naming op, the index and the size unless every value of the integer graph `x` lies in [0, n) (with
// `wrap`: [-n, n), negatives count from the end); dim >= 0 names the indexed dim. The ops built on the indices keep
// their clamp (one-hot compares) as the memory-safety net; this makes a bad index an error instead of a zero row.
// Checked when the op is built: constants, arange, a dtype too narrow to leave the range, and a realized buffer in
// host memory (a tensor made from host data: token ids), through the views that keep values (reshape, expand,
// permute, flip, pad, widening casts; a shrink checks its whole buffer and gives up when that fails, as its slice
// may still be fine). A buffer of 4096 or more elements is scanned once and its min and max kept, keyed by the buffer.
// Returns whether it could tell; where it cannot (indices computed lazily, or realized on a GPU), check_indices
// (tensor.hpp) checks them on the device instead.
TINYGRAD_API IndexError index_error(const char* op, i128 bad, int64_t lo, int64_t n, int dim) TINYGRAD_DEF({
  auto str = [](i128 v) { return v > INT64_MAX ? std::to_string(uint64_t(v)) : std::to_string(int64_t(v)); };
  std::string of = dim >= 0 ? "dim " + std::to_string(dim) + " with size " : std::string("size ");
  std::string valid = " (valid indices are " + std::to_string(lo) + ".." + std::to_string(n - 1) + ")";
  return IndexError(std::string("tinygrad::") + op + ": index " + str(bad) + " is out of bounds for " + of +
                    std::to_string(n) + valid);
})
TINYGRAD_API bool check_index_values(const UOpRef& x, int64_t n, bool wrap, const char* op, int dim = -1) TINYGRAD_DEF({
  const UOp* u = x.get();
  int64_t lo = wrap ? -n : 0;
  if (u->numel() == 0 || (u->dtype != DType::UInt64 && u->vmin >= lo && u->vmax < n)) return true;
  bool exact = true, zero = false;  // exact: u holds every value below it; zero: a pad adds zeros
  while (!is_leaf(u) && u->op != Ops::CONST && u->op != Ops::IOTA) {
    Ops o = u->op;
    const UOp* s = u->src.empty() ? nullptr : u->src[0].get();
    bool widen = o == Ops::CAST && s && is_int(s->dtype) && s->dtype != DType::UInt64 && is_int(u->dtype) &&
                 int_min(u->dtype) <= int_min(s->dtype) && int_max(s->dtype) <= int_max(u->dtype);
    if (o == Ops::SHRINK) exact = false;
    else if (o == Ops::PAD) zero = true;
    else if (o != Ops::RESHAPE && o != Ops::EXPAND && o != Ops::PERMUTE && o != Ops::FLIP && !widen) return false;  // lazy
    u = s;
  }
  IndexRange r;
  if (u->op == Ops::CONST) r = std::pair<i128, i128>{u->vmin, u->vmax};
  else if (u->op == Ops::IOTA) { if (u->iarg() > 0) r = std::pair<i128, i128>{0, u->iarg() - 1}; }
  else if (std::shared_ptr<Buffer> b = u->leaf_buffer();
           b && b->allocated() && b->dtype == u->dtype && b->size > 0 && b->device == host_device())
    r = host_index_range(b, std::min(b->size, u->numel()));
  if (!r) return false;  // not here
  auto [mn, mx] = *r;
  if (zero) mn = std::min<i128>(mn, 0), mx = std::max<i128>(mx, 0);
  if (mn >= lo && mx < n) return true;
  if (!exact) return false;  // NOTE: the slice in use may be in range
  throw index_error(op, mx >= n ? mx : mn, lo, n, dim);
})
// check_index_values where it can tell, else on the index's device: the least and greatest index are computed (one
// small kernel, realized with the next realize) and read back at the next sync (to_vector, item), which throws the
// IndexError. A TinyJit replay builds no op: indices it is given are not checked
TINYGRAD_API void check_indices(const Tensor& idx, int64_t n, bool wrap, const char* op, int dim = -1);

using Pads = std::vector<std::pair<int64_t, int64_t>>;

template <class T>
struct MovementOps {
  using TI = std::variant<int64_t, Slice, NewAxis, Ellipsis, T>;  // = TensorIndex, spelled dependent so T may be incomplete here

 public:
  /// alias of reshape
  T view(Shape s) const TINYGRAD_MEMBER_DEF({ return self().reshape(std::move(s)); })
  /// split dim into sizes (one may be -1)
  T unflatten(int64_t dim, const Shape& sizes) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), "unflatten");
    Shape s(x.shape().begin(), x.shape().begin() + d);
    s.insert(s.end(), sizes.begin(), sizes.end());
    s.insert(s.end(), x.shape().begin() + d + 1, x.shape().end());
    return x.reshape(s);
  })

  // ---- pad ----
  /// pad with (before, after) per dim; negative amounts shrink
  T pad(Pads p, double value = 0) const TINYGRAD_MEMBER_DEF({
    auto& t = self();
    if (p.size() != t.ndim()) throw ShapeError("tinygrad::pad: " + std::to_string(p.size()) + " pad pairs for shape " + to_string(t.shape()));
    Pads sh;
    bool need_shrink = false;
    for (size_t i = 0; i < p.size(); i++) {
      if ((p[i].first < 0 || p[i].second < 0) && t.is_symbolic() && !t.sym_shape()[i].is_int())
        throw ShapeError("tinygrad::pad: dim " + std::to_string(i) + " of " + t.sym_str() + " is symbolic (" + t.sym_shape()[i].str() +
                         "): a negative pad would cut into it (shrink it instead)");
      int64_t b = std::max<int64_t>(0, -p[i].first), e = t.shape()[i] - std::max<int64_t>(0, -p[i].second);
      if (b > e)
        throw ShapeError("tinygrad::pad: padding " + std::to_string(p[i].first) + "," + std::to_string(p[i].second) + " removes more than dim " +
                         std::to_string(i) + " of " + to_string(t.shape()));
      sh.push_back({b, e});
      need_shrink |= b != 0 || e != t.shape()[i];
    }
    T x = need_shrink ? t.shrink(sh) : t;
    std::vector<int64_t> arg;
    bool any = false, big = false;
    Shape out = x.shape();
    for (size_t i = 0; i < p.size(); i++) {
      int64_t b = std::max<int64_t>(0, p[i].first), e = std::max<int64_t>(0, p[i].second);
      arg.push_back(b); arg.push_back(e); any |= b > 0 || e > 0;
      big |= __builtin_add_overflow(out[i], b, &out[i]) || __builtin_add_overflow(out[i], e, &out[i]);
    }
    if (!any) return x;
    if (big || !valid_shape(out))
      throw ShapeError("tinygrad::pad: padding " + pads_str(p) + " of shape " + to_string(t.shape()) +
                       " gives more than 2^63 elements (overflows int64)");
    T r = x.mov(Ops::PAD, arg);
    if (value == 0) return r;
    T mask = T::ones(x.sym_shape(), DType::Bool, t.device()).mov(Ops::PAD, arg);
    return mask.where(r, value);
  })
  /// mode: "constant", "reflect" (mirror without the edge), "replicate" (repeat the edge), "circular" (wrap)
  T pad(Pads p, const std::string& mode, double value = 0) const TINYGRAD_MEMBER_DEF({
    auto& t = self();
    if (mode == "constant") return pad(std::move(p), value);
    if (mode != "reflect" && mode != "replicate" && mode != "circular")
      throw Error("tinygrad::pad: unknown mode \"" + mode + "\" (constant, reflect, replicate or circular)");
    if (p.size() != t.ndim()) throw ShapeError("tinygrad::pad: " + std::to_string(p.size()) + " pad pairs for shape " + to_string(t.shape()));
    T x = t;
    for (size_t d = 0; d < p.size(); d++) {
      int64_t b = p[d].first, a = p[d].second, s = t.shape()[d];  // NOTE: not a structured binding: `bad` captures them (clang)
      auto bad = [&](const std::string& why) {
        return ShapeError("tinygrad::pad(" + mode + "): padding (" + std::to_string(b) + ", " + std::to_string(a) + ") of dim " + std::to_string(d) +
                          " of " + to_string(t.shape()) + " " + why);
      };
      if (b < 0 || a < 0) throw bad("is negative");
      if (mode == "reflect" && (b >= s || a >= s)) throw bad("must be smaller than the dim");
      if ((mode == "circular" && (b > s || a > s)) || (s == 0 && (b || a))) throw bad("wraps around more than once");
      auto part = [&](int64_t lo, int64_t hi) {
        Pads r;
        for (size_t i = 0; i < t.ndim(); i++) r.push_back(i == d ? std::pair{lo, hi} : std::pair{int64_t(0), x.shape()[i]});
        return x.shrink(r);
      };
      std::vector<T> parts;
      if (b)
        parts.push_back(mode == "reflect" ? part(1, b + 1).flip(int64_t(d)) : mode == "circular" ? part(s - b, s) : expand_dim(part(0, 1), d, b));
      parts.push_back(x);
      if (a)
        parts.push_back(mode == "reflect"    ? part(s - 1 - a, s - 1).flip(int64_t(d))
                        : mode == "circular" ? part(0, a)
                                             : expand_dim(part(s - 1, s), d, a));
      x = T::cat(parts, int64_t(d));
    }
    return x;
  })
  /// torch-style flat list: (last_before, last_after, second_to_last_before, ...) for the last size/2 dims
  /// NOTE: a template and an initializer_list, so that a 1-D pad({{1, 2}}, mode) is not ambiguous with the pairs overload
  template <class V, class = std::enable_if_t<std::is_same_v<V, std::vector<int64_t>>>>
  T pad(const V& flat, const std::string& mode, double value = 0) const {
    auto& t = self();
    if (flat.size() % 2 || flat.size() / 2 > t.ndim())
      throw ShapeError("tinygrad::pad: flat padding " + to_string(flat) + " does not fit shape " + to_string(t.shape()));
    Pads p(t.ndim(), {0, 0});
    for (size_t i = 0; i < flat.size() / 2; i++) p[t.ndim() - 1 - i] = {flat[2 * i], flat[2 * i + 1]};
    return pad(p, mode, value);
  }
  /// torch.nn.functional.pad(x, flat, mode, value): pairs from the last dim
  T pad(std::initializer_list<int64_t> flat, const std::string& mode, double value = 0) const TINYGRAD_MEMBER_DEF({
    return pad(std::vector<int64_t>(flat), mode, value);
  })
  /// torch's F.pad(x, flat, value=...): the flat list, constant mode
  template <class V, class = std::enable_if_t<std::is_same_v<V, std::vector<int64_t>>>>
  T pad(const V& flat, double value = 0) const { return pad(flat, "constant", value); }
  /// torch.nn.functional.pad(x, flat, value) in "constant" mode
  T pad(std::initializer_list<int64_t> flat, double value = 0) const TINYGRAD_MEMBER_DEF({
    return pad(std::vector<int64_t>(flat), "constant", value);
  })

  // ---- join and split ----
  /// torch.cat along dim
  static T cat(const std::vector<T>& ts, int64_t dim = 0) TINYGRAD_MEMBER_DEF({
    if (ts.empty()) throw ShapeError("tinygrad::cat: needs at least one tensor");
    auto& t0 = ts[0];
    if (t0.ndim() == 0) throw ShapeError("tinygrad::cat: zero-dimensional tensors cannot be concatenated (use stack)");
    int d = norm_axis(dim, t0.ndim(), "cat");
    DType dt = t0.dtype();
    int64_t total = 0;
    for (auto& t : ts) {
      bool ok = t.ndim() == t0.ndim();
      for (size_t i = 0; ok && i < t.ndim(); i++) ok = int(i) == d || t.shape()[i] == t0.shape()[i];
      if (!ok)
        throw ShapeError("tinygrad::cat: shapes " + to_string(t0.shape()) + " and " + to_string(t.shape()) +
                         " differ outside dim " + std::to_string(d));
      T::same_device(t0.device(), t.device(), "cat");
      // NOTE: the offsets are sizes: a symbolic one would be its bound
      if (t.is_symbolic() && t.uop()->dyn[size_t(d)])
        throw ShapeError("tinygrad::cat: dim " + std::to_string(d) + " of " + t.sym_str() + " is symbolic (cat takes concrete sizes along dim)");
      dt = least_upper_dtype(dt, t.dtype());
      total = size_add(total, t.shape()[size_t(d)], "cat");
    }
    if (ts.size() == 1) return t0;
    std::optional<T> r;
    int64_t off = 0;
    for (auto& t : ts) {
      Pads p(t.ndim(), {0, 0});
      p[size_t(d)] = {off, total - off - t.shape()[size_t(d)]};
      off += t.shape()[size_t(d)];
      T x = t.cast(dt).pad(p);
      r = !r ? x : dt == DType::Bool ? (*r | x) : *r + x;
    }
    return *r;
  })
  /// torch.stack along a new dim
  static T stack(const std::vector<T>& ts, int64_t dim = 0) TINYGRAD_MEMBER_DEF({
    if (ts.empty()) throw ShapeError("tinygrad::stack: needs at least one tensor");
    for (auto& t : ts)
      if (t.shape() != ts[0].shape())
        throw ShapeError("tinygrad::stack: shapes " + to_string(ts[0].shape()) + " and " + to_string(t.shape()) + " differ");
    int d = norm_axis(dim, ts[0].ndim() + 1, "stack");
    std::vector<T> us;
    for (auto& t : ts) us.push_back(t.unsqueeze(d));
    return cat(us, d);
  })
  /// pieces of the given sizes along dim (they must add up to the dim)
  std::vector<T> split(const std::vector<int64_t>& sizes, int64_t dim = 0) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), "split");
    int64_t n = x.shape()[size_t(d)], tot = 0;
    for (auto s : sizes) {
      if (s < 0) throw ShapeError("tinygrad::split: negative size in " + to_string(sizes));
      tot = size_add(tot, s, "split");
    }
    if (tot != n)
      throw ShapeError("tinygrad::split: sizes " + to_string(sizes) + " do not add up to dim " + std::to_string(d) + " of " + to_string(x.shape()));
    std::vector<T> out;
    int64_t off = 0;
    for (auto s : sizes) {
      Pads r;
      for (size_t i = 0; i < x.ndim(); i++) r.push_back(int(i) == d ? std::pair{off, off + s} : std::pair{int64_t(0), x.shape()[i]});
      out.push_back(x.shrink(r));
      off += s;
    }
    return out;
  })
  /// pieces of `size` along dim; the last may be smaller
  std::vector<T> split(int64_t size, int64_t dim = 0) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), "split");
    if (size <= 0) throw ShapeError("tinygrad::split: size must be positive, got " + std::to_string(size));
    std::vector<int64_t> sizes;
    for (int64_t n = x.shape()[size_t(d)]; n > 0; n -= size) sizes.push_back(std::min(size, n));
    if (sizes.empty()) sizes.push_back(0);
    return split(sizes, d);
  })
  /// torch.chunk: up to chunks pieces along dim
  std::vector<T> chunk(int64_t chunks, int64_t dim = 0) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), "chunk");
    if (chunks <= 0) throw ShapeError("tinygrad::chunk: chunks must be positive, got " + std::to_string(chunks));
    int64_t n = x.shape()[size_t(d)];
    if (n == 0) return split(std::vector<int64_t>(size_t(chunks), 0), d);
    return split(n / chunks + (n % chunks != 0), d);
  })

  // ---- repeat, roll, windows, diagonals ----
  /// tile: repeats[i] copies along dim i (more repeats than dims prepend dims)
  T repeat(const std::vector<int64_t>& repeats) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (repeats.size() < x.ndim())
      throw ShapeError("tinygrad::repeat: " + std::to_string(repeats.size()) + " repeats for shape " + to_string(x.shape()));
    T b = x.reshape_left(repeats.size());
    Shape un, ex, fin;
    for (size_t i = 0; i < repeats.size(); i++) {
      int64_t s = b.shape()[i], r = repeats[i];
      if (r < 0) throw ShapeError("tinygrad::repeat: negative repeat in " + to_string(repeats));
      un.insert(un.end(), {1, s}); ex.insert(ex.end(), {r, s});
    }
    checked_prod(ex, "repeat");  // then each r * s fits
    for (size_t i = 0; i < repeats.size(); i++) fin.push_back(ex[2 * i] * ex[2 * i + 1]);
    return b.reshape(un).expand(ex).reshape(fin);
  })
  /// each element `repeats` times in a row along dim (flattened when dim is not given)
  T repeat_interleave(int64_t repeats, std::optional<int64_t> dim = std::nullopt) const TINYGRAD_MEMBER_DEF({
    if (repeats < 0) throw ShapeError("tinygrad::repeat_interleave: negative repeats " + std::to_string(repeats));
    T x = dim ? self() : self().flatten();
    int d = dim ? norm_axis(*dim, x.ndim(), "repeat_interleave") : 0;
    Shape s = x.shape(), e = s;
    s.insert(s.begin() + d + 1, 1); e.insert(e.begin() + d + 1, repeats);
    checked_prod(e, "repeat_interleave");
    Shape f = x.shape();
    f[size_t(d)] *= repeats;
    return x.reshape(s).expand(e).reshape(f);
  })
  /// shift elements along dims, wrapping around (flattened when dims are empty)
  T roll(const std::vector<int64_t>& shifts, const std::vector<int64_t>& dims = {}) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (dims.empty()) {
      if (shifts.size() != 1) throw ShapeError("tinygrad::roll: without dims needs one shift, got " + to_string(shifts));
      return x.flatten().roll(shifts, {0}).reshape(x.shape());
    }
    if (shifts.size() != dims.size())
      throw ShapeError("tinygrad::roll: shifts " + to_string(shifts) + " and dims " + to_string(dims) + " differ in length");
    std::vector<int64_t> reps(x.ndim(), 1);
    std::vector<Index> sl(x.ndim(), Slice{});
    for (size_t i = 0; i < dims.size(); i++) {
      int d = norm_axis(dims[i], x.ndim(), "roll");
      int64_t n = x.shape()[size_t(d)];
      if (n == 0) continue;
      int64_t delta = n - ((shifts[i] % n) + n) % n;
      reps[size_t(d)] = 2;
      sl[size_t(d)] = Slice{delta, size_add(delta, n, "roll")};
    }
    return x.repeat(reps).slice(sl);
  })
  /// torch.roll by shift along dim (none: flattened)
  T roll(int64_t shift, std::optional<int64_t> dim = std::nullopt) const TINYGRAD_MEMBER_DEF({
    return roll(std::vector<int64_t>{shift}, dim ? std::vector<int64_t>{*dim} : std::vector<int64_t>{});
  })
  /// sliding windows of `size` every `step` along dim, as a new last dim (torch's Tensor.unfold)
  T unfold(int64_t dim, int64_t size, int64_t step) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), "unfold");
    if (size < 0 || step <= 0 || size > x.shape()[size_t(d)])
      throw ShapeError("tinygrad::unfold: size " + std::to_string(size) + ", step " + std::to_string(step) + " do not fit dim " + std::to_string(d) +
                       " of " + to_string(x.shape()));
    std::vector<int64_t> to_last, back;
    for (size_t i = 0; i < x.ndim(); i++) if (int(i) != d) to_last.push_back(int64_t(i));
    to_last.push_back(d);
    // after pool: (others..., windows, size); put windows back at d
    for (size_t i = 0, k = 0; i < x.ndim(); i++) back.push_back(int(i) == d ? int64_t(x.ndim() - 1) : int64_t(k++));
    back.push_back(int64_t(x.ndim()));
    if (size == 0) {  // NOTE: pool needs a window of at least 1
      Shape s = x.permute(to_last).shape();
      s.back() = x.shape()[size_t(d)] / step + 1;
      s.push_back(0);
      return T::zeros(s, x.dtype(), x.device()).permute(back);
    }
    return x.permute(to_last).pool({size}, {step}, {1}, "unfold").permute(back);
  })
  /// a 1-D tensor -> the square matrix with it on the diagonal; a 2-D tensor -> its diagonal
  T diag(int64_t offset = 0) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (x.ndim() == 2) return diagonal(offset);
    if (x.ndim() != 1) throw ShapeError("tinygrad::diag: needs a 1-D or 2-D tensor, got shape " + to_string(x.shape()));
    int64_t n = x.shape()[0];
    // (n, 1) padded to (n, n+1), flattened and cut to n*n puts x[i] at (i, i)
    T m = x.unsqueeze(-1).pad({{0, 0}, {0, n}}).flatten().shrink({{0, n * n}}).reshape({n, n});
    int64_t a = std::abs(offset);
    return offset >= 0 ? m.pad({{0, a}, {a, 0}}) : m.pad({{a, 0}, {0, a}});
  })
  /// the diagonal of dims (dim1, dim2), moved to the last dim
  T diagonal(int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1) const TINYGRAD_MEMBER_DEF({
    auto& x0 = self();
    if (x0.ndim() < 2) throw ShapeError("tinygrad::diagonal: needs at least 2 dims, got shape " + to_string(x0.shape()));
    int a = norm_axis(dim1, x0.ndim(), "diagonal"), b = norm_axis(dim2, x0.ndim(), "diagonal");
    if (a == b) throw ShapeError("tinygrad::diagonal: dim1 and dim2 are both " + std::to_string(a));
    std::vector<int64_t> perm;
    for (size_t i = 0; i < x0.ndim(); i++) if (int(i) != a && int(i) != b) perm.push_back(int64_t(i));
    perm.push_back(a); perm.push_back(b);
    T x = x0.permute(perm);
    size_t nd = x.ndim();
    int64_t r = x.shape()[nd - 2], c = x.shape()[nd - 1];
    int64_t r0 = offset < 0 ? std::min(-offset, r) : 0, c0 = offset > 0 ? std::min(offset, c) : 0;
    int64_t n = std::min(r - r0, c - c0);
    Pads sh;
    for (size_t i = 0; i + 2 < nd; i++) sh.push_back({0, x.shape()[i]});
    sh.push_back({r0, r0 + n}); sh.push_back({c0, c0 + n});
    x = x.shrink(sh);
    // (n, n) -> n*n padded to n*(n+1) -> (n, n+1): column 0 is the diagonal
    Shape lead(x.shape().begin(), x.shape().end() - 2);
    T f = x.flatten(int64_t(nd) - 2);
    Pads pp(lead.size(), {0, 0});
    pp.push_back({0, n});
    Shape s2 = lead; s2.push_back(n); s2.push_back(n + 1);
    Pads keep;
    for (auto l : lead) keep.push_back({0, l});
    keep.push_back({0, n}); keep.push_back({0, 1});
    return f.pad(pp).reshape(s2).shrink(keep).reshape([&] { Shape s = lead; s.push_back(n); return s; }());
  })

  /// einops-style: "b c (h w) -> b h w c", sizes for names that an unflatten cannot infer
  T rearrange(const std::string& formula, const std::vector<std::pair<std::string, int64_t>>& sizes = {}) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    auto fail = [&](const std::string& why, size_t pos) -> ShapeError {
      return ShapeError("tinygrad::rearrange(\"" + formula + "\"): " + why + " at position " + std::to_string(pos) + " (input shape " +
                        to_string(x.shape()) + ")");
    };
    struct Group { std::vector<std::string> names; bool paren; size_t pos; };
    auto arrow = formula.find("->");
    if (arrow == std::string::npos || formula.find("->", arrow + 2) != std::string::npos)
      throw fail("needs exactly one \"->\"", arrow == std::string::npos ? formula.size() : formula.find("->", arrow + 2));
    auto parse = [&](size_t b, size_t e) {
      std::vector<Group> gs;
      bool open = false;
      for (size_t i = b; i < e;) {
        char c = formula[i];
        if (c == ' ') { i++; continue; }
        if (c == '(') { if (open) throw fail("nested \"(\"", i); open = true; gs.push_back({{}, true, i++}); continue; }
        if (c == ')') { if (!open) throw fail("unmatched \")\"", i); open = false; i++; continue; }
        size_t j = i;
        std::string name;
        if (formula.compare(i, 3, "...") == 0) { name = "..."; j = i + 3; }
        else {
          while (j < e && (std::isalnum(uint8_t(formula[j])) || formula[j] == '_')) j++;
          if (j == i) throw fail(std::string("unexpected character '") + c + "'", i);
          name = formula.substr(i, j - i);
          if (std::isdigit(uint8_t(name[0])) && name != "1") throw fail("axis name \"" + name + "\" starts with a digit", i);
        }
        if (name == "1") { if (open) throw fail("\"1\" inside parentheses", i); gs.push_back({{}, true, i}); }  // a size-1 dim
        else if (open) gs.back().names.push_back(name);
        else gs.push_back({{name}, false, i});
        i = j;
      }
      if (open) throw fail("unclosed \"(\"", e);
      return gs;
    };
    auto lhs = parse(0, arrow), rhs = parse(arrow + 2, formula.size());
    // flatten the lhs into names and sizes, expanding "..."
    size_t n_lhs_dims = lhs.size(), n_ell = 0;
    for (auto& g : lhs) for (auto& nm : g.names) if (nm == "...") {
      if (g.paren) throw fail("\"...\" inside parentheses on the left", g.pos);
      n_ell++;
    }
    if (n_ell > 1) throw fail("more than one \"...\"", arrow);
    if ((n_ell ? n_lhs_dims - 1 : n_lhs_dims) > x.ndim() || (!n_ell && n_lhs_dims != x.ndim()))
      throw fail("the left side has " + std::to_string(n_lhs_dims) + " dims but the input has " + std::to_string(x.ndim()), 0);
    size_t ell_len = x.ndim() - (n_lhs_dims - n_ell);
    std::map<std::string, int64_t> known(sizes.begin(), sizes.end());
    std::vector<std::string> names;
    Shape flat;
    size_t dim = 0;
    for (auto& g : lhs) {
      if (!g.paren && g.names[0] == "...") {
        for (size_t k = 0; k < ell_len; k++) { names.push_back("..." + std::to_string(k)); flat.push_back(x.shape()[dim++]); }
        continue;
      }
      for (auto& nm : g.names)
        if (std::count(names.begin(), names.end(), nm) || std::count(g.names.begin(), g.names.end(), nm) > 1)
          throw fail("axis \"" + nm + "\" appears twice on the left", g.pos);
      int64_t n = x.shape()[dim++], have = 1, unknown = -1;
      for (size_t k = 0; k < g.names.size(); k++) {
        auto it = known.find(g.names[k]);
        if (it != known.end()) have = size_mul(have, it->second, "rearrange");
        else if (unknown >= 0) throw fail("cannot infer the sizes of \"" + g.names[size_t(unknown)] + "\" and \"" + g.names[k] + "\"", g.pos);
        else unknown = int64_t(k);
      }
      if (g.names.empty() && n != 1) throw fail("\"1\" or \"()\" matches a dim of size " + std::to_string(n), g.pos);
      if (unknown >= 0) {
        if (have == 0 || n % have) throw fail("dim of size " + std::to_string(n) + " does not split by " + std::to_string(have), g.pos);
        known[g.names[size_t(unknown)]] = n / have;
      }
      else if (have != n) throw fail("sizes multiply to " + std::to_string(have) + " but the dim has size " + std::to_string(n), g.pos);
      for (auto& nm : g.names) { names.push_back(nm); flat.push_back(known[nm]); }
    }
    for (auto& [nm, s] : sizes)
      if (std::find(names.begin(), names.end(), nm) == names.end()) throw fail("size given for \"" + nm + "\" which is not on the left", 0);
    std::vector<int64_t> perm;
    Shape out;
    for (auto& g : rhs) {
      std::vector<std::string> ns = g.names;
      if (std::count(ns.begin(), ns.end(), "...")) {
        if (g.paren) throw fail("\"...\" inside parentheses on the right", g.pos);
        ns.clear();
        for (size_t k = 0; k < ell_len; k++) ns.push_back("..." + std::to_string(k));
      }
      int64_t s = 1;
      for (auto& nm : ns) {
        auto it = std::find(names.begin(), names.end(), nm);
        if (it == names.end()) throw fail("axis \"" + nm + "\" is not on the left", g.pos);
        int64_t p = it - names.begin();
        if (std::find(perm.begin(), perm.end(), p) != perm.end()) throw fail("axis \"" + nm + "\" appears twice on the right", g.pos);
        perm.push_back(p); s *= flat[size_t(p)];
      }
      if (g.paren) out.push_back(s);
      else for (auto& nm : ns) out.push_back(flat[size_t(std::find(names.begin(), names.end(), nm) - names.begin())]);
    }
    if (perm.size() != names.size()) {
      for (size_t i = 0; i < names.size(); i++)
        if (std::find(perm.begin(), perm.end(), int64_t(i)) == perm.end()) throw fail("axis \"" + names[i] + "\" is missing on the right", arrow + 2);
    }
    return x.reshape(flat).permute(perm).reshape(out);
  })

  // ---- indexing ----
  /// x[i] along dim 0 (negative counts from the end)
  T operator[](int64_t i) const TINYGRAD_MEMBER_DEF({ return self().slice({i}); })
  // NOTE: a template so that t[{1, 2}] (ints) is not ambiguous with a Tensor built from the braces
  /// x[idx] with an int, slice, tensor or {...} list of them, as torch indexing
  template <class U, class = std::enable_if_t<std::is_same_v<U, T>>>
  T operator[](const U& idx) const { return (*this)[std::vector<TI>{idx}]; }
  /// ints, Slices, NewAxis, Ellipsis and integer tensors (broadcast together; numpy's placement of the result dims)
  T operator[](const std::vector<TI>& idx) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    auto [basic, tdims] = split_index(idx, "getitem");
    T ret = x.slice(basic);
    if (tdims.empty()) return ret;
    // NOTE: an out-of-range index is an IndexError (check_indices); the one-hot compare selects a zero for it
    Shape big;
    std::vector<std::pair<int, T>> ti;
    for (auto& [d, t] : tdims) {
      try {
        big = T::broadcast_shape(big, t.shape(), "getitem");
      } catch (const ShapeError& e) { throw IndexError(std::string("tinygrad::getitem: index tensors cannot be broadcast together: ") + e.what()); }
      int64_t n = ret.shape()[size_t(d)];
      check_indices(t, n, true, "getitem", d);
      ti.push_back({d, (t < 0).where(t + T::scalar(double(n), t.dtype(), t.device()), t)});
    }
    int first = ti[0].first, last = ti.back().first;
    size_t nb = big.size(), nd = ret.ndim();
    Shape pre(ret.shape().begin(), ret.shape().begin() + first);
    pre.insert(pre.end(), big.begin(), big.end());
    pre.insert(pre.end(), ret.shape().begin() + first, ret.shape().end());
    std::optional<T> mask;
    for (auto& [d, t] : ti) {
      Shape s = t.reshape_left(nb).shape();
      s.insert(s.end(), nd - size_t(first), 1);
      T i = t.reshape(s).expand(pre);
      int64_t n = ret.shape()[size_t(d)];
      Shape as{n};
      as.insert(as.end(), nd - size_t(d) - 1, 1);
      T m = i == T::arange(double(n), std::nullopt, 1, t.dtype(), x.device()).reshape(as);
      mask = mask ? *mask & m : m;
    }
    Shape rs(ret.shape().begin(), ret.shape().begin() + first);
    rs.insert(rs.end(), nb, 1);
    rs.insert(rs.end(), ret.shape().begin() + first, ret.shape().end());
    std::vector<int64_t> axes;
    for (auto& [d, t] : ti) axes.push_back(int64_t(d + nb));
    T out = mask->where(ret.reshape(rs), 0.0).sum(axes).cast(ret.dtype());
    bool consecutive = last - first + 1 == int(ti.size());
    if (first != 0 && ti.size() > 1 && !consecutive) {  // numpy: separated index tensors put their dims first
      std::vector<int64_t> perm;
      for (size_t i = 0; i < nb; i++) perm.push_back(int64_t(size_t(first) + i));
      for (int i = 0; i < first; i++) perm.push_back(i);
      for (size_t i = size_t(first) + nb; i < out.ndim(); i++) perm.push_back(int64_t(i));
      out = out.permute(perm);
    }
    return out;
  })
  /// setitem: t[idx] = value, in place (through assign: every handle of t sees it). Returns t.
  T& set(const std::vector<TI>& idx, const T& value) TINYGRAD_MEMBER_DEF({
    T& x = mself();
    T v = value.cast(x.dtype());
    auto [basic, tdims] = split_index(idx, "setitem");
    if (!tdims.empty()) {
      // flat positions of the selected elements; the last write to a position wins.
      // NOTE: compares every selected element with every position (|selection| x numel work), like tinygrad's masks
      T pos = T::arange(double(x.numel()), std::nullopt, 1, DType::Int32, x.device()).reshape(x.shape())[idx];
      Shape r = pos.shape();
      v = expand_value(v, r, "setitem");
      int64_t nr = pos.numel(), n = x.numel();
      if (nr == 0) return x;  // nothing selected (and the max below would be of an empty dim)
      T hit = pos.reshape({nr, 1}) == T::arange(double(n), std::nullopt, 1, DType::Int32, x.device()).reshape({1, n});
      T rank = T::arange(double(nr), std::nullopt, 1, DType::Int32, x.device()).reshape({nr, 1}) + 1;
      T top = hit.where(rank, 0).max(0, true);  // (1, n): 0 where untouched
      T val = (hit & (rank == top)).where(v.reshape({nr, 1}), 0.0).sum(0, true).cast(x.dtype());
      return x.assign((top > 0).where(val, x.reshape({1, n})).reshape(x.shape()));
    }
    Shape rshape = x.slice(basic).shape();
    v = expand_value(v, rshape, "setitem");
    // undo each step of slice(): per-dim lengths, stride gaps, flips, then the offset
    std::vector<Index> full = expand_ellipsis(basic, x.shape(), "setitem");
    Shape lens;
    std::vector<int64_t> steps, flips;
    Pads place;
    size_t d = 0;
    for (auto& i : full) {
      if (std::holds_alternative<NewAxis>(i)) continue;
      int64_t n = x.shape()[d];
      if (auto* k = std::get_if<int64_t>(&i)) {
        int64_t p = *k < 0 ? *k + n : *k;
        lens.push_back(1); steps.push_back(1); place.push_back({p, n - p - 1});
      } else {
        auto s = std::get<Slice>(i);
        auto clampi = [&](int64_t q, int64_t lo, int64_t hi) { return std::clamp(q < 0 ? q + n : q, lo, hi); };
        int64_t lo, hi;
        if (s.step > 0) { lo = s.start ? clampi(*s.start, 0, n) : 0; hi = s.stop ? clampi(*s.stop, 0, n) : n; hi = std::max(hi, lo); }
        else {
          int64_t b = s.start ? clampi(*s.start, -1, n - 1) : n - 1, e = s.stop ? clampi(*s.stop, -1, n - 1) : -1;
          e = std::min(e, b); lo = e + 1; hi = b + 1; flips.push_back(int64_t(d));
        }
        int64_t m = std::max<int64_t>(n, 1), st = std::abs(std::clamp(s.step, -m, m));  // as slice() clamps it
        lens.push_back((hi - lo) / st + ((hi - lo) % st != 0)); steps.push_back(st); place.push_back({lo, n - hi});
      }
      d++;
    }
    auto scatter_back = [&](T t) {
      t = t.reshape(lens);
      for (size_t k = 0; k < steps.size(); k++) {
        if (steps[k] == 1) continue;
        int64_t len = x.shape()[k] - place[k].first - place[k].second;
        Shape s = t.shape(), s2 = s, s3 = s;
        s.insert(s.begin() + int64_t(k) + 1, 1);
        Pads p(s.size(), {0, 0});
        p[k + 1] = {0, steps[k] - 1};
        s3[k] = size_mul(lens[k], steps[k], "setitem");
        Pads sh;
        for (size_t j = 0; j < s3.size(); j++) sh.push_back({0, j == k ? len : s3[j]});
        t = t.reshape(s).pad(p).reshape(s3).shrink(sh);
      }
      return t.flip(flips).pad(place);
    };
    T mask = scatter_back(T::ones(rshape, DType::Bool, x.device()));
    return x.assign(mask.where(scatter_back(v), x));
  })

  /// out[i][j] = x[i][index[i][j]] along dim (index.shape[d] <= x.shape[d] elsewhere)
  T gather(int64_t dim, const T& index) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (index.ndim() != x.ndim())
      throw ShapeError("tinygrad::gather: index " + to_string(index.shape()) + " and input " + to_string(x.shape()) + " differ in rank");
    int d = norm_axis(dim, x.ndim(), "gather");
    check_int_index(index, "gather");
    check_indices(index, x.shape()[size_t(d)], false, "gather", d);
    Pads sh;
    for (size_t i = 0; i < x.ndim(); i++) {
      if (int(i) != d && index.shape()[i] > x.shape()[i])
        throw ShapeError("tinygrad::gather: index " + to_string(index.shape()) + " is larger than input " + to_string(x.shape()) +
                         " in dim " + std::to_string(i));
      sh.push_back({0, int(i) == d ? x.shape()[i] : index.shape()[i]});
    }
    T xs = x.shrink(sh).unsqueeze(-1).transpose(-1, d);
    return one_hot_last(index.unsqueeze(-1), x.shape()[size_t(d)]).where(xs, 0.0).sum(-1).cast(x.dtype());
  })
  /// torch.index_select: the slices index[0], index[1], ... of dim (index: 0-d or 1-d integers in [0, size))
  T index_select(int64_t dim, const T& index) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (index.ndim() > 1) throw ShapeError("tinygrad::index_select: index must be 0-d or 1-d, got shape " + to_string(index.shape()));
    check_int_index(index, "index_select");
    int d = norm_axis(dim, x.ndim(), "index_select");
    int64_t n = x.shape()[size_t(d)], k = index.numel();
    check_indices(index, n, false, "index_select", d);
    Shape rs(x.ndim() + 1, 1);
    rs[size_t(d)] = k;
    // a one-hot of each index against dim (moved last), as gather does
    T xs = x.unsqueeze(-1).transpose(-1, d);
    return one_hot_last(index.reshape(rs), n).where(xs, 0.0).sum(-1).cast(x.dtype());
  })
  /// a copy of x with x[index[i][j]][j] = src[i][j] along dim 0 (likewise for other dims); the last duplicate wins
  T scatter(int64_t dim, const T& index, const T& src) const TINYGRAD_MEMBER_DEF({
    auto [s, mask] = pre_scatter(dim, index, src.cast(self().dtype()), "scatter");
    if (mask.shape().back() == 0) return self();  // no sources: nothing written
    // per target: the last source position that writes it
    int64_t n = mask.shape().back();
    Shape rs(mask.ndim(), 1);
    rs.back() = n;
    T rank = T::arange(double(n), std::nullopt, 1, DType::Int32, self().device()).reshape(rs) + 1;
    T top = mask.where(rank, 0).max(-1, true);
    T val = (mask & (rank == top)).where(s, 0.0).sum(-1).cast(self().dtype());
    return (top.squeeze(-1) > 0).where(val, self());
  })
  /// torch.scatter with a scalar value
  T scatter(int64_t dim, const T& index, double value) const TINYGRAD_MEMBER_DEF({
    return scatter(dim, index, T::full(index.shape(), value, self().dtype(), self().device()));
  })
  /// reduce: "sum", "prod", "mean", "amax", "amin"; include_self: whether x's values take part
  T scatter_reduce(int64_t dim, const T& index, const T& src, const std::string& reduce, bool include_self = true) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (reduce != "sum" && reduce != "prod" && reduce != "mean" && reduce != "amax" && reduce != "amin")
      throw Error("tinygrad::scatter_reduce: unknown reduce \"" + reduce + "\" (sum, prod, mean, amax or amin)");
    if (src.dtype() != x.dtype())
      throw DTypeError("tinygrad::scatter_reduce: src dtype " + to_string(src.dtype()) + " differs from " + to_string(x.dtype()));
    auto [s, mask] = pre_scatter(dim, index, src, "scatter_reduce");
    if (mask.shape().back() == 0) return x;  // no sources: every reduce leaves x
    T untouched = mask.max(-1).logical_not();  // NOTE: max of bools is any
    auto base = [&](double ident) { return include_self ? x : untouched.where(x, ident); };
    if (reduce == "sum") return (mask.where(s, 0.0).sum(-1) + base(0)).cast(x.dtype());
    if (reduce == "prod") return (mask.where(s, 1.0).prod(-1) * base(1)).cast(x.dtype());
    if (reduce == "amax") return mask.where(s, dtype_min(x.dtype())).max(-1).maximum(base(dtype_min(x.dtype())));
    if (reduce == "amin") return mask.where(s, dtype_max(x.dtype())).min(-1).minimum(base(dtype_max(x.dtype())));
    T count = mask.where(T::scalar(1, DType::Int32, x.device()), T::scalar(0, DType::Int32, x.device())).sum(-1) +
        (include_self ? T::scalar(1, DType::Int32, x.device()) : untouched.cast(DType::Int32));
    T total = mask.where(s, 0.0).sum(-1) + base(0);
    // torch: integer means round down
    return is_float(x.dtype()) ? total / count.cast(x.dtype()) : total.cast(DType::Int64).idiv(count.cast(DType::Int64)).cast(x.dtype());
  })
  /// the elements where mask (broadcast to x) is true, as a 1-D tensor.
  /// NOTE: the output size depends on the data: the mask is realized here; x stays lazy (and differentiable)
  T masked_select(const T& mask) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    if (!is_bool(mask.dtype())) throw DTypeError("tinygrad::masked_select: mask must be bool, got " + to_string(mask.dtype()));
    auto m = mask.expand(T::broadcast_shape(x.shape(), mask.shape(), "masked_select")).template to_vector<bool>();
    Shape full = T::broadcast_shape(x.shape(), mask.shape(), "masked_select");
    std::vector<int32_t> idx;
    for (size_t i = 0; i < m.size(); i++) if (m[i]) idx.push_back(int32_t(i));
    T flat = x.expand(full).flatten();
    if (idx.empty()) return flat.shrink({{0, 0}});
    return flat[T(idx, {int64_t(idx.size())}, x.device())];
  })
  /// torch.unique: the distinct values in ascending order (sorted or not, as torch on the CPU), with dim the distinct
  /// slices along dim in lexicographic order; inverse (x's shape, or (size of dim,)) and counts are int64 and always
  /// filled (the flags keep torch's argument order). NaNs count as one value.
  /// NOTE: realizes x (the output size depends on the data); values are gathered from x, so they stay differentiable
  UniqueResult<T> unique(bool sorted = true, bool return_inverse = false, bool return_counts = false,
                         std::optional<int64_t> dim = std::nullopt) const TINYGRAD_MEMBER_DEF({
    (void)sorted;
    (void)return_inverse;
    (void)return_counts;
    auto& x = self();
    int d = dim ? norm_axis(*dim, x.ndim(), "unique") : 0;
    std::vector<int64_t> order{d};
    for (int a = 0; a < int(x.ndim()); a++) if (a != d) order.push_back(a);
    T rows = dim ? x.permute(order) : x.flatten();  // the things to tell apart, along dim 0
    int64_t n = rows.ndim() ? rows.shape()[0] : 1, w = n ? rows.numel() / n : 0;
    auto v = rows.template to_vector<double>();
    auto less = [&](int64_t i, int64_t j) {  // lexicographic, NaN after everything
      for (int64_t c = 0; c < w; c++) {
        double a = v[size_t(i * w + c)], b = v[size_t(j * w + c)];
        bool an = std::isnan(a), bn = std::isnan(b);
        if (an != bn) return bn;
        if (!an && a != b) return a < b;
      }
      return false;
    };
    std::vector<int64_t> perm(size_t(n), 0), first, counts, inverse(size_t(n), 0);
    for (int64_t i = 0; i < n; i++) perm[size_t(i)] = i;
    std::stable_sort(perm.begin(), perm.end(), less);
    for (size_t i = 0; i < perm.size(); i++) {
      if (i == 0 || less(perm[i - 1], perm[i])) { first.push_back(perm[i]); counts.push_back(0); }
      counts.back()++;
      inverse[size_t(perm[i])] = int64_t(first.size()) - 1;
    }
    int64_t u = int64_t(first.size());
    T values = u ? rows[T(first, {u}, x.device())] : rows.shrink({{0, 0}});
    if (dim) {
      std::vector<int64_t> back(order.size());
      for (size_t i = 0; i < order.size(); i++) back[size_t(order[i])] = int64_t(i);
      values = values.permute(back);
    }
    Shape ishape = dim ? Shape{n} : x.shape();
    T inv = n ? T(inverse, {n}, x.device()).reshape(ishape) : T::zeros(ishape, DType::Int64, x.device());
    T cnt = u ? T(counts, {u}, x.device()) : T::zeros({0}, DType::Int64, x.device());
    return {values, inv, cnt};
  })
  /// indices (n, ndim) of the nonzero elements, in row-major order. NOTE: realizes x (data-dependent shape)
  T nonzero() const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    auto v = x.template to_vector<double>();
    std::vector<int64_t> out;  // int64, as torch
    int64_t cnt = 0;
    for (size_t i = 0; i < v.size(); i++) {
      if (v[i] == 0) continue;
      cnt++;
      Shape ix(x.ndim());
      int64_t r = int64_t(i);
      for (size_t k = x.ndim(); k-- > 0;) { ix[k] = r % x.shape()[k]; r /= x.shape()[k]; }
      out.insert(out.end(), ix.begin(), ix.end());
    }
    if (out.empty()) return T::zeros({0, int64_t(x.ndim())}, DType::Int64, x.device());
    return T(out, {cnt, int64_t(x.ndim())}, x.device());
  })

 private:
  const T& self() const TINYGRAD_MEMBER_DEF({ return static_cast<const T&>(*this); })
  T& mself() TINYGRAD_MEMBER_DEF({ return static_cast<T&>(*this); })
  static std::string pads_str(const Pads& p) TINYGRAD_MEMBER_DEF({
    std::string r = "(";
    for (size_t i = 0; i < p.size(); i++) {
      if (i) r += ", ";
      r += "(";
      r += std::to_string(p[i].first);
      r += ", ";
      r += std::to_string(p[i].second);
      r += ")";
    }
    return r + ")";
  })
  static T expand_dim(const T& x, size_t d, int64_t n) TINYGRAD_MEMBER_DEF({ Shape s = x.shape(); s[d] = n; return x.expand(s); })
  static void check_int_index(const T& t, const char* op) TINYGRAD_MEMBER_DEF({
    if (!is_int(t.dtype())) throw DTypeError(std::string("tinygrad::") + op + ": index tensors must be integers, got " + to_string(t.dtype()));
  })
  // t (..., 1) == arange(n): (..., n)
  static T one_hot_last(const T& t, int64_t n) TINYGRAD_MEMBER_DEF({ return t == T::arange(double(n), std::nullopt, 1, t.dtype(), t.device()); })
  static T expand_value(const T& v, const Shape& s, const char* op) TINYGRAD_MEMBER_DEF({
    try { if (T::broadcast_shape(v.shape(), s, op) != s) throw ShapeError(""); } catch (const ShapeError&) {
      throw ShapeError(std::string("tinygrad::") + op + ": value of shape " + to_string(v.shape()) +
                       " does not broadcast to the indexed shape " + to_string(s));
    }
    return v.expand(s);
  })
  // drop the ellipsis (full slices in its place) and fill the remaining dims; flags follow their entries
  static std::vector<Index> expand_ellipsis(const std::vector<Index>& idx, const Shape& shape, const char* op,
                                            std::vector<bool>* flags = nullptr) TINYGRAD_MEMBER_DEF({
    size_t real = 0, ell = 0, ndim = shape.size();
    for (auto& i : idx) {
      real += std::holds_alternative<int64_t>(i) || std::holds_alternative<Slice>(i);
      ell += std::holds_alternative<Ellipsis>(i);
    }
    if (ell > 1) throw IndexError(std::string("tinygrad::") + op + ": an index can only have one ellipsis");
    if (real > ndim)
      throw IndexError(std::string("tinygrad::") + op + ": too many indices (" + std::to_string(real) +
                       ") for a tensor of shape " + to_string(shape));
    std::vector<Index> full;
    std::vector<bool> fl;
    for (size_t k = 0; k < idx.size(); k++) {
      if (std::holds_alternative<Ellipsis>(idx[k])) { full.insert(full.end(), ndim - real, Slice{}); fl.insert(fl.end(), ndim - real, false); }
      else { full.push_back(idx[k]); fl.push_back(flags && (*flags)[k]); }
    }
    for (; real < ndim && !ell; real++) { full.push_back(Slice{}); fl.push_back(false); }
    if (flags) *flags = fl;
    return full;
  })
  // tensors -> full slices; returns the expanded basic index and each tensor's dim in the basic result
  std::pair<std::vector<Index>, std::vector<std::pair<int, T>>> split_index(const std::vector<TI>& idx, const char* op) const TINYGRAD_MEMBER_DEF({
    std::vector<Index> basic;
    std::vector<bool> is_t;
    std::vector<T> ts;
    for (auto& i : idx) {
      if (auto* t = std::get_if<T>(&i)) { check_int_index(*t, op); basic.push_back(Slice{}); ts.push_back(*t); is_t.push_back(true); continue; }
      std::visit([&](auto& v) { if constexpr (!std::is_same_v<std::decay_t<decltype(v)>, T>) basic.push_back(v); }, i);
      is_t.push_back(false);
    }
    if (ts.empty()) return {basic, {}};  // slice() checks and reports plain indices
    auto full = expand_ellipsis(basic, self().shape(), op, &is_t);
    std::vector<std::pair<int, T>> tdims;
    int out = 0;
    size_t ti = 0;
    for (size_t p = 0; p < full.size(); p++) {
      if (std::holds_alternative<int64_t>(full[p])) continue;
      if (is_t[p]) tdims.push_back({out, ts[ti++]});
      out++;
    }
    return {full, tdims};
  })
  // gather/scatter's common prep: src and a one-hot mask, both (x.shape with index's sizes, n_index_along_dim) -> x.shape + (k,)
  std::pair<T, T> pre_scatter(int64_t dim, const T& index, const T& src, const char* op) const TINYGRAD_MEMBER_DEF({
    auto& x = self();
    int d = norm_axis(dim, x.ndim(), op);
    check_int_index(index, op);
    check_indices(index, x.shape()[size_t(d)], false, op, d);
    if (index.ndim() != x.ndim() || src.ndim() != x.ndim())
      throw ShapeError(std::string("tinygrad::") + op + ": input " + to_string(x.shape()) + ", index " + to_string(index.shape()) + " and src " +
                       to_string(src.shape()) + " differ in rank");
    for (size_t i = 0; i < x.ndim(); i++)
      if ((int(i) != d && index.shape()[i] > x.shape()[i]) || index.shape()[i] > src.shape()[i])
        throw ShapeError(std::string("tinygrad::") + op + ": index " + to_string(index.shape()) + " is larger than input " + to_string(x.shape()) +
                         " or src " + to_string(src.shape()) + " in dim " + std::to_string(i));
    Pads sh;
    for (auto n : index.shape()) sh.push_back({0, n});
    T s = src.shrink(sh);
    Shape es = s.shape();
    es.push_back(x.shape()[size_t(d)]);
    s = s.unsqueeze(-1).expand(es).transpose(-1, d);
    T mask = one_hot_last(index.unsqueeze(-1), x.shape()[size_t(d)]).transpose(-1, d);
    Pads p;
    for (size_t i = 0; i < x.ndim(); i++) p.push_back({0, int(i) == d ? 0 : x.shape()[i] - s.shape()[i]});
    p.push_back({0, 0});
    return {s.pad(p), mask.pad(p)};
  })
};

}  // namespace tinygrad::detail
