// The file a command writes its result to (-o/--out/--output): checked before the command does
// its work, so that a typo'd folder costs an immediate exit 2 naming the flag, not the result of
// a long measurement thrown away at the end.
#pragma once
#include <filesystem>
#include <string>

#include "base/error.h"

namespace pillars::cli {

// Throws InputError unless `path` can be written as a file: its folder exists and it is not
// itself a folder. `flag` names the option in the message ("--output").
inline void check_output_path(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_directory(path, ec))
    throw InputError(str_cat(flag, " ", path, ": is a directory; give a file name"));
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw InputError(str_cat(flag, " ", path, ": the folder ", parent.string(), " does not exist"));
}

} // namespace pillars::cli
