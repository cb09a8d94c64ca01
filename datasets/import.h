// `pillars data import DIR --name NAME --source de --target en`: registers a user's own parallel
// corpus (fairseq layout: train.de, train.en, valid.de, ..., optionally `code`) as a dataset.
//
//   data::ImportOptions opt{"/home/me/iwslt14.tokenized.de-en", "iwslt14-de-en-full", "de", "en"};
//   data::DatasetSpec spec = data::import_translation(opt, print_line);
//   data::read_field("iwslt14-de-en-full", "train", "de");      // works from now on
//
// The files are copied into the cache (<cache>/NAME/) so that later edits of DIR cannot change a
// registered dataset, with a MANIFEST.json of their sizes, line counts and sha256; reads are then
// verified like any other dataset. Splits are the file stems without a dot (train, valid, test,
// ...); each needs both languages with the same number of lines. Fields follow the built-in
// iwslt14-de-en: files whose text carries subword-nmt BPE markers ("@@ ") become fields
// "<lang>.bpe", others "<lang>"; a tmp/ subfolder (fairseq prepare-iwslt14.sh keeps the tokenized,
// pre-BPE text there) is imported too. A top-level `code` file becomes the asset "bpe.codes".
// Files identical to a registry file (same sha256), or to the canonical fairseq IWSLT'14 train
// files (same git blob id), are recognized: printed, and noted in the manifest.
// Errors (bad name, missing or misaligned files, an existing import without `force`) are
// InputErrors; nothing is left in the cache after a failed import.
#pragma once
#include <string>

#include "datasets/prepare.h"
#include "datasets/registry.h"

namespace pillars::data {

struct ImportOptions {
  std::string dir;
  std::string name;
  std::string source; // language code, e.g. "de"
  std::string target; // e.g. "en"
  bool force = false; // replace an existing import of the same name
};

DatasetSpec import_translation(const ImportOptions& options, const Progress& progress);

} // namespace pillars::data
