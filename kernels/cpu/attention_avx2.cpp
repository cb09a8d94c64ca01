// The attention tile kernels compiled for AVX2 + FMA (8 lanes, a 6 × 16 register block: 12 of the
// 16 ymm registers hold accumulators). Called only after a run-time CPU check (attention.cpp).
#include <immintrin.h>

#define PILLARS_ATTENTION_TILES_IMPL
#define PILLARS_TILES_VW 8
#define PILLARS_TILES_NV 2
#define PILLARS_TILES_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define PILLARS_TILES_NAME tiles_avx2
#define PILLARS_TILES_ISA "avx2"
#include "kernels/cpu/attention_tiles.h"
