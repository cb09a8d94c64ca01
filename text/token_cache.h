// A binarised corpus of token ids on disk, keyed by a hash of everything that produced it, so
// that `prepare` skips tokenizing when nothing changed and redoes it when anything did.
//
//   text::Hasher h;                                   // a stable 64-bit hash (FNV-1a)
//   h.add("moses lang=de lc=1 norm=1 esc=1");         // the tokenizer settings
//   h.add(codes_file_text); h.add(dict.to_text());    // the BPE codes, the dictionary
//   h.add(raw_text);                                  // the input lines
//   uint64_t key = h.value();
//   if (auto cached = text::load_token_cache(path, key)) return *cached;
//   text::TokenizedCorpus corpus;
//   for (auto& line : lines) corpus.add_line(dict.encode_line(bpe.apply_line(tok(line))));
//   text::save_token_cache(path, key, corpus);       // atomic: never a half-written file
//
// File layout (little-endian), version 1:
//   char[8] magic "PLRTOKC\0" | u32 version | u32 0 | u64 key | u64 lines | u64 ids |
//   u64 FNV-1a of the payload | u64 offsets[lines + 1] | i32 ids[ids]
// load_token_cache returns nullopt, so the caller rebuilds, when the file is missing, has
// another magic, version or key, or fails any consistency check (size, offsets, checksum): a
// cache is never trusted beyond what it can prove.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace pillars::text {

// FNV-1a, 64 bits: the same value on every machine and run (no per-process seed), so usable as
// a key stored in files.
uint64_t fnv1a64(std::string_view bytes, uint64_t state = 0xcbf29ce484222325ull);

// Hashes a sequence of fields; each field is length-prefixed, so ("ab", "c") and ("a", "bc")
// give different values.
class Hasher {
 public:
  Hasher& add(std::string_view field);
  Hasher& add(uint64_t value);
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = 0xcbf29ce484222325ull;
};

struct TokenizedCorpus {
  std::vector<int32_t> ids;         // every line's ids, one after the other
  std::vector<uint64_t> offsets{0}; // line i is ids[offsets[i], offsets[i + 1])

  size_t num_lines() const { return offsets.size() - 1; }
  std::span<const int32_t> line(size_t i) const {
    return {ids.data() + offsets[i], size_t(offsets[i + 1] - offsets[i])};
  }
  void add_line(std::span<const int32_t> line_ids) {
    ids.insert(ids.end(), line_ids.begin(), line_ids.end());
    offsets.push_back(ids.size());
  }
  bool operator==(const TokenizedCorpus&) const = default;
};

std::optional<TokenizedCorpus> load_token_cache(const std::string& path, uint64_t key);
void save_token_cache(const std::string& path, uint64_t key, const TokenizedCorpus& corpus);

} // namespace pillars::text
