// Perplexity helper (metrics/perplexity.h): the definitions, on numbers checkable by hand.
#include <doctest/doctest.h>

#include <cmath>

#include "base/error.h"
#include "metrics/perplexity.h"

using namespace pillars::metrics;

TEST_CASE("perplexity: exp of the mean nll, bits per token") {
  // A uniform model over V symbols has nll ln V per token, perplexity V and log2 V bits.
  const double V = 1000;
  const auto p = perplexity(37 * std::log(V), 37);
  CHECK(p.nll == doctest::Approx(std::log(V)).epsilon(1e-15));
  CHECK(p.ppl == doctest::Approx(V).epsilon(1e-13));
  CHECK(p.bits == doctest::Approx(std::log2(V)).epsilon(1e-15));
  CHECK(std::pow(2.0, p.bits) == doctest::Approx(p.ppl).epsilon(1e-13)); // fairseq's 2^loss
  CHECK(perplexity(0.0, 5).ppl == 1.0);
  CHECK_THROWS_AS(perplexity(1.0, 0), pillars::InputError);
  CHECK_THROWS_AS(perplexity(NAN, 3), pillars::InputError);
}
