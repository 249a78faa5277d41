#pragma once
// A kernel's relocatable object (ELF64, x86-64, what `cc -c -fPIC` writes) placed in memory and relocated without a
// linker: the CPU device loads its kernels so (runtime/cpu.hpp), which saves running the linker (35 ms a kernel with
// ld.bfd) and a dlopen. What this loader does not handle (another machine or format, a writable, TLS or common
// section, a relocation type it does not know, a symbol the process cannot resolve, memory that cannot be made
// executable) it refuses with the reason, and the caller links a shared object instead.
#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>
#include "../helpers.hpp"

namespace tinygrad::detail {

class ElfObject {
 public:
  ElfObject(const ElfObject&) = delete;
  ElfObject& operator=(const ElfObject&) = delete;
  ~ElfObject() { if (base_) ::munmap(base_, size_); }

  // the object's sections in one mapping, relocated, then read-only and executable; nullptr with the reason in why
  static std::unique_ptr<ElfObject> load(std::string_view blob, std::string& why) {
    std::unique_ptr<ElfObject> obj(new ElfObject());
    why = obj->place(blob);
    if (!why.empty()) obj.reset();
    return obj;
  }
  // a global symbol the object defines, or nullptr
  void* find(const std::string& name) const {
    auto it = globals_.find(name);
    return it == globals_.end() ? nullptr : it->second;
  }
  // the global symbols it defines; each lies in the mapping
  const std::map<std::string, void*>& symbols() const { return globals_; }
  bool contains(const void* p) const {
    auto a = reinterpret_cast<uintptr_t>(p), b = reinterpret_cast<uintptr_t>(base_);
    return a >= b && a - b < size_;
  }

 private:
  ElfObject() = default;
  // a symbol the object uses but does not define: the process's (the program and what it loaded, then libm, which
  // the kernels call for expf and the like)
  static void* external(const char* name) {
    static void* libm = ::dlopen("libm.so.6", RTLD_LAZY | RTLD_LOCAL);  // NOTE: never closed: its code may be in use
    void* p = ::dlsym(RTLD_DEFAULT, name);
    return p || !libm ? p : ::dlsym(libm, name);
  }

  std::string place(std::string_view blob) {
    Elf64_Ehdr eh;
    if (blob.size() < sizeof eh) return "not an ELF file";
    std::memcpy(&eh, blob.data(), sizeof eh);
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
      return "not a 64-bit little-endian ELF file";
    if (eh.e_type != ET_REL || eh.e_machine != EM_X86_64) return "not an x86-64 relocatable object";
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > blob.size() || eh.e_shnum > (blob.size() - eh.e_shoff) / sizeof(Elf64_Shdr))
      return "its section table is out of the file";
    std::vector<Elf64_Shdr> sh(eh.e_shnum);
    if (!sh.empty()) std::memcpy(sh.data(), blob.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
    auto in_file = [&](const Elf64_Shdr& s) { return s.sh_offset <= blob.size() && s.sh_size <= blob.size() - s.sh_offset; };
    // the sections that are loaded, one after another at their alignment
    constexpr size_t none = std::numeric_limits<size_t>::max();
    std::vector<size_t> at(sh.size(), none);
    size_t size = 0;
    for (size_t i = 0; i < sh.size(); i++) {
      const auto& s = sh[i];
      if (!(s.sh_flags & SHF_ALLOC) || s.sh_size == 0) continue;
      if (s.sh_flags & (SHF_WRITE | SHF_TLS)) return "it has a writable or thread-local section";
      if (s.sh_type != SHT_NOBITS && !in_file(s)) return "a section is out of the file";
      size_t align = std::max<size_t>(1, s.sh_addralign);
      if (align > 4096 || (align & (align - 1)) || s.sh_size > (size_t(1) << 30)) return "a section's size or alignment is out of range";
      size = (size + align - 1) & ~(align - 1);
      at[i] = size;
      size += s.sh_size;
      if (size > (size_t(1) << 30)) return "its sections are larger than 1 GiB together";
    }
    // the symbol table and its names
    size_t symtab = none;
    for (size_t i = 0; i < sh.size(); i++) if (sh[i].sh_type == SHT_SYMTAB) { if (symtab != none) return "it has two symbol tables"; symtab = i; }
    if (symtab == none) return "it has no symbol table";
    const auto& st = sh[symtab];
    if (st.sh_entsize != sizeof(Elf64_Sym) || !in_file(st) || st.sh_link >= sh.size() || !in_file(sh[st.sh_link]))
      return "its symbol table is malformed";
    std::vector<Elf64_Sym> syms(st.sh_size / sizeof(Elf64_Sym));
    if (!syms.empty()) std::memcpy(syms.data(), blob.data() + st.sh_offset, syms.size() * sizeof(Elf64_Sym));
    std::string_view strtab = blob.substr(sh[st.sh_link].sh_offset, sh[st.sh_link].sh_size);
    auto name_of = [&](const Elf64_Sym& s) -> std::string {
      if (s.st_name >= strtab.size()) return {};
      auto end = strtab.find('\0', s.st_name);
      return end == std::string_view::npos ? std::string() : std::string(strtab.substr(s.st_name, end - s.st_name));
    };
    // every symbol of a loaded section lies in it (a function wholly, and in code): a pointer made from one stays in
    // the mapping, and a kernel found by name is code of this object
    for (size_t k = 0; k < syms.size(); k++) {
      const auto& s = syms[k];
      if (s.st_shndx >= sh.size() || at[s.st_shndx] == none) continue;
      const auto& in = sh[s.st_shndx];
      bool fn = ELF64_ST_TYPE(s.st_info) == STT_FUNC;
      if (s.st_value > in.sh_size || (fn && (s.st_value == in.sh_size || s.st_size > in.sh_size - s.st_value)))
        return cat("symbol ", k, " ('", name_of(s), "') at ", s.st_value, " size ", s.st_size,
                   " is out of its section (", in.sh_size, " bytes)");
      if (fn && !(in.sh_flags & SHF_EXECINSTR))
        return cat("function symbol ", k, " ('", name_of(s), "') is not in code");
    }
    // the relocations of loaded sections, and what they need: a jump stub for each external function called, a GOT slot
    // for each symbol whose address is loaded from one
    struct Rel { size_t target; Elf64_Rela r; };
    std::vector<Rel> rels;
    std::map<size_t, size_t> stub, got;  // symbol index -> slot
    for (size_t i = 0; i < sh.size(); i++) {
      const auto& s = sh[i];
      if (s.sh_type == SHT_REL && s.sh_info < sh.size() && at[s.sh_info] != none) return "it has REL relocations";
      if (s.sh_type != SHT_RELA || s.sh_info >= sh.size() || at[s.sh_info] == none) continue;
      if (s.sh_entsize != sizeof(Elf64_Rela) || !in_file(s) || s.sh_link != symtab) return "a relocation section is malformed";
      for (size_t k = 0; k < s.sh_size / sizeof(Elf64_Rela); k++) {
        Rel rel{s.sh_info, {}};
        std::memcpy(&rel.r, blob.data() + s.sh_offset + k * sizeof(Elf64_Rela), sizeof(Elf64_Rela));
        size_t sym = ELF64_R_SYM(rel.r.r_info), type = ELF64_R_TYPE(rel.r.r_info);
        if (sym >= syms.size()) return "a relocation names no symbol";
        size_t width = type == R_X86_64_64 || type == R_X86_64_PC64 ? 8 : 4;
        if (rel.r.r_offset > sh[s.sh_info].sh_size || sh[s.sh_info].sh_size - rel.r.r_offset < width)
          return "a relocation is out of its section";
        bool ext = syms[sym].st_shndx == SHN_UNDEF;
        if (type == R_X86_64_PC32 && ext) return "it refers to external data directly (not through the GOT)";
        if (type == R_X86_64_PLT32 && ext) stub.emplace(sym, stub.size());
        if (type == R_X86_64_GOTPCREL || type == R_X86_64_GOTPCRELX || type == R_X86_64_REX_GOTPCRELX) got.emplace(sym, got.size());
        rels.push_back(rel);
      }
    }
    size_t stubs_at = (size + 15) & ~size_t(15), got_at = stubs_at + 16 * stub.size();
    size_t page = size_t(::sysconf(_SC_PAGESIZE));
    size_ = (got_at + 8 * got.size() + page - 1) / page * page;
    if (size_ == 0) return "it has nothing to load";
    void* m = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { size_ = 0; return "mmap failed"; }
    base_ = static_cast<char*>(m);
    for (size_t i = 0; i < sh.size(); i++)
      if (at[i] != none && sh[i].sh_type != SHT_NOBITS) std::memcpy(base_ + at[i], blob.data() + sh[i].sh_offset, sh[i].sh_size);
    // every symbol's address (0 and an error for one that cannot be placed); an external one is the process's, any
    // other lies in the mapping (checked above)
    auto address = [&](size_t k, uint64_t& out) -> std::string {
      const auto& s = syms[k];
      if (s.st_shndx == SHN_UNDEF) {
        std::string n = name_of(s);
        void* p = n.empty() ? nullptr : external(n.c_str());
        if (!p) return "the process does not define '" + n + "'";
        out = uint64_t(reinterpret_cast<uintptr_t>(p));
      } else if (s.st_shndx < sh.size() && at[s.st_shndx] != none) {
        out = uint64_t(reinterpret_cast<uintptr_t>(base_)) + at[s.st_shndx] + s.st_value;
      } else {
        return "a symbol is absolute or in a section that is not loaded";
      }
      return {};
    };
    // S + A of a relocation stays in the mapping (give or take the few bytes a PC-relative operand's addend takes off)
    // or, for a symbol of the process, within the +-2 GiB a 32-bit operand can reach. Anything else is refused
    const uint64_t lo = uint64_t(reinterpret_cast<uintptr_t>(base_));
    auto bounded = [&](uint64_t s, int64_t a, bool ext) {
      constexpr int64_t slack = 64, reach = int64_t(1) << 31;
      if (ext) return a > -reach && a < reach;
      auto off = int64_t(s - lo);  // <= size_ <= 1 GiB + stubs: no overflow below
      return a >= -off - slack && a <= int64_t(size_) - off;
    };
    for (auto [sym, slot] : stub) {  // jmp *0(%rip), then the address
      uint64_t a = 0;
      if (auto e = address(sym, a); !e.empty()) return e;
      const unsigned char jmp[6] = {0xff, 0x25, 0, 0, 0, 0};
      std::memcpy(base_ + stubs_at + 16 * slot, jmp, 6);
      std::memcpy(base_ + stubs_at + 16 * slot + 6, &a, 8);
    }
    for (auto [sym, slot] : got) {
      uint64_t a = 0;
      if (auto e = address(sym, a); !e.empty()) return e;
      std::memcpy(base_ + got_at + 8 * slot, &a, 8);
    }
    auto addr = [&](size_t off) { return uint64_t(reinterpret_cast<uintptr_t>(base_ + off)); };
    for (const auto& [target, r] : rels) {
      size_t sym = ELF64_R_SYM(r.r_info), type = ELF64_R_TYPE(r.r_info);
      char* p = base_ + at[target] + r.r_offset;
      uint64_t s = 0, place = uint64_t(reinterpret_cast<uintptr_t>(p)), a = uint64_t(r.r_addend);
      bool ext = syms[sym].st_shndx == SHN_UNDEF;
      int64_t addend = r.r_addend;  // NOTE: clang 14's lambdas cannot capture a structured binding
      auto check = [&] {
        if (bounded(s, addend, ext)) return std::string();
        return cat("a relocation to symbol ", sym, " ('", name_of(syms[sym]), "') + ", addend, " points outside the object");
      };
      auto put32 = [&](uint64_t v) {
        auto sv = int64_t(v);
        if (sv < std::numeric_limits<int32_t>::min() || sv > std::numeric_limits<int32_t>::max()) return false;
        auto w = int32_t(sv);
        std::memcpy(p, &w, 4);
        return true;
      };
      switch (type) {
        case R_X86_64_NONE: break;
        case R_X86_64_64:
          if (auto e = address(sym, s); !e.empty()) return e;
          if (auto e = check(); !e.empty()) return e;
          s += a;
          std::memcpy(p, &s, 8);
          break;
        case R_X86_64_PC64:
          if (auto e = address(sym, s); !e.empty()) return e;
          if (auto e = check(); !e.empty()) return e;
          s += a - place;
          std::memcpy(p, &s, 8);
          break;
        case R_X86_64_PC32: case R_X86_64_PLT32:
          if (auto it = stub.find(sym); it != stub.end()) s = addr(stubs_at + 16 * it->second), ext = false;
          else if (auto e = address(sym, s); !e.empty()) return e;
          if (auto e = check(); !e.empty()) return e;
          if (!put32(s + a - place)) return "a PC-relative relocation is out of range";
          break;
        case R_X86_64_GOTPCREL: case R_X86_64_GOTPCRELX: case R_X86_64_REX_GOTPCRELX:
          s = addr(got_at + 8 * got.at(sym)), ext = false;
          if (auto e = check(); !e.empty()) return e;
          if (!put32(s + a - place)) return "a GOT relocation is out of range";
          break;
        default: return "relocation type " + std::to_string(type) + " is not handled";
      }
    }
    for (size_t k = 0; k < syms.size(); k++) {
      const auto& s = syms[k];
      int bind = ELF64_ST_BIND(s.st_info);
      if ((bind != STB_GLOBAL && bind != STB_WEAK) || s.st_shndx == SHN_UNDEF || s.st_shndx >= sh.size() || at[s.st_shndx] == none) continue;
      if (std::string n = name_of(s); !n.empty()) globals_[n] = base_ + at[s.st_shndx] + s.st_value;
    }
    if (::mprotect(base_, size_, PROT_READ | PROT_EXEC) != 0) return "the memory cannot be made executable";
    return {};
  }

  char* base_ = nullptr;
  size_t size_ = 0;
  std::map<std::string, void*> globals_;
};

}  // namespace tinygrad::detail
