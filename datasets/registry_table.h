// Internal to datasets/: the built-in datasets, one function each, defined in
// registry_table_{translation,lm,summarization}.cpp and collected by registry.cpp. Sizes, line
// counts and sha256 of the mirror's files are those of /work/shared/datasets/*/PROVENANCE.md and
// SHA256SUMS (every one re-checked by decompressing); those of the prepared datasets were recorded
// from a real `pillars data prepare` run (see datasets/README.md).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "datasets/registry.h"

namespace pillars::data::table {

DatasetSpec multi30k_de_en();
DatasetSpec iwslt14_de_en();
DatasetSpec wikitext_2();
DatasetSpec wikitext_103();
DatasetSpec ptb();
DatasetSpec tinyshakespeare();
DatasetSpec sotu();
DatasetSpec samsum();
DatasetSpec dialogsum();
DatasetSpec aeslc();
DatasetSpec bbc_news_summary();
DatasetSpec debian_synopsis();

inline SplitSpec split(std::string name, uint64_t examples, std::vector<NamedFile> fields, Selection select = {}) {
  SplitSpec s;
  s.name = std::move(name);
  s.examples = examples;
  s.fields = std::move(fields);
  s.select = std::move(select);
  return s;
}

inline Selection modulo(unsigned modulus, std::vector<unsigned> residues) {
  Selection s;
  s.kind = Selection::Kind::modulo;
  s.modulus = modulus;
  s.residues = std::move(residues);
  return s;
}

inline Selection byte_range(unsigned begin_percent, unsigned end_percent) {
  Selection s;
  s.kind = Selection::Kind::byte_range;
  s.begin_percent = begin_percent;
  s.end_percent = end_percent;
  return s;
}

} // namespace pillars::data::table
