// cuDNN's backend (graph) API made readable, for the cuDNN files (nvcc only; compiled only when
// the build has cuDNN): a checked RAII descriptor (Desc), the tensors and by-value constants of a
// graph, and GraphBuilder, which adds operations (matmul, pointwise, reduction, reshape) to an
// operation graph and then asks the heuristics for engine configurations until one finalizes into
// an execution Plan. cudnn_attention.cu builds its flash-attention graphs with it.
#pragma once
#include <cudnn.h>

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/cudnn_internal.h"

namespace pillars::cuda::cudnn_graph {

// Uids of a graph: callers number their real tensors below kFirstConstantUid; by-value constants
// and virtual tensors are numbered from these.
constexpr int64_t kFirstConstantUid = 100, kFirstVirtualUid = 1000;

// An attribute's enum value with its name, for error messages: PILLARS_ATTR(CUDNN_ATTR_...).
struct Attr {
  cudnnBackendAttributeName_t name;
  const char* label;
};
#define PILLARS_ATTR(name) (Attr{name, #name})

// One backend descriptor, destroyed with its owner; every call checked, naming the descriptor
// (`what`) and the attribute.
class Desc {
 public:
  Desc(cudnnBackendDescriptorType_t type, const char* what) : what_(what) {
    check(cudnnBackendCreateDescriptor(type, &d_), "cudnnBackendCreateDescriptor", "");
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)), what_(o.what_) {}
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Desc& operator=(Desc&&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }

  Desc& set(Attr a, cudnnBackendAttributeType_t type, int64_t count, const void* values) {
    check(cudnnBackendSetAttribute(d_, a.name, type, count, values), "cudnnBackendSetAttribute", a.label);
    return *this;
  }
  Desc& i64(Attr a, int64_t v) { return set(a, CUDNN_TYPE_INT64, 1, &v); }
  Desc& i64s(Attr a, const std::vector<int64_t>& v) {
    return set(a, CUDNN_TYPE_INT64, static_cast<int64_t>(v.size()), v.data());
  }
  Desc& dtype(Attr a, cudnnDataType_t v) { return set(a, CUDNN_TYPE_DATA_TYPE, 1, &v); }
  Desc& boolean(Attr a, bool v) { return set(a, CUDNN_TYPE_BOOLEAN, 1, &v); }
  Desc& desc(Attr a, cudnnBackendDescriptor_t v) { return set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v); }
  Desc& descs(Attr a, const std::vector<cudnnBackendDescriptor_t>& v) {
    return set(a, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(v.size()), v.data());
  }
  Desc& handle(Attr a, cudnnHandle_t v) { return set(a, CUDNN_TYPE_HANDLE, 1, &v); }
  Desc& finalize() {
    check(cudnnBackendFinalize(d_), "cudnnBackendFinalize", "");
    return *this;
  }
  // Finalize without throwing (an engine configuration that does not fit is not an error).
  cudnnStatus_t try_finalize() { return cudnnBackendFinalize(d_); }

 private:
  void check(cudnnStatus_t status, const char* call, const char* attr) const {
    if (status == CUDNN_STATUS_SUCCESS) return;
    cudnn_check(status, str_cat(call, "(", what_, attr[0] ? ", " : "", attr, ")").c_str(), __FILE__, __LINE__);
  }
  cudnnBackendDescriptor_t d_ = nullptr;
  const char* what_;
};

using Dims = std::vector<int64_t>;

struct TensorDesc {
  Desc desc;
  Dims dims, strides;
};

// A by-value constant: its uid and its 4 bytes (float or int32), kept with the plan so that the
// variant pack can point at them.
struct Constant {
  int64_t uid;
  union {
    float f;
    int32_t i;
  } value;
};

// A finalized execution plan with everything it was built from.
struct Plan {
  std::deque<TensorDesc> tensors;
  std::deque<Desc> descs; // operations and their sub-descriptors, the graph, heuristics, configs
  std::deque<Constant> constants;
  cudnnBackendDescriptor_t plan = nullptr; // owned by `descs`
  int64_t workspace = 0;
};

// Builds an operation graph into a Plan, then finds and finalizes an execution plan for it.
class GraphBuilder {
 public:
  explicit GraphBuilder(Plan& p) : p_(p) {}

  const TensorDesc& real(int64_t uid, Dims dims, Dims strides, cudnnDataType_t type) {
    return tensor(uid, std::move(dims), std::move(strides), type, false, false);
  }
  const TensorDesc& virt(Dims dims, Dims strides, cudnnDataType_t type) {
    return tensor(next_virtual_++, std::move(dims), std::move(strides), type, true, false);
  }
  const TensorDesc& by_value(int64_t uid, cudnnDataType_t type) {
    return tensor(uid, {1, 1, 1, 1}, {1, 1, 1, 1}, type, false, true);
  }
  const TensorDesc& constant_f32(float v) {
    Constant c{next_constant_++, {}};
    c.value.f = v;
    p_.constants.push_back(c);
    return by_value(c.uid, CUDNN_DATA_FLOAT);
  }
  const TensorDesc& constant_i32(int32_t v) {
    Constant c{next_constant_++, {}};
    c.value.i = v;
    p_.constants.push_back(c);
    return by_value(c.uid, CUDNN_DATA_INT32);
  }

  // y = mode(x [, b [, t]]) with the given math precision; y is a new virtual tensor shaped like x
  // (of type `out`) unless given. axis ≥ 0: GEN_INDEX's axis.
  const TensorDesc& pointwise(cudnnPointwiseMode_t mode, const TensorDesc& x, const TensorDesc* b, const TensorDesc* t,
                              cudnnDataType_t out, cudnnDataType_t math = CUDNN_DATA_FLOAT, int64_t axis = -1,
                              const TensorDesc* y = nullptr) {
    if (!y) y = &virt(x.dims, x.strides, out);
    Desc& pw = add(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "pointwise descriptor");
    pw.set(PILLARS_ATTR(CUDNN_ATTR_POINTWISE_MODE), CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    pw.dtype(PILLARS_ATTR(CUDNN_ATTR_POINTWISE_MATH_PREC), math);
    if (axis >= 0) pw.i64(PILLARS_ATTR(CUDNN_ATTR_POINTWISE_AXIS), axis);
    pw.finalize();
    Desc& op = add(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "pointwise operation");
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR), pw.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_XDESC), x.desc.get());
    if (b) op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_BDESC), b->desc.get());
    if (t) op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_TDESC), t->desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_POINTWISE_YDESC), y->desc.get());
    op.finalize();
    ops_.push_back(op.get());
    return *y;
  }

  // c = a b over the last two axes (fp32 accumulation); the overrides bound the rows (M), the
  // columns (N) or the inner length (K) per batch row: cuDNN's variable sequence lengths.
  void matmul(const TensorDesc& a, const TensorDesc& b, const TensorDesc& c, const TensorDesc* m_override,
              const TensorDesc* n_override, const TensorDesc* k_override) {
    Desc& mm = add(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "matmul descriptor");
    mm.dtype(PILLARS_ATTR(CUDNN_ATTR_MATMUL_COMP_TYPE), CUDNN_DATA_FLOAT);
    mm.finalize();
    Desc& op = add(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "matmul operation");
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_ADESC), a.desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_BDESC), b.desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_CDESC), c.desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_DESC), mm.get());
    if (m_override) op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC), m_override->desc.get());
    if (n_override) op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC), n_override->desc.get());
    if (k_override) op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC), k_override->desc.get());
    op.finalize();
    ops_.push_back(op.get());
  }

  // y = reduce(x) over the axes where y has extent 1 (fp32).
  void reduction(cudnnReduceTensorOp_t mode, const TensorDesc& x, const TensorDesc& y) {
    Desc& red = add(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "reduction descriptor");
    red.set(PILLARS_ATTR(CUDNN_ATTR_REDUCTION_OPERATOR), CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
    red.dtype(PILLARS_ATTR(CUDNN_ATTR_REDUCTION_COMP_TYPE), CUDNN_DATA_FLOAT);
    red.finalize();
    Desc& op = add(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "reduction operation");
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_XDESC), x.desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_YDESC), y.desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_REDUCTION_DESC), red.get());
    op.finalize();
    ops_.push_back(op.get());
  }

  // y = x seen with other dimensions and strides (here: the last two axes swapped).
  const TensorDesc& reshape(const TensorDesc& x, Dims dims, Dims strides, cudnnDataType_t type) {
    const TensorDesc& y = virt(std::move(dims), std::move(strides), type);
    Desc& op = add(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "reshape operation");
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_RESHAPE_XDESC), x.desc.get());
    op.desc(PILLARS_ATTR(CUDNN_ATTR_OPERATION_RESHAPE_YDESC), y.desc.get());
    op.finalize();
    ops_.push_back(op.get());
    return y;
  }

  // The operation graph → engine configurations from the heuristics (mode A, then the fallback
  // list) → the first one that finalizes into an execution plan. `what` names the graph in errors.
  void build(const std::string& what) {
    const cudnnHandle_t h = cudnn_handle();
    Desc& graph = add(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "operation graph");
    graph.handle(PILLARS_ATTR(CUDNN_ATTR_OPERATIONGRAPH_HANDLE), h);
    graph.descs(PILLARS_ATTR(CUDNN_ATTR_OPERATIONGRAPH_OPS), ops_);
    graph.finalize();
    std::string tried;
    for (cudnnBackendHeurMode_t mode : {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      Desc& heur = add(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, "engine heuristics");
      heur.desc(PILLARS_ATTR(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH), graph.get());
      heur.set(PILLARS_ATTR(CUDNN_ATTR_ENGINEHEUR_MODE), CUDNN_TYPE_HEUR_MODE, 1, &mode);
      if (heur.try_finalize() != CUDNN_STATUS_SUCCESS) continue; // e.g. no fallback list for this graph
      int64_t count = 0;
      PILLARS_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
      std::vector<cudnnBackendDescriptor_t> configs;
      for (int64_t i = 0; i < count; ++i)
        configs.push_back(add(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, "engine config").get());
      int64_t returned = 0;
      if (count > 0)
        PILLARS_CUDNN_CHECK(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned, configs.data()));
      for (int64_t i = 0; i < returned; ++i) {
        Desc& plan = add(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, "execution plan");
        plan.handle(PILLARS_ATTR(CUDNN_ATTR_EXECUTION_PLAN_HANDLE), h);
        plan.desc(PILLARS_ATTR(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG), configs[static_cast<size_t>(i)]);
        const cudnnStatus_t status = plan.try_finalize();
        if (status != CUDNN_STATUS_SUCCESS) {
          tried += str_cat(tried.empty() ? "" : ", ", cudnnGetErrorString(status));
          continue;
        }
        int64_t n = 0;
        PILLARS_CUDNN_CHECK(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                     CUDNN_TYPE_INT64, 1, &n, &p_.workspace));
        p_.plan = plan.get();
        return;
      }
    }
    throw Error(str_cat("cuDNN: no engine can run the ", what,
                        " graph (engine configurations tried: ", tried.empty() ? "none offered" : tried, ")"));
  }

 private:
  const TensorDesc& tensor(int64_t uid, Dims dims, Dims strides, cudnnDataType_t type, bool is_virtual, bool by_value) {
    TensorDesc& t = p_.tensors.emplace_back(
        TensorDesc{Desc(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "tensor"), std::move(dims), std::move(strides)});
    t.desc.dtype(PILLARS_ATTR(CUDNN_ATTR_TENSOR_DATA_TYPE), type);
    t.desc.i64s(PILLARS_ATTR(CUDNN_ATTR_TENSOR_DIMENSIONS), t.dims);
    t.desc.i64s(PILLARS_ATTR(CUDNN_ATTR_TENSOR_STRIDES), t.strides);
    t.desc.i64(PILLARS_ATTR(CUDNN_ATTR_TENSOR_UNIQUE_ID), uid);
    t.desc.i64(PILLARS_ATTR(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT), 16);
    t.desc.boolean(PILLARS_ATTR(CUDNN_ATTR_TENSOR_IS_VIRTUAL), is_virtual);
    if (by_value) t.desc.boolean(PILLARS_ATTR(CUDNN_ATTR_TENSOR_IS_BY_VALUE), true);
    t.desc.finalize();
    return t;
  }
  Desc& add(cudnnBackendDescriptorType_t type, const char* what) { return p_.descs.emplace_back(type, what); }

  Plan& p_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_virtual_ = kFirstVirtualUid, next_constant_ = kFirstConstantUid;
};

} // namespace pillars::cuda::cudnn_graph
