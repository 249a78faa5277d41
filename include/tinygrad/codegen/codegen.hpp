#pragma once
// codegen pipeline: kernel AST -> opts -> expand -> simplify -> linearize -> source
#include "linearize.hpp"

namespace tinygrad {

struct ProgramSpec {
  std::string name;     // for people: r_64_16_4
  std::string fn;       // the symbol: name + hash
  std::string src;
  std::vector<Opt> opts;
  std::vector<int64_t> launch;  // CPU: {threads}
  double flops = 0;     // estimated, for DEBUG=2
  UOpRef ast;
};

namespace detail {
// float ALU ops times the iterations each runs (for DEBUG=2's GFLOPS)
inline double estimate_flops(const UOpRef& sink) {
  auto topo = toposort(sink);
  auto rs = open_ranges(topo);
  double flops = 0;
  for (auto& u : topo) {
    if (!(is_alu(u->op) && is_float(u->dtype)) && u->op != Ops::REDUCE) continue;
    double it = u->vcount;
    for (auto* r : rs[(u->op == Ops::REDUCE ? u->src[0] : u).get()]) it *= double(r->range_end());
    flops += it;
  }
  return flops;
}
inline std::string kernel_name(const UOpRef& sink, const std::vector<Opt>& opts) {
  bool red = false;
  for (auto& u : toposort(sink)) red |= u->op == Ops::REDUCE;
  std::string n = red ? "r" : "E";
  for (auto& r : ranges_of(sink)) n += cat("_", r->range_end());
  for (auto& o : opts) if (o.op != OptOp::THREAD) n += cat("_", o.amt);
  return n;
}
}  // namespace detail

inline ProgramSpec to_program(const UOpRef& ast, const Renderer& ren, std::optional<std::vector<Opt>> pinned = std::nullopt) {
  ProgramSpec p;
  p.ast = ast;
  std::vector<Opt> want = pinned ? *pinned : flags().noopt ? std::vector<Opt>{} : hand_coded_optimizations(ast, ren);
  UOpRef sink = ast;
  for (auto& o : want) {
    try { sink = apply_opt(sink, o); p.opts.push_back(o); }
    catch (const KernelOptError&) { if (pinned) throw; }
  }
  int64_t threads = 1;
  for (auto& o : p.opts) if (o.op == OptOp::THREAD) threads = o.amt;
  p.launch = {threads};
  // index math folds before and after the lanes become vectors
  sink = simplify(sink);
  sink = simplify(expand_lanes(sink));
  p.flops = detail::estimate_flops(ast);
  p.name = detail::kernel_name(sink, p.opts);
  auto lin = linearize(sink);
  if (flags().debug >= 5) std::fprintf(stderr, "%s", print_graph(sink).c_str());
  std::string body = ren.render("KERNEL_NAME", lin);
  p.fn = p.name + "_" + hex64(hash_bytes(body)).substr(0, 8);
  // the symbol carries a hash of the body, so kernels compiled together never clash
  for (size_t at; (at = body.find("KERNEL_NAME")) != std::string::npos;) body.replace(at, 11, p.fn);
  p.src = body;
  if (flags().debug >= 3) {
    std::string s;
    for (auto& o : p.opts) s += o.str() + " ";
    std::fprintf(stderr, "%s opts: [%s]\n", p.name.c_str(), s.c_str());
  }
  if (flags().debug >= 4) std::fprintf(stderr, "%s\n", p.src.c_str());
  return p;
}

}  // namespace tinygrad
