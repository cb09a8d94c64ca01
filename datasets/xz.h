// .xz files (liblzma): streaming decompression, how the offline mirror's files are read, and
// in-memory compression, how a study stores a finished run's large logs.
//
//   data::xz_decompress_file("/mirror/ptb/ptb.train.txt.xz", [&](const char* p, size_t n) {
//     out.write(p, n);             // called once per decompressed chunk (up to 1 MiB), in order
//   });
//
// The whole file is checked: the container's own integrity check (CRC64 for `xz -9` files) is
// verified by liblzma, concatenated streams are accepted (as `xz -d` does), and anything that is
// not a complete, valid .xz file throws pillars::InputError whose message starts with the path
// and says what was wrong (not xz at all, corrupt data, truncated). The sink may throw; the
// exception passes through with the decoder cleaned up.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace pillars::data {

using ByteSink = std::function<void(const char* data, size_t bytes)>;

void xz_decompress_file(const std::string& path, const ByteSink& sink);

// The whole of an .xz file's content in memory (for files known to be small: logs, not datasets).
std::string xz_read_file(const std::string& path);

// The text of `path`.xz, then that of `path`, each where it is a regular file ("" when neither is):
// a log a study stored compressed (study/run_record.h), with what a run continued after that
// appended to the plain file. A corrupt .xz throws InputError naming it.
std::string xz_then_plain_text(const std::string& path);

// `bytes` as one .xz stream (preset 6, as `xz` uses by default, with a CRC64 check), which
// `xz -d` and xz_decompress_file read back byte for byte.
//
//   io::atomic_write_file(path + ".xz", data::xz_compress(text));
std::string xz_compress(const std::string& bytes);

} // namespace pillars::data
