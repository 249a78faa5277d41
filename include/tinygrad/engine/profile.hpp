#pragma once
// PROFILE=1 and VIZ=1 (helpers.hpp's flags): what ran, collected only while a flag is on (else one bool check per
// realize, launch or copy), written at exit and by write_profile / write_viz. PROFILE: a Chrome trace (trace-event
// JSON) with one process per device and a thread each for its kernels, copies and compiles. VIZ: one HTML page, no
// network, of each schedule's kernels (nodes) and buffers (edges), with each kernel's opts, source, time and stages.
#include <cstdlib>
#include <cstring>
#include "../json.hpp"
#include "api.hpp"
#include "schedule.hpp"

namespace tinygrad::detail {

inline bool profiling() { return !flags().profile.empty(); }
inline bool vizzing() { return !flags().viz.empty(); }

// NOTE: bounded: at most 2^20 trace events (40 bytes each) and 1000 schedules are kept; the rest are counted
inline constexpr size_t max_profile_events = size_t(1) << 20, max_viz_schedules = 1000;

struct Profile {
  enum class Track : uint8_t { kernels, copies, compiles };
  struct Event { uint32_t name, device, note; Track track; double ts, dur, bytes, flops; };  // times in seconds
  struct KernelInfo {
    std::string name, device, src, opts;
    std::vector<RewriteStage> stages;
    double time = 0;
    int64_t runs = 0, timed = 0;
  };
  struct ScheduleInfo {
    std::shared_ptr<const void> plan;  // held: its address stays its key
    std::string device;
    std::vector<size_t> kernels;       // into `kernels`
    std::vector<std::vector<int>> slots;
    int n_inputs = 0;
    std::vector<std::string> buffers;  // per slot: dtype[size]
    std::vector<RewriteStage> stages;
    int64_t runs = 0;
  };
  std::mutex mu;
  double t0 = now_s();
  std::vector<Event> events;
  size_t events_dropped = 0, schedules_dropped = 0;
  std::vector<std::string> strings;  // event names, devices and notes, interned
  std::unordered_map<std::string, uint32_t> string_id;
  std::vector<KernelInfo> kernels;
  std::unordered_map<std::string, size_t> kernel_of;  // by the program's symbol (name + source hash)
  std::vector<ScheduleInfo> schedules;
  std::unordered_map<const void*, size_t> schedule_of;

  static Profile& get();
  void clear() {  // what was collected so far (tests)
    std::lock_guard lk(mu);
    events.clear(), kernels.clear(), kernel_of.clear(), schedules.clear(), schedule_of.clear();
    events_dropped = schedules_dropped = 0;
    t0 = now_s();
  }
  uint32_t intern(const std::string& s) {
    auto [it, fresh] = string_id.try_emplace(s, uint32_t(strings.size()));
    if (fresh) strings.push_back(s);
    return it->second;
  }
  size_t kernel(const ProgramSpec& k, const std::string& device) {
    auto [it, fresh] = kernel_of.try_emplace(k.fn, kernels.size());
    if (!fresh) return it->second;
    std::string opts;
    for (auto& o : k.opts) opts += (opts.empty() ? "" : " ") + o.str();
    kernels.push_back({k.name, device, k.src, opts, k.stages, 0, 0, 0});
    return it->second;
  }
  void event(Track t, const std::string& name, const std::string& device, double start, double dur, double bytes, double flops,
             const std::string& note = "") {
    if (events.size() >= max_profile_events) { events_dropped++; return; }
    events.push_back({intern(name), intern(device), intern(note), t, start - t0, dur, bytes, flops});
  }
};

// a kernel's run (start: when it was launched; tm: its time, 0 when not timed): its trace event, its VIZ time
inline void profile_kernel(const ProgramSpec& k, const std::string& device, double start, double tm, double bytes) {
  auto& p = Profile::get();
  std::lock_guard lk(p.mu);
  if (profiling()) p.event(Profile::Track::kernels, k.name, device, start, tm, bytes, k.flops);
  if (!vizzing()) return;
  auto& ki = p.kernels[p.kernel(k, device)];
  ki.runs++;
  if (tm > 0) { ki.time += tm; ki.timed++; }
}
inline void profile_event(Profile::Track t, const std::string& name, const std::string& device, double start, double bytes = 0,
                          const std::string& note = "") {
  double dur = now_s() - start;
  auto& p = Profile::get();
  std::lock_guard lk(p.mu);
  p.event(t, name, device, start, dur, bytes, 0, note);
}
// a schedule that runs (VIZ): recorded once per plan, counted on each run
inline void viz_schedule(const std::shared_ptr<const void>& plan, const std::string& device, const ScheduleSpec& sp,
                         const std::vector<const ProgramSpec*>& ks) {
  auto& p = Profile::get();
  std::lock_guard lk(p.mu);
  if (auto it = p.schedule_of.find(plan.get()); it != p.schedule_of.end()) { p.schedules[it->second].runs++; return; }
  if (p.schedules.size() >= max_viz_schedules) { p.schedules_dropped++; return; }
  Profile::ScheduleInfo s{plan, device, {}, {}, sp.n_inputs, {}, sp.stages, 1};
  for (size_t k = 0; k < ks.size(); k++) { s.kernels.push_back(p.kernel(*ks[k], device)); s.slots.push_back(sp.kernels[k].slots); }
  for (int i = 0; i < sp.n_inputs; i++) s.buffers.push_back(cat("input ", i));
  for (auto& [dt, n] : sp.new_slots) s.buffers.push_back(cat(to_string(dt), "[", n, "]"));
  p.schedule_of[plan.get()] = p.schedules.size();
  p.schedules.push_back(std::move(s));
}

inline std::string html_escape(const std::string& s) {
  std::string r;
  for (char c : s) r += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : c == '"' ? "&quot;" : std::string(1, c);
  return r;
}
inline std::string fmt_num(double x, const char* f = "%.3f") {
  char b[64];
  std::snprintf(b, sizeof(b), f, x);
  return b;
}
inline void write_file(const std::string& path, const std::string& text, const char* who) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw Error(cat("tinygrad::", who, ": cannot open ", path, " for writing: ", std::strerror(errno)));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok &= std::fclose(f) == 0;
  if (!ok) throw Error(cat("tinygrad::", who, ": cannot write ", path));
}

// the Chrome trace: one process (pid) per device, threads 0 kernels, 1 copies, 2 compiles; times in microseconds
inline std::string profile_json(Profile& p) {
  static const char* track_names[] = {"kernels", "copies", "compiles"};
  std::unordered_map<uint32_t, size_t> pid;
  std::vector<std::string> meta, evs;
  for (auto& e : p.events) {
    auto [it, fresh] = pid.try_emplace(e.device, pid.size());
    if (fresh) {
      meta.push_back(cat("{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":", it->second, ",\"tid\":0,\"args\":{\"name\":",
                         json_str(p.strings[e.device]), "}}"));
      for (size_t t = 0; t < 3; t++)
        meta.push_back(cat("{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":", it->second, ",\"tid\":", t, ",\"args\":{\"name\":\"",
                           track_names[t], "\"}}"));
    }
    double dur = std::max(e.dur, 0.0);
    std::string ev = cat("{\"ph\":\"X\",\"cat\":\"", track_names[size_t(e.track)], "\",\"name\":", json_str(p.strings[e.name]), ",\"pid\":",
                         it->second, ",\"tid\":", size_t(e.track), ",\"ts\":", fmt_num(e.ts * 1e6), ",\"dur\":", fmt_num(dur * 1e6),
                         ",\"args\":{\"bytes\":", fmt_num(e.bytes, "%.0f"), ",\"flops\":", fmt_num(e.flops, "%.0f"));
    if (dur > 0 && e.track != Profile::Track::compiles)
      ev += cat(",\"GB/s\":", fmt_num(e.bytes / dur / 1e9), ",\"GFLOPS\":", fmt_num(e.flops / dur / 1e9));
    if (!p.strings[e.note].empty()) ev += ",\"note\":" + json_str(p.strings[e.note]);
    evs.push_back(ev + "}}");
  }
  meta.insert(meta.end(), evs.begin(), evs.end());
  std::string out = cat("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"dropped_events\":", p.events_dropped, ",\"max_events\":",
                        max_profile_events, "},\"traceEvents\":[\n");
  for (size_t i = 0; i < meta.size(); i++) out += (i ? ",\n" : "") + meta[i];
  return out + "\n]}\n";
}

// the page's script: lays each schedule's kernels out in layers (a kernel one right of the last writer of what it
// reads; the schedule's inputs in layer 0) as SVG, buffers as edges; a click opens the kernel's details
inline const char* viz_script() {
  return R"JS(
var data = JSON.parse(document.getElementById('data').textContent);
var NS = 'http://www.w3.org/2000/svg';
function el(tag, attrs, parent) {
  var e = document.createElementNS(NS, tag);
  for (var k in attrs) e.setAttribute(k, attrs[k]);
  parent.appendChild(e);
  return e;
}
data.schedules.forEach(function(s, si) {
  var svg = document.getElementById('g' + si), writer = {}, nodes = [], layers = [];
  function place(node, layer) {
    layers[layer] = layers[layer] || 0;
    node.x = 20 + layer * 240; node.y = 20 + layers[layer]++ * 56;
    nodes.push(node);
    return node;
  }
  var inputs = {};
  s.kernels.forEach(function(k, i) {
    var layer = 1, srcs = [];
    s.slots[i].slice(1).forEach(function(slot) {
      var from = writer[slot];
      if (!from && slot < s.n_inputs) from = inputs[slot] = inputs[slot] || place({label: s.buffers[slot], cls: 'bnode', layer: 0}, 0);
      if (from) { layer = Math.max(layer, from.layer + 1); srcs.push([from, slot]); }
    });
    var n = place({label: data.kernels[k].name, cls: 'knode', kernel: k, layer: layer, srcs: srcs}, layer);
    writer[s.slots[i][0]] = n;
  });
  var w = 0, h = 0;
  nodes.forEach(function(n) { w = Math.max(w, n.x + 220); h = Math.max(h, n.y + 56); });
  svg.setAttribute('width', w); svg.setAttribute('height', h);
  var m = el('marker', {id: 'a' + si, viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 8, markerHeight: 8, orient: 'auto'},
             el('defs', {}, svg));
  el('path', {d: 'M0,0 L10,5 L0,10 z', fill: '#888'}, m);
  nodes.forEach(function(n) {
    (n.srcs || []).forEach(function(p) {
      var a = p[0], x1 = a.x + 200, y1 = a.y + 18, x2 = n.x, y2 = n.y + 18, mx = (x1 + x2) / 2;
      var d = 'M' + x1 + ',' + y1 + ' C' + mx + ',' + y1 + ' ' + mx + ',' + y2 + ' ' + x2 + ',' + y2;
      var path = el('path', {d: d, class: 'edge', 'marker-end': 'url(#a' + si + ')'}, svg);
      el('title', {}, path).textContent = s.buffers[p[1]];
    });
  });
  nodes.forEach(function(n) {
    var g = el('g', {class: n.cls, transform: 'translate(' + n.x + ',' + n.y + ')'}, svg);
    el('rect', {width: 200, height: 36, rx: 6}, g);
    el('text', {x: 8, y: 23}, g).textContent = n.label;
    if (n.kernel === undefined) return;
    g.setAttribute('data-kernel', data.kernels[n.kernel].name);
    g.addEventListener('click', function() {
      var d = document.getElementById('k' + n.kernel);
      d.open = true; d.scrollIntoView();
    });
  });
});
document.body.setAttribute('data-rendered', document.querySelectorAll('g.knode').length);
)JS";
}

inline std::string viz_html(Profile& p) {
  std::string data = "{\"kernels\":[";
  for (size_t k = 0; k < p.kernels.size(); k++) data += cat(k ? "," : "", "{\"name\":", json_str(p.kernels[k].name), "}");
  data += "],\"schedules\":[";
  for (size_t i = 0; i < p.schedules.size(); i++) {
    auto& s = p.schedules[i];
    data += cat(i ? "," : "", "{\"n_inputs\":", s.n_inputs, ",\"kernels\":[");
    for (size_t k = 0; k < s.kernels.size(); k++) data += cat(k ? "," : "", s.kernels[k]);
    data += "],\"slots\":[";
    for (size_t k = 0; k < s.slots.size(); k++) {
      data += k ? ",[" : "[";
      for (size_t j = 0; j < s.slots[k].size(); j++) data += cat(j ? "," : "", s.slots[k][j]);
      data += "]";
    }
    data += "],\"buffers\":[";
    for (size_t b = 0; b < s.buffers.size(); b++) data += (b ? "," : "") + json_str(s.buffers[b]);
    data += "]}";
  }
  data += "]}";
  // NOTE: "</" inside a script element would end it; "<\/" is the same JSON string
  for (size_t at = 0; (at = data.find("</", at)) != std::string::npos; at += 3) data.replace(at, 2, "<\\/");
  auto stages = [](const std::vector<RewriteStage>& st) {
    std::string r = "<table class=\"stages\"><tr><th>stage</th><th>rewrites</th><th>nodes after</th></tr>";
    for (auto& s : st) r += cat("<tr><td>", html_escape(s.name), "</td><td>", s.rewrites, "</td><td>", s.nodes, "</td></tr>");
    return r + "</table>";
  };
  std::string h = R"(<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>tinygrad VIZ</title><style>
body { font: 14px sans-serif; margin: 20px; } pre { background: #f4f4f4; padding: 8px; overflow-x: auto; }
#errors { color: #b00; white-space: pre; } svg { border: 1px solid #ddd; display: block; }
.knode rect { fill: #dbe9ff; stroke: #36c; cursor: pointer; } .bnode rect { fill: #eee; stroke: #999; }
text { font: 12px monospace; } .edge { fill: none; stroke: #888; stroke-width: 1.5; }
table.stages { border-collapse: collapse; } .stages td, .stages th { border: 1px solid #ccc; padding: 2px 8px; }
</style></head><body>
<h1>tinygrad VIZ</h1><div id="errors"></div>
<script>window.onerror = function(msg) { document.getElementById('errors').textContent += 'JS error: ' + msg + '\n'; };</script>
)";
  h += cat("<p>", p.schedules.size(), " schedules (", p.schedules_dropped, " more not kept), ", p.kernels.size(),
           " kernels. Kernels are nodes, the buffers they pass are edges (hover one); click a kernel for its details.</p>\n");
  for (size_t i = 0; i < p.schedules.size(); i++) {
    auto& s = p.schedules[i];
    h += cat("<section class=\"schedule\"><h2>schedule ", i, " on ", html_escape(s.device), ": ", s.kernels.size(), " kernels, ran ", s.runs,
             " times</h2>\n", stages(s.stages), "\n<svg class=\"graph\" id=\"g", i, "\"></svg></section>\n");
  }
  h += "<h2>kernels</h2>\n";
  for (size_t k = 0; k < p.kernels.size(); k++) {
    auto& ki = p.kernels[k];
    std::string tm = ki.timed ? cat(fmt_num(ki.time / double(ki.timed) * 1e6, "%.2f"), " us a run (", ki.timed, " timed)")
                              : "not timed (PROFILE=1 or DEBUG=2 times it)";
    h += cat("<details class=\"kernel\" id=\"k", k, "\"><summary><b>", html_escape(ki.name), "</b> on ", html_escape(ki.device), ": ran ", ki.runs,
             " times, ", tm, "</summary>\n<p>opts: [", html_escape(ki.opts), "]</p>\n", stages(ki.stages), "\n<pre class=\"src\">",
             html_escape(ki.src), "</pre></details>\n");
  }
  h += "<script type=\"application/json\" id=\"data\">" + data + "</script>\n<script>" + viz_script() + "</script>\n</body></html>\n";
  return h;
}

inline void write_at_exit() {
  try {
    if (profiling()) write_profile(flags().profile);
    if (vizzing()) write_viz(flags().viz);
  } catch (const std::exception& e) { std::fprintf(stderr, "%s\n", e.what()); }
}
inline Profile& Profile::get() {
  static Profile* p = [] { std::atexit(write_at_exit); return new Profile(); }();  // NOTE: leaked on purpose, read at exit
  return *p;
}

}  // namespace tinygrad::detail

namespace tinygrad {
#if TINYGRAD_DEFINE_API
TINYGRAD_API void write_profile(const std::string& path) {
  auto& p = detail::Profile::get();
  std::lock_guard lk(p.mu);
  detail::write_file(path, detail::profile_json(p), "write_profile");
}
TINYGRAD_API void write_viz(const std::string& path) {
  auto& p = detail::Profile::get();
  std::lock_guard lk(p.mu);
  detail::write_file(path, detail::viz_html(p), "write_viz");
}
#endif
}  // namespace tinygrad
