// The special token ids at the start of every dictionary, in fairseq's order. Defined once: the
// dictionary (text/dictionary.h) puts them first, batches pad with kPad, decoding starts and stops
// at kEos, and the model config (models/transformer.h) reads its pad id from here.
#pragma once
#include <cstdint>

namespace pillars::tokens {

constexpr int32_t kBos = 0, kPad = 1, kEos = 2, kUnk = 3;
constexpr int32_t kSpecial = 4; // the number of special ids; the first word has id kSpecial

} // namespace pillars::tokens
