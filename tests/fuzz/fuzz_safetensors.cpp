// Fuzz target: the safetensors reader (engine/io/safetensors.h).
//
// Feeds: the input as a whole .safetensors file (8-byte header length, JSON header, data), written
// to a scratch file, to load_safetensors().
// Expects: InputError for anything malformed (tests/fuzz/fuzz_common.h).
// Asserts, when the file loads: the tensors' bytes, in the order returned, are exactly the data
// buffer (the format's tiling rule, which the reader checks); and saving what was read and loading
// it again gives the same names, dtypes, shapes, bytes and metadata.
#include <cstring>

#include "engine/io/safetensors.h"
#include "tests/fuzz/fuzz_common.h"

using namespace pillars;

namespace {

bool same(const io::SafetensorsContents& a, const io::SafetensorsContents& b) {
  if (a.metadata != b.metadata || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor &x = a.tensors[i].tensor, &y = b.tensors[i].tensor;
    if (a.tensors[i].name != b.tensors[i].name || x.dtype() != y.dtype() || x.shape() != y.shape() ||
        x.nbytes() != y.nbytes())
      return false;
    if (x.nbytes() > 0 && std::memcmp(x.raw(), y.raw(), x.nbytes()) != 0) return false;
  }
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::ScratchFile input(".safetensors"), resaved(".resaved.safetensors");
  io::SafetensorsContents contents;
  if (!fuzz::run_expecting_errors([&] { contents = io::load_safetensors(input.write(data, size)); })) return 0;

  // It loaded, so the file has a header length and a header; the rest is the data buffer.
  uint64_t header_bytes = 0;
  for (int i = 7; i >= 0; --i) header_bytes = header_bytes << 8 | data[i];
  const uint8_t* buffer = data + 8 + header_bytes;
  size_t offset = 0;
  for (const io::NamedTensor& t : contents.tensors) {
    fuzz::fuzz_require(offset + t.tensor.nbytes() <= size - 8 - header_bytes,
                       "the tensors hold more bytes than the data buffer");
    fuzz::fuzz_require(t.tensor.nbytes() == 0 || std::memcmp(t.tensor.raw(), buffer + offset, t.tensor.nbytes()) == 0,
                       "a tensor's bytes differ from the file's");
    offset += t.tensor.nbytes();
  }
  fuzz::fuzz_require(offset == size - 8 - header_bytes, "the tensors do not cover the data buffer");

  // save_safetensors refuses an empty tensor name, which the format (and so the reader) allows.
  for (const io::NamedTensor& t : contents.tensors)
    if (t.name.empty()) return 0;
  try {
    io::save_safetensors(resaved.path(), contents.tensors, contents.metadata);
    fuzz::fuzz_require(same(contents, io::load_safetensors(resaved.path())),
                       "save + load does not give back what was loaded");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pillars fuzz: saving or reloading a file that loaded failed: %s\n", e.what());
    std::abort();
  }
  return 0;
}
