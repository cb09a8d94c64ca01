// .xz files with liblzma's stream decoder and easy encoder; see xz.h.
#include "datasets/xz.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <vector>

#include <lzma.h>

#include "base/error.h"
#include "base/input_file.h"

namespace pillars::data {

namespace {

// What a liblzma return code means for the person whose file it is.
std::string describe(lzma_ret ret) {
  switch (ret) {
    case LZMA_FORMAT_ERROR:
      return "not an .xz file (bad magic bytes)";
    case LZMA_DATA_ERROR:
      return "corrupt .xz data (an integrity check or the compressed data is bad)";
    case LZMA_BUF_ERROR:
      return "truncated .xz file (the compressed data ends early)";
    case LZMA_OPTIONS_ERROR:
      return "unsupported .xz options (made by a newer xz?)";
    case LZMA_MEM_ERROR:
      return "out of memory while decompressing";
    case LZMA_MEMLIMIT_ERROR:
      return "the decompressor's memory limit was reached";
    case LZMA_UNSUPPORTED_CHECK:
      return "unsupported integrity check type";
    default:
      return str_cat("liblzma error ", static_cast<int>(ret));
  }
}

// Owns the decoder and the file descriptor so that every exit (an error, a throwing sink) frees both.
struct Decoder {
  lzma_stream strm = LZMA_STREAM_INIT;
  int fd = -1;
  ~Decoder() {
    lzma_end(&strm);
    if (fd >= 0) ::close(fd);
  }
};

} // namespace

void xz_decompress_file(const std::string& path, const ByteSink& sink) {
  Decoder dec;
  dec.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (dec.fd < 0) {
    const int err = errno;
    throw InputError(str_cat(path, ": cannot open: ", std::strerror(err)));
  }
  // LZMA_CONCATENATED: like `xz -d`, accept several streams back to back; it also makes the
  // decoder insist on a proper end of input, so a file cut at a stream boundary is caught.
  lzma_ret ret = lzma_stream_decoder(&dec.strm, UINT64_MAX, LZMA_CONCATENATED);
  if (ret != LZMA_OK) throw Error(str_cat(path, ": cannot start the xz decoder: ", describe(ret)));

  std::vector<uint8_t> in(1 << 16), out(1 << 20);
  lzma_action action = LZMA_RUN;
  dec.strm.next_out = out.data();
  dec.strm.avail_out = out.size();
  for (;;) {
    if (dec.strm.avail_in == 0 && action == LZMA_RUN) {
      ssize_t n;
      do n = ::read(dec.fd, in.data(), in.size());
      while (n < 0 && errno == EINTR);
      if (n < 0) {
        const int err = errno;
        throw Error(str_cat(path, ": read failed: ", std::strerror(err)));
      }
      dec.strm.next_in = in.data();
      dec.strm.avail_in = static_cast<size_t>(n);
      if (n == 0 && dec.strm.total_in == 0) throw InputError(str_cat(path, ": empty file (not an .xz file)"));
      if (n == 0) action = LZMA_FINISH; // tells the decoder there is no more input
    }
    ret = lzma_code(&dec.strm, action);
    if (dec.strm.avail_out == 0 || ret == LZMA_STREAM_END) { // hand over what has been produced
      const size_t produced = out.size() - dec.strm.avail_out;
      if (produced > 0) sink(reinterpret_cast<const char*>(out.data()), produced);
      dec.strm.next_out = out.data();
      dec.strm.avail_out = out.size();
    }
    if (ret == LZMA_STREAM_END) return;
    if (ret != LZMA_OK) throw InputError(str_cat(path, ": ", describe(ret)));
  }
}

std::string xz_read_file(const std::string& path) {
  std::string out;
  xz_decompress_file(path, [&](const char* p, size_t n) { out.append(p, n); });
  return out;
}

std::string xz_then_plain_text(const std::string& path) {
  std::string text;
  if (std::filesystem::is_regular_file(path + ".xz")) text = xz_read_file(path + ".xz");
  if (std::filesystem::is_regular_file(path)) text += read_input_file(path, uint64_t{1} << 31);
  return text;
}

std::string xz_compress(const std::string& bytes) {
  lzma_stream strm = LZMA_STREAM_INIT;
  lzma_ret ret = lzma_easy_encoder(&strm, 6, LZMA_CHECK_CRC64);
  if (ret != LZMA_OK) throw Error(str_cat("cannot start the xz encoder: ", describe(ret)));
  // lzma_stream_buffer_bound is the worst case (incompressible input), so one call finishes.
  std::string out(lzma_stream_buffer_bound(bytes.size()), '\0');
  strm.next_in = reinterpret_cast<const uint8_t*>(bytes.data());
  strm.avail_in = bytes.size();
  strm.next_out = reinterpret_cast<uint8_t*>(out.data());
  strm.avail_out = out.size();
  ret = lzma_code(&strm, LZMA_FINISH);
  const size_t produced = out.size() - strm.avail_out;
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) throw Error(str_cat("xz compression failed: ", describe(ret)));
  out.resize(produced);
  return out;
}

} // namespace pillars::data
