// What an op *is*: its shape rule, its kernels, its vector-Jacobian product, how its parameters
// print and what one node costs. Where it runs is the kernel's business (kernels/cpu,
// kernels/cuda); how it is differentiated is written once, in terms of other ops, so the backward
// graph is an ordinary graph that every pass understands. Everything op-specific lives here, in
// the OpDef: passes never compare op names, they call the slots (or compare OpDef addresses).
//
// Each op family lives in engine/ops/<family>.cpp: OpDef objects plus the builder functions and
// the op's parameters struct, declared in engine/ops/<family>.h, which are the API models use.
// Every slot reads the parameters as the struct itself: params_of<P>(node) (engine/graph.h).
#pragma once
#include <span>
#include <string>
#include <vector>

#include "engine/graph.h"

namespace pillars {

// What a kernel sees: the node (for its parameters, params_of), its input and output tensors (contiguous,
// shapes as inferred), and a scratch buffer of the size the op asked for.
struct KernelContext {
  const Node& node;
  std::span<const Tensor> in;
  std::span<Tensor> out;
  void* workspace = nullptr;
  // The run's random seed (Executor::set_seed). Random ops draw from Philox stream
  // (params.seed + run_seed, params.rng_offset), so one cached graph gives fresh dropout masks
  // every step while forward and backward of a step agree.
  uint64_t run_seed = 0;
  // On the GPU the run seed also lives in device memory, where kernels read it (a captured CUDA
  // graph replays the same launch arguments, but reads this word afresh each replay).
  const uint64_t* device_run_seed = nullptr;
};

struct OutputSpec {
  Shape shape;
  DType dtype = DType::f32;
};

// The floating-point operations of one node (a multiply-add is 2), by kind: what
// engine/passes/flops.h sums over a graph.
struct NodeFlops {
  double matmul = 0;    // matrix products (matmul, the product inside linear_act)
  double attention = 0; // the two products per head of fused attention (Q·Kᵀ, P·V) and its backward's five
  double other = 0;     // everything else: elementwise, norms, softmax, losses, ...
  double total() const { return matmul + attention + other; }
};

struct OpDef {
  const char* name;
  // Shape/type rule: validate the inputs (throw pillars::Error naming the op and shapes) and return
  // the outputs' shapes and dtypes.
  std::vector<OutputSpec> (*infer)(const Graph& g, const Node& node) = nullptr;
  // CPU kernel; the CUDA slot is filled by the CUDA backend (nullptr: not available on the GPU).
  void (*cpu)(const KernelContext& ctx) = nullptr;
  void (*cuda)(const KernelContext& ctx) = nullptr;
  // Vector-Jacobian product. Given the gradients of the node's outputs (kNoValue where an output
  // has none), append nodes to `g` computing the gradient of every input i with needs[i] set, and
  // return them (kNoValue for inputs that get no gradient). `node` is a copy: g may reallocate.
  std::vector<ValueId> (*vjp)(Graph& g, const Node& node, const std::vector<ValueId>& grad_out,
                              const std::vector<bool>& needs) = nullptr;
  // Scratch bytes the CPU kernel needs (nullptr: none). Allocated once by the executor.
  size_t (*workspace)(const Graph& g, const Node& node) = nullptr;
  // Scratch bytes the CUDA kernel needs (nullptr: none), in device memory.
  size_t (*cuda_workspace)(const Graph& g, const Node& node) = nullptr;
  // The node's parameters as text for the graph printer (engine/passes/print.h), each with a
  // leading space: " eps=1e-05 gamma beta". nullptr: the op prints none.
  std::string (*print)(const Node& node) = nullptr;
  // The FLOPs of one node. nullptr: one FLOP per output element, under "other".
  NodeFlops (*flops)(const Graph& g, const Node& node) = nullptr;
  // True when output 0 is a view of input 0 (same bytes, new shape): no kernel runs, and the
  // memory planner gives both the same buffer.
  bool is_view = false;
  // True when output 0 may be written over input 0's buffer: the kernel reads element i of input 0
  // before it writes element i of output 0, and nothing else. plan_memory uses this when input 0
  // dies at this node and has output 0's size (gradient accumulation, activation gradients, the
  // cross-entropy gradient over the logits): the largest buffers of a step are then reused at once.
  bool inplace = false;
  // True when the op updates state in place: its kernel writes into input 0's buffer (a cache the
  // caller bound as an input, engine/ops/decoding.h), and output 0 is that buffer after the write
  // (its first rows, when output 0 has fewer). The memory planner aliases the two as it does a
  // view; unlike a view, the kernel runs. Never differentiated.
  bool updates_input0 = false;
  // True when the outputs after the first are gradients the node made in its forward (the fused
  // loss of engine/ops/linear_cross_entropy.h: ∂L/∂h and ∂L/∂W). They are not activations:
  // saved_activations (engine/passes/saved_activations.h) never keeps them in bf16.
  bool makes_gradients = false;
};

// The `cuda` slot of an OpDef: PILLARS_CUDA_KERNEL(add) names cuda::op_add (engine/ops/cuda/ops.h)
// in a CUDA build and is nullptr in a CPU-only one, so op files need no #ifdefs.
// PILLARS_CUDA_WORKSPACE(name) likewise names cuda::op_<name>_workspace, the device scratch size.
#ifdef PILLARS_HAVE_CUDA
#define PILLARS_CUDA_KERNEL(name) (&::pillars::cuda::op_##name)
#define PILLARS_CUDA_WORKSPACE(name) (&::pillars::cuda::op_##name##_workspace)
#else
#define PILLARS_CUDA_KERNEL(name) nullptr
#define PILLARS_CUDA_WORKSPACE(name) nullptr
#endif

// Leaf ops (no kernel).
extern const OpDef kInputOp, kParamOp, kConstantOp;

// An input, parameter or constant: bound from outside the graph, never computed.
inline bool is_leaf(const Node& n) { return n.op == &kInputOp || n.op == &kParamOp || n.op == &kConstantOp; }

} // namespace pillars

#ifdef PILLARS_HAVE_CUDA
#include "engine/ops/cuda/ops.h"
#endif
