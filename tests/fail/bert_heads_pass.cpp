// PASS
// models/bert.hpp: 12 heads split a hidden size of 384 (the compiling twin of bert_heads_fail.cpp)
#include <tinygrad/models/bert.hpp>
using namespace tinygrad;

int main() { models::Bert<384, 12, 1536, 6> model; }
