// The token cache file and the stable hash; see token_cache.h.
#include "text/token_cache.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "base/atomic_file.h"

namespace pillars::text {

static_assert(std::endian::native == std::endian::little, "the token cache is written in host order");

namespace {

constexpr char kMagic[8] = {'P', 'L', 'R', 'T', 'O', 'K', 'C', '\0'};
constexpr uint32_t kVersion = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key;
  uint64_t lines;
  uint64_t ids;
  uint64_t checksum;
};
static_assert(sizeof(Header) == 48);

uint64_t payload_checksum(const TokenizedCorpus& c) {
  uint64_t h = fnv1a64({reinterpret_cast<const char*>(c.offsets.data()), c.offsets.size() * sizeof(uint64_t)});
  return fnv1a64({reinterpret_cast<const char*>(c.ids.data()), c.ids.size() * sizeof(int32_t)}, h);
}

} // namespace

uint64_t fnv1a64(std::string_view bytes, uint64_t state) {
  for (unsigned char b : bytes) {
    state ^= b;
    state *= 0x100000001b3ull;
  }
  return state;
}

Hasher& Hasher::add(uint64_t value) {
  char b[8];
  std::memcpy(b, &value, 8);
  state_ = fnv1a64({b, 8}, state_);
  return *this;
}

Hasher& Hasher::add(std::string_view field) {
  add(uint64_t(field.size()));
  state_ = fnv1a64(field, state_);
  return *this;
}

std::optional<TokenizedCorpus> load_token_cache(const std::string& path, uint64_t key) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return std::nullopt;
  Header h;
  if (std::fread(&h, sizeof h, 1, f.get()) != 1) return std::nullopt;
  if (std::memcmp(h.magic, kMagic, 8) != 0 || h.version != kVersion || h.key != key) return std::nullopt;
  // The sizes must match the file exactly before anything is allocated from them.
  if (std::fseek(f.get(), 0, SEEK_END) != 0) return std::nullopt;
  long size = std::ftell(f.get());
  if (size < 0 || h.lines > (uint64_t(1) << 40) || h.ids > (uint64_t(1) << 40)) return std::nullopt;
  if (uint64_t(size) != sizeof(Header) + (h.lines + 1) * 8 + h.ids * 4) return std::nullopt;
  if (std::fseek(f.get(), long(sizeof(Header)), SEEK_SET) != 0) return std::nullopt;

  TokenizedCorpus c;
  c.offsets.resize(h.lines + 1);
  c.ids.resize(h.ids);
  if (std::fread(c.offsets.data(), 8, c.offsets.size(), f.get()) != c.offsets.size()) return std::nullopt;
  if (!c.ids.empty() && std::fread(c.ids.data(), 4, c.ids.size(), f.get()) != c.ids.size()) return std::nullopt;
  if (payload_checksum(c) != h.checksum) return std::nullopt;
  if (c.offsets.front() != 0 || c.offsets.back() != h.ids) return std::nullopt;
  for (size_t i = 1; i < c.offsets.size(); ++i)
    if (c.offsets[i] < c.offsets[i - 1]) return std::nullopt;
  return c;
}

void save_token_cache(const std::string& path, uint64_t key, const TokenizedCorpus& corpus) {
  PILLARS_CHECK(!corpus.offsets.empty() && corpus.offsets.front() == 0 && corpus.offsets.back() == corpus.ids.size(),
                path, ": token cache: offsets do not describe the ids (", corpus.offsets.size(), " offsets, ",
                corpus.ids.size(), " ids)");
  Header h{};
  std::memcpy(h.magic, kMagic, 8);
  h.version = kVersion;
  h.key = key;
  h.lines = corpus.num_lines();
  h.ids = corpus.ids.size();
  h.checksum = payload_checksum(corpus);
  io::AtomicFile f(path);
  f.write(&h, sizeof h);
  f.write(corpus.offsets.data(), corpus.offsets.size() * sizeof(uint64_t));
  f.write(corpus.ids.data(), corpus.ids.size() * sizeof(int32_t));
  f.commit();
}

} // namespace pillars::text
