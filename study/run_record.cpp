// See run_record.h.
#include "study/run_record.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/input_file.h"
#include "datasets/xz.h"

namespace pillars::study {

namespace fs = std::filesystem;
using nlohmann::json;

RunPaths run_paths(const std::string& study_dir, const std::string& system, int64_t seed, bool prunes) {
  RunPaths p;
  p.system = system, p.seed = seed;
  p.dir = (fs::path(study_dir) / system / str_cat("s", seed)).string();
  p.final_dir = prunes ? (fs::path(p.dir) / "pruned").string() : p.dir;
  p.record = (fs::path(p.dir) / "study_run.json").string();
  p.log = (fs::path(study_dir) / "logs" / str_cat(system, "-s", seed, ".log")).string();
  return p;
}

RunRecord read_run_record(const RunPaths& p) {
  RunRecord r;
  if (!fs::exists(fs::symlink_status(p.record))) return r;
  json j;
  try {
    j = json::parse(read_input_file(p.record, 1 << 20));
    if (!j.is_object() || !j.value("system", json()).is_string() || j["system"] != p.system ||
        !j.value("seed", json()).is_number_integer() || j["seed"] != p.seed ||
        !j.value("trained", json()).is_boolean() || !j.value("evaluated", json()).is_array() ||
        !j.value("commands", json()).is_array())
      throw InputError("not the record of this run (system, seed, trained, evaluated, commands)");
    r.trained = j["trained"].get<bool>();
    for (const json& s : j["evaluated"]) r.evaluated.insert(s.get<std::string>());
    for (const json& c : j["commands"]) r.commands.push_back(c.get<std::string>());
  } catch (const json::exception& err) {
    throw InputError(str_cat(p.record, ": ", err.what(), " (move the run folder away to run it again)"));
  } catch (const InputError& err) {
    throw InputError(str_cat(p.record, ": ", err.what(), " (move the run folder away to run it again)"));
  }
  return r;
}

void write_run_record(const RunPaths& p, const RunRecord& r) {
  const json j = {{"system", p.system},
                  {"seed", p.seed},
                  {"trained", r.trained},
                  {"evaluated", r.evaluated},
                  {"commands", r.commands}};
  io::atomic_write_file(p.record, j.dump(1) + "\n");
}

void compress_head_metrics(const RunPaths& p) {
  for (const fs::path& dir : {fs::path(p.dir), fs::path(p.dir) / "pruned"}) {
    const fs::path plain = dir / "head_metrics.jsonl", packed = dir / "head_metrics.jsonl.xz";
    if (!fs::is_regular_file(fs::symlink_status(plain)) || fs::exists(fs::symlink_status(packed))) continue;
    const std::string text = read_input_file(plain.string(), uint64_t{1} << 30);
    io::atomic_write_file(packed.string(), data::xz_compress(text));
    if (data::xz_read_file(packed.string()) != text)
      throw Error(str_cat(packed.string(), ": does not read back as ", plain.string(), "; both are kept"));
    fs::remove(plain);
  }
}

namespace {

// The "update" of the last line of a JSON-lines log that has one (reads the last 64 KB only).
int64_t last_update_in(const fs::path& log) {
  std::ifstream in(log, std::ios::binary | std::ios::ate);
  if (!in) return 0;
  const std::streamoff size = in.tellg(), from = std::max<std::streamoff>(0, size - (64 << 10));
  in.seekg(from);
  std::string tail(static_cast<size_t>(size - from), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  int64_t update = 0;
  size_t at = 0;
  while (at < tail.size()) {
    size_t end = tail.find('\n', at);
    if (end == std::string::npos) end = tail.size();
    const json line = json::parse(tail.substr(at, end - at), nullptr, /*allow_exceptions=*/false);
    if (line.is_object() && line.contains("update") && line["update"].is_number_integer())
      update = line["update"].get<int64_t>();
    at = end + 1;
  }
  return update;
}

} // namespace

int64_t latest_update(const RunPaths& p) {
  return std::max(last_update_in(fs::path(p.dir) / "log.jsonl"),
                  last_update_in(fs::path(p.dir) / "pruned" / "log.jsonl"));
}

} // namespace pillars::study
