#!/usr/bin/env python3
"""Count source lines of the library (tinygrad's sz.py): non-blank lines that hold
something besides // and /* */ comments, per folder of include/tinygrad, plus the
umbrella include/tinygrad.hpp, and the total.

  tools/sloc.py               table per folder
  tools/sloc.py --files       also one row per file
  tools/sloc.py --budget N    exit 1 when the total exceeds N lines (for CI)
"""
import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / "include" / "tinygrad"
UMBRELLA = ROOT / "include" / "tinygrad.hpp"
SUFFIXES = {".hpp", ".h", ".hh", ".ipp", ".inl", ".cpp"}
RE_RAW_OPEN = re.compile(r'(?<![A-Za-z0-9_])(?:u8|[uUL])?R"([^()\\\s"]{0,16})\(')


def count_sloc(text):
    """Number of lines with at least one non-space character outside comments.
    String and raw-string literals count as code, so "//" inside a string is code."""
    code_lines = set()
    line, i, n = 0, 0, len(text)
    state, raw_end = "code", ""
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif state == "block":
            if text.startswith("*/", i):
                state, i = "code", i + 2
            else:
                i += 1
        elif state == "raw":
            if text.startswith(raw_end, i):
                code_lines.add(line)
                state, i = "code", i + len(raw_end)
            else:
                if not c.isspace():
                    code_lines.add(line)
                i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            state, i = "block", i + 2
        elif c.isspace():
            i += 1
        elif (m := RE_RAW_OPEN.match(text, i)):
            code_lines.add(line)
            state, raw_end, i = "raw", ")" + m.group(1) + '"', m.end()
        elif c in "\"'" and not (c == "'" and _digit_separator(text, i)):
            code_lines.add(line)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" and j + 1 < n and text[j + 1] != "\n" else 1
            i = j + 1 if j < n and text[j] == c else j
        else:
            code_lines.add(line)
            i += 1
    return len(code_lines)


def _digit_separator(text, i):
    j = i
    while j > 0 and (text[j - 1].isalnum() or text[j - 1] in "_'."):
        j -= 1
    return j < i and text[j].isdigit()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", action="store_true", help="also print one row per file")
    ap.add_argument("--budget", type=int, metavar="N", help="fail when the total exceeds N")
    args = ap.parse_args()

    files = sorted(p for p in LIB.rglob("*") if p.is_file() and p.suffix in SUFFIXES) \
        if LIB.is_dir() else []
    if UMBRELLA.is_file():
        files.insert(0, UMBRELLA)
    if not files:
        print(f"no headers under {LIB.relative_to(ROOT)}", file=sys.stderr)
        return 1

    per_folder = defaultdict(lambda: [0, 0])  # folder -> [files, lines]
    rows = []
    for path in files:
        lines = count_sloc(path.read_text(encoding="utf-8", errors="replace"))
        if path == UMBRELLA:
            folder = "tinygrad.hpp"
        else:
            parts = path.relative_to(LIB).parts
            folder = parts[0] + "/" if len(parts) > 1 else "./"
        per_folder[folder][0] += 1
        per_folder[folder][1] += lines
        rows.append((path.relative_to(ROOT / "include").as_posix(), lines))

    if args.files:
        width = max(len(r[0]) for r in rows)
        for name, lines in sorted(rows, key=lambda r: -r[1]):
            print(f"{name:<{width}}  {lines:>6}")
        print()

    total_files = sum(v[0] for v in per_folder.values())
    total = sum(v[1] for v in per_folder.values())
    width = max(12, *(len(k) for k in per_folder))
    print(f"{'folder':<{width}}  {'files':>5}  {'lines':>6}")
    print("-" * (width + 15))
    for folder in sorted(per_folder, key=lambda k: (k != "tinygrad.hpp", k)):
        nf, nl = per_folder[folder]
        print(f"{folder:<{width}}  {nf:>5}  {nl:>6}")
    print("-" * (width + 15))
    print(f"{'total':<{width}}  {total_files:>5}  {total:>6}")

    if args.budget is not None and total > args.budget:
        print(f"error: {total} lines exceed the budget of {args.budget}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
