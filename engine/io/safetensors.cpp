// safetensors reader and writer: see safetensors.h for the format.
//
// The reader is deliberately simple: it reads the file with pread(2) and copies every tensor into
// memory it owns (Tensor::empty), instead of mapping the file and handing out views. That costs one
// copy per load, which is nothing next to a training run, and means a returned tensor never
// depends on the file staying unchanged. Before anything is allocated the whole header is
// validated against the file size, so a corrupt file cannot make us allocate or read out of bounds.
#include "engine/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/atomic_file.h"
#include "base/checksum.h"

namespace pillars::io {

// Tensor bytes go to and from the file as they are in memory; safetensors is little-endian.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

// The reader keeps the header's key order (ordered_json): it breaks ties between empty tensors
// that share an offset, so a file we wrote reads back in exactly the order it was written.
using json = nlohmann::ordered_json;

namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000; // the limit the reference implementation uses
constexpr int kMaxJsonDepth = 64;                 // a valid header nests 3 deep
const char* const kMetadataKey = "__metadata__";

// ---- dtypes ---------------------------------------------------------------------------------

struct DTypeName {
  const char* name;
  DType dtype;
};
constexpr DTypeName kDTypes[] = {{"F32", DType::f32}, {"BF16", DType::bf16}, {"I32", DType::i32}, {"I64", DType::i64}};

bool dtype_from_name(const std::string& name, DType& out) {
  for (const DTypeName& d : kDTypes)
    if (name == d.name) {
      out = d.dtype;
      return true;
    }
  return false;
}

// ---- little-endian u64 ----------------------------------------------------------------------

std::string encode_u64_le(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return out;
}

uint64_t decode_u64_le(const unsigned char bytes[8]) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(bytes[i]) << (8 * i);
  return v;
}

// ---- errors ---------------------------------------------------------------------------------

// A JSON value for an error message, shortened if long.
std::string brief(const json& j) {
  std::string s = j.dump();
  return s.size() <= 80 ? s : s.substr(0, 77) + "...";
}

// Every reader error: "<path>: <what>".
template <class... Args>
[[noreturn]] void fail(const std::string& path, const Args&... what) {
  throw InputError(str_cat(path, ": ", what...));
}

// ---- the checksum (safetensors.h: CHECKSUM_STREAM) -----------------------------------------

constexpr const char* kChecksumPrefixData = "mix64:";       // the data alone (older files)
constexpr const char* kChecksumPrefixComplete = "mix64v2:"; // metadata, tensor descriptions and data

void add_u64(Checksum64& c, uint64_t v) {
  const std::string bytes = encode_u64_le(v);
  c.add(bytes.data(), bytes.size());
}

void add_string(Checksum64& c, const std::string& s) {
  add_u64(c, s.size());
  c.add(s.data(), s.size());
}

// Everything before the data: the metadata (std::map: keys in byte order) but the checksum
// itself, then each tensor's name, dtype and shape in file order.
struct TensorDescription {
  const std::string& name;
  DType dtype;
  const Shape& shape;
};
void add_header_content(Checksum64& c, const std::map<std::string, std::string>& metadata,
                        const std::vector<TensorDescription>& tensors) {
  for (const auto& [key, value] : metadata) {
    if (key == kChecksumKey) continue;
    add_string(c, key);
    add_string(c, value);
  }
  add_u64(c, tensors.size());
  for (const TensorDescription& t : tensors) {
    add_string(c, t.name);
    add_string(c, safetensors_dtype_name(t.dtype));
    add_u64(c, t.shape.size());
    for (int64_t d : t.shape) add_u64(c, static_cast<uint64_t>(d));
  }
}

// "mix64v2:0123456789abcdef" from a Checksum64 (whose hex() says "mix64:").
std::string complete_checksum_text(const Checksum64& c) {
  const std::string hex = c.hex();
  return kChecksumPrefixComplete + hex.substr(hex.find(':') + 1);
}

// ================================ writer =====================================================

void check_tensors_for_save(const std::string& path, const std::vector<NamedTensor>& tensors) {
  std::set<std::string> seen;
  for (const NamedTensor& t : tensors) {
    const std::string where = str_cat(path, ": cannot save tensor \"", t.name, "\": ");
    if (t.name.empty()) throw Error(str_cat(path, ": cannot save a tensor with an empty name"));
    if (t.name == kMetadataKey) throw Error(str_cat(where, "the name is reserved for metadata"));
    if (!seen.insert(t.name).second) throw Error(str_cat(where, "the name is used twice"));
    if (!t.tensor.defined()) throw Error(str_cat(where, "it is undefined (has no storage)"));
  }
}

// The JSON header, padded with spaces so that the data buffer starts 8-byte aligned. Tensors are
// laid out in the given order, and listed in the header in that order too (easier to read).
std::string make_header(const std::string& path, const std::vector<NamedTensor>& tensors,
                        const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  uint64_t offset = 0;
  for (const NamedTensor& t : tensors) {
    const uint64_t end = offset + t.tensor.nbytes();
    header[t.name] = {{"dtype", safetensors_dtype_name(t.tensor.dtype())},
                      {"shape", t.tensor.shape()},
                      {"data_offsets", json::array({offset, end})}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump(); // throws on names or metadata that are not valid UTF-8
  } catch (const json::exception& e) {
    throw Error(str_cat(path, ": cannot encode the safetensors header: ", e.what()));
  }
  while ((8 + text.size()) % 8 != 0) text += ' ';
  return text;
}

// ================================ reader =====================================================

// A read-only file with positioned, bounds-checked reads.
class InputFile {
 public:
  explicit InputFile(const std::string& path) : path_(path) {
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC); // a FIFO must not block: it is refused below
    if (fd_ < 0) {
      const int err = errno;
      fail(path, "cannot open safetensors file: ", std::strerror(err));
    }
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      fail(path, "cannot stat safetensors file: ", std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                         : S_ISFIFO(st.st_mode) ? "a FIFO"
                         : S_ISCHR(st.st_mode)  ? "a character device"
                         : S_ISBLK(st.st_mode)  ? "a block device"
                         : S_ISSOCK(st.st_mode) ? "a socket"
                                                : "not a file";
      fail(path, "cannot read a checkpoint from it: it is ", what, ", not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~InputFile() { ::close(fd_); }
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  uint64_t size() const { return size_; }

  // Reads exactly `bytes` bytes at `offset`; the caller has checked offset + bytes <= size().
  void read_at(uint64_t offset, void* out, uint64_t bytes) const {
    char* p = static_cast<char*>(out);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        fail(path_, "read failed at byte ", offset, ": ", std::strerror(err));
      }
      if (n == 0) fail(path_, "unexpected end of file at byte ", offset, " (did the file change while reading?)");
      p += n;
      offset += static_cast<uint64_t>(n);
      bytes -= static_cast<uint64_t>(n);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// Parses the header text. Besides JSON syntax this rejects duplicate keys (nlohmann would silently
// keep the last one, hiding a duplicate tensor name) and absurd nesting.
json parse_header(const std::string& path, const std::string& text) {
  std::vector<std::set<std::string>> open_objects; // the keys seen in each object being parsed
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth) fail(path, "header JSON is nested more than ", kMaxJsonDepth, " levels deep");
        if (event == json::parse_event_t::object_start) open_objects.emplace_back();
        break;
      case json::parse_event_t::object_end:
        open_objects.pop_back();
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!open_objects.back().insert(key).second) {
          if (depth == 1) fail(path, "duplicate tensor name \"", key, "\" in header");
          fail(path, "duplicate key \"", key, "\" in header");
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  json header;
  try {
    header = json::parse(text, on_event);
  } catch (const json::exception& e) {
    fail(path, "header is not valid JSON: ", e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object (it is ", header.type_name(), ")");
  return header;
}

std::map<std::string, std::string> parse_metadata(const std::string& path, const json& j) {
  if (!j.is_object()) fail(path, "\"", kMetadataKey, "\" must be a JSON object, got ", j.type_name());
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string())
      fail(path, "metadata value for key \"", key, "\" is not a string (it is ", value.type_name(), ")");
    out[key] = value.get<std::string>();
  }
  return out;
}

// One tensor as described by the header, validated on its own.
struct TensorEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  uint64_t begin = 0, end = 0; // relative to the data buffer
};

const json& require_field(const std::string& path, const std::string& name, const json& entry, const char* field) {
  const auto it = entry.find(field);
  if (it == entry.end()) fail(path, "tensor \"", name, "\": missing \"", field, "\"");
  return *it;
}

DType parse_dtype(const std::string& path, const std::string& name, const json& j) {
  if (!j.is_string()) fail(path, "tensor \"", name, "\": \"dtype\" must be a string, got ", j.type_name());
  DType dtype;
  if (!dtype_from_name(j.get<std::string>(), dtype))
    fail(path, "tensor \"", name, "\": unsupported dtype \"", j.get<std::string>(),
         "\" (pillars reads F32, BF16, I32, I64)");
  return dtype;
}

Shape parse_shape(const std::string& path, const std::string& name, const json& j) {
  if (!j.is_array()) fail(path, "tensor \"", name, "\": \"shape\" must be an array, got ", j.type_name());
  Shape shape;
  for (const json& e : j) {
    const auto bad = [&](const char* why) {
      fail(path, "tensor \"", name, "\": shape ", brief(j), ": extent ", brief(e), " ", why);
    };
    if (!e.is_number_integer()) bad("is not an integer");
    if (!e.is_number_unsigned()) bad("is negative");
    const uint64_t extent = e.get<uint64_t>();
    if (extent > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) bad("is too large");
    shape.push_back(static_cast<int64_t>(extent));
  }
  return shape;
}

void parse_offsets(const std::string& path, const std::string& name, const json& j, uint64_t& begin, uint64_t& end) {
  const bool ok = j.is_array() && j.size() == 2 && j[0].is_number_unsigned() && j[1].is_number_unsigned();
  if (!ok)
    fail(path, "tensor \"", name, "\": \"data_offsets\" must be [begin, end] with non-negative integers, got ",
         brief(j));
  begin = j[0].get<uint64_t>();
  end = j[1].get<uint64_t>();
  if (begin > end) fail(path, "tensor \"", name, "\": data_offsets ", brief(j), ": begin is after end");
}

// The number of bytes a tensor of this shape and dtype needs; false if absurdly large. Extents
// are multiplied with an overflow check; zero extents are skipped there (so that pillars::numel,
// which multiplies in order, can never overflow either) and make the result 0.
bool byte_size(const Shape& shape, DType dtype, uint64_t& out) {
  constexpr uint64_t limit = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  uint64_t n = dtype_size(dtype);
  bool has_zero = false;
  for (int64_t e : shape) {
    if (e == 0)
      has_zero = true;
    else if (__builtin_mul_overflow(n, static_cast<uint64_t>(e), &n) || n > limit)
      return false;
  }
  out = has_zero ? 0 : n;
  return true;
}

TensorEntry parse_entry(const std::string& path, const std::string& name, const json& j, uint64_t buffer_bytes) {
  if (!j.is_object()) fail(path, "tensor \"", name, "\": entry must be a JSON object, got ", j.type_name());
  TensorEntry t;
  t.name = name;
  t.dtype = parse_dtype(path, name, require_field(path, name, j, "dtype"));
  t.shape = parse_shape(path, name, require_field(path, name, j, "shape"));
  parse_offsets(path, name, require_field(path, name, j, "data_offsets"), t.begin, t.end);
  if (t.end > buffer_bytes)
    fail(path, "tensor \"", name, "\": data_offsets [", t.begin, ", ", t.end, "] run past the end of the data (",
         buffer_bytes, " bytes)");
  uint64_t needed = 0;
  if (!byte_size(t.shape, t.dtype, needed))
    fail(path, "tensor \"", name, "\": shape ", shape_str(t.shape), " is too large");
  if (t.end - t.begin != needed)
    fail(path, "tensor \"", name, "\": byte size mismatch: data_offsets [", t.begin, ", ", t.end, "] hold ",
         t.end - t.begin, " bytes but shape ", shape_str(t.shape), " of ", safetensors_dtype_name(t.dtype), " needs ",
         needed);
  return t;
}

// The tensors (sorted by offset) must tile the data buffer exactly, as the format requires.
void check_layout(const std::string& path, const std::vector<TensorEntry>& sorted, uint64_t buffer_bytes) {
  uint64_t expected = 0; // where the next tensor must begin
  const TensorEntry* previous = nullptr;
  for (const TensorEntry& t : sorted) {
    if (t.begin < expected)
      fail(path, "tensors \"", previous->name, "\" [", previous->begin, ", ", previous->end, ") and \"", t.name, "\" [",
           t.begin, ", ", t.end, ") overlap");
    if (t.begin > expected)
      fail(path, "gap in the data: bytes [", expected, ", ", t.begin, ") before tensor \"", t.name,
           "\" belong to no tensor");
    expected = t.end;
    previous = &t;
  }
  if (expected != buffer_bytes)
    fail(path, "gap in the data: ", buffer_bytes - expected,
         " trailing bytes after the last tensor belong to no tensor");
}

} // namespace

const char* safetensors_dtype_name(DType t) {
  for (const DTypeName& d : kDTypes)
    if (d.dtype == t) return d.name;
  return "?";
}

// ---- save ------------------------------------------------------------------------------------

void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  check_tensors_for_save(path, tensors); // before the temporary file exists
  // The checksum goes into the header, which precedes the data: a first pass computes it over the
  // metadata, the tensors' descriptions and their data (device tensors are copied out one at a
  // time, so the host never holds them all).
  Checksum64 checksum;
  std::vector<TensorDescription> described;
  for (const NamedTensor& t : tensors) described.push_back({t.name, t.tensor.dtype(), t.tensor.shape()});
  add_header_content(checksum, metadata, described);
  for (const NamedTensor& t : tensors) {
    if (t.tensor.nbytes() == 0) continue;
    const Tensor host = t.tensor.to(Device::cpu);
    checksum.add(host.raw(), host.nbytes());
  }
  std::map<std::string, std::string> with_checksum = metadata;
  with_checksum[kChecksumKey] = complete_checksum_text(checksum);
  const std::string header = make_header(path, tensors, with_checksum);
  AtomicFile file(path);
  file.write(encode_u64_le(header.size()));
  file.write(header);
  for (const NamedTensor& t : tensors) {
    if (t.tensor.nbytes() == 0) continue;
    const Tensor host = t.tensor.to(Device::cpu); // device tensors (GPU training) are copied out
    file.write(host.raw(), host.nbytes());
  }
  file.commit();
}

// ---- load ------------------------------------------------------------------------------------

SafetensorsContents load_safetensors(const std::string& path) {
  InputFile file(path);

  // 1. The header length, then the header.
  if (file.size() < 8)
    fail(path, "file is ", file.size(), " bytes, too short for the 8-byte header length of a safetensors file");
  unsigned char length_bytes[8];
  file.read_at(0, length_bytes, 8);
  const uint64_t header_bytes = decode_u64_le(length_bytes);
  if (header_bytes > kMaxHeaderBytes)
    fail(path, "header length ", header_bytes, " exceeds the limit of ", kMaxHeaderBytes, " bytes (corrupt file?)");
  if (header_bytes > file.size() - 8)
    fail(path, "header length ", header_bytes, " runs past the end of the file (", file.size(), " bytes)");
  std::string text(header_bytes, '\0');
  file.read_at(8, text.data(), header_bytes);
  const json header = parse_header(path, text);

  // 2. Every entry, validated against the data buffer that follows the header.
  const uint64_t data_start = 8 + header_bytes;
  const uint64_t buffer_bytes = file.size() - data_start;
  SafetensorsContents out;
  std::vector<TensorEntry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey)
      out.metadata = parse_metadata(path, value);
    else
      entries.push_back(parse_entry(path, key, value, buffer_bytes));
  }
  // File offset order; the stable sort keeps header order among empty tensors at the same offset.
  std::stable_sort(entries.begin(), entries.end(), [](const TensorEntry& a, const TensorEntry& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  check_layout(path, entries, buffer_bytes);

  // 3. The data: each tensor gets its own copy, checked against the recorded checksum (if any:
  // files from other writers have none) in file order, which is the order it was computed in.
  // A "mix64v2:" checksum covers the metadata and the tensors' descriptions first; "mix64:" (files
  // written before) the data alone.
  const auto recorded = out.metadata.find(kChecksumKey);
  if (recorded != out.metadata.end()) {
    const std::string& text = recorded->second;
    if (text.rfind(kChecksumPrefixComplete, 0) == 0)
      out.checksum = ChecksumCoverage::complete;
    else if (text.rfind(kChecksumPrefixData, 0) == 0)
      out.checksum = ChecksumCoverage::data;
    else
      fail(path, "metadata \"", kChecksumKey, "\" is \"", text.substr(0, 40), "\", not a checksum pillars writes (",
           kChecksumPrefixComplete, " or ", kChecksumPrefixData, " and 16 hex digits): the file is corrupt or edited");
  }
  Checksum64 checksum;
  if (out.checksum == ChecksumCoverage::complete) {
    std::vector<TensorDescription> described;
    for (const TensorEntry& e : entries) described.push_back({e.name, e.dtype, e.shape});
    add_header_content(checksum, out.metadata, described);
  }
  for (const TensorEntry& e : entries) {
    Tensor t = Tensor::empty(e.shape, e.dtype);
    if (t.nbytes() > 0) file.read_at(data_start + e.begin, t.raw(), t.nbytes());
    checksum.add(t.raw(), t.nbytes());
    out.tensors.push_back({e.name, std::move(t)});
  }
  if (out.checksum != ChecksumCoverage::none) {
    const std::string computed =
        out.checksum == ChecksumCoverage::complete ? complete_checksum_text(checksum) : checksum.hex();
    if (recorded->second != computed)
      fail(path, "the file's content does not match its checksum (", kChecksumKey, " records ", recorded->second,
           ", the ", out.checksum == ChecksumCoverage::complete ? "metadata and tensors give " : "tensor data gives ",
           computed, "): the file is corrupt or was edited");
  }
  out.metadata.erase(kChecksumKey); // verified: the file's business, not the caller's
  return out;
}

} // namespace pillars::io
