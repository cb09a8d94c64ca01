// read_field: one field of one split as a list of strings. See registry.h.
#include <fstream>
#include <sstream>

#include "datasets/lines.h"
#include "datasets/registry.h"
#include "base/error.h"

namespace pillars::data {

namespace {

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(str_cat(path, ": cannot open"));
  std::string bytes;
  in.seekg(0, std::ios::end);
  bytes.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!in) throw Error(str_cat(path, ": read failed"));
  return bytes;
}

} // namespace

std::vector<std::string> read_field(const std::string& dataset, const std::string& split, const std::string& field) {
  const DatasetSpec& d = find_dataset(dataset);
  const SplitSpec& s = d.split(split);
  const NamedFile& f = d.field(split, field);
  const std::string path = resolve_file(d.name, f.file); // verified against the registry's sha256
  const std::string bytes = read_whole_file(path);
  const std::vector<std::string_view> lines = select_lines(bytes, s.select);
  // The file's checksum already matched, so this fails only if the registry's split table itself
  // is wrong (a count that disagrees with its own file): say so plainly.
  if (lines.size() != s.examples)
    throw Error(str_cat(d.name, " ", split, "/", field, ": ", path, " gives ", lines.size(),
                        " lines but the registry says ", s.examples, " (registry table error)"));
  std::vector<std::string> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    out.push_back(d.escaped
                      ? unescape_field(lines[i], str_cat(d.name, "/", f.file, " (", split, " example ", i + 1, ")"))
                      : std::string(lines[i]));
  return out;
}

} // namespace pillars::data
