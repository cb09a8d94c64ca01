// .xz decompression with liblzma's stream decoder; see xz.h.
#include "datasets/xz.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <lzma.h>

#include "base/error.h"

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

} // namespace pillars::data
