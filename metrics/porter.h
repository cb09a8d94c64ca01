// The Porter stemmer exactly as NLTK's `nltk.stem.porter.PorterStemmer()` computes it in its
// default mode, NLTK_EXTENSIONS — the stemmer rouge-score builds for `use_stemmer=True`
// (`porter.PorterStemmer()` in rouge/tokenizers.py, no mode argument).
//
//   std::string s = pillars::metrics::porter_stem("running");   // "run"
//
// Input is UTF-8; like NLTK's stem(word) (to_lowercase=True) the word is lowercased with Python's
// str.lower() first, and only a, e, i, o, u count as vowels (y depending on context). Verified
// word for word against NLTK 3.8 on the 19,388 distinct words of the SAMSum test set and
// tinyshakespeare (tests/golden/metrics/porter_vocab.tsv, made by make_porter_golden.py).
#pragma once
#include <string>
#include <string_view>

namespace pillars::metrics {

std::string porter_stem(std::string_view word);

} // namespace pillars::metrics
