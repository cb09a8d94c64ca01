// The head-level baselines the GHT paper compares with (docs/METHOD.md §6), as passes and head
// gates on the step graph (train/pass_list.cpp runs them) and two helpers for pruning by score. Notation: a model has M attention
// modules (steps/steps.h builds one graph per batch shape; every module is an AttentionSite), module
// m has H heads, O_h is head h's output A_h V_h before out_proj, and a head gate ξ (H) multiplies
// it: out_proj(ξ_1 O_1 | … | ξ_H O_H)  (the head_gates pass, steps/head_gates.h).
// L_task is the model's loss: label-smoothed cross-entropy, mean over the batch's target tokens.
//
// 1. Disagreement regularization — Li, Tu, Yang, Lyu, Zhang, "Multi-Head Attention with
//    Disagreement Regularization", EMNLP 2018 (arXiv 1810.10183). Training graphs only:
//
//        D_m  = mean_{i≠j} cos(e_i, e_j)           e_h = head h's feature map flattened over
//                                                 (batch, valid positions, features)
//        L    = L_task + λ · (1/M) Σ_m D_m        (maximizing disagreement −D = minimizing cosine)
//
//    Li et al.'s three variants pick the feature map: "subspace" → V (X W^V_h), "position" → A
//    (the attention probabilities), "output" → O (A_h V_h). D_m comes from the (H, H) Gram matrix
//    of the chosen map (ght::feature_gram, padding left out; ght::mean_pairwise_cosine), so the
//    maps are never copied.
//    Departures (our decisions):
//    - "position": Li et al. use the un-normalized mean elementwise product (1/H²) Σ_ij |A_i ⊙ A_j|;
//      we use the cosine of the flattened attention maps like the other two variants (one Gram-based
//      path for all three; a cosine does not grow with batch size and length).
//    - Li et al. average over all H² pairs including i = j (each contributes the constant 1):
//      their −λ_Li·D_Li = λ_Li/H + λ_Li·(H−1)/H · mean_{i≠j} cos, so λ_ours = λ_Li·(H−1)/H gives the
//      same gradient (7/8 of theirs for the same λ with 8 heads).
//    - Modules are averaged (1/M Σ_m), so λ does not grow with depth.
//
// 2. Scheduled DropHead — Zhou, Ge, Xu, Wei, Zhou, "Scheduled DropHead: A Regularization Method for
//    Transformer Models", Findings of EMNLP 2020 (arXiv 2004.13342). Training graphs: every module
//    gets an input gate "head_gate.<module>" (H), bound before every run:
//
//        p(t)  = p_max · |1 − 2t|                 t = StepInfo::progress ∈ [0, 1]: the V-shaped
//                                                 schedule (p_max → 0 at mid-training → p_max)
//        m_h   ~ Bernoulli(1 − p(t))              m_h = [u_h ≥ p], u_h = Philox uniform of (seed,
//                                                 update, module index, h): deterministic
//        ξ_h   = m_h · H / Σ_j m_j                (rescaled so the kept heads' sum keeps its
//                                                 expected size; if Σ m = 0 every head is kept, ξ = 1)
//    Evaluation graphs are not gated (ξ ≡ 1, the module is unchanged).
//    Departure: Zhou et al. draw a mask per training example; head_gate is one (H) vector per
//    module, so here all rows of a batch share the mask of that module and update.
//    DropHead and Hard-Concrete gates may be combined (the head_gates pass multiplies the gates);
//    each gate declares its own run-time inputs on the step graph, with the function that fills them.
//
// 3. Hard-Concrete L0 head gates — Voita, Talbot, Moiseev, Sennrich, Titov, "Analyzing Multi-Head
//    Self-Attention: Specialized Heads Do the Heavy Lifting, the Rest Can Be Pruned", ACL 2019
//    (arXiv 1905.09418), with the stretched Hard-Concrete distribution of Louizos, Welling, Kingma,
//    "Learning Sparse Neural Networks through L0 Regularization", ICLR 2018 (arXiv 1712.01312).
//    Parameters "head_gate.<module>.log_alpha" (H); β = 2/3, γ = −0.1, ζ = 1.1 (Louizos et al.):
//
//      training   n_h = log u_h − log(1 − u_h)    u_h ~ U(0, 1) from Philox (seed, update, module,
//                                                 h), bound as the input "head_gate.<module>.noise"
//                 s_h = σ((n_h + log α_h) / β)
//                 ξ_h = clamp(s_h · (ζ − γ) + γ, 0, 1)
//      evaluation ξ_h = clamp(σ(log α_h) · (ζ − γ) + γ, 0, 1)            (expected_gates())
//      loss       L = L_task + λ · (1/N) Σ_m Σ_h σ(log α_{m,h} − β · log(−γ/ζ))
//                 σ(log α − β log(−γ/ζ)) = P(ξ_h ≠ 0), the expected L0 norm of the gates; N = the
//                 model's total number of heads, i.e. the penalty is the mean probability that a head
//                 is open. (Voita et al.'s code adds λ · (1/M) Σ_m Σ_h P(open): ours is that divided
//                 by H, so λ_ours = H · λ_Voita. Their temperature default is 0.33, ours 2/3 as
//                 Louizos et al.; both are settings. They also clip P(open) to [1e-6, 1 − 1e-6].)
//    σ and clamp are built from existing ops: σ(x) = ½ tanh(x/2) + ½, clamp01(x) = relu(x) −
//    relu(x − 1) (gradient 1 inside (0, 1), 0 outside, as the clip's).
//    Initialization: log α = 2 by default (add_parameters), so that gates start open: the
//    evaluation gate is clamp(σ(2)·1.2 − 0.1) = 0.957 and a training gate is exactly 0 with
//    probability σ(β·logit(1/12) − log α) ≈ 0.027. Voita et al. fine-tune a converged model and
//    initialize log α with TF's default glorot-uniform (|log α| ≲ 0.6, gates around one half), which
//    at once halves (in expectation) every head's contribution; starting open keeps the converged
//    model's function and lets the L0 term close heads gradually.
//
// 4. Head importance — Michel, Levy, Neubig, "Are Sixteen Heads Really Better than One?", NeurIPS
//    2019 (arXiv 1905.10650). With gates ξ ≡ 1 (parameters "head_gate.<module>" in a copy of the
//    ParamStore) and no dropout:
//
//        I_h = Σ_b |∂L_b / ∂ξ_h|                  over the first N training batches b, L_b the
//                                                 batch's mean loss (the sum over batches, as their
//                                                 code accumulates |grad| per batch)
//        Î_h = I_h / ‖I_{module}‖₂                 normalized per module over its heads (their
//                                                 layer-wise normalization, exponent 2)
//    Michel et al. then prune the heads of lowest Î globally and repeat; top_k_selection() turns
//    scores (Î, or Hard-Concrete expected gates) into a per-module HeadSelection for prune_heads().
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/dist/communicator.h"
#include "engine/params.h"
#include "ght/feature_maps.h"
#include "ght/prune.h"
#include "steps/head_gates.h"
#include "steps/task.h"

namespace pillars::ght {

// Per module (attention_modules order), per head: a score, a gate value, an importance.
using HeadScores = std::map<std::string, std::vector<double>>;

// ---- 1. Disagreement regularization (Li et al. 2018) ---------------------------------------------

struct DisagreementSettings {
  FeatureMap feature_map = FeatureMap::V; // subspace → V, position → A, output → O
  float lambda = 1.0f;                    // λ
};
// The variants map to feature maps by ght/settings.h's feature_map_of(Disagreement).

// The pass: objective += λ · (1/M) Σ_m D_m; names (1/M) Σ_m D_m "disagreement.mean_cosine" and
// logs it as "disagreement_mean_cosine".
void disagreement(steps::StepGraph& step, const DisagreementSettings& s);

// ---- 2. Scheduled DropHead (Zhou et al. 2020) ----------------------------------------------------

struct DropHeadSettings {
  float p_max = 0.2f; // the rate at the start and at the end of training (our default; tune it)
  uint64_t seed = 1;  // pass the experiment's seed: the masks are a function of (seed, update)
};

// p(t) = p_max · |1 − 2t|, t clamped to [0, 1].
double drophead_rate(double p_max, double progress);
// ξ (H) of module `module_index` (graph order) for an update: m_h = [u_h ≥ p], ξ_h = m_h · H / Σ m
// (all ones when Σ m = 0), u_h = philox_uniform(key(seed, update), module_index · 2^32, h).
std::vector<float> drophead_gates(uint64_t seed, int64_t update, size_t module_index, int64_t heads, double p);
std::string drophead_gate_input(const std::string& module); // "head_gate.<module>"

// The gate of a training step's module: the run-time input "head_gate.<module>" (H), filled
// with drophead_gates(seed, update, module, H, p(progress)) before every run; none in evaluation.
steps::HeadGate drophead_gate(const DropHeadSettings& s);

// ---- 3. Hard-Concrete L0 gates (Voita et al. 2019) -----------------------------------------------

struct HardConcreteSettings {
  float lambda = 1.0f;              // λ of the L0 term (mean over all heads, see above)
  float beta = 2.0f / 3.0f;         // temperature β
  float gamma = -0.1f, zeta = 1.1f; // stretch limits γ < 0 < 1 < ζ
  uint64_t seed = 1;                // noise: a function of (seed, update)
};
constexpr float kHardConcreteInitLogAlpha = 2.0f;

std::string log_alpha_name(const std::string& module);       // "head_gate.<module>.log_alpha"
std::string concrete_noise_input(const std::string& module); // "head_gate.<module>.noise"
// The logistic noise n_h = log u_h − log(1 − u_h) (H) of a module for an update, u_h ∈ (0, 1) the
// center of Philox's 24-bit bin (never 0 or 1, so |n| ≤ 17.4).
std::vector<float> concrete_noise(uint64_t seed, int64_t update, size_t module_index, int64_t heads);

// Creates "head_gate.<module>.log_alpha" (H) = init for every module that lacks it (so a store
// restored from a checkpoint keeps its values); call before training, after the model's own
// parameters exist.
void add_hard_concrete_parameters(ParamStore& params, const TransformerConfig& cfg,
                                  float init_log_alpha = kHardConcreteInitLogAlpha);

// ξ = clamp(σ((n + log α)/β)·(ζ − γ) + γ, 0, 1) in a training step (n the run-time input
// "head_gate.<module>.noise", filled with concrete_noise(seed, update, module, H)), σ(log α) in
// place of the noisy term in an evaluation step.
steps::HeadGate hard_concrete_gate(const HardConcreteSettings& s);

// The L0 pass: objective += λ · mean P(open); names the mean P(open) over all heads (the L0 term
// before λ) "hard_concrete.open_probability" and logs it as "gates_open_probability".
void hard_concrete_l0(steps::StepGraph& step, const HardConcreteSettings& s);

// The evaluation gates clamp(σ(log α)·(ζ − γ) + γ, 0, 1) of every module whose log α is in `params`
// (computed in double on the host).
HeadScores expected_gates(const ParamStore& params, const TransformerConfig& cfg, const HardConcreteSettings& s = {});

// ---- 4. Head importance (Michel et al. 2019) -----------------------------------------------------

std::string importance_gate_name(const std::string& module); // "head_gate.<module>"

// The gate of a training step's module for head_importance(): the parameter "head_gate.<module>"
// (H), fixed at 1; none in evaluation. The importance steps also run without dropout and, unless
// keep_label_smoothing, without label smoothing (the importance of a head for the likelihood):
// train/pass_list.cpp's step_options.
steps::HeadGate importance_gate();

// Builds the training task over `params` whose training steps carry importance_gate()
// (train/head_phases.cpp: the experiment's data, with train/pass_list.h's importance recipes).
using TaskFactory = std::function<std::unique_ptr<steps::TrainingTask>(ParamStore& params)>;

struct ImportanceSettings {
  int64_t batches = 0;               // the first N batches of task.epoch(seed, 1); 0 = all of them
  uint64_t seed = 1;                 // the batch order
  bool keep_label_smoothing = false; // see importance_gate()
};

struct HeadImportance {
  HeadScores raw;        // I_h = Σ_b |∂L_b/∂ξ_h|
  HeadScores normalized; // I_h / ‖I_module‖₂ (0 for a module whose I are all 0)
  int64_t batches = 0, tokens = 0;
};

// `params` is not modified: the gates live in a shallow copy (the model's tensors are shared, not
// duplicated; nothing writes them — no optimizer step is taken).
// In a data-parallel job (`comm` of several ranks) rank r takes batches r, r + N, r + 2N, … of the
// same fixed order, and the ranks add their sums I_h (double; batches and tokens exactly), so every
// rank returns the scores of one process over all the batches, to the rounding of a sum in another
// order (~1e-16 relative: only an exact tie between two heads could be broken differently).
HeadImportance head_importance(const TransformerConfig& cfg, const ParamStore& params, const TaskFactory& make_task,
                               const ImportanceSettings& s = {}, dist::Communicator& comm = dist::single_process());

// ---- 5. Selection --------------------------------------------------------------------------------

// Per module the k heads of highest score (all of them when k ≥ H), indices ascending; among equal
// scores the lower index wins. k < 1 is an InputError (prune_heads keeps at least one head).
HeadSelection top_k_selection(const HeadScores& scores, int64_t k);

} // namespace pillars::ght
