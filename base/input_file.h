// Reading a file the user named: only regular files, and only up to a size bound.
//
//   std::string text = read_input_file("experiments/x.json", 16 << 20);  // the whole file
//   check_regular_file(codes_path);                                     // before an ifstream
//
// Why: a path in an experiment file or on the command line can name anything. A FIFO blocks
// open(2) and read(2) until a writer appears (forever, for a typo'd `mkfifo`), a character
// device such as /dev/zero never ends and a read of it grows until std::bad_alloc, and a
// directory "opens" on Linux and then fails obscurely. So every input path is opened with
// O_NONBLOCK (which does not block on a FIFO and changes nothing for a regular file), checked
// with fstat(2) to be a regular file, and only then read.
//
// Errors: pillars::InputError (the CLI exits with 2), the message starting with the path:
//   "runs/x/dict.txt: cannot read: it is a FIFO, not a regular file"
//   "exp.json: cannot read: the file has 20000000 bytes, more than the 16777216 allowed"
#pragma once
#include <cstdint>
#include <string>

namespace pillars {

// Throws InputError unless `path` is a regular file (symbolic links are followed) that this
// process can open for reading.
void check_regular_file(const std::string& path);

// The whole file, refused (before reading) when it is not a regular file or is larger than
// max_bytes.
std::string read_input_file(const std::string& path, uint64_t max_bytes);

} // namespace pillars
