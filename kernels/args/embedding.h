// The argument struct of the embedding kernels, declared once for both devices:
// kernels/cpu/embedding.h and kernels/cuda/embedding.h bring it into cpu:: and cuda:: (the
// functions and their arrays are documented there). Device-neutral: standard headers only.
#pragma once
#include <cstdint>

namespace pillars::kernels {

struct EmbeddingArgs {
  int64_t n = 0, V = 0, D = 0; // n ids into a table of V rows of D floats
};

} // namespace pillars::kernels
