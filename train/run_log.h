// log.jsonl, the run's log: one JSON object per line, each appended whole or not at all
// (base/log_file.h): a write that fails (disk full, I/O error) throws pillars::Error naming the
// file and leaves no cut line. The lines that record a checkpoint or the end of the run are
// fsync'ed (`durable`), so after a power loss the log reaches at least its last recorded
// checkpoint. In a data-parallel job only rank 0 has a log (`writer`); on the other ranks write()
// does nothing.
//
//   RunLog log(run_dir + "/log.jsonl", /*phase=*/"", /*writer=*/true);
//   log.write({{"type", "checkpoint"}, {"file", name}}, /*durable=*/true);
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>

#include "base/log_file.h"

namespace pillars::train {

class RunLog {
 public:
  // phase: "" or the phase of a pruning run, written into every line.
  RunLog(const std::string& path, std::string phase, bool writer);
  void write(nlohmann::json j, bool durable = false);

 private:
  void note_lost_output();

  std::optional<io::LineFile> file_;
  std::string phase_;
};

} // namespace pillars::train
