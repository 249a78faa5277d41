#!/usr/bin/env python3
"""Fails when a public Tensor method, nn layer, optimizer or LR scheduler has no doc comment (the ctest docs.coverage).

    python3 tests/check_docs.py --doxygen doxygen --doxyfile build/docs/Doxyfile --xml build/docs/xml

Runs Doxygen (the same Doxyfile as the `docs` target), then reads its XML: Doxygen has already parsed the C++ (templates,
the TINYGRAD_MEMBER_DEF macro, overloads), and the XML says per member whether it has a description, and where it is.
Checked: the public member functions of Tensor and of its mixins (include/tinygrad/tensor/), and every class of
nn/nn.hpp and nn/optim.hpp with its public member functions. Constructors, destructors and assignment operators are
covered by their class's comment; an override inherits its base's (Doxygen's INHERIT_DOCS).
"""
import argparse
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

TENSOR_CLASSES = {"tinygrad::Tensor"} | {f"tinygrad::detail::{m}Ops" for m in ["Creation", "Elementwise", "Movement", "Processing", "Reduce"]}
NN_FILES = ("tinygrad/nn/nn.hpp", "tinygrad/nn/optim.hpp")


def described(el):
    return any("".join(el.find(tag).itertext()).strip() for tag in ("briefdescription", "detaileddescription") if el.find(tag) is not None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--doxygen", default="doxygen")
    ap.add_argument("--doxyfile", required=True)
    ap.add_argument("--xml", required=True)
    a = ap.parse_args()
    exe = a.doxygen if a.doxygen and os.path.exists(a.doxygen) else shutil.which(a.doxygen or "doxygen")
    if not exe:
        print("check_docs: doxygen is not installed (tools/quickstart installs it: apt-get install doxygen)")
        return 1
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    subprocess.run([exe, a.doxyfile], cwd=root, check=True)

    missing, checked = [], 0
    for c in ET.parse(os.path.join(a.xml, "index.xml")).getroot().iter("compound"):
        if c.get("kind") not in ("class", "struct"):
            continue
        d = ET.parse(os.path.join(a.xml, c.get("refid") + ".xml")).getroot().find("compounddef")
        name = d.findtext("compoundname")
        file = d.find("location").get("file").replace(os.sep, "/")
        nn = file.endswith(NN_FILES) and "::detail::" not in name
        if (name not in TENSOR_CLASSES and not nn) or d.get("prot") in ("private", "protected"):
            continue
        short = name.split("::")[-1].split("<")[0]
        if nn:
            checked += 1
            if not described(d):
                missing.append(f"{file}:{d.find('location').get('line')}: class {name}")
        for m in d.iter("memberdef"):
            if m.get("kind") != "function" or m.get("prot") != "public":
                continue
            mname = m.findtext("name")
            if mname in (short, "~" + short, "operator="):
                continue
            loc = m.find("location")
            if loc is None or not loc.get("file", "").replace(os.sep, "/").endswith(file.split("include/")[-1]):
                continue  # a member this class inherits
            checked += 1
            if not described(m) and m.find("reimplements") is None:
                missing.append(f"{loc.get('file')}:{loc.get('line')}: {name}::{mname}{m.findtext('argsstring')}")
    for line in sorted(missing):
        print(line)
    print(f"check_docs: {checked} public classes and methods checked, {len(missing)} without a doc comment (///)")
    return 1 if missing or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
