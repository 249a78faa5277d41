// PROFILE=1 and VIZ=1 (engine/profile.hpp): the Chrome trace parses and holds the kernels, copies and compiles of a
// known graph with their bytes and FLOPs; TinyJit's replays appear per kernel (no graphs here); the VIZ page holds the
// kernels' names, sources and stages, and renders its graph in headless Chromium without a JS error.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace tinygrad;
using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// the flags on, collections empty and programs reloaded (so they compile), for one test; the flags as they were after
struct Collect {
  std::string profile = flags().profile, viz = flags().viz;
  Collect() {
    flags().profile = "unused.json", flags().viz = "unused.html";
    detail::Profile::get().clear();
    clear_program_cache();
  }
  ~Collect() { flags().profile = profile, flags().viz = viz; }
};
std::string tmp_path(const std::string& name) { return (fs::temp_directory_path() / detail::cat("tg_test_viz_", getpid(), "_", name)).string(); }
std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
// a known graph of 2 kernels: an elementwise chain (to a buffer) and a sum of it
Tensor two_kernels() {
  Tensor a(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  Tensor e = (a * 2 + 1).contiguous();
  Tensor r = e.sum();
  r.realize();
  CHECK(r.item<float>() == 288.0f);
  return a;
}
const detail::Json& member(const detail::Json& j, std::string_view key) {
  const detail::Json* m = detail::find(j, key);
  REQUIRE(m);
  return *m;
}
double number(const detail::Json& j) { return j.kind == detail::Json::Int ? double(j.i) : j.f; }
// the trace's complete events ("X") of one category
std::vector<const detail::Json*> events(const detail::Json& trace, const std::string& cat) {
  std::vector<const detail::Json*> r;
  for (auto& e : member(trace, "traceEvents").arr)
    if (member(e, "ph").s == "X" && member(e, "cat").s == cat) r.push_back(&e);
  return r;
}
}  // namespace

TEST_CASE("viz: PROFILE's trace parses and has the kernels, their bytes and FLOPs, and the compiles", "[viz]") {
  Collect on;
  std::string dev = two_kernels().device();
  std::string path = tmp_path("trace.json");
  write_profile(path);
  detail::Json trace = detail::parse_json(read_text(path), "trace: ");
  fs::remove(path);
  auto ks = events(trace, "kernels");
  REQUIRE(ks.size() == 2);
  CHECK(member(*ks[0], "name").s.rfind("E_", 0) == 0);  // the elementwise kernel
  CHECK(member(*ks[1], "name").s.rfind("r_", 0) == 0);   // then the reduce
  for (auto* e : ks) {
    CHECK(number(member(*e, "dur")) > 0);  // timed (PROFILE syncs each kernel)
    CHECK(number(member(*e, "ts")) >= 0);
    CHECK(number(member(member(*e, "args"), "bytes")) >= 16 * 4 + 4);
    CHECK(number(member(member(*e, "args"), "flops")) >= 16);
    CHECK(member(*e, "pid").i == member(*ks[0], "pid").i);
    CHECK(member(*e, "tid").i == 0);
  }
  CHECK(number(member(*ks[1], "ts")) >= number(member(*ks[0], "ts")));
  // the device's track is named, and the compiles are on it
  bool named = false;
  for (auto& e : member(trace, "traceEvents").arr)
    named |= member(e, "ph").s == "M" && member(e, "name").s == "process_name" && member(member(e, "args"), "name").s == dev;
  CHECK(named);
  auto cs = events(trace, "compiles");
  REQUIRE(cs.size() >= 2);
  CHECK_THAT(member(member(*cs[0], "args"), "note").s, Contains("r_"));
  CHECK(member(trace, "otherData").obj.size() == 2);
}

TEST_CASE("viz: PROFILE traces copies between devices and TinyJit's replays kernel by kernel", "[viz]") {
  Collect on;
  Tensor a = two_kernels();
  std::string other = a.device() == "CPU" ? "CPU:1" : "CPU";
  Tensor b = a.to(other).realize();
  TinyJit f([](const Tensor& x) { return (x * x).sum(); });
  for (int i = 0; i < 4; i++) CHECK(f(Tensor(std::vector<float>{1, 2, 3})).item<float>() == 14.0f);
  std::string path = tmp_path("trace2.json");
  write_profile(path);
  detail::Json trace = detail::parse_json(read_text(path), "trace: ");
  fs::remove(path);
  auto cp = events(trace, "copies");
  REQUIRE(cp.size() >= 1);
  CHECK(member(*cp[0], "name").s == "copy " + a.device() + " -> " + other);
  CHECK(number(member(member(*cp[0], "args"), "bytes")) == 64);
  // two_kernels' 2, the jitted function's kernel in its 2 eager calls and its 2 replays (CPU and PoCL have no graphs)
  CHECK(events(trace, "kernels").size() == 2 + 4 * f.kernel_count());
}

TEST_CASE("viz: the VIZ page has the schedule's kernels, their sources, opts and rewrite stages", "[viz]") {
  Collect on;
  two_kernels();
  auto& p = detail::Profile::get();
  REQUIRE(p.schedules.size() == 1);
  REQUIRE(p.schedules[0].kernels.size() == 2);
  CHECK(p.schedules[0].stages.size() == 2);  // split_reduceop, rangeify
  std::string path = tmp_path("viz.html");
  write_viz(path);
  std::string html = read_text(path);
  fs::remove(path);
  int64_t rewrites = 0;
  for (auto& k : p.kernels) {
    CHECK_THAT(html, Contains(detail::html_escape(k.name)));
    CHECK_THAT(html, Contains(detail::html_escape(k.src)));
    CHECK(k.runs == 1);
    CHECK(k.timed == 1);
    REQUIRE(k.stages.size() == detail::lowering_passes().size() + 1);
    CHECK(k.stages.back().name == "linearize");
    for (auto& s : k.stages) rewrites += s.rewrites;
  }
  CHECK(rewrites > 0);  // the elementwise kernel's index math folds (a one-thread reduce on OpenCL may have nothing to fold)
  CHECK_THAT(html, Contains("rangeify"));
  CHECK_THAT(html, Contains("gpudims"));
  CHECK_THAT(html, !Contains("http://") || Contains("http://www.w3.org/2000/svg"));  // no network: the SVG namespace only
  CHECK_THAT(html, !Contains("src=\"http"));
}

TEST_CASE("viz: write_profile and write_viz name the path they cannot write", "[viz]") {
  Collect on;
  CHECK_THROWS_WITH(write_profile("/nonexistent-dir/t.json"), Contains("write_profile") && Contains("/nonexistent-dir/t.json"));
  CHECK_THROWS_WITH(write_viz("/nonexistent-dir/v.html"), Contains("write_viz"));
}

// a ctest of its own (viz.chromium), skipped where Chromium is not installed
TEST_CASE("viz: the VIZ page renders its kernel nodes in headless Chromium without a JS error", "[.][viz_chromium]") {
  std::string chromium = detail::which("chromium");
  if (chromium.empty()) chromium = detail::which("chromium-browser");
  if (chromium.empty()) {
    std::printf("chromium is not installed: viz.chromium skipped (apt-get install chromium)\n");
    return;
  }
  Collect on;
  two_kernels();
  std::string path = tmp_path("page.html");
  write_viz(path);
  auto [rc, out] = detail::run_process({chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + tmp_path("chromium"),
                                        "--dump-dom", "file://" + path});
  fs::remove(path);
  fs::remove_all(tmp_path("chromium"));
  INFO(out);
  CHECK(rc == 0);
  auto& p = detail::Profile::get();
  REQUIRE(p.kernels.size() == 2);
  CHECK_THAT(out, Contains("data-rendered=\"2\""));  // set by the script's last line: it ran to the end
  for (auto& k : p.kernels) CHECK_THAT(out, Contains("class=\"knode\"") && Contains("data-kernel=\"" + k.name + "\""));
  CHECK_THAT(out, Contains("<div id=\"errors\"></div>"));  // window.onerror writes JS errors there
  CHECK_THAT(out, !Contains("Uncaught"));
}
