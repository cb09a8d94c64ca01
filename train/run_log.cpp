// The run's log, log.jsonl; see run_log.h.
#include "train/run_log.h"

#include <cstdio>
#include <utility>

#include "base/error.h"

namespace pillars::train {

RunLog::RunLog(const std::string& path, std::string phase, bool writer) : phase_(std::move(phase)) {
  if (writer) file_.emplace(path);
}

void RunLog::write(nlohmann::json j, bool durable) {
  if (!file_) return;
  note_lost_output();
  if (!phase_.empty()) j["phase"] = phase_;
  file_->append(j.dump(), durable);
}

// Progress lines go to stderr. When its reader has gone (`pillars train ... 2>&1 | head`, a
// closed terminal) those writes fail (SIGPIPE is ignored: base/run_guard.h) and stdio marks the
// stream's error flag; the run goes on without them, and the log says once per process and
// stream from which point on they were dropped, so that a missing tail on a screen is explained.
void RunLog::note_lost_output() {
  static bool noted[2] = {false, false}; // stdout, stderr: one note each, whatever the phase
  const std::pair<std::FILE*, const char*> streams[2] = {{stdout, "stdout"}, {stderr, "stderr"}};
  for (int i = 0; i < 2; ++i) {
    if (noted[i] || !std::ferror(streams[i].first)) continue;
    noted[i] = true;
    nlohmann::json note = {
        {"type", "note"},
        {"stream", streams[i].second},
        {"note", str_cat("a write to ", streams[i].second,
                         " failed (its reader has gone: a closed pipe or "
                         "terminal); what the run prints there is dropped from here on; its progress is in this log")}};
    if (!phase_.empty()) note["phase"] = phase_;
    file_->append(note.dump());
  }
}

} // namespace pillars::train
