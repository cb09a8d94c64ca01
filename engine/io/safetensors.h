// safetensors: the checkpoint format of Hugging Face (https://github.com/huggingface/safetensors).
//
// A file is three parts, back to back:
//
//   +-----------+----------------------------------+-------------------------------------------+
//   | N: u64 LE | header: N bytes of UTF-8 JSON    | buffer: the tensors' bytes, back to back  |
//   +-----------+----------------------------------+-------------------------------------------+
//
// The header is one JSON object. Each key but one names a tensor:
//
//   {
//     "__metadata__": {"format": "pt"},                       // optional; string -> string
//     "encoder.embed.weight": {"dtype": "F32", "shape": [1000, 64], "data_offsets": [0, 256000]},
//     "step":                 {"dtype": "I64", "shape": [],         "data_offsets": [256000, 256008]}
//   }
//
// data_offsets are [begin, end) byte offsets relative to the start of the buffer (not the file).
// Data is row-major and little-endian. The tensors must tile the buffer exactly: no overlaps, no
// holes, nothing after the last one. The header may end with spaces; the writer adds them so that
// the buffer starts at a multiple of 8 bytes.
//
// dtypes: F32 <-> DType::f32, BF16 <-> bf16, I32 <-> i32, I64 <-> i64. Other safetensors dtypes
// (F16, F64, U8, BOOL, ...) are rejected with a message naming them.
//
// Self-checking: save_safetensors adds "pillars.checksum" to the metadata, a Checksum64
// (base/checksum.h) of the whole file's content but the checksum itself, "mix64v2:<16 hex digits>",
// so that an edited model config or trainer state is found as surely as a flipped bit in a weight.
// The bytes it covers, each length or count a little-endian u64 (CHECKSUM_STREAM):
//
//   for every other metadata entry, keys in byte order:  len(key) key len(value) value
//   the number of tensors
//   for every tensor, in file order:  len(name) name len(dtype) dtype ndims dims...
//   the data buffer (every tensor's bytes, in file order)
//
// load_safetensors recomputes it and refuses a file whose content no longer matches (a flipped bit,
// a partial overwrite, an edited field), then leaves the key out of the metadata it returns and says
// what it checked (SafetensorsContents::checksum). Files written before the metadata was covered
// record "mix64:<16 hex digits>", a Checksum64 of the data buffer alone: the different prefix tells
// them apart, and they are still checked, on their data. Metadata is a plain string map, so any
// safetensors reader still reads the file; a file without the key (another writer) loads unchecked
// here, and it is for the caller to decide whether to trust it (train/checkpoint.h refuses such a
// checkpoint unless asked not to).
//
// Errors: load_safetensors throws pillars::InputError for every problem with the file (missing,
// truncated, malformed header, inconsistent offsets, ...); the message starts with the file path
// and says what is wrong. It never reads out of bounds and never allocates more than the file's
// size for tensor data. save_safetensors writes atomically (base/atomic_file.h): on any error
// the previous file at `path` is left untouched and no temporary file remains.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/tensor.h"

namespace pillars::io {

inline constexpr const char* kChecksumKey = "pillars.checksum"; // in "__metadata__"

// What load_safetensors could check of a file.
enum class ChecksumCoverage {
  none,     // no "pillars.checksum": another writer's file, loaded unchecked
  data,     // "mix64:": the tensor data only (files written before the metadata was covered)
  complete, // "mix64v2:": metadata, tensor names, dtypes and shapes, and data
};

struct NamedTensor {
  std::string name;
  Tensor tensor;
};

// Writes the tensors in the given order, contiguous, with `metadata` as "__metadata__" (omitted
// when empty). Tensors must be defined, on the CPU, and uniquely and non-emptily named.
void save_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {});

struct SafetensorsContents {
  std::vector<NamedTensor> tensors; // in file offset order (empty tensors sharing an offset: in
                                    // header order); each owns its memory (CPU)
  std::map<std::string, std::string> metadata;
  ChecksumCoverage checksum = ChecksumCoverage::none; // what the recorded checksum covered (verified)
};

SafetensorsContents load_safetensors(const std::string& path);

// "F32" for DType::f32, etc.
const char* safetensors_dtype_name(DType t);

} // namespace pillars::io
