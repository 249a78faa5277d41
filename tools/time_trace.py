#!/usr/bin/env python3
"""Summarise clang's -ftime-trace JSON for one translation unit: where its compile time goes.

usage: tools/time_trace.py TRACE.json [--top N]
       tools/time_trace.py TRACE.json --split     one line: front end ms, raw parse ms, instantiation ms
  clang++ -std=c++20 -Iinclude -O2 -ftime-trace -ftime-trace-granularity=50 -c tu.cpp   (writes tu.json)

Prints the front end / back end split, the parse time of each header (inclusive: with what it includes;
self: without), grouped as ours (include/tinygrad), Boost.Hana, the standard library and system headers,
the templates whose instantiation cost the most (summed over every instantiation of one template), and the front
end split into raw parsing (by origin) and template instantiation: each moment of the front end counted once, for
the innermost event then running. The parse part is what a TU pays even if nothing it includes is instantiated
(the floor of a header-only library); the counts of instantiations repeat exactly from run to run, the times do
not. For that split, trace with -ftime-trace-granularity=0 (coarser traces drop the short instantiations).
"""
import json, re, sys
from collections import defaultdict


def load(path):
    events = json.load(open(path))["traceEvents"]
    return [e for e in events if e.get("ph") == "X" and "dur" in e]


def group(path):
    if "include/tinygrad" in path or path.endswith("tinygrad.hpp"):
        return "tinygrad"
    if "boost/hana" in path:
        return "hana"
    if "/c++/" in path:
        return "libstdc++"
    return "system/other"


def self_times(sources):
    """Source events nest by time: self time = duration minus the direct children's durations."""
    sources = sorted(sources, key=lambda e: (e["ts"], -e["dur"]))
    own, stack = [], []
    for e in sources:
        while stack and e["ts"] >= stack[-1][0]["ts"] + stack[-1][0]["dur"]:
            stack.pop()
        item = [e, e["dur"]]
        if stack:
            stack[-1][1] -= e["dur"]
        stack.append(item)
        own.append(item)
    return own


INSTANTIATION = ("InstantiateClass", "InstantiateFunction", "PerformPendingInstantiations")


def front_end_split(events):
    """Front-end time by what ran innermost: parsing a header of one origin, or instantiating a template."""
    evs = [e for e in events if e["name"] == "Source" or e["name"] in INSTANTIATION]
    edges = sorted([(e["ts"], 1, i) for i, e in enumerate(evs)] + [(e["ts"] + e["dur"], 0, i) for i, e in enumerate(evs)])
    out, active, prev = defaultdict(float), [], None
    for ts, starts, i in edges:  # ends sort before starts at one instant
        if active and prev is not None:
            e = evs[active[-1]]
            out["parse: " + group(e["args"]["detail"]) if e["name"] == "Source" else "template instantiation"] += ts - prev
        if starts:
            active.append(i)
        else:
            active.remove(i)
        prev = ts
    return out


def template_name(detail):
    return re.sub(r"<.*", "", detail)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 15
    events = load(sys.argv[1])
    if "--split" in sys.argv:
        split = front_end_split(events)
        inst = split.pop("template instantiation", 0.0)
        front = next(e["dur"] for e in events if e["name"] == "Total Frontend")
        print(f"{front / 1000:.0f} {sum(split.values()) / 1000:.0f} {inst / 1000:.0f}")
        return
    total = {e["name"]: e["dur"] for e in events if e["name"].startswith("Total ")}
    ms = lambda us: us / 1000.0
    for key in ("Total ExecuteCompiler", "Total Frontend", "Total Source", "Total PerformPendingInstantiations",
                "Total InstantiateFunction", "Total InstantiateClass", "Total Backend", "Total CodeGen Function"):
        if key in total:
            print(f"{key[6:]:<32} {ms(total[key]):9.0f} ms")

    sources = [e for e in events if e["name"] == "Source"]
    by_group, by_file = defaultdict(float), defaultdict(lambda: [0.0, 0.0])
    for e, own in self_times(sources):
        path = e["args"]["detail"]
        by_group[group(path)] += own
        by_file[path][0] += e["dur"]
        by_file[path][1] += own
    print("\nparse time by origin (self)")
    for g, us in sorted(by_group.items(), key=lambda kv: -kv[1]):
        print(f"  {g:<30} {ms(us):9.0f} ms")
    print(f"\nheaders by inclusive parse time (top {top})           incl ms   self ms")
    for path, (incl, own) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:top]:
        short = re.sub(r".*/include/", "", path)
        print(f"  {short[-48:]:<48} {ms(incl):8.0f} {ms(own):8.0f}")

    split = front_end_split(events)
    print("\nfront end by what ran innermost (needs -ftime-trace-granularity=0)")
    for k, us in sorted(split.items(), key=lambda kv: -kv[1]):
        print(f"  {k:<30} {ms(us):9.0f} ms")
    counts = {n: sum(1 for e in events if e["name"] == n) for n in INSTANTIATION[:2]}
    print("  instantiations: " + ", ".join(f"{n[11:].lower()} {c}" for n, c in counts.items()))

    inst = defaultdict(lambda: [0.0, 0])
    for e in events:
        if e["name"] in ("InstantiateClass", "InstantiateFunction"):
            item = inst[template_name(e["args"]["detail"])]
            item[0] += e["dur"]
            item[1] += 1
    print(f"\ntemplates by instantiation time (top {top}; nested instantiations count in their parent too)")
    for name, (us, n) in sorted(inst.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"  {name[-60:]:<60} {ms(us):8.0f} ms  x{n}")


if __name__ == "__main__":
    main()
