// See output_file.h.
#include "tools/output_file.h"

#include <filesystem>

#include "base/atomic_file.h"

namespace pillars::cli {

namespace {

namespace fs = std::filesystem;

// The file that makes `dir` a run folder, or "" when it holds none.
std::string run_file_in(const fs::path& dir) {
  std::error_code ec;
  for (const char* name : {"log.jsonl", "pipeline.json"})
    if (fs::exists(dir / name, ec)) return name;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint_", 0) == 0 && entry.path().extension() == ".safetensors") return name;
  }
  return "";
}

} // namespace

void check_output_path(const std::string& path, const std::string& flag, bool force) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(str_cat(flag, " ", path, ": is a directory; give a file name"));
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw InputError(str_cat(flag, " ", path, ": the folder ", parent.string(), " does not exist"));
  // Every folder from the file's up to the root, links resolved: "-o ../x.json" from inside a
  // run's pruned/ folder, or a link to a run folder, is caught too.
  const fs::path folder = fs::weakly_canonical(fs::absolute(parent.empty() ? fs::path(".") : parent, ec), ec);
  for (fs::path dir = folder; !ec && !dir.empty(); dir = dir.parent_path()) {
    if (const std::string file = run_file_in(dir); !file.empty())
      throw InputError(str_cat(flag, " ", path, ": is inside the run folder ", dir.string(), " (it holds ", file,
                               "), which only `pillars train` writes; put the output elsewhere"));
    if (dir == dir.parent_path()) break; // the root
  }
  try {
    io::refuse_symlink(path);
  } catch (const InputError& err) {
    throw InputError(str_cat(flag, " ", err.what()));
  }
  if (!force && fs::exists(fs::symlink_status(path, ec)))
    throw InputError(str_cat(flag, " ", path, ": the file exists; give --force to replace it, or another name"));
}

} // namespace pillars::cli
