// Shared by the bench programs: pin_device() fixes the device a benchmark measures, and peer_value() runs a Python
// peer script of bench/ (tinygrad on its CPU backend) and reads one number from the JSON line it prints; NaN when
// the peer is not installed or fails, so a benchmark still reports its own figures.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>
#include <tinygrad/helpers.hpp>

// the device a benchmark measures: DEV when set, else dflt (never the "best that loads", which is CUDA where a GPU
// is present); pinned before the first tensor, since the default device is chosen once
inline std::string pin_device(const std::string& dflt) {
  auto& dev = tinygrad::flags().dev;
  if (dev.empty()) dev = dflt;
  return dev;
}

// the printed output of a peer script (empty when it is not installed or fails)
inline std::string peer_output(const std::string& script) {
  std::string cmd = "python3 " TG_BENCH_DIR "/" + script + " 2>/dev/null", out;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof(buf), p)) out += buf;
    pclose(p);
  }
  return out;
}
// the number printed under key in a peer's output; NaN when absent
inline double peer_key(const std::string& out, const std::string& key) {
  auto at = out.find("\"" + key + "\": ");
  return at == std::string::npos ? NAN : std::stod(out.substr(at + key.size() + 4));
}
// one number of one run of the peer (each call runs it anew)
inline double peer_value(const std::string& script, const std::string& key) { return peer_key(peer_output(script), key); }
