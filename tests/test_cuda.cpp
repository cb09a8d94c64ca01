// The CUDA backend's plumbing. On a machine without a GPU every case prints why it is skipped.
#include <doctest/doctest.h>

#include "skip.h"

#include <vector>

#include "runtime/cuda_device.h"

using namespace pillars;

TEST_CASE("cuda: device memory round trip and a kernel launch") {
  if (pillars::testing::no_gpu()) return;
  MESSAGE("running on ", cuda_device_name(0));
  const long n = 1000;
  std::vector<float> x(n), y(n), out(n);
  for (long i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  void* dx = cuda_malloc_or_throw(n * sizeof(float));
  void* dy = cuda_malloc_or_throw(n * sizeof(float));
  cuda_copy_to_device(dx, x.data(), n * sizeof(float));
  cuda_copy_to_device(dy, y.data(), n * sizeof(float));
  cuda_saxpy(2.0f, static_cast<const float*>(dx), static_cast<float*>(dy), n);
  cuda_copy_to_host(out.data(), dy, n * sizeof(float));
  cuda_free(dx);
  cuda_free(dy);
  for (long i = 0; i < n; ++i) CHECK(out[i] == 2.0f * i + 1.0f);
}
