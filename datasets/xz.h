// Streaming .xz decompression (liblzma): how the offline mirror's files are read.
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

} // namespace pillars::data
