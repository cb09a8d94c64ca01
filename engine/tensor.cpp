// Tensor and Storage: see tensor.h.
#include "engine/tensor.h"

#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "kernels/bf16_bits.h"
#include "runtime/cuda_device.h"

namespace pillars {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::i32:
      return 4;
    case DType::bf16:
      return 2;
    case DType::i64:
      return 8;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::i32:
      return "i32";
    case DType::bf16:
      return "bf16";
    case DType::i64:
      return "i64";
  }
  return "?";
}

const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t e : s) n *= e;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

uint16_t f32_to_bf16(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bf16_bits_of_f32_bits(bits);
}

float bf16_to_f32(uint16_t x) {
  const uint32_t bits = static_cast<uint32_t>(x) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// ---- Storage --------------------------------------------------------------------------------

Storage::~Storage() {
  if (!owned || !data) return;
  if (pinned) {
    cuda_host_free(data);
  } else if (device == Device::cpu) {
    std::free(data);
  } else {
    cuda_free(data);
  }
}

std::shared_ptr<Storage> Storage::allocate(size_t bytes, Device device) {
  auto s = std::make_shared<Storage>();
  s->bytes = bytes;
  s->device = device;
  if (device == Device::cpu) {
    const size_t rounded = (bytes + 63) / 64 * 64; // aligned_alloc wants a multiple of the alignment
    s->data = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
    if (!s->data) throw Error(str_cat("out of memory allocating ", bytes, " bytes"));
  } else {
    s->data = cuda_malloc_or_throw(bytes); // throws in a build without CUDA
  }
  return s;
}

std::shared_ptr<Storage> Storage::allocate_pinned(size_t bytes) {
  auto s = std::make_shared<Storage>();
  s->bytes = bytes;
  s->data = cuda_host_alloc(bytes); // throws in a build without CUDA
  s->pinned = true;
  return s;
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t bytes, Device device) {
  auto s = std::make_shared<Storage>();
  s->data = data;
  s->bytes = bytes;
  s->device = device;
  s->owned = false;
  return s;
}

// ---- Tensor ---------------------------------------------------------------------------------

void check_dtype(const Tensor& t, DType expected) {
  if (t.dtype() != expected)
    throw Error(str_cat("tensor of dtype ", dtype_name(t.dtype()), " used as ", dtype_name(expected)));
}

// Extents must be non-negative and the byte size must fit in 63 bits (no silent overflow).
static void check_shape(const Shape& shape, DType dtype = DType::f32) {
  int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
  for (int64_t e : shape) {
    if (e < 0) throw Error(str_cat("negative extent in shape ", shape_str(shape)));
    if (e != 0 && __builtin_mul_overflow(bytes, e, &bytes))
      throw Error(str_cat("shape ", shape_str(shape), " of ", dtype_name(dtype), " is too large to address"));
  }
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape(shape, dtype);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = Storage::allocate(static_cast<size_t>(pillars::numel(shape)) * dtype_size(dtype), device);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Tensor Tensor::full(const Shape& shape, float value) {
  Tensor t = empty(shape, DType::f32);
  t.fill(value);
  return t;
}

Tensor Tensor::from(const Shape& shape, const std::vector<float>& values) {
  PILLARS_CHECK(static_cast<int64_t>(values.size()) == pillars::numel(shape), "Tensor::from: ", values.size(),
                " values for shape ", shape_str(shape));
  Tensor t = empty(shape, DType::f32);
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::from_i32(const Shape& shape, const std::vector<int32_t>& values) {
  PILLARS_CHECK(static_cast<int64_t>(values.size()) == pillars::numel(shape), "Tensor::from_i32: ", values.size(),
                " values for shape ", shape_str(shape));
  Tensor t = empty(shape, DType::i32);
  std::memcpy(t.raw(), values.data(), t.nbytes());
  return t;
}

Tensor Tensor::view_of(void* data, const Shape& shape, DType dtype, Device device) {
  check_shape(shape, dtype);
  Tensor t;
  t.shape_ = shape;
  t.dtype_ = dtype;
  t.storage_ = Storage::wrap(data, static_cast<size_t>(pillars::numel(shape)) * dtype_size(dtype), device);
  return t;
}

int64_t Tensor::dim(int axis) const {
  const int r = rank();
  const int a = axis < 0 ? axis + r : axis;
  PILLARS_CHECK(a >= 0 && a < r, "axis ", axis, " out of range for shape ", shape_str(shape_));
  return shape_[a];
}

Shape resolve_reshape(const Shape& from, const Shape& to) {
  Shape s = to;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      PILLARS_CHECK(infer < 0, "reshape: more than one -1 in ", shape_str(to));
      infer = static_cast<int>(i);
    } else {
      known *= s[i];
    }
  }
  const int64_t n = pillars::numel(from);
  if (infer >= 0) {
    PILLARS_CHECK(known > 0 && n % known == 0, "reshape: cannot infer ", shape_str(to), " from ", shape_str(from));
    s[static_cast<size_t>(infer)] = n / known;
  }
  PILLARS_CHECK(pillars::numel(s) == n, "reshape: ", shape_str(from), " has ", n, " elements, ", shape_str(s), " has ",
                pillars::numel(s));
  return s;
}

Tensor Tensor::reshape(const Shape& shape) const {
  Tensor t = *this;
  t.shape_ = resolve_reshape(shape_, shape);
  return t;
}

void Tensor::assign_view(const Tensor& src, const Shape& shape) {
  PILLARS_CHECK(pillars::numel(shape) == src.numel(), "assign_view: ", shape_str(src.shape()), " viewed as ",
                shape_str(shape));
  storage_ = src.storage_;
  offset_ = src.offset_;
  dtype_ = src.dtype_;
  shape_ = shape; // copy-assignment: reuses shape_'s capacity
}

Tensor Tensor::slice0(int64_t begin, int64_t end) const {
  PILLARS_CHECK(rank() >= 1 && 0 <= begin && begin <= end && end <= shape_[0], "slice0: [", begin, ", ", end,
                ") out of range for ", shape_str(shape_));
  Tensor t = *this;
  const int64_t row = pillars::numel(shape_) / (shape_[0] == 0 ? 1 : shape_[0]);
  t.offset_ += static_cast<size_t>(begin * row) * dtype_size(dtype_);
  t.shape_[0] = end - begin;
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device());
  t.copy_from(*this);
  return t;
}

void Tensor::copy_from(const Tensor& src) {
  PILLARS_CHECK(src.shape_ == shape_ && src.dtype_ == dtype_, "copy_from: ", shape_str(src.shape_), " ",
                dtype_name(src.dtype_), " into ", shape_str(shape_), " ", dtype_name(dtype_));
  if (!nbytes()) return;
  if (device() == Device::cpu && src.device() == Device::cpu)
    std::memmove(raw(), src.raw(), nbytes());
  else if (device() == Device::cpu)
    cuda_copy_to_host(raw(), src.raw(), nbytes());
  else if (src.device() == Device::cpu)
    cuda_copy_to_device(raw(), src.raw(), nbytes());
  else
    cuda_copy_on_device(raw(), src.raw(), nbytes());
}

Tensor Tensor::to(Device d) const {
  if (device() == d) return *this;
  Tensor t = empty(shape_, dtype_, d);
  t.copy_from(*this);
  return t;
}

void Tensor::fill(float value) {
  if (device() != Device::cpu && value == 0.0f) { // +0 and −0 alike: every dtype's zero is all zero bytes
    cuda_zero(raw(), nbytes());
    return;
  }
  if (device() != Device::cpu) { // fill on the host, copy once: fill is for setup, not for steps
    Tensor host = empty(shape_, dtype_);
    host.fill(value);
    copy_from(host);
    return;
  }
  const int64_t n = numel();
  switch (dtype_) {
    case DType::f32: {
      float* p = data<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = value;
      break;
    }
    case DType::i32: {
      int32_t* p = data<int32_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int32_t>(value);
      break;
    }
    case DType::i64: {
      int64_t* p = data<int64_t>();
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<int64_t>(value);
      break;
    }
    case DType::bf16: {
      uint16_t* p = data<uint16_t>();
      const uint16_t b = f32_to_bf16(value);
      for (int64_t i = 0; i < n; ++i) p[i] = b;
      break;
    }
  }
}

std::vector<float> Tensor::to_vector() const {
  if (device() != Device::cpu) return to(Device::cpu).to_vector();
  const int64_t n = numel();
  std::vector<float> out(static_cast<size_t>(n));
  switch (dtype_) {
    case DType::f32:
      std::memcpy(out.data(), raw(), nbytes());
      break;
    case DType::i32: {
      auto* p = data<int32_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      break;
    }
    case DType::i64: {
      auto* p = data<int64_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p[i]);
      break;
    }
    case DType::bf16: {
      auto* p = data<uint16_t>();
      for (int64_t i = 0; i < n; ++i) out[i] = bf16_to_f32(p[i]);
      break;
    }
  }
  return out;
}

} // namespace pillars
