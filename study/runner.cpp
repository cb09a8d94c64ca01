// See runner.h.
#include "study/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <thread>

#include "base/atomic_file.h"
#include "base/input_file.h"
#include "base/run_guard.h"
#include "kernels/cpu/cpu_features.h"
#include "study/run_record.h"
#include "study/trailing_rate.h"
#include "train/prepare.h"
#include "train/session.h"

namespace pillars::study {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

// One (system, seed) of the study and the steps it has left.
struct Run {
  const SystemSpec* system = nullptr;
  int64_t seed = 0;
  RunPaths paths;
  RunRecord record;
  std::deque<std::vector<std::string>> steps; // argv of each step left (argv[0] = the binary)
  bool regenerates = false;                   // steps.front() trains the first phase again (phase1/)
  std::optional<RunPaths> copy;               // another study's finished run to copy ("copy_from")
  pid_t pid = 0;                              // the running step's process, 0 when none
  std::vector<std::string> splits;            // the test splits it is evaluated on
  int64_t continues_from = 0;                 // a finished run continued to a larger budget: the update it had reached
  std::string label() const { return str_cat(system->name, " s", seed); }
};

// What the study is run under, written at its first start and checked at every later one.
json study_conditions(const StudySpec& s, Device device) {
  return {{"study", s.name},
          {"device", enum_name(device)},
          {"precision", enum_name(s.precision)},
          {"isa", s.isa},
          {"threads", s.threads}};
}

// STUDY_DIR/study.json, the conditions its runs were made under (nullopt: no study there yet).
std::optional<json> read_conditions(const std::string& dir) {
  const std::string path = (fs::path(dir) / "study.json").string();
  if (!fs::exists(fs::symlink_status(path))) return std::nullopt;
  try {
    json j = json::parse(read_input_file(path, 1 << 20));
    if (!j.is_object()) throw InputError(str_cat(path, ": not a JSON object"));
    return j;
  } catch (const json::exception& err) {
    throw InputError(str_cat(path, ": invalid JSON: ", err.what()));
  }
}

void check_conditions(const std::string& dir, const json& now) {
  const std::string path = (fs::path(dir) / "study.json").string();
  const std::optional<json> before = read_conditions(dir);
  if (!before) {
    io::atomic_write_file(path, now.dump(1) + "\n");
    return;
  }
  for (const auto& [key, value] : now.items())
    if (!before->contains(key) || (*before)[key] != value)
      throw InputError(str_cat(path, ": this study's runs were made with ", key, " = ",
                               before->contains(key) ? (*before)[key].dump() : "(none)", ", now ", value.dump(),
                               "; one study never mixes them (use another --out folder for the new setting)"));
}

// A study pinned to an instruction set runs only where its kernels may run: on a CPU without them
// (or under a PILLARS_ISA that lowers them) the runs would fall back to a lesser set, and the table
// would leave every one of them out.
void check_isa_available(const StudySpec& s, Device device) {
  if (device != Device::cpu || s.isa == "native") return;
  const cpu::Isa here = cpu::active_isa(); // the CPU's best, lowered by PILLARS_ISA
  for (cpu::Isa isa : {cpu::Isa::generic, cpu::Isa::avx2, cpu::Isa::avx512})
    if (s.isa == cpu::isa_name(isa) && static_cast<int>(isa) > static_cast<int>(here))
      throw InputError(str_cat(s.path, ": \"isa\": this study runs the ", s.isa, " kernels, but this process may use ",
                               "only ", cpu::isa_name(here), " (the CPU has ", cpu::isa_name(cpu::detected_isa()),
                               std::getenv("PILLARS_ISA") ? str_cat(", PILLARS_ISA=", std::getenv("PILLARS_ISA")) : "",
                               "); continue it where they run"));
}

// Where a run goes on from: a run that has saved continues (--resume); one stopped before its
// first save left files that a new start moves aside (--overwrite: a folder with a run's files is
// refused otherwise).
void add_continue_flag(std::vector<std::string>& argv, const std::string& dir, const char* saved_file) {
  if (fs::exists(fs::path(dir) / saved_file))
    argv.push_back("--resume");
  else if (!train::run_files_in(dir).empty())
    argv.push_back("--overwrite");
}

// `pillars train`, or `pillars prune --from CHECKPOINT` (the source system's first phase) for a
// "prune_from" system.
std::vector<std::string> train_step(const std::string& binary, const StudySpec& s, const Run& r,
                                    const std::string& from) {
  const bool prune = !r.system->prune_from.empty();
  std::vector<std::string> argv{binary, prune ? "prune" : "train", r.system->experiment};
  for (const std::string& o : run_overrides(s, *r.system, r.seed)) argv.insert(argv.end(), {"--set", o});
  if (prune) argv.insert(argv.end(), {"--from", from});
  argv.insert(argv.end(), {"--out", r.paths.dir, "--threads", std::to_string(s.threads), "--no-eval"});
  add_continue_flag(argv, r.paths.dir, prune ? "prune.json" : "checkpoint_last.safetensors");
  return argv;
}

// A source run's first phase trained again into SOURCE/phase1/ (phase1_dir): the source's own
// experiment and overrides, without pruning, stopped where its first phase stopped (the epoch
// trigger's prune.epoch epochs), on the same schedule (train.max_updates stays the study's).
std::vector<std::string> regenerate_step(const std::string& binary, const StudySpec& s, const Run& src) {
  const Experiment e = run_experiment_config(s, *src.system, src.seed);
  if (e.prune.trigger != ght::PruneTrigger::epoch)
    throw InputError(str_cat(s.path, ": system \"", src.system->name,
                             "\": its first phase ends on the shift trigger, so ",
                             "it cannot be trained again to the same point; its checkpoint_last.safetensors in ",
                             src.paths.dir, " is gone (move the run folder away to train it again)"));
  std::vector<std::string> argv{binary, "train", src.system->experiment};
  std::vector<std::string> overrides = run_overrides(s, *src.system, src.seed);
  overrides.push_back("prune.method=\"none\"");
  overrides.push_back(str_cat("train.max_epochs=", e.prune.epoch));
  for (const std::string& o : overrides) argv.insert(argv.end(), {"--set", o});
  argv.insert(argv.end(), {"--out", phase1_dir(src.paths), "--threads", std::to_string(s.threads), "--no-eval"});
  add_continue_flag(argv, phase1_dir(src.paths), "checkpoint_last.safetensors");
  return argv;
}

std::vector<std::string> eval_step(const std::string& binary, const StudySpec& s, const Run& r,
                                   const std::string& split, Device device) {
  std::vector<std::string> argv{binary, "eval",      r.paths.final_dir,        "--split",
                                split,  "--threads", std::to_string(s.threads)};
  if (device == Device::cuda) argv.insert(argv.end(), {"--device", "cuda"});
  return argv;
}

std::string shell_words(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    const bool plain = a.find_first_of(" \"'$\\{}[]*?;&|<>()") == std::string::npos && !a.empty();
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

// Starts one step with its output appended to the run's log file; returns the child's PID.
pid_t start_step(const std::vector<std::string>& argv, const std::string& log_path, const StudySpec& s) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(str_cat(log_path, ": cannot open it to append (", std::strerror(errno), ")"));
  const std::string line = str_cat("\n$ ", shell_words(argv), "\n");
  (void)!::write(fd, line.data(), line.size());
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    throw Error(str_cat("cannot start a process (", std::strerror(errno), ")"));
  }
  if (pid == 0) { // the child: only async-signal-safe calls until exec
    ::dup2(fd, 1), ::dup2(fd, 2);
    ::signal(SIGPIPE, SIG_DFL);
    if (s.isa != "native") ::setenv("PILLARS_ISA", s.isa.c_str(), 1);
    ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    const char msg[] = "pillars study: cannot exec the step\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

std::string duration_text(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  if (s >= 3600) return str_cat(s / 3600, "h", (s % 3600) / 60 < 10 ? "0" : "", (s % 3600) / 60, "m");
  if (s >= 60) return str_cat(s / 60, "m", s % 60 < 10 ? "0" : "", s % 60, "s");
  return str_cat(s, "s");
}

// The run of a "copy_from" system's other study for this seed, when it can stand for this run:
// finished, made with the config this study gives the run, under the same device, precision, ISA
// and threads. nullopt otherwise, with `why` saying what kept it.
std::optional<RunPaths> copy_source(const StudySpec& s, const std::string& dir, const Run& r, const Experiment& e,
                                    Device device, std::string& why) {
  const fs::path folder = (fs::path(dir) / r.system->copy_from).lexically_normal();
  const RunPaths src = run_paths(folder.parent_path().string(), folder.filename().string(), r.seed,
                                 e.prune.method != ght::PruneMethod::none);
  if (!fs::is_directory(src.dir)) return why = str_cat(src.dir, " does not exist"), std::nullopt;
  const std::optional<json> there = read_conditions(folder.parent_path().string());
  json here = study_conditions(s, device);
  here.erase("study");
  for (const auto& [key, value] : here.items())
    if (!there || !there->contains(key) || (*there)[key] != value)
      return why =
                 str_cat("its study ran with ", key, " = ", there && there->contains(key) ? (*there)[key].dump() : "?",
                         ", this one with ", value.dump()),
             std::nullopt;
  if (!read_run_record(src).trained) return why = str_cat(src.dir, " has not finished training"), std::nullopt;
  if (const std::vector<std::string> diff = config_differences(src.dir, e); !diff.empty())
    return why = str_cat("its config.json differs: ", diff.front()), std::nullopt;
  return src;
}

// Copies the run folder `src` to `dst` (which holds no run yet): every regular file and folder but
// the lock, the record and a first phase trained again, through a temporary folder renamed into
// place, so an interrupted copy leaves no half run. Then the record, naming where it came from.
void copy_run(const RunPaths& src, const RunPaths& dst, const std::vector<std::string>& splits) {
  const RunRecord from = read_run_record(src); // first: an evaluation the source's study adds meanwhile is not claimed
  const fs::path tmp = dst.dir + str_cat(".copying.", ::getpid());
  fs::remove_all(tmp);
  std::function<void(const fs::path&, const fs::path&)> copy_folder = [&](const fs::path& from, const fs::path& to) {
    fs::create_directories(to);
    for (const fs::directory_entry& entry : fs::directory_iterator(from)) {
      const std::string name = entry.path().filename().string();
      if (name == ".lock" || name == "study_run.json" || name == "phase1" || entry.is_symlink()) continue;
      if (entry.is_directory())
        copy_folder(entry.path(), to / name);
      else if (entry.is_regular_file())
        fs::copy_file(entry.path(), to / name);
    }
  };
  copy_folder(src.dir, tmp);
  if (fs::is_directory(dst.dir) && fs::is_empty(dst.dir)) fs::remove(dst.dir);
  fs::rename(tmp, dst.dir);
  RunRecord rec;
  rec.trained = true;
  for (const std::string& split : splits)
    if (from.evaluated.count(split)) rec.evaluated.insert(split);
  rec.commands.push_back(str_cat("copied from ", src.dir));
  for (const std::string& c : from.commands) rec.commands.push_back(c);
  write_run_record(dst, rec);
}

} // namespace

std::string study_dir_of(const StudySpec& s, const std::string& out) {
  return out.empty() ? (fs::path("studies") / s.name).string() : out;
}

std::optional<Device> recorded_device(const std::string& study_dir) {
  const std::optional<json> j = read_conditions(study_dir);
  if (!j) return std::nullopt;
  const std::string field = str_cat((fs::path(study_dir) / "study.json").string(), ": field \"device\"");
  if (!j->contains("device") || !(*j)["device"].is_string()) throw InputError(field + ": missing or not a string");
  return parse_enum<Device>((*j)["device"].get<std::string>(), field);
}

int run_study(const StudySpec& s, const RunnerOptions& o) {
  const std::string dir = study_dir_of(s, o.study_dir);
  const Device device = s.device;
  const std::string binary = o.binary.empty() ? fs::read_symlink("/proc/self/exe").string() : o.binary;
  const int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  const int64_t jobs = o.jobs > 0 ? o.jobs : std::max<int64_t>(1, cores / s.threads);

  // Every run and what it has left to do.
  std::vector<Run> runs;
  for (int64_t seed : s.seeds)
    for (const SystemSpec& sys : s.systems) {
      Run r;
      r.system = &sys, r.seed = seed;
      const Experiment e = run_experiment_config(s, sys, seed);
      r.paths = run_paths(dir, sys.name, seed, e.prune.method != ght::PruneMethod::none);
      r.splits = s.test_splits.empty() ? std::vector<std::string>{train::test_split_of(e)} : s.test_splits;
      r.record = read_run_record(r.paths);
      // Finished at a smaller budget ("updates" was raised since): it continues from its last save
      // to the new one, and is evaluated again there.
      if (const int64_t reached = r.record.trained ? latest_update(r.paths) : s.updates; reached < s.updates) {
        const std::string problem = continue_problem(r.paths, e, !sys.prune_from.empty());
        if (!problem.empty())
          throw InputError(str_cat(s.path, ": ", r.label(), " stopped at update ", reached, ", and the budget is now ",
                                   s.updates, ", but it cannot continue: ", problem,
                                   "; move its folder away to train it again"));
        r.continues_from = reached;
        r.record.trained = false;
        r.record.evaluated.clear();
      }
      if (!r.record.trained && !sys.copy_from.empty() && !fs::is_symlink(r.paths.dir) &&
          train::run_files_in(r.paths.dir).empty()) {
        std::string why;
        r.copy = copy_source(s, dir, r, e, device, why);
        if (!r.copy && !o.quiet)
          std::printf("study %s: %s: trained here, not copied from %s: %s\n", s.name.c_str(), r.label().c_str(),
                      sys.copy_from.c_str(), why.c_str());
      }
      runs.push_back(std::move(r));
    }
  // The source run (same seed) of a "prune_from" run.
  auto source_of = [&](const Run& r) -> Run& {
    for (Run& src : runs)
      if (src.system->name == r.system->prune_from && src.seed == r.seed) return src;
    throw Error(str_cat("study: no source run for ", r.label())); // study_file checked the names
  };
  for (Run& r : runs) {
    if (r.copy) { // the evaluations the copy does not bring
      const RunRecord there = read_run_record(*r.copy);
      for (const std::string& split : r.splits)
        if (!there.evaluated.count(split)) r.steps.push_back(eval_step(binary, s, r, split, device));
      continue;
    }
    if (!r.record.trained) {
      std::string from;
      if (!r.system->prune_from.empty()) {
        // The source's first phase: its own checkpoint_last, or, where a finished source's went
        // with the machine that trained it (checkpoints are not kept in the repository), the
        // first phase trained again (once per source, before the first run that needs it).
        Run& src = source_of(r);
        const bool finished = src.record.trained || src.copy; // a copy brings the checkpoint, if its source has it
        const bool gone =
            finished && !fs::exists(fs::path(src.copy ? src.copy->dir : src.paths.dir) / "checkpoint_last.safetensors");
        const fs::path again = fs::path(phase1_dir(src.paths)) / "checkpoint_last.safetensors";
        if (gone && !src.regenerates && !(fs::exists(again) && first_phase_difference(src.paths).empty())) {
          src.steps.push_front(regenerate_step(binary, s, src));
          src.regenerates = true;
        }
        from = (gone ? again : fs::path(src.paths.dir) / "checkpoint_last.safetensors").string();
      }
      r.steps.push_back(train_step(binary, s, r, from));
    }
    for (const std::string& split : r.splits)
      if (!r.record.evaluated.count(split)) r.steps.push_back(eval_step(binary, s, r, split, device));
  }
  if (o.dry_run) {
    for (const Run& r : runs) {
      if (r.copy) std::printf("# copy %s to %s\n", r.copy->dir.c_str(), r.paths.dir.c_str());
      if (r.continues_from > 0)
        std::printf("# continue %s from update %lld to %lld (its evaluations move to %s/evaluated_at_%lld)\n",
                    r.paths.dir.c_str(), static_cast<long long>(r.continues_from), static_cast<long long>(s.updates),
                    r.paths.final_dir.c_str(), static_cast<long long>(r.continues_from));
      for (const auto& argv : r.steps) std::printf("%s\n", shell_words(argv).c_str());
    }
    return 0;
  }

  check_isa_available(s, device);
  io::refuse_file_in_the_way(o.study_dir.empty() ? "the study folder" : "--out", dir);
  fs::create_directories(fs::path(dir) / "logs");
  io::DirLock lock(dir);
  check_conditions(dir, study_conditions(s, device));
  for (const Run& r : runs)
    if (r.continues_from > 0) {
      const std::string aside = reopen_run(r.paths, r.continues_from);
      write_run_record(r.paths, r.record); // unfinished from here on, its earlier commands kept
      if (!o.quiet)
        std::printf("study %s: %s continues from update %lld to %lld; its evaluations at %lld are in %s\n",
                    s.name.c_str(), r.label().c_str(), static_cast<long long>(r.continues_from),
                    static_cast<long long>(s.updates), static_cast<long long>(r.continues_from), aside.c_str());
    }
  for (Run& r : runs)
    if (r.copy) {
      copy_run(*r.copy, r.paths, r.splits);
      r.record = read_run_record(r.paths);
      if (!o.quiet)
        std::printf("study %s: %s copied from %s\n", s.name.c_str(), r.label().c_str(), r.copy->dir.c_str());
    }
  for (const Run& r : runs)
    if (r.steps.empty()) compress_head_metrics(r.paths); // finished by an older binary, or packing was cut short
  install_stop_handlers();
  ::signal(SIGPIPE, SIG_IGN); // a closed pipe on our stdout must not kill the study and orphan its runs

  // Progress: updates made against the budget of every run, at the rate of the last half hour.
  const int64_t total_updates = static_cast<int64_t>(runs.size()) * s.updates;
  auto updates_done = [&]() {
    int64_t done = 0;
    for (const Run& r : runs) done += r.record.trained ? s.updates : std::min(s.updates, latest_update(r.paths));
    return done;
  };
  const auto started = Clock::now();
  TrailingRate rate(/*window_seconds=*/30 * 60);
  rate.add(0, static_cast<double>(updates_done()));
  auto last_report = Clock::now() - std::chrono::hours(1);
  int64_t failed = 0;
  auto report = [&](bool force) {
    if (o.quiet || (!force && Clock::now() - last_report < std::chrono::seconds(60))) return;
    last_report = Clock::now();
    int64_t finished = 0, running = 0;
    std::string active;
    for (const Run& r : runs) {
      if (r.steps.empty() && r.pid == 0) ++finished;
      if (r.pid)
        ++running,
            active += str_cat(active.empty() ? "" : ", ", r.label(), " ", std::min(s.updates, latest_update(r.paths)));
    }
    const int64_t done = updates_done();
    rate.add(std::chrono::duration<double>(Clock::now() - started).count(), static_cast<double>(done));
    const double per_second = rate.per_second();
    std::printf("study %s: %lld/%zu runs done, %lld running (%s); %lld/%lld updates; %s\n", s.name.c_str(),
                static_cast<long long>(finished), runs.size(), static_cast<long long>(running), active.c_str(),
                static_cast<long long>(done), static_cast<long long>(total_updates),
                per_second > 0 ? str_cat(per_second < 10 ? std::to_string(per_second).substr(0, 4)
                                                         : std::to_string(static_cast<int64_t>(per_second)),
                                         " updates/s over the last ", duration_text(rate.seconds()), ", ETA ",
                                         duration_text(static_cast<double>(total_updates - done) / per_second),
                                         " (training; evaluations come on top)")
                                     .c_str()
                : rate.seconds() > 0 ? str_cat("no update in the last ", duration_text(rate.seconds())).c_str()
                                     : "rate not measured yet");
    std::fflush(stdout);
  };

  int stop = 0;
  while (true) {
    if (!stop && (stop = stop_signal()) != 0) {
      std::printf("study %s: %s; stopping the running runs (each saves its checkpoint)\n", s.name.c_str(),
                  signal_name(stop));
      std::fflush(stdout);
      for (const Run& r : runs)
        if (r.pid) ::kill(r.pid, SIGTERM);
    }
    // Start runs while there is room.
    int64_t running = 0;
    for (const Run& r : runs) running += r.pid != 0;
    // (A "prune_from" run waits until its source run of the same seed has trained.)
    auto ready = [&](const Run& r) {
      if (r.pid || r.steps.empty() || r.system->prune_from.empty()) return r.pid == 0 && !r.steps.empty();
      const Run& src = source_of(r);
      return src.record.trained && !src.regenerates;
    };
    for (Run& r : runs) {
      if (stop || running >= jobs) break;
      if (!ready(r)) continue;
      r.pid = start_step(r.steps.front(), r.paths.log, s);
      ++running;
      if (!o.quiet)
        std::printf("study %s: started %s (%s); log %s\n", s.name.c_str(), r.label().c_str(),
                    r.regenerates ? "its first phase again, for the runs that prune it" : r.steps.front()[1].c_str(),
                    r.paths.log.c_str());
    }
    if (running == 0) {
      for (const Run& r : runs)
        if (!r.steps.empty() && !stop) { // waiting on a source that failed, or whose first phase differs
          ++failed;
          const bool differs = !r.system->prune_from.empty() && source_of(r).regenerates;
          std::fprintf(stderr, "study %s: %s: not run, %s %s s%lld %s\n", s.name.c_str(), r.label().c_str(),
                       differs ? "the first phase of its source" : "its source", r.system->prune_from.c_str(),
                       static_cast<long long>(r.seed),
                       differs ? "could not be trained again as its log records (see above)" : "did not finish");
        }
      break;
    }
    // Reap what ended.
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (Run& r : runs) {
        if (r.pid != pid) continue;
        r.pid = 0;
        const std::string what = r.steps.front()[1];
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code == 0 && r.regenerates) {
          // The first phase trained again must be the one the source's log records, update by
          // update, or the prunings would not start from the model the source pruned (they wait
          // on `regenerates`, which stays set when it is not: not run, the end reports them).
          if (const std::string diff = first_phase_difference(r.paths); !diff.empty()) {
            // The source run itself stays finished; the runs that prune it count as not run.
            std::fprintf(stderr,
                         "study %s: %s: its first phase, trained again in %s, is not the one its log records: %s; "
                         "the runs that prune it are not started (move %s away to train it again)\n",
                         s.name.c_str(), r.label().c_str(), phase1_dir(r.paths).c_str(), diff.c_str(),
                         r.paths.dir.c_str());
            r.steps.clear();
            continue;
          }
          r.regenerates = false;
          r.record.commands.push_back(shell_words(r.steps.front()));
          write_run_record(r.paths, r.record);
          r.steps.pop_front();
          if (!stop && !r.steps.empty()) r.pid = start_step(r.steps.front(), r.paths.log, s);
          continue;
        }
        if (code == 0) {
          if (what == "train" || what == "prune")
            r.record.trained = true;
          else
            r.record.evaluated.insert(r.steps.front()[4]);
          r.record.commands.push_back(shell_words(r.steps.front()));
          write_run_record(r.paths, r.record);
          r.steps.pop_front();
          if (!stop && !r.steps.empty()) { // its next step at once, in the same slot
            r.pid = start_step(r.steps.front(), r.paths.log, s);
          } else if (r.steps.empty()) {
            compress_head_metrics(r.paths);
            if (!o.quiet) std::printf("study %s: %s finished\n", s.name.c_str(), r.label().c_str());
            report(true);
          }
        } else if (!stop) {
          ++failed;
          std::fprintf(stderr, "study %s: %s: `%s` failed with exit status %d; its log: %s\n", s.name.c_str(),
                       r.label().c_str(), what.c_str(), code, r.paths.log.c_str());
          r.steps.clear();
        }
      }
      continue;
    }
    report(false);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  if (stop) {
    std::printf("study %s: stopped by %s; run the same command to continue\n", s.name.c_str(), signal_name(stop));
    return 128 + stop;
  }
  report(true);
  if (failed) {
    std::fprintf(stderr, "study %s: %lld run%s failed or could not start (see above); the others finished\n",
                 s.name.c_str(), static_cast<long long>(failed), failed == 1 ? "" : "s");
    return 1;
  }
  if (!o.quiet)
    std::printf("study %s: every run finished; `pillars study %s --table` compares them\n", s.name.c_str(),
                s.path.c_str());
  return 0;
}

} // namespace pillars::study
