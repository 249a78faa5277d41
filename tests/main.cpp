// Catch2's main(); every tests/test_*.cpp links against this one translation unit.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
