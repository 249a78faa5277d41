#!/usr/bin/env python3
"""Generate include/tinygrad/text/unicode_data.hpp: the per-character tables of the BERT and byte-level BPE tokenizers.

The reference is the Rust `tokenizers` library, whose tables come from several Unicode versions (its
BertNormalizer uses an old `unicode_categories` for control and non-spacing-mark tests, Rust's std for
whitespace and lowercase, `unicode-normalization` for NFD; its regexes run on Oniguruma, whose Unicode tables are
newer than Python 3.11's unicodedata 14.0: U+1C89, new in Unicode 16, is \p{L} there; and the Digits pre-tokenizer
uses Rust's char::is_numeric, newer again: U+16FF4, new in Unicode 17, is numeric but not onig's \p{N}). So the tables are not computed from one
version of unicodedata: each step of the normalizer and the pre-tokenizer is run, alone, on every code
point through the installed `tokenizers` Python package, and the answers are stored as sorted ranges.
Python's unicodedata checks the parts with a rule (Hangul decomposition; lowercase of all cased letters).

  pip install tokenizers      (tested with 0.23.3)
  python3 tools/gen_unicode.py
"""
import sys
import unicodedata
from pathlib import Path

import tokenizers
from tokenizers import Regex, normalizers, pre_tokenizers

OUT = Path(__file__).resolve().parent.parent / "include/tinygrad/text/unicode_data.hpp"
CPS = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
HANGUL = range(0xAC00, 0xAC00 + 11172)


def bert(clean=False, chinese=False, strip=False, lower=False):
    return normalizers.BertNormalizer(clean_text=clean, handle_chinese_chars=chinese, strip_accents=strip, lowercase=lower)


def per_char(n):
    return {c: r for c in CPS if (r := n.normalize_str(chr(c))) != chr(c)}


def regex_class(pattern):
    """the code points a one-char regex of onig (as the tokenizers library compiles it) matches"""
    text = "".join(chr(c) for c in CPS)
    kept = pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(text)
    out = set(CPS)
    for _, (a, b) in kept: out.difference_update(CPS[a:b])  # offsets count chars
    return out


def ranges(cps):
    out = []
    for c in sorted(cps):
        if out and out[-1][1] == c - 1: out[-1][1] = c
        else: out.append([c, c])
    return out


def hangul_nfd(c):
    s = c - 0xAC00
    return chr(0x1100 + s // 588) + chr(0x1161 + s % 588 // 28) + (chr(0x11A7 + s % 28) if s % 28 else "")


def main():
    clean = per_char(bert(clean=True))
    assert set(clean.values()) <= {"", " "}, "clean_text only drops or maps to a space"
    removed = [c for c, r in clean.items() if r == ""]
    spaces = [c for c, r in clean.items() if r == " "]
    chinese = [c for c, r in per_char(bert(chinese=True)).items() if r == f" {chr(c)} "]
    strip = per_char(bert(strip=True))
    for c in HANGUL: assert strip.pop(c) == hangul_nfd(c), hex(c)  # done by rule in C++
    dropped = [c for c, r in strip.items() if r == ""]
    decomp = sorted((c, r) for c, r in strip.items() if r)
    assert max(len(r) for _, r in decomp) <= 3
    lower = per_char(bert(lower=True))
    assert {c for c, r in lower.items() if len(r) != 1} == {0x130}, "only U+0130 lowercases to two chars"
    assert lower[0x130] == "i\u0307"
    del lower[0x130]
    for c in CPS:  # every Unicode 14 lowercase mapping is there (newer ones too)
        l = chr(c).lower()
        if len(l) == 1 and l != chr(c) and unicodedata.category(chr(c)) == "Lu": assert lower.get(c) == l, hex(c)
    low = []  # runs of [first, last, delta, stride]
    for c, r in sorted(lower.items()):
        d = ord(r) - c
        if low and low[-1][2] == d and c - low[-1][1] in (1, 2) and (low[-1][0] == low[-1][1] or c - low[-1][1] == low[-1][3]):
            low[-1][3] = c - low[-1][1]; low[-1][1] = c
        else: low.append([c, c, d, 1])
    pt = pre_tokenizers.BertPreTokenizer()
    split = {c: len(pt.pre_tokenize_str("a" + chr(c) + "b")) for c in CPS}
    punct = [c for c, k in split.items() if k == 3]
    white = [c for c, k in split.items() if k == 2]
    assert all(k in (1, 2, 3) for k in split.values())

    # byte-level BPE: the classes of the GPT-2 / Llama 3 regexes and the Digits pre-tokenizer
    letter, number, space = regex_class(r"\p{L}"), regex_class(r"\p{N}"), regex_class(r"\s")
    assert all(unicodedata.category(chr(c))[0] == "L" for c in letter if unicodedata.category(chr(c)) != "Cn")
    assert {c for c in CPS if unicodedata.category(chr(c))[0] == "L"} <= letter
    assert space == {0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}
    digits = pre_tokenizers.Digits(individual_digits=True)
    text = "".join("a" + chr(c) for c in CPS) + "a"
    numeric = {CPS[a // 2] for p, (a, b) in digits.pre_tokenize_str(text) if b - a == 1 and a % 2}
    assert all(digits.pre_tokenize_str(f"a{chr(c)}a")[1][0] == chr(c) for c in list(numeric)[:100])
    assert number <= numeric, "Digits isolates every \\p{N}"

    # the whole normalizer, char by char, is the composition of its steps
    full = bert(True, True, None, True)
    def model(c):
        if c in clean: return clean[c]
        r = hangul_nfd(c) if c in HANGUL else strip.get(c, chr(c))
        r = f" {r} " if c in chinese_set else r
        return "".join("i\u0307" if ord(x) == 0x130 else lower.get(ord(x), x) for x in r)
    chinese_set = set(chinese)
    bad = [c for c in CPS if full.normalize_str(chr(c)) != model(c)]
    assert not bad, [hex(c) for c in bad[:20]]

    def rows(items, per_line):
        return "\n".join("    " + " ".join(items[i:i + per_line]) for i in range(0, len(items), per_line))
    def rtab(name, comment, cps):
        items = [f"{{0x{a:X}, 0x{b:X}}}," for a, b in ranges(cps)]
        return f"// {comment}\ninline constexpr Range {name}[] = {{\n{rows(items, 8)}\n}};\n"
    dec = [f"{{0x{c:X}, {{{', '.join(f'0x{ord(x):X}' for x in r)}}}}}," for c, r in decomp]
    lows = [f"{{0x{a:X}, 0x{b:X}, {d}, {s}}}," for a, b, d, s in low]
    tab_removed = rtab("removed", "clean_text drops these (controls, format, private use; \\t \\n \\r excepted)", removed)
    tab_bpe = "\n".join([rtab("letter", "\\p{L} of the byte-level BPE regexes (onig)", letter),
                          rtab("number", "\\p{N} of the byte-level BPE regexes (onig)", number),
                          rtab("space", "\\s of the byte-level BPE regexes (onig)", space),
                          rtab("numeric", "the Digits pre-tokenizer isolates these (Rust char::is_numeric)", numeric)])
    text = f"""#pragma once
// GENERATED by tools/gen_unicode.py from the behaviour of the Rust `tokenizers` library {tokenizers.__version__}
// (probed code point by code point; checked against Python's unicodedata {unicodedata.unidata_version}); DO NOT EDIT.
// Sorted, non-overlapping tables for text/tokenizer.hpp's BERT normalizer and pre-tokenizer and text/bpe.hpp's
// pre-tokenizers.
#include <cstdint>

namespace tinygrad::text::detail::unicode {{
struct Range {{ char32_t lo, hi; }};
struct Decomp {{ char32_t cp, to[3]; }};  // to: NFD without non-spacing marks, 0-padded
struct Lower {{ char32_t lo, hi; int32_t delta, stride; }};  // lo, lo+stride, ... hi map to c + delta

{tab_removed}
{rtab("spaces", "clean_text maps these to ' '", spaces)}
{rtab("chinese", "handle_chinese_chars puts spaces around these", chinese)}
{rtab("nonspacing", "strip_accents drops these (after NFD)", dropped)}
// strip_accents: NFD minus the dropped marks, for code points it changes (Hangul syllables by rule)
inline constexpr Decomp decomp[] = {{
{rows(dec, 4)}
}};
// lowercase (Rust char::to_lowercase), one char to one char; U+0130 -> "i\\u0307" by rule
inline constexpr Lower lower[] = {{
{rows(lows, 5)}
}};
{rtab("whitespace", "BertPreTokenizer splits on these (char::is_whitespace)", white)}
{rtab("punct", "BertPreTokenizer isolates these", punct)}
{tab_bpe}
}}  // namespace tinygrad::text::detail::unicode
"""
    OUT.write_text(text)
    print(f"{OUT}: {len(ranges(removed))}+{len(ranges(spaces))}+{len(ranges(dropped))}+{len(ranges(white))}+{len(ranges(punct))} ranges, "
          f"{len(decomp)} decompositions, {len(low)} lowercase runs; BPE: {len(ranges(letter))} letter, {len(ranges(number))} number, "
          f"{len(ranges(space))} space, {len(ranges(numeric))} numeric ranges")


if __name__ == "__main__":
    sys.exit(main())
