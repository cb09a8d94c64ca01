// Tensor: a typed, shaped view into reference-counted, 64-byte-aligned storage.
//
//   Tensor t = Tensor::empty({B, T, D}, DType::f32);   // uninitialized, row-major, contiguous
//   float* p = t.data<float>();                        // typed access (checked dtype)
//   Tensor v = t.reshape({B * T, D});                  // a view: same storage, no copy
//   Tensor r = t.slice0(2, 5);                         // rows [2, 5) along axis 0: a view
//
// Views exist only where they are free (reshape of a contiguous tensor, a range along the first
// axis); everything else (transpose, permute, general slices) is an op that copies. So every
// Tensor is contiguous and row-major: kernels never have to think about strides.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "base/enum_names.h"

namespace pillars {

enum class DType : uint8_t { f32, i32, bf16, i64 };
enum class Device : uint8_t { cpu, cuda };
constexpr auto enum_table(Device) { return enum_words<Device>({{Device::cpu, "cpu"}, {Device::cuda, "cuda"}}); }

size_t dtype_size(DType t);
const char* dtype_name(DType t);   // "f32", "i32", "bf16", "i64"
const char* device_name(Device d); // "cpu", "cuda"

// A shape is a list of extents; a scalar has rank 0 and one element.
using Shape = std::vector<int64_t>;
int64_t numel(const Shape& s);
std::string shape_str(const Shape& s); // "[2, 3, 4]"
// The shape `to` with its one -1 (if any) inferred so that it holds numel(from) elements; throws
// if the element counts cannot match. Shared by Tensor::reshape and the reshape op.
Shape resolve_reshape(const Shape& from, const Shape& to);

// bf16 is a storage type: the upper 16 bits of an IEEE f32 (round-to-nearest-even on the way in).
uint16_t f32_to_bf16(float x);
float bf16_to_f32(uint16_t x);

// Raw bytes, 64-byte aligned, owned by whoever holds the last shared_ptr. CUDA storage is owned by
// the CUDA backend; on the CPU it is aligned_alloc'd.
struct Storage {
  void* data = nullptr;
  size_t bytes = 0;
  Device device = Device::cpu;
  bool owned = true;   // false: wraps memory someone else frees (an arena, a mapped file)
  bool pinned = false; // host memory page-locked by CUDA (allocate_pinned)
  ~Storage();
  static std::shared_ptr<Storage> allocate(size_t bytes, Device device = Device::cpu);
  // Host memory the GPU can copy to and from asynchronously (runtime/cuda_device.h); CUDA builds only.
  static std::shared_ptr<Storage> allocate_pinned(size_t bytes);
  static std::shared_ptr<Storage> wrap(void* data, size_t bytes, Device device = Device::cpu);
};

class Tensor {
 public:
  Tensor() = default;
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
  static Tensor zeros(const Shape& shape, DType dtype = DType::f32);
  static Tensor full(const Shape& shape, float value);
  static Tensor from(const Shape& shape, const std::vector<float>& values);
  static Tensor from_i32(const Shape& shape, const std::vector<int32_t>& values);
  // A tensor over memory owned elsewhere (no copy, not freed by us).
  static Tensor view_of(void* data, const Shape& shape, DType dtype, Device device = Device::cpu);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const; // negative axes count from the end
  int64_t numel() const { return pillars::numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device : Device::cpu; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return static_cast<char*>(storage_->data) + offset_; }
  template <class T>
  T* data() const;

  Tensor reshape(const Shape& shape) const; // view; -1 infers one extent
  // Makes *this a view of src's bytes with `shape` (same element count). Unlike reshape it reuses
  // this tensor's shape storage, so re-pointing a view every step allocates nothing.
  void assign_view(const Tensor& src, const Shape& shape);
  Tensor slice0(int64_t begin, int64_t end) const; // view of rows [begin, end) along axis 0
  Tensor clone() const;                            // deep copy
  void copy_from(const Tensor& src);               // same shape and dtype; any devices (to the host: waits)
  Tensor to(Device device) const;                  // *this if already there, else a copy
  void fill(float value);                          // f32 or bf16 or i32 (value cast)
  std::vector<float> to_vector() const;            // any dtype, any device → f32 values (tests, I/O)
  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0; // bytes
  Shape shape_;
  DType dtype_ = DType::f32;
};

template <class T>
struct dtype_of;
template <>
struct dtype_of<float> {
  static constexpr DType value = DType::f32;
};
template <>
struct dtype_of<int32_t> {
  static constexpr DType value = DType::i32;
};
template <>
struct dtype_of<uint16_t> {
  static constexpr DType value = DType::bf16;
};
template <>
struct dtype_of<int64_t> {
  static constexpr DType value = DType::i64;
};

void check_dtype(const Tensor& t, DType expected); // throws with a clear message

template <class T>
T* Tensor::data() const {
  check_dtype(*this, dtype_of<T>::value);
  return static_cast<T*>(raw());
}

} // namespace pillars
