// The arithmetic of a run's matrix products: the experiment's train.precision.
//
//   fp32  every product in IEEE fp32.
//   bf16  the operands of the products rounded to bf16 (8 significant bits), each product of two
//         bf16 values formed exactly and summed in fp32; master weights, optimizer, normalization,
//         softmax and loss stay fp32.
// Each device sets it once per process and its kernels read it: runtime/cuda_device.h
// (cuda_set_precision: cuBLAS and the attention kernels on the tensor cores) and
// kernels/cpu/gemm_precision.h (set_matmul_precision: the CPU's matmul GEMMs).
#pragma once
#include <cstdint>

#include "base/enum_names.h"

namespace pillars {

enum class Precision : uint8_t { fp32, bf16 };
constexpr auto enum_table(Precision) {
  return enum_words<Precision>({{Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}});
}

} // namespace pillars
