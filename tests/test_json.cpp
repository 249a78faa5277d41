// json.hpp: the reader behind safetensors headers and tokenizer.json: kinds, exact doubles, lookups, errors.
#include <catch2/catch.hpp>
#include <tinygrad/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

using tinygrad::detail::Json;
using tinygrad::detail::find;
using tinygrad::detail::parse_json;

TEST_CASE("json: every kind, floats parse exactly, find looks up members", "[json]") {
  Json j = parse_json(R"( {"n": null, "t": true, "f": false, "i": -42, "big": 9223372036854775807,
                           "x": 0.1, "e": -1.5e-300, "E": 2E+3, "s": "a\u00e9\ud83c\udf55\n", "a": [1, 2.5, [], {}]} )", "test: ");
  REQUIRE(j.kind == Json::Obj);
  REQUIRE(find(j, "n")->kind == Json::Null);
  REQUIRE((find(j, "t")->kind == Json::Bool && find(j, "t")->b && !find(j, "f")->b));
  REQUIRE((find(j, "i")->kind == Json::Int && find(j, "i")->i == -42 && find(j, "big")->i == INT64_MAX));
  REQUIRE((find(j, "x")->kind == Json::Float && find(j, "x")->f == 0.1 && find(j, "e")->f == -1.5e-300 && find(j, "E")->f == 2000.0));
  REQUIRE(find(j, "s")->s == "a\xc3\xa9\xf0\x9f\x8d\x95\n");
  REQUIRE((find(j, "a")->arr.size() == 4 && find(j, "a")->arr[1].f == 2.5 && find(j, "a")->arr[3].kind == Json::Obj));
  REQUIRE(find(j, "missing") == nullptr);
  REQUIRE(find(*find(j, "a"), "x") == nullptr);  // not an object
}

TEST_CASE("json: errors carry the caller's prefix and the byte offset", "[json]") {
  auto err = [](const std::string& text) {
    try { parse_json(text, "tinygrad::reader: f.json: "); } catch (const tinygrad::nn::StateError& e) { return std::string(e.what()); }
    return std::string("no error");
  };
  REQUIRE(err("[1, 2") == "tinygrad::reader: f.json: unexpected end at byte 5");
  REQUIRE(err("[1.]") == "tinygrad::reader: f.json: bad number at byte 3");
  REQUIRE(err("1e999") == "tinygrad::reader: f.json: number out of range at byte 5");
  REQUIRE(err("99999999999999999999") == "tinygrad::reader: f.json: integer too large at byte 20");
  REQUIRE(err("{} x") == "tinygrad::reader: f.json: trailing characters after the JSON value at byte 3");
  REQUIRE(err("tru") == "tinygrad::reader: f.json: unexpected character 't' at byte 0");
  REQUIRE(err(std::string(100, '[')) == "tinygrad::reader: f.json: nesting too deep at byte 65");
}

TEST_CASE("json: the MiniLM reference embeddings read back as unit vectors", "[json]") {
  std::string path = std::string(TG_TEST_SOURCE_DIR) + "/tests/data/minilm/embeddings.json";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  Json j = parse_json(ss.str(), path + ": ");
  const auto& cases = find(j, "cases")->arr;
  REQUIRE(cases.size() == 20);
  for (auto& c : cases) {
    const auto& e = find(c, "embedding")->arr;
    REQUIRE(e.size() == 384);
    double n2 = 0;
    for (auto& x : e) { REQUIRE(x.kind == Json::Float); REQUIRE(double(float(x.f)) == x.f); n2 += x.f * x.f; }  // float32 values
    REQUIRE(std::abs(std::sqrt(n2) - 1) < 1e-5);
  }
}
