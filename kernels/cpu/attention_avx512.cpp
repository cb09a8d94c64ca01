// The attention tile kernels compiled for AVX-512 (16 lanes, a 6 × 64 register block: 24 of the 32
// zmm registers hold accumulators). Called only after a run-time CPU check (attention.cpp).
#include <immintrin.h>

#define PILLARS_ATTENTION_TILES_IMPL
#define PILLARS_TILES_VW 16
#define PILLARS_TILES_NV 4
#define PILLARS_TILES_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define PILLARS_TILES_NAME tiles_avx512
#define PILLARS_TILES_ISA "avx512"
#include "kernels/cpu/attention_tiles.h"
