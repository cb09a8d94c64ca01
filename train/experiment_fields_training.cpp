// The experiment table's rows of the `optim`, `train`, `parallel` and `eval` sections. See
// experiment_table.h.
#include "train/experiment_table.h"

#include "decode/search.h"
#include "train/limits.h"

namespace pillars::experiment_table {

std::vector<Entry> training_rows() {
  using nlohmann::json;
  using F = schema::Field;
  using E = Experiment;
  using O = OptimSettings;
  using T = TrainSettings;
  using PS = ParallelSettings;
  using V = EvalSettings;
  namespace L = limits;
  return {
      section(F::section("optim", "The optimizer and the learning-rate schedule.")),
      in(F::enumeration("optim.optimizer", enum_names<Optimizer>(),
                        "adam, adamw (decoupled weight decay) or sgd (with momentum).")
             .def("adam"),
         &E::optim, &O::optimizer),
      in(F::number("optim.lr", "Peak learning rate, reached at the end of warmup.").def(5e-4).greater_than(0),
         &E::optim, &O::lr),
      in(F::number_array("optim.betas", 2, "Adam's beta1 and beta2.")
             .def(json::array({0.9, 0.98}))
             .at_least(0)
             .less_than(1),
         &E::optim, &O::betas),
      in(F::number("optim.eps", "Adam's epsilon.").def(1e-8).greater_than(0), &E::optim, &O::eps),
      in(F::number("optim.weight_decay", "L2 penalty (adam, sgd) or decoupled weight decay (adamw).")
             .def(0.0001)
             .at_least(0),
         &E::optim, &O::weight_decay),
      in(F::number("optim.momentum", "SGD momentum (sgd only).").def(0.9).at_least(0).less_than(1), &E::optim,
         &O::momentum),
      in(F::boolean("optim.nesterov", "SGD with Nesterov momentum (sgd only).").def(true), &E::optim, &O::nesterov),
      in(F::enumeration("optim.schedule", enum_names<Schedule>(),
                        "After a linear warmup from warmup_init_lr to lr: inverse_sqrt decays as "
                        "lr*sqrt(warmup_updates/update) (fairseq's), "
                        "cosine and linear decay to min_lr over the run, constant stays at lr.")
             .def("inverse_sqrt"),
         &E::optim, &O::schedule),
      in(F::integer("optim.warmup_updates", "Updates of linear warmup.").def(4000).at_least(0), &E::optim,
         &O::warmup_updates),
      in(F::number("optim.warmup_init_lr", "Learning rate at the first update of the warmup.").def(1e-7).at_least(0),
         &E::optim, &O::warmup_init_lr),
      in(F::number("optim.min_lr", "Floor of the cosine and linear schedules.").def(0.0).at_least(0), &E::optim,
         &O::min_lr),
      in(F::number("optim.clip_norm", "Clip the global gradient norm to this; 0 = off.").def(0.0).at_least(0),
         &E::optim, &O::clip_norm),

      section(F::section("train", "The training loop: when to stop, validate, save.")),
      in(F::integer("train.max_epochs", "Stop after this many epochs.").def(50).at_least(1), &E::train, &T::max_epochs),
      in(F::integer("train.max_updates", "Stop after this many updates; 0 = no limit.").def(0).at_least(0), &E::train,
         &T::max_updates),
      in(F::number("train.max_minutes", "Stop after this much wall-clock time; 0 = no limit.").def(0.0).at_least(0),
         &E::train, &T::max_minutes),
      in(F::number("train.label_smoothing", "Label smoothing of the cross-entropy loss.")
             .def(0.1)
             .at_least(0)
             .less_than(1),
         &E::train, &T::label_smoothing),
      in(F::integer("train.update_freq", "Accumulate the gradients of this many batches per update.")
             .def(1)
             .at_least(1)
             .at_most(L::kMaxUpdateFreq),
         &E::train, &T::update_freq),
      in(F::integer("train.patience", "Stop after this many validations without a better best_metric; 0 = off.")
             .def(0)
             .at_least(0),
         &E::train, &T::patience),
      in(F::enumeration("train.best_metric", enum_names<BestMetric>(),
                        "Validation metric that ranks checkpoints: loss, bleu (translation, needs valid_bleu), rouge "
                        "(summarization), ppl.")
             .def("loss"),
         &E::train, &T::best_metric),
      in(F::boolean("train.valid_bleu", "Translation: validation also decodes the validation split and scores BLEU.")
             .def(true),
         &E::train, &T::valid_bleu),
      in(F::integer("train.valid_max_sentences", "Decode at most this many validation sentences; 0 = all.")
             .def(0)
             .at_least(0),
         &E::train, &T::valid_max_sentences),
      in(F::integer("train.keep_best", "Best checkpoints kept on disk.").def(5).at_least(1).at_most(L::kMaxKeepBest),
         &E::train, &T::keep_best),
      in(F::integer("train.average_best",
                    "At the end, average the parameters of this many best checkpoints into checkpoint_avg; 0 = off.")
             .def(0)
             .at_least(0),
         &E::train, &T::average_best),
      in(F::integer("train.log_every", "Log the training loss every this many updates.").def(100).at_least(1),
         &E::train, &T::log_every),
      in(F::integer("train.validate_every", "Validate every this many epochs.").def(1).at_least(1), &E::train,
         &T::validate_every),
      in(F::number("train.save_every_minutes",
                   "Also save a checkpoint every this many minutes; 0 = only at the end of an epoch.")
             .def(0.0)
             .at_least(0),
         &E::train, &T::save_every_minutes),
      in(F::enumeration("train.device", enum_names<Device>(),
                        "Where the training steps run: cpu, or cuda (the first GPU; parameters, gradients and "
                        "optimizer state live there).")
             .def("cpu"),
         &E::train, &T::device),
      in(F::enumeration("train.precision", enum_names<Precision>(),
                        "fp32 (every product in fp32) or bf16. On cuda, bf16 puts the operands of the GEMMs and of "
                        "attention in bf16 on "
                        "the tensor cores. On the cpu, bf16 rounds the operands of the matmul products (linear "
                        "layers, the LM head, and "
                        "their gradients) and of the fused attention kernels (QKᵀ, PV and their backward) to bf16 "
                        "(kernels/cpu/gemm_precision.h, kernels/cpu/attention.h); validation decodes at it too. "
                        "Both: fp32 accumulation, fp32 master weights, optimizer, normalization, softmax and loss.")
             .def("fp32"),
         &E::train, &T::precision),
      in(F::enumeration("train.attention_backend", enum_names<AttentionBackend>(),
                        "How the attention modules compute in the training steps: pillars (our fused kernels), cudnn "
                        "(cuDNN's fused "
                        "attention, the GPU reference backend; cuda only) or naive (composed of matmul, mask, "
                        "softmax and dropout ops, "
                        "materializing the scores). Evaluation and decoding use our kernels.")
             .def("pillars"),
         &E::train, &T::attention_backend),
      in(F::boolean(
             "train.fuse_linear_activation",
             "Fuse each linear layer with the ReLU/GELU after it into one linear_act node before autodiff "
             "(engine/passes/fuse_linear.h); on the GPU a cuBLASLt GEMM with a bias epilogue. The same function.")
             .def(false),
         &E::train, &T::fuse_linear_activation),
      in(F::boolean(
             "train.fuse_linear_cross_entropy",
             "Fuse the language-model head with its cross-entropy into one linear_cross_entropy node in training "
             "steps (engine/passes/fuse_linear_cross_entropy.h): the rows are swept in blocks and the (N, V) logits, "
             "a step's largest buffer, are never stored. The same function and the same products.")
             .def(false),
         &E::train, &T::fuse_linear_cross_entropy),
      in(F::enumeration(
             "train.saved_activations", enum_names<Precision>(),
             "How the activations the backward reads are kept from the forward to the backward: fp32, or bf16 "
             "(half the bytes; the backward sees them rounded to bf16, and so do the layer norms, attention and "
             "cross-entropy that make statistics of them in the forward, so the loss moves by bf16 rounding; "
             "engine/passes/saved_activations.h). On the CPU and the GPU.")
             .def("fp32"),
         &E::train, &T::saved_activations),

      section(F::section("parallel",
                         "Data-parallel training, when mpirun or srun starts several processes (docs/SCALING.md); "
                         "one process ignores it.")),
      in(F::enumeration("parallel.backend", enum_names<DistBackend>(),
                        "How the ranks sum gradients: mpi (MPI's collectives, train.device cpu) or nccl (NCCL's, "
                        "train.device cuda, "
                        "one GPU per rank); auto = the one for train.device.")
             .def("auto"),
         &E::parallel, &PS::backend),
      in(F::number("parallel.bucket_mb",
                   "Gradients are summed over the ranks in buckets of about this many MB, the last layers' first.")
             .def(25.0)
             .greater_than(0)
             .at_most(1024),
         &E::parallel, &PS::bucket_mb),
      in(F::integer("parallel.zero_stage",
                    "0: every rank keeps the whole optimizer state; 1 (ZeRO-1): each rank keeps and updates the "
                    "state of its share of the parameters, which it then sends to the others.")
             .def(0)
             .at_least(0)
             .at_most(1),
         &E::parallel, &PS::zero_stage),
      in(F::boolean("parallel.overlap",
                    "Start each bucket's sum as soon as its gradients are final, while the backward goes on; "
                    "false: every sum after the backward (for measuring what the overlap hides).")
             .def(true),
         &E::parallel, &PS::overlap),

      section(F::section("eval", "Evaluation by `pillars eval` (and the test score at the end of training).")),
      in(F::string("eval.split", "Split to evaluate; \"\" = data.test_split.").def(""), &E::eval, &V::split),
      in(F::enumeration("eval.checkpoint", enum_names<CheckpointChoice>(),
                        "Checkpoint to evaluate; average needs train.average_best > 0.")
             .def("best"),
         &E::eval, &V::checkpoint),
      in(F::integer("eval.beam", "Beam size; 1 = greedy.").def(5).at_least(1).at_most(decode::kMaxBeam), &E::eval,
         &V::beam),
      in(F::number("eval.lenpen", "Length penalty: hypotheses are ranked by log-probability / length^lenpen.")
             .def(1.0)
             .at_least(0),
         &E::eval, &V::lenpen),
      in(F::number("eval.max_len_a", "Longest output is max_len_a * source length + max_len_b tokens.")
             .def(1.2)
             .at_least(0),
         &E::eval, &V::max_len_a),
      in(F::integer("eval.max_len_b", "See max_len_a.").def(10).at_least(0).at_most(L::kMaxOutputLength), &E::eval,
         &V::max_len_b),
      in(F::integer("eval.batch_sentences", "Sentences decoded per batch.")
             .def(64)
             .at_least(1)
             .at_most(L::kMaxSentences),
         &E::eval, &V::batch_sentences),
      in(F::boolean("eval.sacrebleu_lowercase", "Case-insensitive BLEU (sacreBLEU's -lc).").def(false), &E::eval,
         &V::sacrebleu_lowercase),
      in(F::enumeration(
             "eval.precision", enum_names<Precision>(),
             "Precision of the evaluation's decoding on the CPU (the translations and per-sentence losses of "
             "`pillars eval` "
             "and of the test score at the end of training; the perplexity stays fp32, validation follows "
             "train.precision): "
             "fp32, or bf16: the decoder's matmuls and attention "
             "products on operands rounded to bf16 with fp32 accumulation, each weight matrix packed once per model "
             "(decode/step_decoder.h). Fast where the CPU has AVX512-BF16 or AMX; elsewhere the portable path gives "
             "the "
             "same numerics. Decoding on a GPU refuses bf16 here (its precision is the device's).")
             .def("fp32"),
         &E::eval, &V::precision),
  };
}

} // namespace pillars::experiment_table
