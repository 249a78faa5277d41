#!/usr/bin/env python3
"""Reference data for tests/test_tokenizer.cpp (and the MiniLM embedding tests).

Needs: tokenizers, transformers, sentence_transformers (CPU torch is enough) and the
all-MiniLM-L6-v2 model directory (tokenizer.json, config.json, model.safetensors, ...).
Run:   python3 tests/data/minilm/gen_reference.py [MODEL_DIR]
       (MODEL_DIR defaults to $MINILM_DIR, then /work/scratch/minilm/model)
Writes tokens.json ({"model", "max_length", "cases": [{"text", "ids"}]}) with the ids of
SentenceTransformer(model).tokenizer(texts, truncation=True, max_length=256), checked equal to
tokenizers.Tokenizer.from_file(tokenizer.json) with truncation at 256, and embeddings.json
({"cases": [{"text", "embedding"}]}): SentenceTransformer.encode(texts, normalize_embeddings=True).
"""
import json
import os
import sys
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer
from tokenizers import Tokenizer

HERE = Path(__file__).resolve().parent
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("MINILM_DIR", "/work/scratch/minilm/model")
MAX_LEN = 256

TEXTS = [
    # plain English
    "Hello, world!", "The quick brown fox jumps over the lazy dog.", "This is a test sentence.",
    "Sentence embeddings are useful for semantic search.", "I can't believe it's not butter!",
    "He said: \"don't go\" -- and left.", "What's the weather like in New York today?",
    "Transformers have revolutionized natural language processing.", "unbelievably", "antidisestablishmentarianism",
    "pneumonoultramicroscopicsilicovolcanoconiosis", "The U.S.A. and the U.K. signed the treaty in 1945.",
    "e-mail, co-operate, mother-in-law", "rock'n'roll", "It's 5 o'clock somewhere.", "ALL CAPS SHOUTING TEXT",
    "MiXeD CaSe WoRdS", "tinygrad is a small deep learning framework", "A man is eating food.", "A man is riding a horse.",
    "Machine learning models require data.", "I love programming in C++ and Python.", "Dr. Smith arrived at 3 p.m.",
    "Mr. & Mrs. Jones", "snake_case_identifier and camelCaseIdentifier", "#hashtag @mention",
    # accents and Latin extensions
    "café", "naïve résumé", "Über die Brücke", "mañana será otro día", "Straße", "GROSSE STRASSE ẞ", "façade", "São Paulo",
    "Crème brûlée", "Ångström", "Dvořák", "Łódź", "Ærøskøbing", "œuvre", "İstanbul", "ıi İI", "KAYIŞ ılık",
    "Þórður", "ĳssel", "ǅemal", "ﬁne ﬂow", "Ǆ ǅ ǆ", "ȺȾ", "é (e + U+0301)", "ñ decomposed n\u0303", "a\u0308\u0301\u0323",
    "Zalgo: Z\u0351\u0352\u0353a\u0354\u0355l\u0356\u0357g\u0358o\u0359", "\u0301leading combining mark", "x\u20dd enclosed",
    # Greek and Cyrillic
    "Ελληνικά γράμματα", "ΟΔΥΣΣΕΥΣ", "Σίσυφος ς σ Σ", "ά έ ή ί ό ύ ώ ΐ ΰ", "Привет, мир!", "Ёлка и ёж", "МОСКВА", "Україна їжак ґанок",
    "Српски језик", "Қазақ тілі",
    # right to left, Indic, South-East Asian
    "مرحبا بالعالم", "السَّلَامُ عَلَيْكُمْ", "שלום עולם", "שָׁלוֹם", "नमस्ते दुनिया", "हिन्दी भाषा", "বাংলা ভাষা", "தமிழ்",
    "ภาษาไทย สวัสดีครับ", "ສະບາຍດີ", "ជំរាបសួរ", "မင်္ဂလာပါ", "ქართული", "Հայերեն", "አማርኛ", "ᠮᠣᠩᠭᠣᠯ",
    # CJK
    "你好，世界！", "我爱北京天安门。", "中文分词测试", "繁體中文字", "日本語のテキスト", "こんにちは世界", "カタカナ ｶﾀｶﾅ",
    "東京タワー", "안녕하세요", "한국어 텍스트입니다", "각 갂 갃", "𠀀𠀁 𪜀 𫝀 𫠠 𬺰 𮯠", "豈 更 車", "〆〇〡", "㐀㐁 䶵",
    "Mixed 中文 and English", "ＦＵＬＬＷＩＤＴＨ　ｔｅｘｔ １２３", "（全角括号）【】「」『』", "㍻ ㋿ ㎏ ㎡",
    # emoji
    "I love pizza 🍕!", "😀😃😄😁", "👍🏽 thumbs", "👨‍👩‍👧‍👦 family", "🏳️‍🌈 flag", "🇺🇸🇫🇷🇯🇵", "❤️ heart", "🥰 new emoji",
    "🫠 melting", "*️⃣ #️⃣ 1️⃣", "☺ ☹ ★ ☆", "🧑🏿‍💻 coder",
    # punctuation runs, symbols
    "!!!???...", "...", "---", "Wait... what?!", "(parentheses) [brackets] {braces} <angles>", "«guillemets» „Anführungszeichen“",
    "“smart quotes” ‘single’", "em—dash en–dash", "¿Qué? ¡Sí!", "a/b\\c|d", "~`!@#$%^&*()_+-={}[]|:;\"'<>,.?/",
    "§ ¶ † ‡ •", "© ® ™", "° ± × ÷", "‰ ‱ ′ ″", "…", "・ 。 、", "՞ ։ ؟ ، ।", "‽ ⁇ ⁈",
    # numbers
    "1,234,567.89", "3.14159", "-42", "1e10", "$100", "€50", "£30 and ¥1000", "₹ ₽ ₩ ₿", "50%", "2024-01-15",
    "12:30:45", "+1 (555) 123-4567", "1 000 000", "1'000'000", "1_000_000", "٠١٢٣٤٥٦٧٨٩", "१२३", "½ ¼ ¾ ⅓", "²³¹ ₁₂₃",
    "Ⅻ ⅻ Ⅳ", "0x1F 0b1010 0o17",
    # URLs, emails, code
    "https://www.example.com/path?query=1&x=y#frag", "http://localhost:8080", "user.name+tag@example.co.uk",
    "ftp://files.example.org/pub/file.tar.gz", "www.google.com", "C:\\Users\\Name\\file.txt", "/usr/local/bin/python3",
    "def f(x): return x**2", "int main() { return 0; }", "for (int i = 0; i < n; i++) { sum += a[i]; }",
    "if x != None and y >= 3:", "SELECT * FROM users WHERE id = 1;", "<div class=\"x\">Hi</div>", "{\"key\": [1, 2, 3]}",
    "std::vector<int> v;", "λx.x + 1", "git commit -m \"fix\"", "a->b->c", "x == y && z || !w",
    # whitespace and control characters
    "", " ", "   ", "\t", "\n", "\r\n", "\t\n \r", "tab\tseparated\tvalues", "line1\nline2\nline3", "windows\r\nnewlines",
    "multiple    spaces", "  leading and trailing  ", "null\x00char", "bell\x07char", "esc\x1b[0mcodes", "del\x7fchar",
    "vertical\x0btab", "form\x0cfeed", "next\x85line", "\x01\x02\x03", "soft\u00adhyphen", "zero\u200bwidth space",
    "zero\u200cwidth\u200dnon-joiner", "word\u2060joiner", "\ufeffbom at start", "rtl\u200fmark\u200e", "bidi\u202aembed\u202c",
    "non\u00a0breaking\u00a0space", "em\u2003space", "thin\u2009space", "ideographic\u3000space", "narrow\u202fnbsp",
    "ogham\u1680space", "line\u2028separator", "para\u2029separator", "math\u205fspace", "mongolian\u180evowel",
    "replacement \ufffd char", "private \ue000\uf8ff use", "tag \U000e0041 char", "noncharacter \ufdd0 \uffff",
    "unassigned \u0378 \U0001fffe", "arabic\u0600number", "interlinear\ufff9anno\ufffb",
    # math, misc scripts
    "∑ ∫ ∂ √ ∞ ≈ ≠ ≤ ≥", "α + β = γ", "E = mc²", "∀x ∈ ℝ: x² ≥ 0", "𝔸𝔹ℂ 𝐀𝐁𝐂 𝒜", "ℌ ℍ ℎ ℏ", "→ ← ↑ ↓ ⇒", "♠ ♣ ♥ ♦",
    "♩ ♪ ♫ 𝄞 𝅘𝅥𝅮", "⌘ ⌥ ⇧", "ⓐⓑⓒ Ⓐ", "░▒▓█", "Ⓒ ⓜ", "ꙮ", "ᚠᛇᚻ runes", "𐌰𐌱𐌲 gothic", "𓀀 hieroglyph",
    "Ꭰ Cherokee ꭰ", "Ⴀ ⴀ Georgian", "ǈ ǋ ǲ titlecase", "K Kelvin sign Å Angstrom sign", "Ω ohm ω", "ſ long s",
    "ΐ ΰ ǰ ẖ", "ﬀ ﬃ ﬆ", "ŉ", "Ꞵ ꞵ Ꟈ", "𐐀 𐐨 Deseret", "𞤀 𞤢 Adlam", "𑢠 Warang",
    # long inputs
    "a" * 100, "b" * 101, "supercalifragilistic" * 6, "x" * 99 + "é", "word " * 300, "The quick brown fox. " * 60,
    "中" * 300, " ".join(str(i) for i in range(400)), "🍕" * 120, "hello [MASK] world", "[CLS] [SEP] [PAD] [UNK]",
    "[cls] lowercase is not special", "tokens[MASK]glued[SEP]", "[MASK", "]] [[", "##suffix ## #",
]

EMBED_TEXTS = [
    "Hello, world!", "The quick brown fox jumps over the lazy dog.", "A man is eating food.", "A man is riding a horse.",
    "Sentence embeddings are useful for semantic search.", "café naïve résumé", "Straße und Brücke", "你好，世界！",
    "日本語のテキスト", "안녕하세요", "Привет, мир!", "مرحبا بالعالم", "I love pizza 🍕!", "https://www.example.com/path?q=1",
    "def f(x): return x**2", "", "1,234,567.89 dollars", "The quick brown fox. " * 60,
    "tab\tseparated\nlines", "Machine learning models require data.",
]


def main():
    st = SentenceTransformer(MODEL, device="cpu")
    assert st.max_seq_length == MAX_LEN, st.max_seq_length
    hf = st.tokenizer(TEXTS, truncation=True, max_length=MAX_LEN)["input_ids"]
    tok = Tokenizer.from_file(str(Path(MODEL) / "tokenizer.json"))
    tok.no_padding()
    tok.enable_truncation(MAX_LEN)
    rust = [e.ids for e in tok.encode_batch(TEXTS)]
    assert hf == rust, [t for t, a, b in zip(TEXTS, hf, rust) if a != b]
    assert len(TEXTS) >= 220 and len(set(TEXTS)) == len(TEXTS), (len(TEXTS), len(set(TEXTS)))
    assert any(len(ids) == MAX_LEN for ids in rust)
    cases = [{"text": t, "ids": ids} for t, ids in zip(TEXTS, rust)]
    with open(HERE / "tokens.json", "w", encoding="utf-8") as f:
        json.dump({"model": "all-MiniLM-L6-v2", "max_length": MAX_LEN, "cases": cases}, f, ensure_ascii=False, indent=0)
        f.write("\n")
    emb = st.encode(EMBED_TEXTS, normalize_embeddings=True, convert_to_numpy=True).astype(np.float32)
    cases = [{"text": t, "embedding": [float(x) for x in e]} for t, e in zip(EMBED_TEXTS, emb)]
    with open(HERE / "embeddings.json", "w", encoding="utf-8") as f:
        json.dump({"model": "all-MiniLM-L6-v2", "cases": cases}, f, ensure_ascii=False)
        f.write("\n")
    print(f"{len(TEXTS)} token cases, {len(EMBED_TEXTS)} embeddings")


if __name__ == "__main__":
    main()
