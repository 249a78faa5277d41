#pragma once
// BEAM search (tinygrad's "don't hand-tune, search"): a kernel is a point in the space of opts. From the
// heuristic's kernel (or, with BEAM_START=empty, the kernel without opts, as tinygrad starts), expand every
// kernel of the beam by each of its valid_opts(), render and compile the new candidates in one batch (all
// cores), time each on the device on scratch buffers (best of 3 only for those within 3x of the best so far),
// keep the `width` fastest and repeat while the best gets faster; a winner other than the start is kept only if it
// still beats the start timed side by side (with the heuristic's K block dropped, its kernel is a second start, since
// applied opts are never changed). The winner's opts are cached on disk per
// (kernel AST, device, compiler), so a later process runs no search. BEAM=n in the environment, or a BeamScope
// in code, turns it on. DEBUG=2 prints each round; a search past 2 s prints one line to stderr anyway.
#include <charconv>
#include <fstream>
#include <unordered_set>
#include "../codegen/codegen.hpp"
#include "../runtime/device.hpp"

namespace tinygrad {

struct SearchStats { int64_t searches = 0, cache_hits = 0, candidates = 0; };
inline SearchStats& search_stats() { static SearchStats s; return s; }

// BEAM width for the lifetime of the scope (0: no search); restores the previous width
class BeamScope {
 public:
  explicit BeamScope(int width) : old_(flags().beam) { flags().beam = width; }
  ~BeamScope() { flags().beam = old_; }
  BeamScope(const BeamScope&) = delete;
  BeamScope& operator=(const BeamScope&) = delete;
 private:
  int old_;
};

}  // namespace tinygrad

namespace tinygrad::detail {

// where a search starts: the heuristic's kernel (the default) or the kernel without opts (tinygrad's start)
enum class BeamStart { heuristic, empty };
inline BeamStart beam_start_default() { return getenv_str("BEAM_START") == "empty" ? BeamStart::empty : BeamStart::heuristic; }

// elements each DEFINE_GLOBAL of a kernel is indexed over: one past the largest index any access can reach
// (an upper bound from the indexes' value ranges; nullopt where a bound is data dependent or too large)
inline std::optional<std::vector<std::pair<DType, int64_t>>> kernel_buffers(const UOpRef& ast) {
  std::map<int64_t, std::pair<DType, int64_t>> bufs;
  for (auto& u : toposort(ast)) {
    if (u->op != Ops::INDEX || u->src[0]->op != Ops::DEFINE_GLOBAL) continue;
    const UOpRef& idx = u->src[1];
    if (idx->vmax >= (int64_t(1) << 31) / 8) return std::nullopt;  // NOTE: a gather's loaded index, or > 256M elements
    auto& b = bufs.try_emplace(std::get<int64_t>(u->src[0]->arg), u->src[0]->dtype, 1).first->second;
    b.second = std::max(b.second, idx->vmax + 1);
  }
  std::vector<std::pair<DType, int64_t>> r;
  for (auto& [i, b] : bufs) {
    if (i != int64_t(r.size())) return std::nullopt;
    r.push_back(b);
  }
  return r;
}

// a cache entry: one "op axis amount" line per opt, then "end" (a truncated entry has no end line)
inline std::string opts_text(const std::vector<Opt>& opts) {
  std::string s;
  for (auto& o : opts) s += cat(int(o.op), " ", o.axis, " ", o.amt, "\n");
  return s + "end\n";
}
// the opts of a cache entry; nullopt unless all of it parses (whole integers, a known op, the end line). The amounts
// are checked by Kernel::apply, as any opt's
inline std::optional<std::vector<Opt>> read_opts(const std::filesystem::path& p) {
  std::string text = read_file(p);
  std::vector<Opt> r;
  std::vector<int64_t> v;
  for (size_t i = 0; i < text.size();) {
    size_t end = text.find('\n', i);
    if (end == std::string::npos) return std::nullopt;
    std::string_view line(text.data() + i, end - i);
    i = end + 1;
    if (line == "end") return i == text.size() ? std::optional(r) : std::nullopt;
    v.clear();
    for (size_t a = 0; a < line.size() && v.size() < 4;) {
      size_t b = std::min(line.find(' ', a), line.size());
      int64_t x = 0;
      auto [ptr, ec] = std::from_chars(line.data() + a, line.data() + b, x);
      if (ec != std::errc() || ptr != line.data() + b || a == b) return std::nullopt;
      v.push_back(x);
      a = b + 1;
    }
    if (v.size() != 3 || v[0] < 0 || v[0] > int64_t(last_optop)) return std::nullopt;
    r.push_back({OptOp(v[0]), v[1], v[2]});
  }
  return std::nullopt;
}

struct Candidate { Kernel k; double t; };

// the variables' values BEAM times a kernel at: the middle of each range (tinygrad's choice). The winner is cached for
// the kernel, so for every value: a kernel whose best opts differ across its range is tuned for the middle.
inline std::vector<int64_t> timing_vals(const ProgramSpec& p) {
  std::vector<int64_t> v;
  for (auto& x : p.vars) v.push_back(x->varg()[0] + (x->varg()[1] - x->varg()[0]) / 2);
  return v;
}
// one timed run; more runs (best of 3) only for candidates within 3x of the best so far
inline double time_program(Program& prg, const std::vector<void*>& ptrs, const std::vector<int64_t>& vals, double best) {
  double t = prg.call(ptrs, vals, true);
  if (t > best * 3) return t;  // hopeless: no more runs
  for (int i = 0; i < 2; i++) t = std::min(t, prg.call(ptrs, vals, true));
  return t;
}

// compile and time kernels; ones that fail to render or compile are dropped (a bug, reported at DEBUG>=2)
inline std::vector<Candidate> time_kernels(std::vector<Kernel> ks, DeviceRuntime& rt, const std::vector<void*>& ptrs, double best,
                                           std::unordered_set<uint64_t>& seen) {
  // render on all cores (the UOp graph is shared between threads; each candidate is its own)
  std::vector<std::optional<ProgramSpec>> rendered(ks.size());
  std::vector<std::string> errors(ks.size());
  parallel_for(ks.size(), [&](size_t i) {
    try { rendered[i] = to_program(ks[i]); } catch (const std::exception& e) { errors[i] = e.what(); }
  });
  std::vector<ProgramSpec> specs;
  std::vector<Kernel> kept;
  for (size_t i = 0; i < ks.size(); i++) {
    if (!rendered[i]) {
      if (flags().debug >= 2) std::fprintf(stderr, "BEAM: dropped %s: %s\n", opts_text(ks[i].applied()).c_str(), errors[i].c_str());
      continue;
    }
    auto& p = *rendered[i];
    // NOTE: the same code from another order of opts: the symbol ends in a hash of the body
    std::string same = p.fn.substr(p.fn.rfind('_'));
    same += "|" + p.launch.str();
    if (!seen.insert(hash_bytes(same)).second) continue;
    specs.push_back(std::move(p));
    kept.push_back(std::move(ks[i]));
  }
  std::vector<std::string> srcs;
  for (auto& s : specs) srcs.push_back(s.src);
  std::vector<std::string> bins;
  try { bins = rt.compiler->compile_many(srcs); }
  catch (const Error&) {  // one bad candidate: compile one at a time to keep the others
    bins.assign(srcs.size(), "");
    for (size_t i = 0; i < srcs.size(); i++) try { bins[i] = rt.compiler->compile(srcs[i]); } catch (const Error&) {}
  }
  std::vector<Candidate> out;
  for (size_t i = 0; i < specs.size(); i++) {
    if (bins[i].empty()) continue;
    try {
      auto prg = rt.load(specs[i].fn, bins[i], specs[i].launch);
      double t = time_program(*prg, ptrs, timing_vals(specs[i]), best);
      out.push_back({std::move(kept[i]), t});
      best = std::min(best, t);
      search_stats().candidates++;
    } catch (const Error& e) {
      if (flags().debug >= 2) std::fprintf(stderr, "BEAM: %s failed: %s\n", specs[i].name.c_str(), e.what());
    }
  }
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.t < b.t; });
  return out;
}

// the winner's time came from one best-of-3 next to many candidates: on a busy machine it can be noise. Time the winner
// and the start alternately (best of 5 each, at most ~1 s) and keep the winner only if it is still 2% faster.
inline bool confirmed_faster(const Kernel& winner, const Kernel& start, DeviceRuntime& rt, const std::vector<void*>& ptrs) {
  std::vector<std::unique_ptr<Program>> prgs;
  std::vector<std::vector<int64_t>> vals;
  for (const Kernel* k : {&winner, &start}) {
    auto p = to_program(*k);
    prgs.push_back(rt.load(p.fn, rt.compiler->compile(p.src), p.launch));
    vals.push_back(timing_vals(p));
  }
  double tw = 1e30, ts = 1e30, t0 = now_s();
  for (int i = 0; i < 5 && (i < 2 || now_s() - t0 < 1); i++) {
    tw = std::min(tw, prgs[0]->call(ptrs, vals[0], true));
    ts = std::min(ts, prgs[1]->call(ptrs, vals[1], true));
  }
  if (flags().debug >= 2) std::fprintf(stderr, "BEAM confirm: winner %.2f us, start %.2f us\n", tw * 1e6, ts * 1e6);
  return tw < ts * 0.98;
}

// the opts BEAM search picks for a kernel on a device (cached on disk); nullopt where the kernel cannot be searched
// (its buffer sizes are not known from its indexes)
// the cache entry of a search: per kernel AST, device, compiler, threads, width and start
inline std::filesystem::path beam_cache_file(const UOpRef& ast, DeviceRuntime& rt, const Renderer& ren, int width,
                                             BeamStart from = beam_start_default()) {
  std::string key = cat(print_graph(ast), "|", rt.name, "|", rt.compiler->cache_key(), "|", ren.threads, "|", width,
                        flags().tf32 ? "|tf32" : "", from == BeamStart::empty ? "|empty" : "");
  return cache_subdir("beam") / hex64(hash_bytes(key));
}
inline std::optional<std::vector<Opt>> beam_search(const UOpRef& ast, DeviceRuntime& rt, const Renderer& ren, int width,
                                                   BeamStart from = beam_start_default()) {
  // (in detail)
  std::filesystem::path file = beam_cache_file(ast, rt, ren, width, from);
  if (auto opts = read_opts(file)) {
    try {
      Kernel k(ast, ren);
      for (auto& o : *opts) k.apply(o);
      search_stats().cache_hits++;
      return opts;
    } catch (const KernelOptError&) {}  // stale: search again
  }
  auto sizes = kernel_buffers(ast);
  if (!sizes) return std::nullopt;
  search_stats().searches++;
  double t0 = now_s(), limit = double(getenv_int("BEAM_TIMEOUT", 60));
  std::vector<std::unique_ptr<Buffer>> bufs;
  std::vector<void*> ptrs;
  for (auto& [dt, n] : *sizes) {
    bufs.push_back(std::make_unique<Buffer>(rt.name, dt, n));
    bufs.back()->copyin(std::vector<char>(bufs.back()->nbytes()).data());  // zeros: no NaN or denormal slows a candidate
    ptrs.push_back(bufs.back()->ptr());
  }
  std::unordered_set<uint64_t> seen;
  // NOTE: the default start is the heuristic's kernel (the empty one where it has no opts): an unoptimized matmul
  // alone costs seconds to time, and every path from it passes kernels the heuristic already beats
  Kernel start(ast, ren), unblocked(ast, ren);
  if (from == BeamStart::heuristic)
    for (auto& o : hand_coded_optimizations(ast, ren)) {
      apply_heuristic_opt(start, o);
      // NOTE: without the K block an opt that needs it may not fit: that one is left out of this start
      if (o.op != OptOp::KBLOCK) try { unblocked.apply(o); } catch (const KernelOptError&) {}
    }
  // NOTE: an applied opt stays: the heuristic's K block size is searched from the same start without it, and each
  // block tile that fits (TC's and TILE's amounts; they come first, after the start's MERGEs and PADTOs) is a start of its own
  std::vector<Kernel> starts{start};
  if (unblocked.applied().size() != start.applied().size()) starts.push_back(unblocked);
  auto& sa = start.applied();
  auto tiled = std::find_if(sa.begin(), sa.end(), [](auto& o) { return o.op == OptOp::TC || o.op == OptOp::TILE; });
  Kernel pre(ast, ren);
  for (auto it = sa.begin(); it != sa.end() && (it->op == OptOp::PADTO || it->op == OptOp::MERGE); ++it) pre.apply(*it);
  for (auto& o : pre.valid_opts())
    if ((o.op == OptOp::TC || o.op == OptOp::TILE) && (tiled == sa.end() || o != *tiled)) starts.push_back(Kernel(pre).apply(o));
  auto beam = time_kernels(starts, rt, ptrs, 1e30, seen);
  if (beam.empty()) return std::nullopt;
  Candidate best = beam[0];
  std::string name = kernel_name(ast, {});
  auto opts_str = [](const Kernel& k) {
    std::string s;
    for (auto& o : k.applied()) { if (!s.empty()) s += ' '; s += o.str(); }
    return s;
  };
  if (flags().debug >= 2) std::fprintf(stderr, "BEAM %s start: %.2f us with [%s]\n", name.c_str(), best.t * 1e6, opts_str(best.k).c_str());
  int round = 0;
  bool progress_line = false;
  while (now_s() - t0 < limit) {
    std::vector<Kernel> next;
    for (auto& c : beam)
      for (auto& o : c.k.valid_opts()) next.push_back(Kernel(c.k).apply(o));
    size_t tried = next.size();
    auto timed = time_kernels(std::move(next), rt, ptrs, best.t, seen);
    round++;
    // DEBUG=2: every round; otherwise one line once a search has run 2 s (so a long silence is explained)
    if (flags().debug >= 2 || (now_s() - t0 > 2 && !progress_line)) {
      const Candidate& b = !timed.empty() && timed[0].t < best.t ? timed[0] : best;
      std::fprintf(stderr, "BEAM %s round %d: %zu candidates (%zu new), best %.2f us with [%s], %.2f s%s\n", name.c_str(), round, tried, timed.size(),
                   b.t * 1e6, opts_str(b.k).c_str(), now_s() - t0, flags().debug >= 2 ? "" : " (a long search; DEBUG=2 shows each round)");
      progress_line = true;
    }
    if (timed.empty() || timed[0].t >= best.t * 0.98) break;  // no candidate 2% faster: done
    best = timed[0];
    if (timed.size() > size_t(std::max(width, 1))) timed.erase(timed.begin() + std::max(width, 1), timed.end());
    beam = std::move(timed);
  }
  if (best.k.applied() != start.applied()) {
    try {
      if (!confirmed_faster(best.k, start, rt, ptrs)) best = {start, best.t};
    } catch (const Error&) { best = {start, best.t}; }
  }
  if (flags().debug >= 2)
    std::fprintf(stderr, "BEAM %s: %.2f us with [%s] after %d rounds, %.2f s\n", name.c_str(), best.t * 1e6, opts_str(best.k).c_str(), round,
                 now_s() - t0);
  write_file_atomic(file, opts_text(best.k.applied()));
  return best.k.applied();
}

}  // namespace tinygrad::detail
