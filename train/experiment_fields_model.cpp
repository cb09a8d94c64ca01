// The experiment table's first rows: the top-level fields (name, task, seed, threads, description),
// then the `data` and `model` sections. See experiment_table.h.
#include "train/experiment_table.h"

#include <string>

#include "train/limits.h"

namespace pillars::experiment_table {

std::vector<Entry> model_rows() {
  using F = schema::Field;
  using E = Experiment;
  using D = DataSettings;
  using M = ModelSettings;
  namespace L = limits;
  const std::string sz = " (null = the named config's value)";
  return {
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
      top(F::integer("seed", "Seeds parameter initialization, dropout and batch order.").def(1).at_least(0), &E::seed),
      top(F::integer("threads", "CPU threads for the kernels; 0 = all cores.")
              .def(0)
              .at_least(0)
              .at_most(L::kMaxThreads),
          &E::threads),
      top(F::string("description", "Free text, kept in the run's config.json.").def(""), &E::description),

      section(F::section("data", "The dataset and its preprocessing.").require()),
      in(F::string("data.dataset", "Name of a dataset in the registry, e.g. \"multi30k-de-en\".").require().not_empty(),
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
      in(F::number("data.train_fraction", "Train on this fraction of the training split (its first examples); 1 = all.")
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
  };
}

} // namespace pillars::experiment_table
