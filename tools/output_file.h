// The file a command writes its result to (-o/--out/--output of `pillars metrics` and `report`):
// checked before the command does its work, so that a typo'd folder costs an immediate exit 2
// naming the flag, not the result of a long measurement thrown away at the end.
//
// A result never goes into a run folder: `pillars train` is the only writer of a run's files, and
// a page or a JSON file written among them could replace one of them (-o runs/x/log.jsonl) or be
// taken for one by the next reader. Nor does it replace a file that exists, unless the command
// was given --force: a mistyped -o must not destroy an earlier result.
#pragma once
#include <string>

#include "base/error.h"

namespace pillars::cli {

// Throws InputError, its message starting with `flag` and `path`, unless `path` can be written as
// a file: its folder exists; it is not a folder; it is not a symbolic link; it does not exist yet
// (with `force`, an existing file may be replaced); and neither its folder nor any folder above
// that is a run folder (one holding log.jsonl, pipeline.json or a checkpoint_*.safetensors: the
// files only a run has; config.json or dict.txt alone are common names of other tools' files).
void check_output_path(const std::string& path, const std::string& flag, bool force);

} // namespace pillars::cli
