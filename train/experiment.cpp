// The experiment file: its field table (the single source of types, ranges, defaults and
// descriptions), loading with `--set` overrides, the checks that span fields, and the resolved
// config. See experiment.h.
#include "train/experiment.h"

#include "datasets/registry.h"
#include "decode/search.h"
#include "models/transformer.h"
#include "train/memory_estimate.h"
#include "train/setup.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <regex>

#include "base/error.h"
#include "base/input_file.h"
#include "train/limits.h"

namespace pillars {

using nlohmann::json;
using schema::FieldError;

ValidationContext default_validation_context() {
  return {data::dataset_names(), transformer_config_names(),
          [](const std::string& name) { return &data::find_dataset(name); },
          /*check_memory=*/true};
}

namespace {

// One row of the table: the field, and how it reads from / writes to the Experiment struct.
struct Entry {
  schema::Field field;
  std::function<void(Experiment&, const json&)> read; // empty for sections
  std::function<json(const Experiment&)> write;
};

template <class T>
void read_value(const json& v, T& out) {
  v.get_to(out);
}
template <class T>
void read_value(const json& v, std::optional<T>& out) {
  if (v.is_null())
    out.reset();
  else
    out = v.get<T>();
}
template <class T>
json write_value(const T& x) {
  return json(x);
}
template <class T>
json write_value(const std::optional<T>& x) {
  return x ? json(*x) : json(nullptr);
}

Entry section(schema::Field f) { return {std::move(f), {}, {}}; }
template <class T>
Entry top(schema::Field f, T Experiment::*m) {
  return {std::move(f), [m](Experiment& e, const json& v) { read_value(v, e.*m); },
          [m](const Experiment& e) { return write_value(e.*m); }};
}
template <class S, class T>
Entry in(schema::Field f, S Experiment::*s, T S::*m) {
  return {std::move(f), [s, m](Experiment& e, const json& v) { read_value(v, (e.*s).*m); },
          [s, m](const Experiment& e) { return write_value((e.*s).*m); }};
}

const std::vector<Entry>& entries() {
  static const std::vector<Entry> table = [] {
    using F = schema::Field;
    using E = Experiment;
    using D = DataSettings;
    using M = ModelSettings;
    using O = OptimSettings;
    using T = TrainSettings;
    using V = EvalSettings;
    using PS = ParallelSettings;
    using HS = HeadsSettings;
    using P = PruneSettings;
    namespace L = limits;
    const std::string sz = " (null = the named config's value)";
    return std::vector<Entry>{
        top(F::string("name", "Names the run directory and the logs.")
                .note("the experiment file's name without .json")
                .matches("^[A-Za-z0-9][A-Za-z0-9._+-]*$",
                         "a name of letters, digits, '.', '_', '+' or '-' (it names the run directory)"),
            &E::name),
        top(F::enumeration("task", enum_names<Task>(),
                           "What is trained: an encoder-decoder for translation and summarization, a decoder-only "
                           "model for language_modeling.")
                .require(),
            &E::task),
        top(F::integer("seed", "Seeds parameter initialization, dropout and batch order.").def(1).at_least(0),
            &E::seed),
        top(F::integer("threads", "CPU threads for the kernels; 0 = all cores.")
                .def(0)
                .at_least(0)
                .at_most(L::kMaxThreads),
            &E::threads),
        top(F::string("description", "Free text, kept in the run's config.json.").def(""), &E::description),

        section(F::section("data", "The dataset and its preprocessing.").require()),
        in(F::string("data.dataset", "Name of a dataset in the registry, e.g. \"multi30k-de-en\".")
               .require()
               .not_empty(),
           &E::data, &D::dataset),
        in(F::string("data.source",
                     "Source side: a language code for translation, a field name for summarization (default \"source\" "
                     "there); unused by language_modeling.")
               .def("de"),
           &E::data, &D::source),
        in(F::string("data.target",
                     "Target side: a language code for translation, a field name for summarization (default "
                     "\"summary\" there); unused by language_modeling.")
               .def("en"),
           &E::data, &D::target),
        in(F::string("data.train_split", "Split to train on; \"\" = the dataset's default.").def(""), &E::data,
           &D::train_split),
        in(F::string("data.valid_split", "Split to validate on; \"\" = the dataset's default.").def(""), &E::data,
           &D::valid_split),
        in(F::string("data.test_split", "Split to test on; \"\" = the dataset's default.").def(""), &E::data,
           &D::test_split),
        in(F::enumeration("data.tokenizer", enum_names<Tokenizer>(),
                          "\"moses\": Moses-style tokenization of raw text; \"none\": the text is already tokenized "
                          "(split on spaces).")
               .def("moses"),
           &E::data, &D::tokenizer),
        in(F::boolean("data.lowercase", "Lowercase the text before tokenization.").def(false), &E::data, &D::lowercase),
        in(F::integer("data.bpe_merges", "BPE merges to learn on the training split; 0 = no BPE (word level).")
               .def(10000)
               .at_least(0)
               .at_most(L::kMaxVocabulary),
           &E::data, &D::bpe_merges),
        in(F::boolean("data.bpe_joint", "One BPE model and one vocabulary for source and target together.").def(true),
           &E::data, &D::bpe_joint),
        in(F::string("data.bpe_codes", "A BPE codes file to use instead of learning one; must be readable.")
               .optional()
               .not_empty()
               .readable(),
           &E::data, &D::bpe_codes),
        in(F::integer("data.vocab_threshold",
                      "Words seen fewer times than this in training become the unknown word; 0 = keep all. Refused "
                      "when more than half of the training tokens would be unknown.")
               .def(0)
               .at_least(0),
           &E::data, &D::vocab_threshold),
        in(F::integer(
               "data.vocab_max",
               "Keep at most this many vocabulary entries, most frequent first (the 4 special symbols included, so 0 "
               "or at least 5); 0 = unlimited. Refused when more than half of the training tokens would be unknown.")
               .def(0)
               .at_least(0)
               .at_most(L::kMaxVocabulary),
           &E::data, &D::vocab_max),
        in(F::integer("data.max_tokens", "Tokens per batch, padding included (fairseq's --max-tokens).")
               .def(4096)
               .at_least(1)
               .at_most(L::kMaxBatchTokens),
           &E::data, &D::max_tokens),
        in(F::integer("data.max_source_len", "Longest source sequence, in tokens after BPE.")
               .def(256)
               .at_least(1)
               .at_most(L::kMaxSequence),
           &E::data, &D::max_source_len),
        in(F::integer("data.max_target_len", "Longest target sequence, in tokens after BPE.")
               .def(256)
               .at_least(1)
               .at_most(L::kMaxSequence),
           &E::data, &D::max_target_len),
        in(F::integer("data.block_size", "language_modeling: tokens per training sample (the context length).")
               .def(512)
               .at_least(1)
               .at_most(L::kMaxSequence),
           &E::data, &D::block_size),
        in(F::number("data.train_fraction",
                     "Train on this fraction of the training split (its first examples); 1 = all.")
               .def(1.0)
               .greater_than(0)
               .at_most(1),
           &E::data, &D::train_fraction),

        section(F::section("model", "The model: a named config, and overrides of its values.").require()),
        in(F::string("model.config",
                     "Named model config: \"tiny\", \"small\", \"base\", \"lite1\", \"lite2\", \"lm-small\", "
                     "\"lm-wt103\", ...")
               .require()
               .not_empty(),
           &E::model, &M::config),
        in(F::integer("model.d_model", "Embedding and residual width" + sz + ".")
               .optional()
               .at_least(1)
               .at_most(L::kMaxWidth),
           &E::model, &M::d_model),
        in(F::integer("model.heads", "Attention heads per attention module; must divide d_model" + sz + ".")
               .optional()
               .at_least(1)
               .at_most(L::kMaxHeads),
           &E::model, &M::heads),
        in(F::integer("model.ffn", "Feed-forward inner width" + sz + ".").optional().at_least(1).at_most(L::kMaxFfn),
           &E::model, &M::ffn),
        in(F::integer("model.enc_layers", "Encoder layers, translation and summarization only" + sz + ".")
               .optional()
               .at_least(0)
               .at_most(L::kMaxLayers),
           &E::model, &M::enc_layers),
        in(F::integer("model.dec_layers", "Decoder layers, translation and summarization only" + sz + ".")
               .optional()
               .at_least(1)
               .at_most(L::kMaxLayers),
           &E::model, &M::dec_layers),
        in(F::integer("model.layers", "Layers of the decoder-only model, language_modeling only" + sz + ".")
               .optional()
               .at_least(1)
               .at_most(L::kMaxLayers),
           &E::model, &M::layers),
        in(F::boolean("model.pre_norm",
                      "true: pre-norm x + f(LN(x)); false: post-norm LN(x + f(x)), the paper's" + sz + ".")
               .optional(),
           &E::model, &M::pre_norm),
        in(F::enumeration("model.activation", enum_names<ops::Activation>(), "Feed-forward activation" + sz + ".")
               .optional(),
           &E::model, &M::activation),
        in(F::number("model.dropout", "Dropout on embeddings and on every sub-layer output" + sz + ".")
               .optional()
               .at_least(0)
               .less_than(1),
           &E::model, &M::dropout),
        in(F::number("model.attention_dropout", "Dropout on attention probabilities" + sz + ".")
               .optional()
               .at_least(0)
               .less_than(1),
           &E::model, &M::attention_dropout),
        in(F::number("model.activation_dropout", "Dropout after the feed-forward activation" + sz + ".")
               .optional()
               .at_least(0)
               .less_than(1),
           &E::model, &M::activation_dropout),
        in(F::boolean("model.share_all_embeddings",
                      "Encoder and decoder share one token embedding (needs a joint vocabulary)" + sz + ".")
               .optional(),
           &E::model, &M::share_all_embeddings),
        in(F::boolean("model.share_decoder_input_output_embed",
                      "The output projection is the decoder's input embedding" + sz + ".")
               .optional(),
           &E::model, &M::share_decoder_input_output_embed),
        in(F::string("model.init_from", "A checkpoint whose parameters initialize the model; must be readable.")
               .optional()
               .not_empty()
               .readable(),
           &E::model, &M::init_from),

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
        in(F::integer("train.max_epochs", "Stop after this many epochs.").def(50).at_least(1), &E::train,
           &T::max_epochs),
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

        section(F::section("heads",
                           "Head-level methods while training: GHT's group-constrained training (GCT), the baselines' "
                           "regularizers and gates, and head-diversity measurements (docs/METHOD.md).")),
        in(F::enumeration(
               "heads.regularizer", enum_names<ght::Regularizer>(),
               "Loss added per attention module: gct (GHT, Eq. 4), disagreement (Li et al. 2018), none (vanilla).")
               .def("none"),
           &E::heads, &HS::regularizer),
        in(F::enumeration("heads.feature_map", enum_names<ght::FeatureMap>(),
                          "Feature map the heads are clustered and compared by: V values, A attention probabilities, O "
                          "head outputs.")
               .def("V"),
           &E::heads, &HS::feature_map),
        in(F::integer("heads.groups", "HUDS groups C per module (K-means clusters).")
               .def(2)
               .at_least(1)
               .at_most(L::kMaxHeads),
           &E::heads, &HS::groups),
        in(F::number("heads.alpha", "GCT homogenization weight (heads toward their group center).")
               .def(0.7)
               .at_least(0),
           &E::heads, &HS::alpha),
        in(F::number("heads.beta", "GCT diversification weight (group centers apart).").def(0.5).at_least(0), &E::heads,
           &HS::beta),
        in(F::enumeration("heads.gct_variant", enum_names<ght::GctVariant>(),
                          "GCT loss: metric (Eq. 4B, the paper's) or classification (Eq. 4A).")
               .def("metric"),
           &E::heads, &HS::gct_variant),
        in(F::enumeration(
               "heads.gct_scale", enum_names<ght::GctScale>(),
               "per_token divides the summed GCT terms by the batch's target tokens, as the reference code does, so "
               "the paper's alpha and beta transfer; per_batch adds them as they are.")
               .def("per_token"),
           &E::heads, &HS::gct_scale),
        in(F::enumeration("heads.disagreement", enum_names<ght::Disagreement>(),
                          "Li et al. 2018's disagreement on values (subspace), attention probabilities (position) or "
                          "head outputs (output).")
               .def("subspace"),
           &E::heads, &HS::disagreement),
        in(F::number("heads.lambda", "Weight of the disagreement regularizer.").def(1.0).at_least(0), &E::heads,
           &HS::lambda),
        in(F::number("heads.drophead",
                     "Scheduled DropHead (Zhou et al. 2020): peak rate of dropping whole heads; 0 = off.")
               .def(0.0)
               .at_least(0)
               .less_than(1),
           &E::heads, &HS::drophead),
        in(F::enumeration("heads.gates", enum_names<ght::HeadGates>(),
                          "Learned head gates: hard_concrete (Voita et al. 2019, L0 penalty).")
               .def("none"),
           &E::heads, &HS::gates),
        in(F::number("heads.l0_lambda", "Weight of the hard-concrete gates' L0 penalty.").def(0.01).at_least(0),
           &E::heads, &HS::l0_lambda),
        in(F::boolean(
               "heads.metrics",
               "Measure head diversity (X-Raying metrics, HUDS compactness, GCT terms) on a fixed held-out batch "
               "into head_metrics.jsonl.")
               .def(true),
           &E::heads, &HS::metrics),
        in(F::integer("heads.metrics_every", "Measure every this many updates; 0 = at each validation.")
               .def(0)
               .at_least(0),
           &E::heads, &HS::metrics_every),
        in(F::integer("heads.metrics_sentences",
                      "Sentences in the held-out batch (a language model takes as many ~32-token sentences' worth of "
                      "tokens in blocks).")
               .def(64)
               .at_least(1)
               .at_most(L::kMaxSentences),
           &E::heads, &HS::metrics_sentences),

        section(F::section("prune",
                           "Removing heads after the first phase, then fine-tuning the smaller model (GHT-PS, and the "
                           "pruning baselines).")),
        in(F::enumeration("prune.method", enum_names<ght::PruneMethod>(),
                          "v2s: Voting-to-Stay (GHT-PS); importance: Michel et al. 2019; gates: Voita et al. 2019 "
                          "(needs heads.gates); none.")
               .def("none"),
           &E::prune, &P::method),
        in(F::enumeration(
               "prune.trigger", enum_names<ght::PruneTrigger>(),
               "When to prune: after prune.epoch epochs, or when the heads' feature-map cosine matrix on the held-out "
               "batch "
               "changes by less than prune.rho (relative Frobenius norm, mean over modules) between validations.")
               .def("epoch"),
           &E::prune, &P::trigger),
        in(F::integer("prune.epoch", "Epoch trigger: prune after this many epochs (0 = before any training).")
               .def(9)
               .at_least(0),
           &E::prune, &P::epoch),
        in(F::number("prune.rho",
                     "Shift trigger: threshold on the relative change of the heads' cosine matrix between validations.")
               .def(1e-3)
               .greater_than(0),
           &E::prune, &P::rho),
        in(F::enumeration("prune.keep", enum_names<ght::KeepRule>(),
                          "V2S decision: the most-voted head of each group (the paper), the top heads by votes (the "
                          "reference code), by "
                          "continuous score, random heads (ablation w/o HUDS), or a random member per group (ablation "
                          "w/o PS stay).")
               .def("per_group"),
           &E::prune, &P::keep),
        in(F::integer("prune.heads",
                      "Heads kept per module by top_c, score, random, importance and gates; 0 = heads.groups.")
               .def(0)
               .at_least(0)
               .at_most(L::kMaxHeads),
           &E::prune, &P::heads),
        in(F::integer("prune.vote_batches",
                      "Training batches of the voting (or importance) pass; 0 = the whole training set.")
               .def(0)
               .at_least(0),
           &E::prune, &P::vote_batches),
        in(F::boolean("prune.finetune_regularizer",
                      "Keep heads.regularizer on while fine-tuning the pruned model (the ablation "
                      "\"stage 1 & 2 GC\").")
               .def(false),
           &E::prune, &P::finetune_regularizer),
        in(F::enumeration("prune.finetune_schedule", enum_names<ght::FinetuneSchedule>(),
                          "How the pruned model is fine-tuned. continue (the authors' code): phase 1's optimizer state "
                          "(Adam's moments "
                          "of the kept heads), step counts and learning-rate schedule run on, update and epoch numbers "
                          "count on, and "
                          "both phases share train.max_updates and train.max_epochs, as a run without pruning does. "
                          "restart: a fresh "
                          "optimizer at the constant learning rate phase 1 ended with, counted from update 1, with the "
                          "prune.finetune_* "
                          "limits alone.")
               .def("continue"),
           &E::prune, &P::finetune_schedule),
        in(F::integer("prune.finetune_epochs",
                      "Fine-tuning: at most this many epochs (continue: after the epoch phase 1 stopped in, and "
                      "never past train.max_epochs).")
               .def(50)
               .at_least(1),
           &E::prune, &P::finetune_epochs),
        in(F::integer("prune.finetune_updates",
                      "Fine-tuning: at most this many updates; 0 = no limit of its own (continue: until "
                      "train.max_updates). Under continue it is also held back from phase 1, which stops "
                      "at train.max_updates minus this at the latest, so both phases fit the run's budget.")
               .def(0)
               .at_least(0),
           &E::prune, &P::finetune_updates),
        in(F::integer("prune.finetune_patience",
                      "Fine-tuning: stop after this many validations without improvement; 0 = off.")
               .def(3)
               .at_least(0),
           &E::prune, &P::finetune_patience),
        in(F::number("prune.finetune_minutes", "Fine-tuning: wall-clock limit of its own; 0 = none.")
               .def(0.0)
               .at_least(0),
           &E::prune, &P::finetune_minutes),
    };
  }();
  return table;
}

json::json_pointer pointer_of(const std::string& dotted) {
  json::json_pointer p;
  std::string rest = dotted;
  for (size_t dot; (dot = rest.find('.')) != std::string::npos; rest = rest.substr(dot + 1)) p /= rest.substr(0, dot);
  return p / rest;
}

std::string quote(const std::string& s) { return schema::describe_value(json(s), false); }

std::string list(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

void check_known(const std::string& path, const std::string& what, const std::string& value,
                 const std::vector<std::string>& known) {
  if (known.empty() || std::find(known.begin(), known.end(), value) != known.end()) return;
  const std::string near = schema::nearest(value, known);
  throw FieldError(path, quote(path) + ": unknown " + what + " " + quote(value) +
                             (near.empty() ? "" : " — did you mean " + quote(near) + "?") + " (known: " + list(known) +
                             ")");
}

// A path field (data.bpe_codes, model.init_from) must name a regular file that can be opened:
// a directory, a FIFO (which would block) or a device is refused here, when the file is loaded.
void check_readable(const std::string& path, const std::string& file) {
  try {
    check_regular_file(file);
  } catch (const InputError& e) {
    throw FieldError(path, quote(path) + ": " + e.what());
  }
}

// The dataset named by data.dataset serves the task, and has every split and field the file
// names (or defaults to): a typo in "data.test_split" is found now, not after the training run.
void check_dataset_references(const Experiment& e, const data::DatasetSpec& d) {
  if (d.task != e.task)
    throw FieldError("data.dataset", str_cat("\"data.dataset\" ", quote(d.name), " is a ", enum_name(d.task),
                                             " dataset, but \"task\" is ", quote(enum_name(e.task))));
  std::vector<std::string> splits;
  for (const data::SplitSpec& s : d.splits) splits.push_back(s.name);
  // The fields every split must have: the two sides, or the language model's text.
  const std::vector<std::pair<std::string, std::string>> fields =
      e.task == Task::language_modeling ? std::vector<std::pair<std::string, std::string>>{{"data.dataset", "text"}}
                                        : std::vector<std::pair<std::string, std::string>>{
                                              {"data.source", e.data.source}, {"data.target", e.data.target}};
  auto check_split = [&](const std::string& path, const std::string& chosen, const std::string& fallback,
                         const char* role) {
    if (chosen.empty() && fallback.empty())
      throw FieldError(path, str_cat("dataset ", quote(d.name), " has no default ", role, " split: set ", quote(path),
                                     " (its splits: ", list(splits), ")"));
    const std::string name = chosen.empty() ? fallback : chosen;
    const auto split =
        std::find_if(d.splits.begin(), d.splits.end(), [&](const data::SplitSpec& s) { return s.name == name; });
    if (split == d.splits.end()) {
      check_known(path, str_cat("split of dataset ", quote(d.name), ":"), name, splits);
      throw FieldError(path, str_cat(quote(path), ": dataset ", quote(d.name), " has no splits"));
    }
    std::vector<std::string> names;
    for (const data::NamedFile& f : split->fields) names.push_back(f.name);
    for (const auto& [field_path, field] : fields)
      if (std::find(names.begin(), names.end(), field) == names.end()) {
        check_known(field_path, str_cat("field of split ", quote(name), " of dataset ", quote(d.name), ":"), field,
                    names);
        throw FieldError(field_path, str_cat(quote(field_path), ": split ", quote(name), " of dataset ", quote(d.name),
                                             " has no fields"));
      }
  };
  check_split("data.train_split", e.data.train_split, d.train, "train");
  check_split("data.valid_split", e.data.valid_split, d.valid, "valid");
  check_split("data.test_split", e.data.test_split, d.test, "test");
  if (!e.eval.split.empty()) check_split("eval.split", e.eval.split, "", "eval");
}

// The model as it will be built (the named config with the file's overrides; the vocabulary is
// not known before the data is prepared, so the estimate takes the BPE's size), checked against
// what the other sections ask of it, and its memory against this machine's.
void check_model(const Experiment& e, const ValidationContext& ctx) {
  // The dictionary's first entries are <s>, <pad>, </s> and <unk>: a smaller limit keeps no word.
  if (e.data.vocab_max > 0 && e.data.vocab_max <= 4)
    throw FieldError("data.vocab_max",
                     str_cat("\"data.vocab_max\" (", e.data.vocab_max,
                             ") leaves no room for a word: the first 4 "
                             "entries are <s>, <pad>, </s> and <unk>; use 0 (no limit) or at least 5"));
  const int64_t vocab_guess = e.data.vocab_max > 0    ? e.data.vocab_max
                              : e.data.bpe_merges > 0 ? e.data.bpe_merges + 4
                                                      : 4 + 1;
  TransformerConfig cfg;
  try {
    cfg = train::model_config(e, vocab_guess);
  } catch (const InputError& err) {
    throw FieldError("model.config", err.what());
  }
  if (e.prune.heads > cfg.heads)
    throw FieldError("prune.heads",
                     str_cat("\"prune.heads\" (", e.prune.heads, ") must not exceed the heads of a module (", cfg.heads,
                             "): a module cannot keep more heads than it has"));
  const bool groups_used = e.heads.regularizer == ght::Regularizer::gct || e.prune.method == ght::PruneMethod::v2s ||
                           (e.prune.method != ght::PruneMethod::none && e.prune.heads == 0);
  if (groups_used && e.heads.groups > cfg.heads)
    throw FieldError("heads.groups",
                     str_cat("\"heads.groups\" (", e.heads.groups, ") must not exceed the heads of a module (",
                             cfg.heads, "): HUDS clusters the heads into at most that many groups"));
  if (ctx.check_memory) {
    try {
      train::check_memory(e, cfg, "");
    } catch (const InputError& err) {
      const std::string what = err.what();
      throw FieldError("model", what.substr(what.find_first_not_of(": ")));
    }
  }
}

// Checks that span fields, then the names the context knows; run on the typed, defaulted
// experiment. (Readable paths are checked after this, from the table.)
void check_semantics(const Experiment& e, const ValidationContext& ctx) {
  const bool lm = e.task == Task::language_modeling;
  const std::string task = quote(enum_name(e.task));
  if (lm) {
    auto refuse = [](const std::string& path) {
      throw FieldError(path, quote(path) +
                                 " is for the encoder-decoder tasks (translation, summarization); a language_modeling "
                                 "model's depth is \"model.layers\"");
    };
    if (e.model.enc_layers) refuse("model.enc_layers");
    if (e.model.dec_layers) refuse("model.dec_layers");
    if (e.model.share_all_embeddings.value_or(false))
      throw FieldError(
          "model.share_all_embeddings",
          "\"model.share_all_embeddings\" needs an encoder, which a language_modeling model does not have");
  } else if (e.model.layers) {
    throw FieldError("model.layers", "\"model.layers\" is for language_modeling (a decoder-only model); task " + task +
                                         " sets \"model.enc_layers\" and \"model.dec_layers\"");
  }
  if (e.model.d_model && e.model.heads && *e.model.d_model % *e.model.heads != 0)
    throw FieldError("model.heads", str_cat("\"model.d_model\" (", *e.model.d_model,
                                            ") must be divisible by \"model.heads\" (", *e.model.heads, ")"));
  if (e.task == Task::translation && e.data.source == e.data.target)
    throw FieldError("data.target", "\"data.source\" and \"data.target\" are both " + quote(e.data.source));

  if (e.train.best_metric == BestMetric::bleu && e.task != Task::translation)
    throw FieldError("train.best_metric", "\"train.best_metric\" \"bleu\" needs task \"translation\", not " + task);
  if (e.train.best_metric == BestMetric::bleu && !e.train.valid_bleu)
    throw FieldError(
        "train.best_metric",
        "\"train.best_metric\" is \"bleu\" but \"train.valid_bleu\" is false: validation would not score BLEU");
  if (e.train.best_metric == BestMetric::rouge && e.task != Task::summarization)
    throw FieldError("train.best_metric", "\"train.best_metric\" \"rouge\" needs task \"summarization\", not " + task);
  if (e.train.average_best > e.train.keep_best)
    throw FieldError("train.average_best", str_cat("\"train.average_best\" (", e.train.average_best,
                                                   ") must not exceed \"train.keep_best\" (", e.train.keep_best,
                                                   "): only that many best checkpoints are kept"));
  if (e.eval.checkpoint == CheckpointChoice::average && e.train.average_best == 0)
    throw FieldError(
        "eval.checkpoint",
        "\"eval.checkpoint\" is \"average\" but \"train.average_best\" is 0, so no averaged checkpoint is made");
  if (e.heads.regularizer == ght::Regularizer::gct && e.heads.gct_variant == ght::GctVariant::classification &&
      e.heads.feature_map == ght::FeatureMap::A)
    throw FieldError(
        "heads.gct_variant",
        "\"heads.gct_variant\" \"classification\" needs \"heads.feature_map\" V or O (A has no fixed width)");
  if (e.prune.method == ght::PruneMethod::gates && e.heads.gates != ght::HeadGates::hard_concrete)
    throw FieldError(
        "prune.method",
        "\"prune.method\" \"gates\" needs \"heads.gates\": \"hard_concrete\" (there are no gates to read)");
  if (e.prune.trigger == ght::PruneTrigger::shift && !e.heads.metrics)
    throw FieldError("prune.trigger",
                     "\"prune.trigger\" \"shift\" measures how the heads' feature maps move on the held-out batch: it "
                     "needs \"heads.metrics\" true");
  // Under "continue" both phases share train.max_updates, and phase 1 leaves prune.finetune_updates of
  // them to fine-tuning: it stops at train.max_updates − prune.finetune_updates at the latest, which
  // must leave it at least one update (0 would read as "no limit").
  if (e.prune.method != ght::PruneMethod::none && e.prune.finetune_schedule == ght::FinetuneSchedule::continue_ &&
      e.train.max_updates > 0 && e.prune.finetune_updates >= e.train.max_updates)
    throw FieldError(
        "prune.finetune_updates",
        str_cat("\"prune.finetune_updates\" (", e.prune.finetune_updates, ") must be less than \"train.max_updates\" (",
                e.train.max_updates,
                "): with \"prune.finetune_schedule\" \"continue\" both phases share train.max_updates, "
                "and phase 1 stops at train.max_updates − prune.finetune_updates at the latest (0 = fine-tune until "
                "train.max_updates)"));
  if (e.optim.min_lr > e.optim.lr)
    throw FieldError("optim.min_lr", str_cat("\"optim.min_lr\" (", e.optim.min_lr, ") must not exceed \"optim.lr\" (",
                                             e.optim.lr, ")"));
  if (e.optim.warmup_init_lr > e.optim.lr)
    throw FieldError("optim.warmup_init_lr", str_cat("\"optim.warmup_init_lr\" (", e.optim.warmup_init_lr,
                                                     ") must not exceed \"optim.lr\" (", e.optim.lr, ")"));

  if (e.eval.max_len_a * static_cast<double>(e.data.max_source_len) + static_cast<double>(e.eval.max_len_b) >
      limits::kMaxOutputLength)
    throw FieldError("eval.max_len_a", str_cat("\"eval.max_len_a\" × \"data.max_source_len\" + \"eval.max_len_b\" (",
                                               e.eval.max_len_a, " × ", e.data.max_source_len, " + ", e.eval.max_len_b,
                                               ") allows outputs longer than ", limits::kMaxOutputLength, " tokens"));

  // Last, what the outside world knows: the file is consistent in itself by now.
  if (ctx.find_dataset && !ctx.dataset_names.empty() &&
      std::find(ctx.dataset_names.begin(), ctx.dataset_names.end(), e.data.dataset) == ctx.dataset_names.end()) {
    try { // an imported dataset whose manifest is damaged is not listed: say so, rather than "unknown"
      (void)ctx.find_dataset(e.data.dataset);
    } catch (const InputError& err) {
      if (std::string(err.what()).find("manifest") != std::string::npos)
        throw FieldError("data.dataset", quote("data.dataset") + ": " + err.what());
    }
  }
  check_known("data.dataset", "dataset", e.data.dataset, ctx.dataset_names);
  check_known("model.config", "model config", e.model.config, ctx.model_configs);
  if (const data::DatasetSpec* d =
          ctx.find_dataset && !ctx.dataset_names.empty() ? ctx.find_dataset(e.data.dataset) : nullptr)
    check_dataset_references(e, *d);
  if (!ctx.model_configs.empty()) check_model(e, ctx);
}

// parse_experiment without the origin prefix: throws FieldError, so that load_experiment can tell
// which --set an error came from.
Experiment parse_fields(json j, const std::string& origin, const ValidationContext& ctx) {
  if (j.is_object()) { // defaults that depend on the file or on other fields
    if (!j.contains("name")) j["name"] = std::filesystem::path(origin).stem().string();
    if (j.value("task", json()) == "summarization" && j.contains("data") && j["data"].is_object()) {
      if (!j["data"].contains("source")) j["data"]["source"] = "source";
      if (!j["data"].contains("target")) j["data"]["target"] = "summary";
    }
  }
  const json resolved = schema::validate(j, experiment_fields());
  Experiment e;
  for (const Entry& entry : entries())
    if (entry.read) entry.read(e, resolved.at(pointer_of(entry.field.path)));
  check_semantics(e, ctx);
  for (const schema::Field& f : experiment_fields()) // data.bpe_codes, model.init_from
    if (const json& v = resolved.at(pointer_of(f.path)); f.readable_path && v.is_string())
      check_readable(f.path, v.get<std::string>());
  return e;
}

std::string read_file(const std::string& path) { return read_input_file(path, limits::kMaxExperimentBytes); }

// `s` with every byte that is not part of valid UTF-8 (or is a control character) written as \xNN,
// so that a message never carries broken text to the terminal.
std::string printable(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len > 0 && i + len <= s.size() && (c >= 0x20 || c == '\t') && c != 0x7F && !(len == 2 && c < 0xC2);
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
      ++i;
    }
  }
  return out;
}

// Parses JSON text; a syntax error names the line and column, a repeated key its path (JSON
// allows both copies; nlohmann would silently keep the last).
json parse_json(const std::string& text, const std::string& origin) {
  std::vector<std::pair<std::vector<std::string>, std::string>> stack; // per open container: keys seen, current key
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    using P = json::parse_event_t;
    if (event == P::object_start || event == P::array_start) {
      stack.push_back({{}, event == P::array_start ? "[]" : ""});
    } else if (event == P::object_end || event == P::array_end) {
      stack.pop_back();
    } else if (event == P::key) {
      auto& [seen, current] = stack.back();
      const std::string key = parsed.get<std::string>();
      std::string path;
      for (size_t i = 0; i + 1 < stack.size(); ++i) path += (i ? "." : "") + stack[i].second;
      path += (path.empty() ? "" : ".") + key;
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        throw InputError(origin + ": duplicate key " + quote(path));
      seen.push_back(key);
      current = key;
    }
    return true;
  };
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw InputError(origin + ": invalid JSON: the file is empty");
  if (const auto at = schema::json_too_deep(text, limits::kMaxJsonDepth)) // before nlohmann sees it (schema.h says why)
    throw InputError(str_cat(origin, ":", at->line, ":", at->column, ": invalid JSON: nested more than ",
                             limits::kMaxJsonDepth, " levels deep (an experiment file needs 2)"));
  try {
    return json::parse(text, callback);
  } catch (const json::parse_error& e) {
    static const std::regex where(R"(at line (\d+), column (\d+): (.*)$)");
    std::smatch m;
    const std::string what = e.what();
    if (std::regex_search(what, m, where))
      throw InputError(origin + ":" + m[1].str() + ":" + m[2].str() + ": invalid JSON: " + printable(m[3].str()));
    const size_t colon = what.find(": ");
    throw InputError(origin +
                     ": invalid JSON: " + printable(colon == std::string::npos ? what : what.substr(colon + 2)));
  } catch (const json::exception& e) { // out_of_range 406: a number literal beyond double ("1e400")
    std::string what = e.what();
    if (const size_t bracket = what.find("] "); bracket != std::string::npos) what = what.substr(bracket + 2);
    // The field is the key the parser had reached (the open containers' current keys); the place,
    // where the literal the message quotes first occurs.
    std::string field;
    for (const auto& [seen, current] : stack)
      field += (field.empty() || current == "[]" ? "" : ".") + (current == "[]" ? "[]" : current);
    std::string where;
    const size_t q1 = what.find('\''), q2 = what.rfind('\'');
    if (q1 != std::string::npos && q2 > q1 + 1)
      if (const size_t at = text.find(what.substr(q1 + 1, q2 - q1 - 1)); at != std::string::npos) {
        const size_t line =
            1 + static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        const size_t line_start = text.rfind('\n', at);
        where = str_cat(":", line, ":", at - (line_start == std::string::npos ? 0 : line_start + 1) + 1);
      }
    throw InputError(origin + where + ": invalid JSON" + (field.empty() ? "" : " at " + quote(field)) + ": " +
                     printable(what));
  }
}

// Does override `assignment` explain the error at `path` (whose message is `message`)?
bool caused_by(const std::string& assignment, const std::string& path, const std::string& message) {
  const std::string key = assignment.substr(0, assignment.find('='));
  auto under = [](const std::string& a, const std::string& b) {
    return a.size() > b.size() && a.compare(0, b.size(), b) == 0 && (a[b.size()] == '.' || a[b.size()] == '[');
  };
  return key == path || under(path, key) || (!path.empty() && under(key, path)) ||
         message.find(quote(key)) != std::string::npos;
}

} // namespace

const std::vector<schema::Field>& experiment_fields() {
  static const std::vector<schema::Field> fields = [] {
    std::vector<schema::Field> f;
    for (const Entry& e : entries()) f.push_back(e.field);
    return f;
  }();
  return fields;
}

Experiment parse_experiment(const json& j, const std::string& origin, const ValidationContext& ctx) {
  try {
    return parse_fields(j, origin, ctx);
  } catch (const FieldError& e) {
    throw InputError(origin + ": " + e.what());
  }
}

Experiment load_experiment(const std::string& path, const std::vector<std::string>& overrides,
                           const ValidationContext& ctx) {
  json j = parse_json(read_file(path), path);
  for (const std::string& o : overrides) {
    try {
      schema::apply_override(j, o, experiment_fields());
    } catch (const FieldError& e) {
      throw InputError(path + ": --set " + printable(o) + ": " + e.what());
    }
  }
  try {
    return parse_fields(std::move(j), path, ctx);
  } catch (const FieldError& e) {
    for (auto o = overrides.rbegin(); o != overrides.rend(); ++o) // the last override of a key wins, so blame it
      if (caused_by(*o, e.path, e.what())) throw InputError(path + ": --set " + printable(*o) + ": " + e.what());
    throw InputError(path + ": " + e.what());
  }
}

json to_json(const Experiment& e) {
  json j = json::object();
  for (const Entry& entry : entries()) j[pointer_of(entry.field.path)] = entry.write ? entry.write(e) : json::object();
  return j;
}

json experiment_json_schema() {
  return schema::json_schema(
      experiment_fields(), "Pillars experiment",
      "An experiment file for `pillars train`: what to train, on what data, and how to evaluate it.");
}

std::string experiment_markdown() { return schema::markdown_table(experiment_fields()); }

Experiment parse_experiment_text(const std::string& text, const std::string& origin, const ValidationContext& ctx) {
  return parse_experiment(parse_json(text, origin), origin, ctx);
}

} // namespace pillars
