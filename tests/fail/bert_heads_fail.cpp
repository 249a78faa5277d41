// FAIL-FIRST-REGEX: heads_do_not_divide_hidden<385, 12>
// models/bert.hpp: 12 heads cannot split a hidden size of 385
#include <tinygrad/models/bert.hpp>
using namespace tinygrad;

int main() { models::Bert<385, 12, 1536, 6> model; }
