// See table.h.
#include "study/table.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "base/input_file.h"
#include "base/thread_times.h"
#include "datasets/xz.h"
#include "ght/head_metrics.h"
#include "metrics/bleu.h"
#include "metrics/rouge.h"
#include "study/compactness.h"
#include "study/number_text.h"
#include "study/run_record.h"
#include "study/stats.h"
#include "train/prepare.h"
#include "train/session.h"

namespace pillars::study {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// What one finished run brings to the table.
struct RunData {
  const SystemSpec* system = nullptr;
  int64_t seed = 0;
  RunPaths paths;
  Experiment config;
  std::string excluded;                             // why it is left out ("" = usable)
  std::map<std::string, json> eval;                 // split → eval_<split>.json
  std::map<std::string, StatRows> bleu, rouge, nll; // split → per-sentence statistics
};

json read_json_file(const fs::path& path) {
  try {
    return json::parse(read_input_file(path.string(), 64 << 20));
  } catch (const json::exception& err) {
    throw InputError(str_cat(path.string(), ": invalid JSON: ", err.what()));
  }
}

std::vector<std::string> lines_of(std::istream&& in) {
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<std::string> read_lines(const fs::path& path) { return lines_of(std::ifstream(path)); }

// The lines of a log the runner may have stored compressed (run_record.h: NAME.xz, then NAME).
std::vector<std::string> read_packed_lines(const fs::path& path) {
  return lines_of(std::istringstream(data::xz_then_plain_text(path.string())));
}

// The start lines' machine records of a run (phase 1 and phase 2).
std::vector<json> machine_records(const RunPaths& p) {
  std::vector<json> out;
  for (const fs::path& log : {fs::path(p.dir) / "log.jsonl", fs::path(p.dir) / "pruned" / "log.jsonl"})
    for (const std::string& line : read_lines(log)) {
      const json j = json::parse(line, nullptr, false);
      if (j.is_object() && j.value("type", "") == "start") out.push_back(j.contains("machine") ? j["machine"] : json());
    }
  return out;
}

// The heads' compactness over the first phase (head_metrics.jsonl[.xz] of the run folder, before any
// pruning): per measurement, the mean over attention modules of each measure (null when no
// module has it).
json head_curve(const RunPaths& p) {
  json curve = json::array();
  for (const std::string& line : read_packed_lines(fs::path(p.dir) / "head_metrics.jsonl")) {
    const json j = json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("modules") || !j["modules"].is_array() || !j.value("update", json()).is_number())
      continue;
    json point = {{"update", j["update"]}};
    json modules = j["modules"];
    for (json& m : modules) ght::read_legacy_keys(m);
    for (const char* key : {"homogenization", "diversification", "silhouette", "silhouette_ght", "dunn"}) {
      double sum = 0;
      int n = 0;
      for (const json& m : modules)
        if (m.is_object() && m.contains(key) && m[key].is_number() && std::isfinite(m[key].get<double>()))
          sum += m[key].get<double>(), ++n;
      point[key] = n ? json(sum / n) : json();
    }
    curve.push_back(point);
  }
  return curve;
}

// The validation curve of a run, phase 1 then phase 2: (update, BLEU, else ROUGE, else loss).
json valid_curve(const RunPaths& p) {
  json curve = json::array();
  for (const fs::path& log : {fs::path(p.dir) / "log.jsonl", fs::path(p.dir) / "pruned" / "log.jsonl"})
    for (const std::string& line : read_lines(log)) {
      const json j = json::parse(line, nullptr, false);
      if (!j.is_object() || j.value("type", "") != "valid" || !j.value("update", json()).is_number()) continue;
      for (const char* key : {"bleu", "rouge", "loss"})
        if (j.contains(key) && j[key].is_number()) {
          curve.push_back({{"update", j["update"]}, {"metric", key}, {"value", j[key]}});
          break;
        }
    }
  return curve;
}

// Has validation levelled off? study::validation_trend's rule (docs/STUDIES.md) on the run's main
// validation metric (BLEU, else ROUGE, else the loss). A pruned run's curve is its first phase and
// then its fine-tuning, read as one curve (the budget is the total of both). null: too few
// validations to say; else {"before", "after": the means of the fourth and the last fifth of the
// budget, "gain", "levelled_off"}.
json validation_trend_of(const json& curve, int64_t budget) {
  if (curve.empty()) return json();
  const std::string metric = curve.back()["metric"].get<std::string>();
  std::vector<std::pair<double, double>> points;
  for (const json& point : curve)
    if (point["metric"] == metric) points.emplace_back(point["update"].get<double>(), point["value"].get<double>());
  const std::optional<ValidationTrend> t = validation_trend(points, static_cast<double>(budget), metric != "loss");
  if (!t) return json();
  return {{"metric", metric},
          {"before", t->before},
          {"after", t->after},
          {"gain", t->gain},
          {"levelled_off", t->levelled_off}};
}

// The part of a machine record that decides the arithmetic.
json arithmetic_of(const json& machine) {
  json a;
  for (const char* k : {"isa", "threads", "device", "precision", "ranks"})
    a[k] = machine.is_object() && machine.contains(k) ? machine[k] : json();
  return a;
}

// Per-sentence statistics: BLEU's sufficient statistics [sys_len, ref_len, matches 1..4, totals 1..4].
StatRows bleu_rows(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                   const metrics::BleuOptions& o) {
  StatRows rows;
  for (size_t i = 0; i < hyps.size(); ++i) {
    std::vector<std::string_view> r;
    for (const auto& stream : refs) r.push_back(stream[i]);
    const metrics::BleuStats st = metrics::bleu_segment_stats(hyps[i], r, o);
    std::vector<double> row{static_cast<double>(st.sys_len), static_cast<double>(st.ref_len)};
    for (int64_t c : st.counts) row.push_back(static_cast<double>(c));
    for (int64_t t : st.totals) row.push_back(static_cast<double>(t));
    rows.push_back(std::move(row));
  }
  return rows;
}

CorpusScore bleu_score(const metrics::BleuOptions& o) {
  return [o](const std::vector<double>& sums) {
    metrics::BleuStats st;
    st.sys_len = static_cast<int64_t>(sums[0]), st.ref_len = static_cast<int64_t>(sums[1]);
    const size_t n = (sums.size() - 2) / 2;
    for (size_t k = 0; k < n; ++k)
      st.counts.push_back(static_cast<int64_t>(sums[2 + k])),
          st.totals.push_back(static_cast<int64_t>(sums[2 + n + k]));
    return metrics::compute_bleu(st, o).score;
  };
}

// [rouge1, rouge2, rougeL, 1] per sentence (F-measures ×100); the corpus score is their mean.
StatRows rouge_rows(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs) {
  StatRows rows;
  metrics::RougeOptions ro;
  ro.use_stemmer = true;
  for (size_t i = 0; i < hyps.size(); ++i) {
    std::vector<std::string> targets;
    for (const auto& stream : refs) targets.push_back(stream[i]);
    const metrics::RougeScores r = metrics::rouge_score_multi(targets, hyps[i], ro);
    rows.push_back({100 * r.rouge1.fmeasure, 100 * r.rouge2.fmeasure, 100 * r.rougeL.fmeasure, 1.0});
  }
  return rows;
}
CorpusScore column_mean(size_t column) {
  return [column](const std::vector<double>& sums) { return sums[column] / sums.back(); };
}

// Per-sentence losses, "nll tokens" per line (eval_<split>.nll): the loss is Σ nll / Σ tokens.
StatRows nll_rows(const fs::path& path) {
  StatRows rows;
  for (const std::string& line : read_lines(path)) {
    double nll = 0, tokens = 0;
    if (std::sscanf(line.c_str(), "%lf %lf", &nll, &tokens) != 2)
      throw InputError(str_cat(path.string(), ": a line is not \"nll tokens\": ", line));
    rows.push_back({nll, tokens});
  }
  return rows;
}
double loss_of(const std::vector<double>& sums) { return sums[1] > 0 ? sums[0] / sums[1] : 0; }

struct Metric {
  std::string name; // the eval_<split>.json key
  bool higher_better;
  std::map<std::string, StatRows> RunData::*rows; // per-sentence statistics, if any
  CorpusScore score;
  bool a_speed = false; // a measured speed: it depends on the machine, not only on the arithmetic
};

// Where a run's evaluation of a split was measured (its eval_<split>.json "machine": the CPU model,
// instruction set, threads, device), or null where it records none (written by an older pillars).
// Two speeds compare only when both records exist and agree: the same arithmetic on another CPU
// gives the same BLEU but not the same sentences per second.
json eval_machine(const RunData* r, const std::string& split) {
  if (!r || !r->eval.count(split)) return json();
  const json& e = r->eval.at(split);
  return e.contains("machine") && e["machine"].is_object() ? e["machine"] : json();
}
bool same_machine(const json& a, const json& b) { return a.is_object() && a == b; }

// The share a run's evaluation of a split waited for a core (eval_<split>.json
// "decode_waiting_share", base/thread_times.h), or null where it records none (an older pillars,
// or an OS without the record).
json decode_waiting_share(const RunData* r, const std::string& split) {
  if (!r || !r->eval.count(split)) return json();
  const json& e = r->eval.at(split);
  return e.contains("decode_waiting_share") && e["decode_waiting_share"].is_number() ? e["decode_waiting_share"]
                                                                                     : json();
}
// A decoding speed is the code's only where its threads had the cores: an evaluation that waited
// for a core (another process held it) more than kLoadedWaitingShare of its threads' time measured
// the load as much as the decoder.
bool measured_alone(const json& waiting) { return waiting.is_number() && waiting.get<double>() <= kLoadedWaitingShare; }

} // namespace

json study_table(const StudySpec& s, const std::string& study_dir, int64_t bootstrap_samples) {
  std::vector<RunData> runs;
  json excluded = json::array(), missing = json::array();
  std::set<std::string> cpus, commits;
  json expected_arithmetic;
  std::map<std::pair<std::string, std::string>, data::Task> tasks;
  std::map<std::string, std::vector<std::vector<std::string>>> refs_cache; // dataset/split → refs
  std::vector<std::string> splits;

  for (int64_t seed : s.seeds)
    for (const SystemSpec& sys : s.systems) {
      RunData r;
      r.system = &sys, r.seed = seed;
      r.config = run_experiment_config(s, sys, seed);
      r.paths = run_paths(study_dir, sys.name, seed, r.config.prune.method != ght::PruneMethod::none);
      const RunRecord rec = read_run_record(r.paths);
      const std::vector<std::string> run_splits =
          s.test_splits.empty() ? std::vector<std::string>{train::test_split_of(r.config)} : s.test_splits;
      for (const std::string& sp : run_splits)
        if (std::find(splits.begin(), splits.end(), sp) == splits.end()) splits.push_back(sp);
      bool complete = rec.trained;
      for (const std::string& sp : run_splits) complete = complete && rec.evaluated.count(sp);
      if (!complete) {
        missing.push_back({{"system", sys.name}, {"seed", seed}});
        continue;
      }
      auto exclude = [&](const std::string& why) {
        excluded.push_back({{"system", sys.name}, {"seed", seed}, {"reason", why}});
      };
      // The config it ran with against the one the study gives it.
      const std::vector<std::string> diff = config_differences(r.paths.dir, r.config);
      if (!diff.empty()) {
        std::string list;
        for (const std::string& d : diff) list += (list.empty() ? "" : "; ") + d;
        exclude("its config.json differs from the study's: " + list);
        continue;
      }
      // The budget.
      if (const int64_t u = latest_update(r.paths); u != s.updates) {
        exclude(str_cat("made ", u, " updates; the study's budget is ", s.updates));
        continue;
      }
      // The arithmetic it ran with.
      const std::vector<json> machines = machine_records(r.paths);
      std::string why;
      for (const json& m : machines) {
        if (!m.is_object()) {
          why = "a start line of its log has no machine record (made by an older pillars)";
          break;
        }
        cpus.insert(m.value("cpu", "?")), commits.insert(m.value("commit", "?"));
        json a = arithmetic_of(m);
        if (expected_arithmetic.is_null()) {
          expected_arithmetic = {{"isa", s.isa == "native" ? a["isa"] : json(s.isa)},
                                 {"threads", s.threads},
                                 {"device", enum_name(s.device)},
                                 {"precision", enum_name(s.precision)},
                                 {"ranks", 1}};
        }
        if (a != expected_arithmetic)
          why = str_cat("ran with ", a.dump(), ", the study with ", expected_arithmetic.dump());
      }
      if (machines.empty()) why = "its logs have no start line";
      if (!why.empty()) {
        exclude(why);
        continue;
      }
      // Its evaluations and per-sentence statistics.
      for (const std::string& sp : run_splits) {
        const fs::path dir(r.paths.final_dir);
        r.eval[sp] = read_json_file(dir / str_cat("eval_", sp, ".json"));
        if (r.config.task == data::Task::language_modeling) { // per-block losses only
          if (fs::exists(dir / str_cat("eval_", sp, ".nll"))) r.nll[sp] = nll_rows(dir / str_cat("eval_", sp, ".nll"));
          continue;
        }
        const std::string key = r.config.data.dataset + "/" + sp;
        if (!refs_cache.count(key)) refs_cache[key] = train::read_eval_split(r.config, sp).refs;
        const auto& refs = refs_cache[key];
        const std::vector<std::string> hyps = read_lines(dir / str_cat("eval_", sp, ".hyp"));
        if (refs.empty() || hyps.size() != refs[0].size()) {
          why = str_cat((dir / str_cat("eval_", sp, ".hyp")).string(), " has ", hyps.size(), " lines for ",
                        refs.empty() ? 0 : refs[0].size(), " references");
          break;
        }
        metrics::BleuOptions bo;
        bo.lowercase = r.config.eval.sacrebleu_lowercase;
        if (r.config.task == data::Task::translation)
          r.bleu[sp] = bleu_rows(hyps, refs, bo);
        else
          r.rouge[sp] = rouge_rows(hyps, refs);
        if (fs::exists(dir / str_cat("eval_", sp, ".nll"))) r.nll[sp] = nll_rows(dir / str_cat("eval_", sp, ".nll"));
      }
      if (!why.empty()) {
        exclude(why);
        continue;
      }
      runs.push_back(std::move(r));
    }

  json table = {{"study", s.name},
                {"description", s.description},
                {"file", s.path},
                {"updates", s.updates},
                {"seeds", s.seeds},
                {"baseline", s.baseline},
                {"device", enum_name(s.device)},
                {"isa", s.isa},
                {"threads", s.threads},
                {"cpus", cpus},
                {"commits", commits},
                {"excluded", excluded},
                {"missing", missing},
                {"bootstrap_samples", bootstrap_samples}};
  json systems = json::array();
  for (const SystemSpec& sys : s.systems) systems.push_back(sys.name);
  table["systems"] = systems;

  auto find_run = [&](const std::string& sys, int64_t seed) -> const RunData* {
    for (const RunData& r : runs)
      if (r.system->name == sys && r.seed == seed) return &r;
    return nullptr;
  };
  metrics::BleuOptions bo;
  bo.lowercase = !runs.empty() && runs.front().config.eval.sacrebleu_lowercase;
  const std::vector<Metric> all_metrics = {
      {"bleu", true, &RunData::bleu, bleu_score(bo)},    {"rouge1", true, &RunData::rouge, column_mean(0)},
      {"rouge2", true, &RunData::rouge, column_mean(1)}, {"rougeL", true, &RunData::rouge, column_mean(2)},
      {"loss", false, &RunData::nll, loss_of},           {"sentences_per_second", true, nullptr, nullptr, true}};

  json split_tables = json::array();
  for (const std::string& sp : splits) {
    json metrics_json = json::array();
    for (const Metric& m : all_metrics) {
      bool present = false;
      for (const RunData& r : runs) present = present || (r.eval.count(sp) && r.eval.at(sp).contains(m.name));
      if (!present) continue;
      auto value = [&](const RunData* r) -> std::optional<double> {
        if (!r || !r->eval.count(sp) || !r->eval.at(sp).contains(m.name) || !r->eval.at(sp)[m.name].is_number())
          return std::nullopt;
        if (m.a_speed && !measured_alone(decode_waiting_share(r, sp))) return std::nullopt;
        return r->eval.at(sp)[m.name].get<double>();
      };
      // Speeds only: the runs whose evaluation did not have the cores to itself, left out above.
      json under_load = json::array();
      if (m.a_speed)
        for (const RunData& r : runs)
          if (r.eval.count(sp) && r.eval.at(sp).contains(m.name) && !measured_alone(decode_waiting_share(&r, sp)))
            under_load.push_back(
                {{"system", r.system->name}, {"seed", r.seed}, {"waiting_share", decode_waiting_share(&r, sp)}});
      json rows = json::array();
      for (const SystemSpec& sys : s.systems) {
        json row = {{"system", sys.name}};
        std::vector<double> values;
        json seeds = json::array();
        for (int64_t seed : s.seeds)
          if (auto v = value(find_run(sys.name, seed))) values.push_back(*v), seeds.push_back(seed);
        const MeanSd ms = mean_sd(values);
        row["seeds"] = seeds, row["values"] = values, row["mean"] = ms.mean, row["sd"] = ms.sd;
        if (sys.name != s.baseline) {
          std::vector<double> x, y;
          json paired_seeds = json::array(), boot = json::array(), unpaired = json::array();
          for (int64_t seed : s.seeds) {
            const RunData *a = find_run(sys.name, seed), *b = find_run(s.baseline, seed);
            const auto va = value(a), vb = value(b);
            if (!va || !vb) continue;
            if (m.a_speed && !same_machine(eval_machine(a, sp), eval_machine(b, sp))) {
              unpaired.push_back(seed);
              continue;
            }
            x.push_back(*va), y.push_back(*vb), paired_seeds.push_back(seed);
            if (m.rows && (a->*m.rows).count(sp) && (b->*m.rows).count(sp) &&
                (a->*m.rows).at(sp).size() == (b->*m.rows).at(sp).size()) {
              const BootstrapResult br = paired_bootstrap((a->*m.rows).at(sp), (b->*m.rows).at(sp), m.score,
                                                          bootstrap_samples, 12345 + static_cast<uint64_t>(seed));
              boot.push_back({{"seed", seed}, {"diff", br.diff}, {"low", br.low}, {"high", br.high}, {"p", br.p}});
            }
          }
          const PairedTest t = paired_t_test(x, y), sg = sign_test(x, y);
          auto num = [](double v) { return std::isfinite(v) ? json(v) : json(); };
          row["vs_baseline"] = {{"seeds", paired_seeds},
                                {"mean_diff", t.mean_diff},
                                {"t", num(t.statistic)},
                                {"t_p", num(t.p)},
                                {"sign_plus", static_cast<int64_t>(sg.statistic)},
                                {"sign_n", sg.n},
                                {"sign_p", sg.p},
                                {"bootstrap", boot}};
          if (m.a_speed) row["vs_baseline"]["not_paired_other_machine"] = unpaired;
        }
        rows.push_back(row);
      }
      json metric = {{"metric", m.name}, {"higher_is_better", m.higher_better}, {"systems", rows}};
      if (m.a_speed) metric["left_out_under_load"] = under_load, metric["max_waiting_share"] = kLoadedWaitingShare;
      metrics_json.push_back(metric);
    }
    split_tables.push_back({{"split", sp}, {"metrics", metrics_json}});
  }
  table["splits"] = split_tables;
  // Each usable run: its evaluations and its heads' compactness over updates (what the report
  // draws: the metric against compactness, and compactness against updates).
  json run_list = json::array();
  for (const RunData& r : runs) {
    json evals = json::object();
    for (const auto& [sp, e] : r.eval) evals[sp] = e;
    const json valid = valid_curve(r.paths), trend = validation_trend_of(valid, s.updates);
    run_list.push_back({{"system", r.system->name},
                        {"seed", r.seed},
                        {"dir", r.paths.final_dir},
                        {"eval", evals},
                        {"heads", head_curve(r.paths)},
                        {"valid", valid},
                        {"validation_trend", trend},
                        {"levelled_off", trend.is_null() ? json() : trend["levelled_off"]}});
  }
  table["runs"] = run_list;
  table["compactness"] = compactness_table(table);
  return table;
}

std::string table_markdown(const json& t) {
  std::string out;
  out += str_cat("# Study ", t["study"].get<std::string>(), "\n\n");
  if (!t["description"].get<std::string>().empty()) out += t["description"].get<std::string>() + "\n\n";
  std::string cpus, commits;
  for (const auto& c : t["cpus"]) cpus += (cpus.empty() ? "" : "; ") + c.get<std::string>();
  for (const auto& c : t["commits"]) commits += (commits.empty() ? "" : ", ") + c.get<std::string>();
  out += str_cat("Every run: ", t["updates"].get<int64_t>(), " updates, device ", t["device"].get<std::string>(),
                 ", isa ", t["isa"].get<std::string>(), ", ", t["threads"].get<int64_t>(),
                 " thread(s). Baseline: ", t["baseline"].get<std::string>(), ". CPUs: ", cpus.empty() ? "-" : cpus,
                 ". Commits: ", commits.empty() ? "-" : commits, ".\n\n");
  out +=
      "Δ is system − baseline. Across seeds: the paired t-test (p) and the sign test (positive/paired seeds, p). "
      "Per seed: paired bootstrap over test sentences (" +
      std::to_string(t["bootstrap_samples"].get<int64_t>()) + " resamples), Δ [95 % interval] p.\n\n";
  for (const auto& sp : t["splits"]) {
    for (const auto& m : sp["metrics"]) {
      const std::string metric = m["metric"].get<std::string>();
      const int dec = metric == "loss" ? 4 : 2;
      out += str_cat("## ", sp["split"].get<std::string>(), ": ", metric,
                     m["higher_is_better"].get<bool>() ? " (higher is better)" : " (lower is better)", "\n\n");
      out +=
          "| system | seeds | mean ± sd | Δ mean | t-test p | sign test | per seed: Δ [95 % interval] p "
          "|\n|---|---|---|---|---|---|---|\n";
      std::string unpaired; // speed only: seeds whose evaluations ran on different machines
      for (const auto& row : m["systems"]) {
        const int64_t n = static_cast<int64_t>(row["values"].size());
        out += str_cat(
            "| ", row["system"].get<std::string>(), " | ", n, " | ",
            n ? fixed(row["mean"].get<double>(), dec) + (n > 1 ? " ± " + fixed(row["sd"].get<double>(), dec) : "")
              : "–",
            " | ");
        if (!row.contains("vs_baseline")) {
          out += "(baseline) | | | |\n";
          continue;
        }
        const json& v = row["vs_baseline"];
        const int64_t paired = static_cast<int64_t>(v["seeds"].size());
        std::string boot;
        for (const auto& b : v["bootstrap"])
          boot += str_cat(boot.empty() ? "" : "; ", "s", b["seed"].get<int64_t>(), " ",
                          signed_fixed(b["diff"].get<double>(), dec), " [", signed_fixed(b["low"].get<double>(), dec),
                          ", ", signed_fixed(b["high"].get<double>(), dec), "] ", p_text(b["p"]));
        out += str_cat(
            paired ? signed_fixed(v["mean_diff"].get<double>(), dec) : "–", " | ", paired ? p_text(v["t_p"]) : "–",
            " | ",
            paired ? str_cat(v["sign_plus"].get<int64_t>(), "/", v["sign_n"].get<int64_t>(), ", ", p_text(v["sign_p"]))
                   : "–",
            " | ", boot.empty() ? "–" : boot, " |\n");
        if (v.contains("not_paired_other_machine"))
          for (const auto& seed : v["not_paired_other_machine"])
            unpaired +=
                str_cat(unpaired.empty() ? "" : ", ", row["system"].get<std::string>(), " s", seed.get<int64_t>());
      }
      out += "\n";
      if (!unpaired.empty())
        out +=
            "Not compared with the baseline's speed (evaluated on another CPU model, thread count or device, or "
            "with no record of it): " +
            unpaired + ".\n\n";
      if (m.contains("left_out_under_load") && !m["left_out_under_load"].empty()) {
        std::string names;
        for (const auto& r : m["left_out_under_load"])
          names +=
              str_cat(names.empty() ? "" : ", ", r["system"].get<std::string>(), " s", r["seed"].get<int64_t>(), " (",
                      r["waiting_share"].is_number() ? fixed(100 * r["waiting_share"].get<double>(), 0) + " % waiting"
                                                     : std::string("not recorded"),
                      ")");
        out += str_cat("Speeds left out (the decoding waited for a core another process held more than ",
                       fixed(100 * m["max_waiting_share"].get<double>(), 0),
                       " % of its threads' time, or recorded no such share: the speed measured the load): ", names,
                       ".\n\n");
      }
    }
  }
  if (t.contains("compactness")) out += compactness_markdown(t["compactness"]);
  // Each run as "name (before → after, gain)": the means of its validation metric over the fourth and
  // the last fifth of the budget.
  std::string levelled, rising, unknown;
  for (const auto& r : t["runs"]) {
    const std::string name = str_cat(r["system"].get<std::string>(), " s", r["seed"].get<int64_t>());
    const json& trend = r.contains("validation_trend") ? r["validation_trend"] : json();
    if (trend.is_null()) {
      unknown += (unknown.empty() ? "" : ", ") + name;
      continue;
    }
    const bool loss = trend["metric"] == "loss";
    const std::string entry = str_cat(
        name, " (", fixed(trend["before"].get<double>(), 2), " → ", fixed(trend["after"].get<double>(), 2), ", ",
        loss ? fixed(100 * trend["gain"].get<double>(), 1) + " % lower" : signed_fixed(trend["gain"].get<double>(), 2),
        ")");
    std::string& list = trend["levelled_off"].get<bool>() ? levelled : rising;
    list += (list.empty() ? "" : ", ") + entry;
  }
  if (!levelled.empty() || !rising.empty() || !unknown.empty())
    out += str_cat(
        "Convergence (the mean validation score over the last fifth of the budget against the fifth "
        "before it; levelled off when it gained less than 0.5 BLEU/ROUGE, or 1 % of the loss): ",
        rising.empty() ? "no run is still rising." : "still rising: " + rising + ".",
        levelled.empty() ? "" : " Levelled off: " + levelled + ".",
        unknown.empty() ? "" : " Too few validations to tell: " + unknown + ".", "\n\n");
  if (!t["missing"].empty()) {
    out += "Not finished yet: ";
    std::string list;
    for (const auto& r : t["missing"])
      list += str_cat(list.empty() ? "" : ", ", r["system"].get<std::string>(), " s", r["seed"].get<int64_t>());
    out += list + ".\n\n";
  }
  for (const auto& r : t["excluded"])
    out += str_cat("Left out: ", r["system"].get<std::string>(), " s", r["seed"].get<int64_t>(), ": ",
                   r["reason"].get<std::string>(), ".\n");
  return out;
}

} // namespace pillars::study
