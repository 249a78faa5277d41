#pragma once
// Datasets: MNIST-format IDX files, gzip-compressed, read with the system's zlib (loaded with
// dlopen like the GPU drivers, so nothing extra is linked). Fashion-MNIST comes from Debian's
// dataset-fashion-mnist package.
#include "../tensor/tensor.hpp"
#if TINYGRAD_WITH_INTERNALS
#include <dlfcn.h>
#include <filesystem>
#endif

namespace tinygrad::nn::datasets {

struct DatasetError : Error { using Error::Error; };

// images (N, 1, rows, cols) uint8 and labels (N) uint8, as tinygrad's mnist() returns them
struct Split {
  Tensor X_train, Y_train, X_test, Y_test;
};

namespace detail {
// the four zlib entry points we need (stable ABI since zlib 1.2)
struct Zlib {
  void* (*gzopen)(const char*, const char*) = nullptr;
  int (*gzread)(void*, void*, unsigned) = nullptr;
  int (*gzclose)(void*) = nullptr;
  const char* (*gzerror)(void*, int*) = nullptr;
  static const Zlib& get() TINYGRAD_MEMBER_DEF({
    static Zlib z = [] {
      Zlib r;
      void* h = tinygrad::detail::dlopen_first({"libz.so.1", "libz.so"});
      if (!h) return r;
      r.gzopen = reinterpret_cast<decltype(r.gzopen)>(dlsym(h, "gzopen"));
      r.gzread = reinterpret_cast<decltype(r.gzread)>(dlsym(h, "gzread"));
      r.gzclose = reinterpret_cast<decltype(r.gzclose)>(dlsym(h, "gzclose"));
      r.gzerror = reinterpret_cast<decltype(r.gzerror)>(dlsym(h, "gzerror"));
      return r;
    }();
    if (!z.gzopen || !z.gzread || !z.gzclose || !z.gzerror) throw DatasetError("tinygrad::datasets: cannot load zlib (libz.so.1); install zlib1g");
    return z;
  })
};

// the whole decompressed content of a .gz file (a plain file reads through unchanged)
TINYGRAD_API std::vector<uint8_t> read_gz(const std::string& path) TINYGRAD_DEF({
  const Zlib& z = Zlib::get();
  void* f = z.gzopen(path.c_str(), "rb");
  if (!f) throw DatasetError("tinygrad::datasets: cannot open " + path);
  std::vector<uint8_t> out;
  uint8_t chunk[1 << 16];
  while (true) {
    int n = z.gzread(f, chunk, sizeof(chunk));
    if (n < 0) {
      int err = 0;
      std::string msg = z.gzerror(f, &err);
      z.gzclose(f);
      throw DatasetError("tinygrad::datasets: " + path + " is not a valid gzip file (" + msg + ")");
    }
    if (n == 0) break;
    out.insert(out.end(), chunk, chunk + n);
  }
  // NOTE: a gzip stream cut short reads as a short file; zlib only flags it as Z_BUF_ERROR (-5)
  int err = 0;
  std::string msg = z.gzerror(f, &err);
  z.gzclose(f);
  if (err != 0) throw DatasetError("tinygrad::datasets: " + path + " is not a valid gzip file (" + msg + ")");
  return out;
})

// an IDX image of unsigned bytes in memory: magic 0x00000800 | ndim, big-endian dims, data; `what` (the path) names it
// in errors. NOTE: the in-memory entry point is what tests/fuzz/fuzz_idx.cpp drives
TINYGRAD_API Tensor parse_idx(const uint8_t* b, size_t size, int expect_ndim, const std::string& what,
                              const std::string& device = host_device()) TINYGRAD_DEF({
  auto fail = [&](const std::string& why) { return DatasetError("tinygrad::datasets: " + what + ": " + why); };
  auto be32 = [&](size_t o) { return uint32_t(b[o]) << 24 | uint32_t(b[o + 1]) << 16 | uint32_t(b[o + 2]) << 8 | uint32_t(b[o + 3]); };
  if (size < 4) throw fail("truncated: " + std::to_string(size) + " bytes, no IDX header");
  if (b[0] != 0 || b[1] != 0 || b[2] != 0x08) throw fail("not an IDX file of unsigned bytes (bad magic)");
  if (b[3] != expect_ndim) throw fail("has " + std::to_string(b[3]) + " dims, expected " + std::to_string(expect_ndim));
  size_t head = 4 + 4 * size_t(b[3]);
  if (size < head) throw fail("truncated inside the header");
  Shape shape;
  for (size_t i = 0; i < b[3]; i++) shape.push_back(int64_t(be32(4 + 4 * i)));
  uint64_t n = 1, have = size - head;
  bool huge = false;  // the product overflows 64 bits
  for (auto s : shape) {
    if (s && n > UINT64_MAX / uint64_t(s)) huge = true;
    else n *= uint64_t(s);
  }
  if (huge || have != n)
    throw fail("header shape " + to_string(shape) + " needs " + (huge ? std::string("more than 2^64") : std::to_string(n)) +
               " data bytes, file has " + std::to_string(have) + " (truncated?)");
  // NOTE: a zero dim makes the count 0 but does not make the other dims valid (valid_shape)
  if (!tinygrad::detail::valid_shape(shape))
    throw fail("header shape " + to_string(shape) + " has a zero dim, but the product of its other dims overflows int64");
  return Tensor::from_bytes(b + head, DType::UInt8, shape, device);
})

// an IDX file (gzip-compressed or plain) of unsigned bytes with expect_ndim dims
TINYGRAD_API Tensor read_idx(const std::string& path, int expect_ndim) TINYGRAD_DEF({
  std::vector<uint8_t> b = read_gz(path);
  return parse_idx(b.data(), b.size(), expect_ndim, path);
})
}  // namespace detail

// an MNIST-layout directory (train-images-idx3-ubyte.gz, ...)
TINYGRAD_API Split load_idx_dir(const std::string& dir, const std::string& package = "") TINYGRAD_DEF({
  std::string probe = dir + "/train-images-idx3-ubyte.gz";
  if (!std::filesystem::exists(probe))
    throw DatasetError("tinygrad::datasets: " + probe + " not found" +
                       (package.empty() ? "" : "; install the Debian package " + package + " (apt-get install " + package + ")"));
  auto images = [&](const char* f) { Tensor x = detail::read_idx(dir + "/" + f, 3); return x.reshape({x.shape(0), 1, x.shape(1), x.shape(2)}); };
  auto labels = [&](const char* f) { return detail::read_idx(dir + "/" + f, 1); };
  Split s{images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz"), images("t10k-images-idx3-ubyte.gz"),
          labels("t10k-labels-idx1-ubyte.gz")};
  if (s.X_train.shape(0) != s.Y_train.shape(0) || s.X_test.shape(0) != s.Y_test.shape(0))
    throw DatasetError("tinygrad::datasets: " + dir + ": image and label counts differ");
  return s;
})

// Fashion-MNIST: 60000 train / 10000 test 28x28 images; dir defaults to FASHION_MNIST_DIR, else Debian's path
TINYGRAD_API Split fashion_mnist(std::string dir = "") TINYGRAD_DEF({
  if (dir.empty()) dir = tinygrad::detail::getenv_str("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist");
  return load_idx_dir(dir, "dataset-fashion-mnist");
})

}  // namespace tinygrad::nn::datasets
