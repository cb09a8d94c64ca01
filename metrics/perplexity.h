// Perplexity from a summed negative log-likelihood.
//
//   auto p = pillars::metrics::perplexity(total_nll_nats, n_tokens);
//   // p.nll = total / n (nats per token), p.ppl = exp(p.nll), p.bits = p.nll / ln 2
//
// Perplexity is exp of the mean per-token cross-entropy: ppl = exp((1/N) sum_t -ln p(x_t | x_<t)),
// the effective number of equally likely choices per token. The same number in base 2:
// bits/token = nll / ln 2 and ppl = 2^bits. fairseq logs losses in bits (it divides by ln 2) and
// prints ppl = 2^loss, which is this ppl. N is the number of predicted tokens (fairseq counts the
// end-of-sentence token and excludes padding; whichever convention, use the same N as in the sum).
#pragma once
#include <cstdint>

namespace pillars::metrics {

struct Perplexity {
  double nll = 0;  // mean negative log-likelihood per token, nats
  double ppl = 0;  // exp(nll)
  double bits = 0; // nll / ln 2: bits per token (ppl = 2^bits)
};

// total_nll_nats: sum over tokens of -ln p (>= 0 up to rounding); n_tokens > 0.
Perplexity perplexity(double total_nll_nats, std::int64_t n_tokens);

} // namespace pillars::metrics
