#!/usr/bin/env python3
"""The public surface is the API (a ctest, label lint): the names declared directly in `namespace tinygrad` by
<tinygrad.hpp> and the opt-in headers must be exactly those listed in tests/public_names.txt. A pipeline internal
that lands in tinygrad:: (instead of tinygrad::detail) fails here, and so does a listed name that is gone.

clang's -ast-list prints the qualified name of every declaration of a translation unit; this keeps those of the form
tinygrad::<name>. Needs clang++ (tools/quickstart installs it).

  tools/public_names.py [--cxx clang++]          compare with tests/public_names.txt
  tools/public_names.py --print                   print the names as they are now
"""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIST = ROOT / "tests" / "public_names.txt"
HEADERS = ["tinygrad.hpp", "tinygrad/models/bert.hpp", "tinygrad/text/tokenizer.hpp"]


def names_now(cxx):
    with tempfile.TemporaryDirectory() as tmp:
        tu = Path(tmp) / "all.cpp"
        tu.write_text("".join(f"#include <{h}>\n" for h in HEADERS))
        out = subprocess.run([cxx, "-std=c++20", "-fsyntax-only", "-Xclang", "-ast-list", f"-I{ROOT / 'include'}", str(tu)],
                             capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"public_names.py: {cxx} failed:\n{out.stderr[-4000:]}")
    found = set()
    for line in out.stdout.splitlines():
        m = re.fullmatch(r"tinygrad::(operator\S+|[A-Za-z_][A-Za-z_0-9]*)", line.strip())
        if m:
            found.add(m.group(1))
    return found


def listed():
    return {ln.split("#")[0].strip() for ln in LIST.read_text().splitlines()} - {""}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cxx", default="clang++")
    ap.add_argument("--print", action="store_true")
    args = ap.parse_args()
    now = names_now(args.cxx)
    if args.print:
        print("\n".join(sorted(now)))
        return 0
    want = listed()
    leaked, gone = sorted(now - want), sorted(want - now)
    for n in leaked:
        print(f"tinygrad::{n} is not in tests/public_names.txt: an internal belongs in tinygrad::detail; "
              "a new API name is added to the list in the same commit")
    for n in gone:
        print(f"tinygrad::{n} is listed in tests/public_names.txt but not declared: remove it from the list")
    if leaked or gone:
        return 1
    print(f"{len(now)} public names, as listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
