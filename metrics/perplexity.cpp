// Perplexity (see perplexity.h).
#include "metrics/perplexity.h"

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace pillars::metrics {

Perplexity perplexity(double total_nll_nats, std::int64_t n_tokens) {
  if (n_tokens <= 0) throw InputError(str_cat("perplexity: n_tokens must be positive, got ", n_tokens));
  if (!std::isfinite(total_nll_nats))
    throw InputError(str_cat("perplexity: total NLL is not finite (", total_nll_nats, ")"));
  Perplexity p;
  p.nll = total_nll_nats / static_cast<double>(n_tokens);
  p.ppl = std::exp(p.nll);
  p.bits = p.nll / std::numbers::ln2;
  return p;
}

} // namespace pillars::metrics
