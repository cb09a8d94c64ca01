// Running the external programs some datasets need (curl, npm, tar, apt-get, gzip): no shell, so
// no quoting problems; the child's stdout can go to a file; its stderr goes to ours, so a failing
// download or `npm pack` explains itself to the user.
//
//   if (!data::find_program("curl")) ...                    // searched in $PATH
//   int rc = data::run_program({"curl", "-fsSL", "-o", tmp, url});          // exit status
//   int rc = data::run_program({"gzip", "-dc", gz}, /*stdout_path=*/out);   // stdout to a file
//
// The exit status is the child's; 127 means the program could not be started; a child killed by a
// signal gives 128 + the signal number (as a shell reports it).
#pragma once
#include <string>
#include <vector>

namespace pillars::data {

std::string find_program(const std::string& name); // full path, or "" if not in $PATH
int run_program(const std::vector<std::string>& argv, const std::string& stdout_path = "",
                const std::string& working_dir = "");
std::string command_line(const std::vector<std::string>& argv); // for messages: "curl -fsSL …"

} // namespace pillars::data
