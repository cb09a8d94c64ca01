// The test runner: doctest's main. Each tests/test_*.cpp file is one suite.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
