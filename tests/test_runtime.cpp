// The CPU runtime's compiler and disk cache: the compiler runs without a shell (cache paths with quotes,
// spaces and newlines; CC with arguments), an unusable or unsafe cache folder is named and replaced by a
// private one, build folders of killed processes are removed, and CPU_SANITIZE builds kernels with UBSan.
#include <catch2/catch.hpp>
#include <tinygrad.hpp>

#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <future>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

using Catch::Matchers::Contains;
namespace fs = std::filesystem;

namespace {
// set (or, with nullopt, unset) an environment variable for one scope
struct EnvVar {
  std::string name;
  std::optional<std::string> old;
  EnvVar(std::string n, std::optional<std::string> v) : name(std::move(n)) {
    if (const char* o = std::getenv(name.c_str())) old = o;
    if (v) ::setenv(name.c_str(), v->c_str(), 1); else ::unsetenv(name.c_str());
  }
  ~EnvVar() {
    if (old) ::setenv(name.c_str(), old->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
};

// a fresh folder under the system temp dir, removed at the end of the scope
struct TmpDir {
  fs::path p;
  TmpDir() {
    std::string t = (fs::temp_directory_path() / "tg_runtime_test_XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()));
    p = t;
  }
  ~TmpDir() {
    std::error_code ec;
    fs::permissions(p, fs::perms::owner_all, ec);
    fs::remove_all(p, ec);
  }
};

int unique_constant() {
  static std::mt19937 g(std::random_device{}() ^ uint32_t(::getpid()));
  return int(std::uniform_int_distribution<int>(1000000, 99999999)(g));
}
// a kernel in the CPU ABI: out[0] = a[0] / a[1] + k (a division by zero is UB in C)
std::string div_kernel(int k) {
  return "void tg_div(void** b, const long long* v, int c, int n) { int* o = (int*)b[0]; const int* a = (const int*)b[1]; o[0] = a[0] / a[1] + " +
         std::to_string(k) + "; }\n";
}
// compile with `c`, load, run on (x, y): x / y + k
int run_div(tinygrad::detail::CCompiler& c, int k, int x, int y) {
  std::string so = c.compile(div_kernel(k));
  tinygrad::detail::CPUProgram p("tg_div", so, 1);
  int out = 0, in[2] = {x, y};
  p.call({&out, in}, {}, true);
  return out;
}
std::string self_exe() { return fs::read_symlink("/proc/self/exe").string(); }
std::string file_text(const fs::path& p) {
  std::ifstream f(p);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
bool is_root() { return ::geteuid() == 0; }
}  // namespace

// ============================================================================================
// item 4: no shell
// ============================================================================================

TEST_CASE("runtime: CC is split into words like a shell would, without one", "[runtime][cpu]") {
  using tinygrad::detail::split_words;
  using V = std::vector<std::string>;
  CHECK(split_words("gcc") == V{"gcc"});
  CHECK(split_words("  ccache   gcc\t-O1 ") == V{"ccache", "gcc", "-O1"});
  CHECK(split_words("'/opt/my cc/gcc' -DX=\"a b\"") == V{"/opt/my cc/gcc", "-DX=a b"});
  CHECK(split_words(R"(gcc -DQ=\"x\" 'it''s' "a\"b\\c\d" a\ b)") == V{"gcc", "-DQ=\"x\"", "its", "a\"b\\c\\d", "a b"});
  CHECK(split_words("gcc ''") == V{"gcc", ""});
  CHECK(split_words("gcc; touch x $(y) `z`") == V{"gcc;", "touch", "x", "$(y)", "`z`"});  // no shell meaning
  CHECK(split_words("").empty());
  CHECK_THROWS_AS(split_words("gcc 'unterminated"), tinygrad::DeviceError);
}

TEST_CASE("runtime: the linker's command is read from clang's -### (quoted words), not from other forms", "[runtime][cpu]") {
  using tinygrad::detail::driver_command;
  using V = std::vector<std::string>;
  std::string head = "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\nInstalledDir: /usr/bin\n";
  CHECK(driver_command(head + R"( "/usr/bin/ld" "-shared" "-o" "/a b/o\"ut.so" "/c/\$x\\y.o" "-lm")" + "\n") ==
        V{"/usr/bin/ld", "-shared", "-o", "/a b/o\"ut.so", "/c/$x\\y.o", "-lm"});
  CHECK(driver_command(R"( "/usr/bin/ld" "" "-lc")") == V{"/usr/bin/ld", "", "-lc"});
  // gcc's form, two commands, a word left open (a path with a newline), none
  CHECK(driver_command(" /usr/lib/gcc/x86_64-linux-gnu/12/collect2 -plugin x.so \"-plugin-opt=-pass-through=-lc\" -shared\n").empty());
  CHECK(driver_command(" \"/usr/bin/clang\" \"-cc1\"\n \"/usr/bin/ld\" \"-shared\"\n").empty());
  CHECK(driver_command(" \"/usr/bin/ld\" \"/a\n/b.o\"\n").empty());
  CHECK(driver_command(head).empty());
}

// a kernel in the CPU ABI that calls libm: tg_exp_<k>: out[0] = expf(in[0]) + k (the kernels of one shared object have
// names of their own)
std::string exp_kernel(int k) {
  return "void tg_exp_" + std::to_string(k) + "(void** b, const long long* v, int c, int n) { ((float*)b[0])[0] = " +
         "__builtin_expf(((const float*)b[1])[0]) + " + std::to_string(k) + ".0f; }\n";
}
// a kernel the object loader refuses (a writable section: its static counter), so it is linked: out[0] = ++n + k
std::string counter_kernel(int k) {
  return "static int n; void tg_count(void** b, const long long* v, int c, int m) { ((int*)b[0])[0] = ++n + " + std::to_string(k) + "; }\n";
}
bool ends_with(const std::string& s, const std::string& e) { return s.size() >= e.size() && s.compare(s.size() - e.size(), e.size(), e) == 0; }

TEST_CASE("runtime: kernels compile with -c and load from their objects, those the loader refuses link (clang, gcc), all run", "[runtime][cpu]") {
  for (std::string cc : {"clang", "gcc"}) {
    if (!tinygrad::detail::on_path(cc)) { WARN(cc << " is not on PATH: skipped"); continue; }
    INFO(cc);
    EnvVar e("CC", cc);
    TmpDir base;
    tinygrad::detail::CCompiler c(base.p / "cpu");
    std::vector<std::string> srcs;
    std::vector<int> ks;
    for (int i = 0; i < 5; i++) srcs.push_back(exp_kernel(ks.emplace_back(unique_constant())));
    srcs.push_back(div_kernel(unique_constant()));
    int kc = unique_constant();
    srcs.push_back(counter_kernel(kc));
    auto files = c.compile_many(srcs);
    for (size_t i = 0; i < 5; i++) {
      CHECK(ends_with(files[i], ".o"));  // placed by the loader: no linker ran for them
      tinygrad::detail::CPUProgram p("tg_exp_" + std::to_string(ks[i]), files[i], 1);
      float out = 0, in = 1.5f;
      p.call({&out, &in}, {}, true);
      CHECK(out == Approx(std::exp(1.5f) + float(ks[i])));  // expf: libm's, through the loader's stub
    }
    tinygrad::detail::CPUProgram p("tg_div", files[5], 1);
    int out = 0, in[2] = {9, 2};
    p.call({&out, in}, {}, true);
    CHECK(out == 4 + std::stoi(srcs[5].substr(srcs[5].rfind("+ ") + 2)));
    // the writable one is in a shared object, and runs (twice: its counter counts)
    CHECK(ends_with(files[6], ".so"));
    tinygrad::detail::CPUProgram pc("tg_count", files[6], 1);
    int n = 0;
    pc.call({&n}, {}, true);
    CHECK(n == kc + 1);
    pc.call({&n}, {}, true);
    CHECK(n == kc + 2);
    // a second compile finds all of them in the cache
    CHECK(c.compile_many(srcs) == files);
    // a source that does not compile is named alone, as before
    try {
      c.compile_many({exp_kernel(unique_constant()), "void broken(void** b) { nope; }\n"});
      FAIL_CHECK("no CompileError");
    } catch (const tinygrad::CompileError& err) {
      CHECK_THAT(err.source, Contains("broken") && !Contains("tg_exp_"));
      CHECK_THAT(err.log, Contains("nope"));
    }
  }
}

TEST_CASE("runtime: the object loader places what it can, refuses the rest with a reason, and reads only the file", "[runtime][cpu]") {
  using tinygrad::detail::ElfObject;
  std::string cc = tinygrad::detail::on_path("clang") ? "clang" : "gcc";
  if (!tinygrad::detail::on_path(cc)) { WARN("no clang or gcc: skipped"); return; }
  TmpDir d;
  // an object of the CPU kernels' kind: a call into libm, constants, a local helper, a jump table
  int k = unique_constant();
  std::string src = "#include <math.h>\nstatic float f(float x, int i) { switch (i & 7) { case 0: return x; case 1: return x * 3; case 2: return -x; "
                    "case 3: return x + 7; case 4: return x * x; case 5: return x - 2; case 6: return x / 4; default: return 0.5f; } }\n"
                    "void tg_mix(void** b, const long long* v, int c, int n) { float* o = (float*)b[0]; for (int i = 0; i < 8; i++) "
                    "o[i] = f(expf((float)i * 0.125f), i) + " + std::to_string(k) + ".0f; }\n";
  std::ofstream(d.p / "k.c") << src;
  auto [st, log] = tinygrad::detail::run_process({cc, "-fPIC", "-O2", "-c", "-o", (d.p / "k.o").string(), (d.p / "k.c").string()});
  REQUIRE(st == 0);
  std::string obj = file_text(d.p / "k.o"), why;
  auto want = [&](int i) {
    float x = std::exp(float(i) * 0.125f);
    float r[8] = {x, x * 3, -x, x + 7, x * x, x - 2, x / 4, 0.5f};
    return r[i] + float(k);
  };
#if defined(__x86_64__)
  {
    auto o = ElfObject::load(obj, why);
    REQUIRE(o);
    CHECK(why.empty());
    CHECK(o->find("f") == nullptr);  // local
    CHECK(o->find("tg_nothing") == nullptr);
    auto fn = reinterpret_cast<void (*)(void**, const long long*, int, int)>(o->find("tg_mix"));
    REQUIRE(fn);
    float out[8] = {};
    void* bufs[1] = {out};
    fn(bufs, nullptr, 0, 1);
    for (int i = 0; i < 8; i++) CHECK(out[i] == Approx(want(i)));
  }
#endif
  // refused with a reason: not ELF, another machine, a truncated file
  CHECK_FALSE(ElfObject::load("", why));
  CHECK_THAT(why, Contains("not an ELF"));
  CHECK_FALSE(ElfObject::load("void f() {}", why));
  std::string arm = obj;
  arm[18] = char(183), arm[19] = 0;  // e_machine: EM_AARCH64
  CHECK_FALSE(ElfObject::load(arm, why));
  CHECK_THAT(why, Contains("x86-64"));
  // every prefix of the file and bytes changed all over it: refused or placed, never a read outside it (the
  // sanitizer build checks) and never a crash. NOTE: nothing placed from a changed file is run
  for (size_t n = 0; n < obj.size(); n += n < 128 ? 1 : 7) ElfObject::load(obj.substr(0, n), why);
  std::mt19937 g(12345);
  for (int t = 0; t < 3000; t++) {
    std::string bad = obj;
    for (int j = 0; j < 4; j++) bad[g() % bad.size()] = char(g());
    ElfObject::load(bad, why);
  }
  // every section's offset pointing past the end
  uint64_t shoff = 0;
  uint16_t shnum = 0;
  std::memcpy(&shoff, obj.data() + 40, 8);
  std::memcpy(&shnum, obj.data() + 60, 2);
  std::string past = obj;
  for (size_t i = 1; i < shnum; i++) {
    uint64_t huge = ~uint64_t(0) - 16;
    std::memcpy(past.data() + shoff + i * 64 + 24, &huge, 8);  // sh_offset
  }
  CHECK_FALSE(ElfObject::load(past, why));
  CHECK_THAT(why, Contains("out of the file") || Contains("malformed"));
}

// the object file of a kernel, as `cc -fPIC -O2 -c` writes it ("" without a compiler)
std::string kernel_object(const fs::path& dir, const std::string& src) {
  std::string cc = tinygrad::detail::on_path("clang") ? "clang" : "gcc";
  if (!tinygrad::detail::on_path(cc)) return "";
  std::ofstream(dir / "k.c") << src;
  auto [st, log] = tinygrad::detail::run_process({cc, "-fPIC", "-O2", "-c", "-o", (dir / "k.o").string(), (dir / "k.c").string()});
  return st == 0 ? file_text(dir / "k.o") : "";
}
// the section headers of an ELF64 object, and where each is in the file
std::vector<std::pair<size_t, Elf64_Shdr>> section_headers(const std::string& obj) {
  Elf64_Ehdr eh;
  std::memcpy(&eh, obj.data(), sizeof eh);
  std::vector<std::pair<size_t, Elf64_Shdr>> r;
  for (size_t i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    std::memcpy(&sh, obj.data() + eh.e_shoff + i * sizeof sh, sizeof sh);
    r.push_back({eh.e_shoff + i * sizeof sh, sh});
  }
  return r;
}

TEST_CASE("runtime: the object loader bounds every symbol and section to the object (issue 36 reproducers)", "[runtime][cpu]") {
  using tinygrad::detail::ElfObject;
  TmpDir d;
  std::string obj = kernel_object(d.p, "#include <math.h>\nvoid tg_k(void** b, const long long* v, int c, int n) { "
                                       "((float*)b[0])[0] = expf(((const float*)b[1])[0]) * 0.5f; }\n"), why;
  if (obj.empty()) { WARN("no C compiler: skipped"); return; }
  auto shs = section_headers(obj);
  REQUIRE(ElfObject::load(obj, why));
  // a function symbol 1 MiB past its section: placed, calling it ran whatever lay there (a SIGSEGV). Refused
  size_t symtab = 0;
  for (size_t i = 0; i < shs.size(); i++) if (shs[i].second.sh_type == SHT_SYMTAB) symtab = i;
  REQUIRE(symtab);
  const auto& st = shs[symtab].second;
  std::string past = obj;
  bool found = false;
  for (size_t k = 0; k < st.sh_size / sizeof(Elf64_Sym); k++) {
    Elf64_Sym sym;
    size_t at = st.sh_offset + k * sizeof sym;
    std::memcpy(&sym, past.data() + at, sizeof sym);
    if (std::strcmp(obj.data() + shs[st.sh_link].second.sh_offset + sym.st_name, "tg_k") != 0) continue;
    sym.st_value += 1 << 20;
    std::memcpy(past.data() + at, &sym, sizeof sym);
    found = true;
  }
  REQUIRE(found);
  CHECK_FALSE(ElfObject::load(past, why));
  CHECK_THAT(why, Contains("'tg_k'") && Contains("out of its section"));
  // a section whose offset plus size overflows (the code, the symbol table, a relocation section): refused
  for (auto type : {SHT_PROGBITS, SHT_SYMTAB, SHT_RELA}) {
    std::string bad = obj;
    for (auto& [at, sh] : shs) {
      if (sh.sh_type != uint32_t(type) || !(type != SHT_PROGBITS || (sh.sh_flags & SHF_EXECINSTR))) continue;
      uint64_t off = ~uint64_t(0) - 8;
      std::memcpy(bad.data() + at + offsetof(Elf64_Shdr, sh_offset), &off, 8);
    }
    CHECK_FALSE(ElfObject::load(bad, why));
    CHECK_THAT(why, Contains("out of the file") || Contains("malformed"));
  }
  // a relocation's addend pointing far outside the object: refused
  std::string far = obj;
  bool rela = false;
  for (auto& [at, sh] : shs) {
    if (sh.sh_type != SHT_RELA || !(shs[sh.sh_info].second.sh_flags & SHF_ALLOC)) continue;
    for (size_t k = 0; k < sh.sh_size / sizeof(Elf64_Rela); k++) {
      Elf64_Rela r;
      std::memcpy(&r, far.data() + sh.sh_offset + k * sizeof r, sizeof r);
      r.r_addend += int64_t(1) << 40;
      std::memcpy(far.data() + sh.sh_offset + k * sizeof r, &r, sizeof r);
      rela = true;
    }
  }
  if (rela) {
    CHECK_FALSE(ElfObject::load(far, why));
    CHECK_THAT(why, Contains("outside the object") || Contains("out of range"));
  }
  // placed: every global symbol lies in the mapping
  auto o = ElfObject::load(obj, why);
  REQUIRE(o);
  for (auto& [name, p] : o->symbols()) CHECK(o->contains(p));
}

TEST_CASE("runtime: run_process reaps its child, gives it no descriptor of ours, and survives signals", "[runtime][cpu]") {
  using tinygrad::detail::run_process;
  auto [st, out] = run_process({"echo", "a b", "$HOME", ";", "`x`"});
  CHECK(st == 0);
  CHECK(out == "a b $HOME ; `x`\n");
  // stderr is captured too; a failing program's status comes back
  auto [st2, out2] = run_process({"ls", "/nonexistent_tg_dir"});
  CHECK(WIFEXITED(st2));
  CHECK(WEXITSTATUS(st2) != 0);
  CHECK_THAT(out2, Contains("nonexistent_tg_dir"));
  // a missing program is a DeviceError naming it
  auto m = [] {
    try { run_process({"tg_no_such_program_xyz"}); } catch (const tinygrad::DeviceError& e) { return std::string(e.what()); }
    return std::string();
  }();
  CHECK_THAT(m, Contains("tg_no_such_program_xyz"));
  // a descriptor the application opened without O_CLOEXEC is not inherited
  int fd = ::open("/dev/null", O_RDONLY);
  REQUIRE(fd > 2);
  auto [st3, fds] = run_process({"ls", "/proc/self/fd"});
  ::close(fd);
  CHECK(st3 == 0);
  CHECK(fds == "0\n1\n2\n3\n");  // 3: ls's own handle on the folder
  // no zombie is left behind
  int wst = 0;
  CHECK(::waitpid(-1, &wst, WNOHANG) == -1);
  CHECK(errno == ECHILD);
  // concurrent runs each get their own output
  std::vector<std::string> outs(8);
  std::vector<std::thread> ts;
  for (int i = 0; i < 8; i++) ts.emplace_back([&, i] { outs[size_t(i)] = run_process({"echo", std::to_string(i)}).second; });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 8; i++) CHECK(outs[size_t(i)] == std::to_string(i) + "\n");
  // reads and the wait are retried when a signal interrupts them (a handler installed without SA_RESTART)
  struct sigaction sa {}, old {};
  sa.sa_handler = [](int) {};
  ::sigaction(SIGUSR1, &sa, &old);
  pthread_t self = ::pthread_self();
  std::atomic<bool> done{false};
  std::thread pest([&] { while (!done) { ::pthread_kill(self, SIGUSR1); std::this_thread::sleep_for(std::chrono::milliseconds(5)); } });
  auto [st4, out4] = run_process({"sh", "-c", "sleep 0.2; echo late"});  // NOTE: sh is the program under test here
  done = true;
  pest.join();
  ::sigaction(SIGUSR1, &old, nullptr);
  CHECK(st4 == 0);
  CHECK(out4 == "late\n");
}

TEST_CASE("runtime: cache paths with spaces, quotes, $, semicolons, backticks and newlines compile and run nothing else", "[runtime][cpu]") {
  TmpDir base;
  fs::path marker = base.p / "pwned";
  std::string m = marker.string();
  std::vector<std::string> names = {
      "with space", "o'brien", "dq\"uote", "dollar $HOME $(touch " + m + ")", "semi; touch " + m,
      "x'; touch " + m + "; echo '", "back`touch " + m + "`tick", "new\nline", "-starts-with-dash", "tab\tand\\backslash",
  };
  for (auto& n : names) {
    INFO(n);
    fs::path dir = base.p / n / "cpu";
    tinygrad::detail::CCompiler c(dir);
    int k = unique_constant();
    CHECK(run_div(c, k, 7, 2) == 3 + k);
    CHECK(fs::exists(dir));
    CHECK_FALSE(fs::exists(marker));
    // the second compiler finds the entry on disk: no recompile
    tinygrad::detail::CCompiler c2(dir);
    std::string so = c2.compile(div_kernel(k));
    CHECK(fs::path(so).parent_path() == dir);
  }
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("runtime: CC may carry arguments, a missing one is named", "[runtime][cpu]") {
  TmpDir base;
  tinygrad::detail::CCompiler c(base.p / "cpu");
  std::string cc = tinygrad::detail::on_path("gcc") ? "gcc" : tinygrad::detail::on_path("clang") ? "clang" : "cc";
  std::string plain_key;
  {
    EnvVar e("CC", cc);
    plain_key = c.cache_key();
  }
  std::vector<std::string> ccs = {cc + " -O1", "'" + tinygrad::detail::which(cc) + "' -DUNUSED=\"a b\"", "env " + cc};
  if (tinygrad::detail::on_path("ccache")) ccs.push_back("ccache " + cc);
  for (auto& v : ccs) {
    INFO("CC=" << v);
    EnvVar ccache_dir("CCACHE_DIR", (base.p / "ccache").string());
    EnvVar e("CC", v);
    int k = unique_constant();
    CHECK(run_div(c, k, 9, 3) == 3 + k);
    CHECK(c.cache_key() != plain_key);  // the arguments are part of the cache key
  }
  {
    EnvVar e("CC", "tg_missing_cc_xyz -O2");
    try {
      c.compile(div_kernel(unique_constant()));
      FAIL_CHECK("no DeviceError");
    } catch (const tinygrad::DeviceError& err) {
      CHECK_THAT(std::string(err.what()), Contains("'tg_missing_cc_xyz' is not on PATH") && Contains("tg_missing_cc_xyz -O2"));
    }
  }
  {
    EnvVar e("CC", cc + " -O2 'oops");
    CHECK_THROWS_WITH(c.compile(div_kernel(unique_constant())), Contains("unterminated"));
  }
  // a compiler that rejects an argument is a CompileError with its log
  {
    EnvVar e("CC", cc + " --tg-no-such-option");
    try {
      c.compile(div_kernel(unique_constant()));
      FAIL_CHECK("no CompileError");
    } catch (const tinygrad::CompileError& err) {
      CHECK_THAT(err.log, Contains("tg-no-such-option"));
      CHECK_THAT(std::string(err.what()), Contains(cc + " --tg-no-such-option") && Contains("exit status"));
    }
  }
  int k = unique_constant();
  CHECK(run_div(c, k, 8, 4) == 2 + k);  // CC restored: works again
}

// ============================================================================================
// item 9: the cache folder
// ============================================================================================

TEST_CASE("runtime: an unusable or unsafe cache folder is named with the reason", "[runtime][cpu]") {
  using tinygrad::detail::cache_dir_problem;
  TmpDir base;
  // a new folder is created private
  fs::path fresh = base.p / "a" / "b";
  CHECK(cache_dir_problem(fresh) == "");
  struct stat st {};
  REQUIRE(::stat(fresh.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // a file, and a path under a file
  fs::path file = base.p / "file";
  std::ofstream(file) << "x";
  CHECK(cache_dir_problem(file) == "it is not a directory");
  CHECK_THAT(cache_dir_problem(file / "sub"), Contains("cannot create it") && Contains("Not a directory"));
  // a folder other users can write to
  fs::path shared = base.p / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all);
  CHECK(cache_dir_problem(shared) == "other users can write to it (mode 0777)");
  fs::permissions(shared, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_write);
  CHECK(cache_dir_problem(shared) == "other users can write to it (mode 0760)");
  // a read-only folder (root writes anyway: the real write decides)
  fs::path ro = base.p / "ro";
  fs::create_directories(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  if (is_root()) CHECK(cache_dir_problem(ro) == "");
  else CHECK_THAT(cache_dir_problem(ro), Contains("cannot write to it"));
  // a folder of another user (only root can make one)
  if (is_root()) {
    fs::path other = base.p / "other";
    fs::create_directories(other);
    fs::permissions(other, fs::perms::owner_all);
    REQUIRE(::chown(other.c_str(), 12345, 12345) == 0);
    CHECK_THAT(cache_dir_problem(other), Contains("owned by uid 12345"));
  } else {
    WARN("not root: a folder owned by another user cannot be made here; that case is skipped");
  }
}

TEST_CASE("runtime: the cache folder from the environment", "[runtime][cpu]") {
  using tinygrad::detail::configured_cache_dir;
  {
    EnvVar a("CACHEDIR", std::nullopt), b("XDG_CACHE_HOME", std::nullopt), h("HOME", "/nonexistent");
    auto [d, why] = configured_cache_dir();
    CHECK(d == fs::path("/nonexistent/.cache/tinygrad.hpp"));
    CHECK(why == "HOME (/nonexistent) is not a directory");
    CHECK_FALSE(fs::exists("/nonexistent"));
  }
  {
    EnvVar a("CACHEDIR", std::nullopt), b("XDG_CACHE_HOME", "/tmp/o'brien");
    auto [d, why] = configured_cache_dir();
    CHECK(d == fs::path("/tmp/o'brien/tinygrad.hpp"));
    CHECK(why == "");
  }
  {
    EnvVar a("CACHEDIR", "-rel dir");  // relative: made absolute, so it never reads as an option
    auto [d, why] = configured_cache_dir();
    CHECK(d.is_absolute());
    CHECK(d.filename() == "-rel dir");
  }
}

TEST_CASE("runtime: an unsafe cache folder falls back to a private one, with one warning", "[runtime][cpu]") {
  TmpDir base;
  fs::path shared = base.p / "shared";
  fs::create_directories(shared);
  fs::permissions(shared, fs::perms::all);
  // stderr into a file while the compiler is made
  fs::path errf = base.p / "stderr";
  std::fflush(stderr);
  int saved = ::dup(2), f = ::open(errf.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ::dup2(f, 2);
  ::close(f);
  tinygrad::detail::CCompiler c(shared);
  tinygrad::detail::CCompiler c2(shared);
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string err = file_text(errf);
  CHECK_THAT(err, Contains(shared.string()) && Contains("other users can write to it (mode 0777)"));
  CHECK(err.find("warning") == err.rfind("warning"));  // once
  // compiled code goes to the private folder, never into the shared one, and runs
  int k = unique_constant();
  CHECK(run_div(c, k, 5, 5) == 1 + k);
  fs::path priv = tinygrad::detail::private_cache_dir();
  CHECK(fs::path(c.compile(div_kernel(k))).parent_path() == priv);
  CHECK(fs::is_empty(shared));
  struct stat st {};
  REQUIRE(::stat(priv.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(st.st_uid == ::geteuid());
  // an entry planted in the shared folder (a .ref naming a .so) is never loaded: the fallback compiled its own
  CHECK(fs::path(c2.compile(div_kernel(unique_constant()))).parent_path() == priv);
}

TEST_CASE("runtime: scratch files and folders left by killed processes are removed", "[runtime][cpu]") {
  TmpDir base;
  fs::path dir = base.p / "cpu", tmp = dir / "tmp";
  fs::create_directories(tmp);
  long dead = 999999999;  // above any pid_max: no such process
  REQUIRE(::kill(pid_t(dead), 0) != 0);
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  auto mk = [&](const std::string& n, bool aged) {
    fs::create_directories(tmp / n);
    std::ofstream(tmp / n / "x.c") << "int x;";
    if (aged) fs::last_write_time(tmp / n, old);
    return tmp / n;
  };
  auto stale = mk(std::to_string(dead) + "_0_abc", true);
  auto young = mk(std::to_string(dead) + "_1_abc", false);           // may be a live process of another pid namespace
  auto live = mk(std::to_string(::getppid()) + "_0_abc", true);      // its process is alive
  auto other = mk("notapid", true);
  auto file = tmp / (std::to_string(dead) + "_7");  // a half-written file (write_file_atomic)
  std::ofstream(file) << "x";
  fs::last_write_time(file, old);
  tinygrad::detail::CCompiler c(dir);
  CHECK_FALSE(fs::exists(file));
  CHECK_FALSE(fs::exists(stale));
  CHECK(fs::exists(young));
  CHECK(fs::exists(live));
  CHECK(fs::exists(other));
  // and a compile cleans up after itself
  int k = unique_constant();
  CHECK(run_div(c, k, 1, 1) == 1 + k);
  size_t n = 0;
  for (auto& e : fs::directory_iterator(tmp)) n += e.path().filename().string().rfind(std::to_string(::getpid()) + "_", 0) == 0;
  CHECK(n == 0);
}

// a child of the tests below: realizes one kernel on the CPU device with whatever cache folder the environment gives
TEST_CASE("runtime child: realize on CPU", "[.runtime_child]") {
  int k = unique_constant();
  tinygrad::Tensor t(std::vector<int>{1, 2, 3}, {3}, "CPU");
  REQUIRE((t * k).to_vector<int>() == std::vector<int>{k, 2 * k, 3 * k});
  std::printf("private folder: %s\n", tinygrad::detail::cache_dir().c_str());
}

TEST_CASE("runtime: the CPU device works in a process whose cache folder is unusable", "[runtime][cpu]") {
  TmpDir base;
  fs::path file = base.p / "file";
  std::ofstream(file) << "x";
  // a private folder left by a killed process, to be removed by the child
  long dead = 999999999;
  fs::path stale = fs::temp_directory_path() / ("tinygrad.hpp-" + std::to_string(dead) + "-XXXXXX");
  fs::create_directories(stale);
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(1));
  // (an empty CACHEDIR reads as none; the child's main sets the build tree's where CACHEDIR is not set at all)
  struct Case { std::vector<std::string> env; std::string dir, why; };
  for (auto& c : {Case{{"CACHEDIR=" + file.string()}, file.string(), "it is not a directory"},
                  Case{{"CACHEDIR=" + (file / "sub").string()}, (file / "sub").string(), "Not a directory"},
                  Case{{"-u", "XDG_CACHE_HOME", "CACHEDIR=", "HOME=/nonexistent"}, "/nonexistent/.cache/tinygrad.hpp",
                       "HOME (/nonexistent) is not a directory"}}) {
    INFO(c.dir);
    std::vector<std::string> argv = {"env"};
    argv.insert(argv.end(), c.env.begin(), c.env.end());
    argv.insert(argv.end(), {self_exe(), "runtime child: realize on CPU"});
    auto [st, out] = tinygrad::detail::run_process(argv);
    INFO(out);
    CHECK(st == 0);
    CHECK_THAT(out, Contains("not caching compiled kernels in " + c.dir) && Contains(c.why));
    // the private folder is gone after the child exits
    auto p = out.find("private folder: ");
    REQUIRE(p != std::string::npos);
    std::string priv = out.substr(p + 16, out.find('\n', p) - p - 16);
    CHECK(priv.find("tinygrad.hpp-") != std::string::npos);
    CHECK_FALSE(fs::exists(priv));
  }
  CHECK_FALSE(fs::exists(stale));
  CHECK_FALSE(fs::exists("/nonexistent"));
}

// ============================================================================================
// CPU_SANITIZE: kernels built with UBSan
// ============================================================================================

// a child: one UB kernel (an int division by zero) built with -fsanitize=undefined
TEST_CASE("runtime child: a UB kernel under CPU_SANITIZE", "[.runtime_ub_child]") {
  const char* dir = std::getenv("TG_CHILD_DIR");
  if (!dir) { WARN("a child of the CPU_SANITIZE test: needs TG_CHILD_DIR"); return; }
  tinygrad::detail::CCompiler c{fs::path(dir), "undefined"};
  int k = unique_constant();
  REQUIRE(run_div(c, k, 6, 3) == 2 + k);  // loads into this unsanitized process and runs
  std::printf("loaded\n");
  std::fflush(stdout);
  volatile int zero = 0;
  std::printf("result %d\n", run_div(c, k, 6, zero));
}

TEST_CASE("runtime: CPU_SANITIZE=undefined builds kernels that stop at undefined behaviour", "[runtime][cpu]") {
  TmpDir base;
  CHECK_THROWS_AS(tinygrad::detail::CCompiler(base.p, "undefined; rm -rf"), tinygrad::DeviceError);
  for (std::string cc : {"gcc", "clang"}) {
    if (!tinygrad::detail::on_path(cc)) { WARN(cc << " is not on PATH: skipped"); continue; }
    INFO(cc);
    EnvVar e("CC", cc);
    tinygrad::detail::CCompiler plain(base.p / "cpu"), san(base.p / "cpu", "undefined");
    CHECK(plain.cache_key() != san.cache_key());  // the flags are part of the cache key
    EnvVar d("TG_CHILD_DIR", (base.p / "cpu").string());
    auto [st, out] = tinygrad::detail::run_process({self_exe(), "runtime child: a UB kernel under CPU_SANITIZE"});
    INFO(out);
    CHECK(st != 0);
    CHECK_THAT(out, Contains("loaded") && Contains("runtime error: division by zero"));
    CHECK_THAT(out, !Contains("result"));
    // the report names a kept source file and line
    auto at = out.find(".c:");
    REQUIRE(at != std::string::npos);
    auto from = out.rfind('\n', at) + 1;
    fs::path src = out.substr(from, at + 2 - from);
    CHECK(src.parent_path() == base.p / "cpu" / "src");
    CHECK_THAT(file_text(src), Contains("a[0] / a[1]"));
  }
}

// ============================================================================================
// issue 36: caches that believe their input, and resources without a bound
// ============================================================================================

namespace {
// a CCompiler's cache entry for `src`: its .ref and the object it names
struct Entry {
  fs::path ref, obj;
  Entry(tinygrad::detail::CCompiler& c, const fs::path& dir, const std::string& src, const std::string& path) {
    ref = dir / (tinygrad::detail::hex64(tinygrad::detail::hash_bytes(c.cache_key() + src)) + ".ref");
    obj = path;
  }
};
// bytes of the cache entries in a folder
uint64_t entry_bytes(const fs::path& dir) {
  uint64_t n = 0;
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && tinygrad::detail::cache_entry_name(e.path().filename().string())) n += e.file_size();
  return n;
}
// every file of a folder last used `s` seconds earlier
void age(const fs::path& dir, int s) {
  for (auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) fs::last_write_time(e.path(), fs::last_write_time(e.path()) - std::chrono::seconds(s));
}
}  // namespace

TEST_CASE("runtime: a cache file is read only when it is a regular file of a sane size, never waiting", "[runtime][cpu]") {
  using tinygrad::detail::read_file;
  TmpDir d;
  std::string why;
  std::ofstream(d.p / "f") << "abc";
  CHECK(tinygrad::detail::read_file(d.p / "f", &why) == "abc");
  CHECK(why.empty());
  CHECK(tinygrad::detail::read_file(d.p / "missing", &why).empty());
  CHECK(why.empty());  // missing is a miss, not a problem
  fs::create_symlink("/dev/zero", d.p / "zero");
  CHECK(tinygrad::detail::read_file(d.p / "zero", &why).empty());
  CHECK_THAT(why, Contains("zero"));
  fs::create_directory(d.p / "dir");
  CHECK(tinygrad::detail::read_file(d.p / "dir", &why).empty());
  CHECK_THAT(why, Contains("not a regular file"));
  REQUIRE(::mkfifo((d.p / "fifo").c_str(), 0600) == 0);
  CHECK(tinygrad::detail::read_file(d.p / "fifo", &why).empty());  // O_NONBLOCK: no writer, no wait
  CHECK_THAT(why, Contains("not a regular file"));
  { std::ofstream(d.p / "huge"); }
  fs::resize_file(d.p / "huge", uint64_t(1) << 40);  // sparse: a terabyte the size check refuses unread
  CHECK(tinygrad::detail::read_file(d.p / "huge", &why).empty());
  CHECK_THAT(why, Contains("more than"));
}

TEST_CASE("runtime: a corrupt CPU cache entry (link, directory, FIFO, outside .ref, truncated, refused object) is compiled again", "[runtime][cpu]") {
  TmpDir base;
  fs::path dir = base.p / "cpu";
  tinygrad::detail::CCompiler c(dir);
  int k = unique_constant();
  std::string src = div_kernel(k);
  std::string first = c.compile(src);
  REQUIRE(ends_with(first, ".o"));
  Entry e(c, dir, src, first);
  REQUIRE(fs::is_regular_file(e.ref));
  std::string good_obj = file_text(e.obj), good_ref = file_text(e.ref);
  auto restore = [&] {
    for (auto& p : {e.ref, e.obj}) { std::error_code ec; fs::remove_all(p, ec); }
    std::ofstream(e.obj, std::ios::binary) << good_obj;
    std::ofstream(e.ref, std::ios::binary) << good_ref;
  };
  // compiles (within 60 s: a FIFO must not block it; if it does, a writer is opened to free the thread) and runs
  auto compiles_and_runs = [&] {
    auto f = std::async(std::launch::async, [&] { return c.compile(src); });
    if (f.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
      FAIL_CHECK("the cache lookup hangs");
      for (auto& p : {e.ref, e.obj}) { int fd = ::open(p.c_str(), O_WRONLY | O_NONBLOCK); if (fd >= 0) ::close(fd); }
    }
    std::string path = f.get();
    CHECK(fs::path(path).parent_path() == dir);
    CHECK(run_div(c, k, 9, 2) == 4 + k);
    CHECK(c.compile(src) == path);  // and the next run finds it
  };
  for (const fs::path* which : {&e.ref, &e.obj}) {
    for (std::string kind : {"a link to /dev/zero", "a directory", "a FIFO", "truncated"}) {
      INFO((which == &e.ref ? "the .ref: " : "the object: ") << kind);
      if (kind != "truncated") fs::remove(*which);
      if (kind == "a link to /dev/zero") fs::create_symlink("/dev/zero", *which);
      if (kind == "a directory") fs::create_directories(*which / "sub");
      if (kind == "a FIFO") REQUIRE(::mkfifo(which->c_str(), 0600) == 0);
      if (kind == "truncated") fs::resize_file(*which, 3);
      compiles_and_runs();
      restore();
    }
  }
  // a .ref naming a file outside the folder is never followed
  for (std::string name : {std::string("../outside.o"), (base.p / "outside.o").string(), std::string("o_0123456789abcdef.o/../../outside.o")}) {
    INFO(name);
    std::ofstream(base.p / "outside.o", std::ios::binary) << good_obj;
    std::ofstream(e.ref, std::ios::trunc) << name << "\n" << tinygrad::detail::hex64(tinygrad::detail::hash_bytes(good_obj)) << "\n";
    compiles_and_runs();
    CHECK(file_text(e.ref).rfind(name, 0) != 0);
  }
  // an object the loader refuses, with its hash in the .ref (written by an older loader, say): the symbol lies 1 MiB
  // past its section
  std::string bad = good_obj;
  auto shs = section_headers(bad);
  for (auto& [at, sh] : shs) {
    if (sh.sh_type != SHT_SYMTAB) continue;
    for (size_t i = 0; i < sh.sh_size / sizeof(Elf64_Sym); i++) {
      Elf64_Sym sym;
      std::memcpy(&sym, bad.data() + sh.sh_offset + i * sizeof sym, sizeof sym);
      if (std::strcmp(bad.data() + shs[sh.sh_link].second.sh_offset + sym.st_name, "tg_div") == 0) sym.st_value += 1 << 20;
      std::memcpy(bad.data() + sh.sh_offset + i * sizeof sym, &sym, sizeof sym);
    }
  }
  std::ofstream(e.obj, std::ios::binary | std::ios::trunc) << bad;
  std::ofstream(e.ref, std::ios::trunc) << e.obj.filename().string() << "\n" << tinygrad::detail::hex64(tinygrad::detail::hash_bytes(bad)) << "\n";
  compiles_and_runs();
  CHECK(file_text(e.obj) != bad);
}

TEST_CASE("runtime: an OpenCL cache entry that is a link, a directory or a FIFO is compiled again", "[runtime][cl]") {
  try { tinygrad::runtime("CL"); } catch (const tinygrad::Error& err) { WARN("no OpenCL: skipped (" << err.what() << ")"); return; }
  auto& comp = *tinygrad::runtime("CL").compiler;
  std::string name = "tg_cl_" + std::to_string(unique_constant()), src = "__kernel void " + name + "(__global float* a) { a[0] = 1.0f; }\n";
  std::string bin = comp.compile(src);
  REQUIRE_FALSE(bin.empty());
  fs::path entry =
      tinygrad::detail::cache_dir() / "cl" / (tinygrad::detail::hex64(tinygrad::detail::hash_bytes(comp.cache_key() + "\n" + src)) + ".bin");
  REQUIRE(fs::is_regular_file(entry));
  for (int kind = 0; kind < 3; kind++) {
    INFO(kind);
    fs::remove_all(entry);
    if (kind == 0) fs::create_symlink("/dev/zero", entry);
    if (kind == 1) fs::create_directories(entry / "sub");
    if (kind == 2) REQUIRE(::mkfifo(entry.c_str(), 0600) == 0);
    std::string again = comp.compile(src);
    CHECK_FALSE(again.empty());
    CHECK(fs::is_regular_file(fs::symlink_status(entry)));
    CHECK(tinygrad::runtime("CL").load(name, again, tinygrad::LaunchDims{}));
  }
  // a batch reference to a file outside the folder is not followed
  std::string outside = (fs::temp_directory_path() / ("tg_cl_outside_" + std::to_string(::getpid()))).string();
  std::ofstream(outside, std::ios::binary) << bin;
  std::ofstream(entry, std::ios::trunc) << "tinygrad OpenCL batch\nk0\n"
                                        << outside << "\n"
                                        << tinygrad::detail::hex64(tinygrad::detail::hash_bytes(bin)) << "\n";
  CHECK(comp.compile(src).rfind("tinygrad OpenCL batch", 0) != 0);
  fs::remove(outside);
}

namespace {
// host memory that counts what it hands out and takes back; fails past `cap` bytes outstanding
struct CountingAllocator : tinygrad::detail::CPUAllocator {
  size_t raw_allocs = 0, raw_frees = 0, outstanding = 0, cap = ~size_t(0);
  void* alloc_raw(size_t bytes) override {
    if (outstanding + bytes > cap) return nullptr;
    raw_allocs++, outstanding += bytes;
    return tinygrad::detail::CPUAllocator::alloc_raw(bytes);
  }
  void free_raw(void* p, size_t bytes) override { raw_frees++, outstanding -= bytes; tinygrad::detail::CPUAllocator::free_raw(p, bytes); }
};
}  // namespace

TEST_CASE("runtime: the allocator's free list is bounded by bytes, evicting the least recently freed", "[runtime][cpu]") {
  {
    EnvVar v("LRU_BYTES", "12345");
    CHECK(CountingAllocator().lru_limit() == 12345);
  }
  CountingAllocator a;
  a.set_lru_limit(1 << 20);
  // many distinct sizes made and dropped: at most the limit stays cached, the rest goes back
  for (size_t i = 1; i <= 400; i++) {
    void* p = a.alloc(i * 4096);
    std::memset(p, 1, i * 4096);
    a.free(p, i * 4096);
    CHECK(a.cached_bytes() <= size_t(1 << 20));
  }
  CHECK(a.live_allocations() == 0);
  CHECK(a.outstanding == a.cached_bytes());
  CHECK(a.raw_frees > 300);
  // a hit reuses the buffer without the system; the least recently freed goes first
  a.free_cache();
  CHECK(a.cached_bytes() == 0);
  CHECK(a.outstanding == 0);
  void* x = a.alloc(300000);
  void* y = a.alloc(400000);
  void* z = a.alloc(500000);
  CHECK(a.live_allocations() == 3);
  a.free(x, 300000), a.free(y, 400000);
  size_t raw = a.raw_allocs;
  void* y2 = a.alloc(400000);
  CHECK(y2 == y);
  CHECK(a.raw_allocs == raw);
  a.free(y2, 400000);  // now x is the least recently freed
  a.free(z, 500000);   // 1.2 MB cached > 1 MiB: x goes
  CHECK(a.cached_bytes() == 900000);
  CHECK(a.alloc(400000) == y);
  CHECK(a.alloc(500000) == z);
  CHECK(a.cached_bytes() == 0);
  CHECK(a.live_allocations() == 2);
  a.free(z, 500000), a.free(y, 400000);
  // lowering the limit evicts (z, the least recently freed); a buffer larger than the limit is never cached
  a.set_lru_limit(450000);
  CHECK(a.cached_bytes() == 400000);
  void* big = a.alloc(600000);
  a.free(big, 600000);
  CHECK(a.cached_bytes() == 400000);
  // out of memory: the cache is dropped and the alloc retried
  a.set_lru_limit(1 << 20);
  a.cap = a.outstanding + 100000;
  void* r = a.alloc(450000);
  CHECK(r);
  CHECK(a.cached_bytes() == 0);
  CHECK_THROWS_AS(a.alloc(size_t(1) << 40), tinygrad::DeviceError);
  a.free(r, 450000);
  a.free_cache();
  CHECK(a.outstanding == 0);
  CHECK(a.live_allocations() == 0);
}

TEST_CASE("runtime: the disk cache stays under CACHE_SIZE, evicting the least recently used, and everything still runs", "[runtime][cpu]") {
  TmpDir base;
  fs::path dir = base.p / "cpu";
  EnvVar limit("CACHE_SIZE", "20000");
  tinygrad::detail::CCompiler c(dir);
  std::ofstream(base.p / "keep") << "x";
  fs::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "not an entry: never evicted";
  std::vector<int> ks;
  for (int i = 0; i < 40; i++) {
    int k = ks.emplace_back(unique_constant());
    CHECK(run_div(c, k, 9, 2) == 4 + k);
    CHECK(entry_bytes(dir) <= 20000 + 20000 / 16 + 4096);  // scanned every 1/16 of the limit written: one entry past it
    if (i == 24) {  // the oldest are gone, the one used again is not
      auto ref = [&](int kk) { return dir / (tinygrad::detail::hex64(tinygrad::detail::hash_bytes(c.cache_key() + div_kernel(kk))) + ".ref"); };
      CHECK(fs::exists(ref(ks[0])));
      CHECK_FALSE(fs::exists(ref(ks[1])));
    }
    if (i == 20) {
      // the first kernel is used again: it is the most recently used of the old ones, and is kept
      age(dir, 3600);
      std::string path = c.compile(div_kernel(ks[0]));
      CHECK(run_div(c, ks[0], 9, 2) == 4 + ks[0]);
      CHECK(fs::last_write_time(path) > fs::file_time_type::clock::now() - std::chrono::seconds(60));
    } else {
      age(dir, 120);  // NOTE: an entry used within the last minute is never evicted (its process may be loading it)
    }
  }
  CHECK(fs::exists(dir / "notes.txt"));
  CHECK(fs::exists(base.p / "keep"));
  int64_t files = 0;
  for (auto& e : fs::directory_iterator(dir)) files += e.is_regular_file();
  CHECK(files < 40);
  // the evicted ones compile again and run
  for (int k : ks) CHECK(run_div(c, k, 9, 2) == 4 + k);
}
