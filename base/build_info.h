// What a run records about the program and the machine it ran on, so that results can be
// traced and compared: only runs of the same arithmetic (instruction set, threads, device,
// precision) are paired (study/).
#pragma once
#include <string>

namespace pillars {

// The commit the binary was built from (`git describe --always --dirty`), or "unknown".
const char* build_commit();
// The CPU's model name as the kernel reports it (/proc/cpuinfo's "model name"), or "unknown".
std::string cpu_model_name();

} // namespace pillars
