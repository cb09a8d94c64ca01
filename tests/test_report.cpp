// `pillars report`: the SVG scales (nice ticks, log scale), HTML escaping, tolerance of missing and
// broken inputs, and the page rendered by a real browser (headless Debian chromium: no console
// errors, every chart drawn, a screenshot kept beside the test binary). The run directories are
// synthetic fixtures written here, in the formats report/run.h documents.
#include <doctest/doctest.h>

#include "skip.h"
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "datasets/xz.h"
#include "engine/passes/flops.h"
#include "models/transformer.h"
#include "report/html.h"
#include "report/report.h"
#include "report/run.h"
#include "report/svg.h"
#include "train/checkpoint.h"
#include "tests/test_env.h"

using namespace pillars;
using namespace pillars::report;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// A fresh directory under the system temp folder, removed at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() / ("pillars_report_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Writes `text` to dir/name.
void write(const fs::path& dir, const std::string& name, const std::string& text) { std::ofstream(dir / name) << text; }

// The whole of a file ("" if it cannot be read).
std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// How often `needle` occurs in `text`.
size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The modules of the fixture model (2+2 layers): encoder self, decoder self and cross attention.
const std::vector<std::string> kModules = {"encoder.layers.0.self_attn",    "encoder.layers.1.self_attn",
                                           "decoder.layers.0.self_attn",    "decoder.layers.1.self_attn",
                                           "decoder.layers.0.encoder_attn", "decoder.layers.1.encoder_attn"};

// The fixture's model: the "tiny" config with 4 heads, pruned to 2 heads in every module.
TransformerConfig fixture_model() {
  TransformerConfig cfg = transformer_config("tiny");
  cfg.heads = 4;
  for (const std::string& m : kModules) cfg.module_heads[m] = 2;
  return cfg;
}

// A k×k similarity matrix: 1 on the diagonal, `within` between heads of one group, `across` between groups.
json similarity(const std::vector<int>& labels, double within, double across) {
  json m = json::array();
  for (size_t i = 0; i < labels.size(); ++i) {
    json row = json::array();
    for (size_t j = 0; j < labels.size(); ++j) row.push_back(i == j ? 1.0 : labels[i] == labels[j] ? within : across);
    m.push_back(row);
  }
  return m;
}

// A GHT run: GCT phase (4 heads), V2S at update 100, fine-tuning of the pruned model (2 heads);
// every file the report reads, a checkpoint included, plus an unknown line type and a broken line.
void write_ght_run(const fs::path& dir, const std::string& module_suffix = "") {
  fs::create_directories(dir);
  write(dir, "config.json",
        json{{"name", "ght-fixture"}, {"task", "translation"}, {"data", {{"test_split", "test"}}}}.dump(2));
  std::string log = json{{"type", "start"}, {"epoch", 1}, {"update", 0}, {"parameters", 12345}}.dump() + "\n";
  log += "{\"type\":\"mystery\",\"note\":\"an unknown line type\"}\nthis line is not JSON\n";
  for (int u = 10; u <= 200; u += 10) {
    const char* phase = u <= 100 ? "gct" : "finetune";
    log +=
        json{{"type", "train"}, {"epoch", 1 + u / 100}, {"update", u},          {"loss", 9.0 * std::exp(-u / 80.0) + 2},
             {"lr", 1e-3},      {"tokens_per_s", 900},  {"elapsed_seconds", u}, {"phase", phase}}
            .dump() +
        "\n";
    if (u % 50 == 0)
      log += json{{"type", "valid"},
                  {"epoch", 1 + u / 100},
                  {"update", u},
                  {"loss", 8.0 * std::exp(-u / 60.0) + 2.2},
                  {"ppl", 3000 * std::exp(-u / 25.0) + 9},
                  {"best", true},
                  {"seconds", 1.5},
                  {"elapsed_seconds", u + 1},
                  {"bleu", 30.0 * (1 - std::exp(-u / 70.0))},
                  {"phase", phase},
                  {"unknown_field", "ignored"}}
                 .dump() +
             "\n";
  }
  log += json{{"type", "checkpoint"}, {"file", "checkpoint_best.safetensors"}, {"update", 200}}.dump() + "\n";
  log += json{{"type", "end"}, {"reason", "max_updates"}, {"update", 200}, {"elapsed_seconds", 210}}.dump() + "\n";
  write(dir, "log.jsonl", log);

  std::string metrics;
  for (int u = 0; u <= 200; u += 50) {
    const bool pruned = u > 100;
    const std::vector<int> labels = pruned ? std::vector<int>{0, 1} : std::vector<int>{0, 0, 1, 1};
    json modules = json::array();
    for (size_t m = 0; m < kModules.size(); ++m) {
      const double g = static_cast<double>(u) / 200, k = static_cast<double>(m + 1);
      modules.push_back({{"module", kModules[m] + module_suffix},
                         {"heads", labels.size()},
                         {"orthogonality", 1000.0 * k * std::exp(-u / 20.0)}, // spans decades: log axis
                         {"orthogonality_norm", 0.5 - 0.2 * g + 0.02 * k},
                         {"context_nonorth", 40 - 10 * g + k},
                         {"context_nonorth_norm", 0.3 + 0.1 * g},
                         {"output_dissimilarity", -0.4 + 0.3 * g - 0.01 * k},
                         {"attention_variance", json::array()},
                         {"attention_variance_mean", 0.01 * k + 0.002 * g},
                         {"similarity", similarity(labels, 0.2 + 0.7 * g, 0.1 - 0.5 * g)},
                         {"labels", labels},
                         {"dunn", u == 0 ? json(nullptr) : json(0.5 + g * k)},
                         {"silhouette", -0.1 + 0.8 * g},
                         {"silhouette_ght", 0.1 + 0.7 * g},
                         {"homogenization", 0.3 + 0.6 * g},
                         {"diversification", 0.2 - 0.5 * g},
                         {"pairs", json::object()}});
    }
    metrics += json{{"type", "head_metrics"}, {"update", u}, {"epoch", 1 + u / 100},
                    {"feature_map", "V"},     {"groups", 2}, {"modules", modules}}
                   .dump() +
               "\n";
  }
  write(dir, "head_metrics.jsonl", metrics);

  json votes = {
      {"rule", "per_group"}, {"feature_map", "V"}, {"groups", 2}, {"batches", 40}, {"modules", json::array()}};
  json prune = {{"from", (dir / "checkpoint_gct.safetensors").string()}, {"modules", json::array()}};
  for (const std::string& m : kModules) {
    votes["modules"].push_back({{"module", m + module_suffix},
                                {"heads", 4},
                                {"votes", {31, 9, 26, 14}},
                                {"groups", {0, 0, 1, 1}},
                                {"kept", {0, 2}}});
    prune["modules"].push_back({{"module", m + module_suffix}, {"heads_before", 4}, {"kept", {0, 2}}});
  }
  // The model, pruned, saved as the evaluated checkpoint.
  const TransformerConfig cfg = fixture_model();
  ParamStore params;
  init_transformer_params(cfg, params, 7);
  train::save_checkpoint((dir / "checkpoint_best.safetensors").string(), cfg, params, nullptr, train::TrainerState{});
  TransformerConfig unpruned = cfg;
  unpruned.module_heads.clear();
  ParamStore before;
  init_transformer_params(unpruned, before, 7);
  prune["params_before"] = before.numel(), prune["params_after"] = params.numel();
  prune["params_before_no_embeddings"] = count_parameters(before, false);
  prune["params_after_no_embeddings"] = count_parameters(params, false);
  write(dir, "votes.json", votes.dump(2));
  write(dir, "prune.json", prune.dump(2));
  write(dir, "eval_test.json",
        json{{"checkpoint", (dir / "checkpoint_best.safetensors").string()},
             {"split", "test"},
             {"sentences", 1000},
             {"loss", 2.31},
             {"ppl", 10.07},
             {"beam", 5},
             {"sentences_per_second", 123.4},
             {"bleu", 35.42}}
            .dump(2));
}

// A vanilla run: a log and an evaluation, nothing else (no head metrics, votes, pruning, checkpoint).
void write_vanilla_run(const fs::path& dir) {
  fs::create_directories(dir);
  std::string log;
  for (int u = 10; u <= 200; u += 10) {
    log +=
        json{{"type", "train"}, {"epoch", 1}, {"update", u}, {"loss", 9.5 * std::exp(-u / 90.0) + 2.1}}.dump() + "\n";
    if (u % 50 == 0)
      log += json{{"type", "valid"},
                  {"update", u},
                  {"loss", 8.2 * std::exp(-u / 70.0) + 2.3},
                  {"ppl", 2500 * std::exp(-u / 30.0) + 10},
                  {"bleu", 28.0 * (1 - std::exp(-u / 80.0))}}
                 .dump() +
             "\n";
  }
  write(dir, "log.jsonl", log);
  write(dir, "eval_test.json",
        json{{"split", "test"}, {"loss", 2.4}, {"ppl", 11.0}, {"sentences_per_second", 101.5}, {"bleu", 34.4}}.dump());
}

// Runs a shell command; returns its exit code (−1 if it did not exit normally).
int shell(const std::string& command) {
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

using pillars::testing::pillars_binary;
using pillars::testing::shell_quote;

// Debian's chromium (or $PILLARS_CHROMIUM), or "" when there is none.
std::string chromium_binary() {
  if (const char* env = std::getenv("PILLARS_CHROMIUM"); env && *env) return fs::exists(env) ? env : "";
  for (const char* name : {"chromium", "chromium-browser"})
    if (shell("command -v " + std::string(name) + " >/dev/null 2>&1") == 0) return name;
  return "";
}

// A file:// URL for an absolute path (bytes outside a safe set percent-encoded).
std::string file_url(const fs::path& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string url = "file://";
  for (unsigned char c : fs::absolute(path).string()) {
    if (std::isalnum(c) || std::string("/-_.~").find(static_cast<char>(c)) != std::string::npos)
      url += static_cast<char>(c);
    else
      url += '%', url += hex[c >> 4], url += hex[c & 15];
  }
  return url;
}

// What headless chromium made of a page: the DOM after scripts ran, and its console lines.
struct BrowserResult {
  int code = -1;
  std::string dom;
  std::vector<std::string> console; // lines of chromium's log that carry a console message
};

// Opens `page` in headless chromium (a fresh profile in `scratch`); `extra` adds flags (a
// screenshot); without a screenshot the DOM is dumped.
BrowserResult open_in_browser(const std::string& chromium, const fs::path& page, const fs::path& scratch,
                              const std::string& extra = "") {
  const fs::path dom = scratch / "dom.html", err = scratch / "stderr.txt", profile = scratch / "profile";
  std::string cmd = "timeout 120 " + chromium +
                    " --headless=new --no-sandbox --disable-gpu --enable-logging=stderr --v=0 " +
                    "--no-first-run --user-data-dir=" + shell_quote(profile.string()) + " --virtual-time-budget=5000 " +
                    (extra.empty() ? std::string("--dump-dom ") : extra + " ") + shell_quote(file_url(page)) + " >" +
                    shell_quote(dom.string()) + " 2>" + shell_quote(err.string());
  BrowserResult r;
  r.code = shell(cmd);
  r.dom = slurp(dom);
  std::istringstream lines(slurp(err));
  for (std::string line; std::getline(lines, line);)
    if (line.find(":CONSOLE") != std::string::npos || line.find("Uncaught") != std::string::npos)
      r.console.push_back(line);
  return r;
}

// The value of attribute `name` on the render-check element of a dumped DOM ("" if absent).
std::string render_check(const std::string& dom, const std::string& name) {
  const size_t at = dom.find("id=\"render-check\"");
  if (at == std::string::npos) return "";
  const size_t start = dom.rfind('<', at), end = dom.find('>', at);
  const std::string tag = dom.substr(start, end - start);
  const size_t a = tag.find(" " + name + "=\"");
  if (a == std::string::npos) return "";
  const size_t v = a + name.size() + 3;
  return tag.substr(v, tag.find('"', v) - v);
}

// Where this test keeps the page and its screenshot: report_test/ beside the test binary.
fs::path output_dir() {
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path() / "report_test";
  if (ec) dir = fs::temp_directory_path() / "pillars_report_test";
  fs::create_directories(dir);
  return dir;
}

} // namespace

TEST_CASE("report svg: nice ticks cover the range in steps of 1, 2 or 5 times a power of ten") {
  CHECK(svg::nice_ticks(0, 1, 5) == std::vector<double>{0, 0.2, 0.4, 0.6, 0.8, 1});
  CHECK(svg::nice_ticks(3.2, 9.7, 5) == std::vector<double>{3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(svg::nice_ticks(0, 200, 6) == std::vector<double>{0, 50, 100, 150, 200});
  CHECK(svg::nice_ticks(-0.37, 0.52, 5) == std::vector<double>{-0.4, -0.2, 0, 0.2, 0.4, 0.6});
  for (const auto& [lo, hi] :
       std::vector<std::pair<double, double>>{{1e-4, 3e-4}, {-7, 1234}, {0.001, 0.0013}, {5, 5}, {0, 0}}) {
    CAPTURE(lo);
    CAPTURE(hi);
    const std::vector<double> t = svg::nice_ticks(lo, hi, 5);
    REQUIRE(t.size() >= 2);
    CHECK(t.size() <= 12);
    CHECK(t.front() <= lo);
    CHECK(t.back() >= hi);
    CHECK(t.front() < t.back());
    const double step = t[1] - t[0];
    const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
    CHECK((std::fabs(mantissa - 1) < 1e-6 || std::fabs(mantissa - 2) < 1e-6 || std::fabs(mantissa - 5) < 1e-6));
    for (size_t i = 1; i < t.size(); ++i) CHECK(t[i] - t[i - 1] == doctest::Approx(step));
  }
  CHECK(html::number(svg::nice_ticks(0, 0.3, 3)[1]) == "0.1"); // no 0.30000000000000004 on an axis
}

TEST_CASE("report svg: log ticks are decades and the log scale spaces decades evenly") {
  CHECK(svg::log_ticks(0.001, 1000) == std::vector<double>{1e-3, 1e-2, 1e-1, 1, 10, 100, 1000});
  CHECK(svg::log_ticks(3, 2000) == std::vector<double>{1, 10, 100, 1000, 10000});
  CHECK(svg::log_ticks(2, 9) == std::vector<double>{1, 2, 5, 10}); // under two decades: 2× and 5× too
  const std::vector<double> wide = svg::log_ticks(1e-30, 1e10);
  CHECK(wide.size() <= 9);
  CHECK(wide.front() <= 1e-30);
  CHECK(wide.back() >= 1e10);
  const svg::Scale s{1, 1000, 0, 300, true};
  CHECK(s(1) == doctest::Approx(0));
  CHECK(s(10) == doctest::Approx(100));
  CHECK(s(100) == doctest::Approx(200));
  CHECK(s(1000) == doctest::Approx(300));
  const svg::Scale lin{0, 10, 200, 0, false}; // y axis: pixels grow downwards
  CHECK(lin(2.5) == doctest::Approx(150));
  const svg::Axis a = svg::make_axis(3e-4, 20, true, 0, 100);
  CHECK(a.scale.lo == doctest::Approx(1e-4));
  CHECK(a.scale.hi == doctest::Approx(100));
  CHECK(svg::spans_decades({1, 500}));
  CHECK_FALSE(svg::spans_decades({1, 50}));
  CHECK_FALSE(svg::spans_decades({-1, 1000}));
  CHECK_FALSE(svg::spans_decades({0, 1000}));
  CHECK(svg::spans_decades({1e-4, NAN, 1}));
}

TEST_CASE("report svg: a line chart goes log when the data spans decades and says so") {
  svg::LineChart c;
  c.title = "t", c.x_label = "update", c.y_label = "loss";
  c.series.push_back({"a", svg::palette(0), {0, 10, 20, 30}, {1e-4, 1e-2, NAN, 10}});
  const std::string log_chart = svg::line_chart(c);
  CHECK(log_chart.find("log scale") != std::string::npos);
  CHECK(log_chart.find("loss (log)") != std::string::npos);
  CHECK(log_chart.find("nan") == std::string::npos);
  CHECK(log_chart.find("inf") == std::string::npos);
  CHECK(occurrences(log_chart, "<polyline") == 1); // the NaN breaks the line; the last point stands alone
  CHECK(count_charts(log_chart) == 1);
  c.series[0].y = {1, 2, 3, 4};
  const std::string linear = svg::line_chart(c);
  CHECK(linear.find("log") == std::string::npos);
  c.series[0].y = {NAN, NAN, NAN, NAN};
  CHECK(svg::line_chart(c).find("no data") != std::string::npos);
}

TEST_CASE("report html: escaping neutralises markup, quotes and invalid bytes") {
  CHECK(html::escape("<script>alert('x')</script> & \"y\"") ==
        "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;y&quot;");
  CHECK(html::escape("Gr\xC3\xBC\xC3\x9F\x65 \xE2\x86\x92 ok") ==
        "Gr\xC3\xBC\xC3\x9F\x65 \xE2\x86\x92 ok"); // UTF-8 kept
  CHECK(html::escape("a\xFF"
                     "b") ==
        "a\xEF\xBF\xBD"
        "b");                                                    // a stray byte
  CHECK(html::escape("\xC3") == "\xEF\xBF\xBD");                 // a truncated sequence
  CHECK(html::escape("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD"); // an overlong '/'
  CHECK(html::escape(std::string("a\0b", 3)) ==
        "a\xEF\xBF\xBD"
        "b"); // a NUL
  CHECK(html::number(0.25) == "0.25");
  CHECK(html::number(1200) == "1200");
  CHECK(html::number(2e-5) == "2e-5");
  CHECK(html::number(-3e7) == "-3e7");
  CHECK(html::number(NAN) == "n/a");
  CHECK(html::count(44012544) == "44.0M");
  CHECK(html::count(1234) == "1.2k");
}

TEST_CASE("report: a run with only log.jsonl renders, every other section says not available") {
  TempDir t;
  write(t.path, "log.jsonl",
        "{\"type\":\"train\",\"update\":10,\"loss\":5.0}\n{\"type\":\"train\",\"update\":20,\"loss\":4.0}\n");
  std::vector<RunData> runs = {load_run(t.path.string(), "")};
  assign_names(runs);
  CHECK(runs[0].train_loss.size() == 2);
  CHECK(runs[0].config.is_null());
  CHECK(runs[0].eval.is_null());
  CHECK_FALSE(runs[0].model.parameters.has_value());
  const std::string page = render_report(runs, {});
  CHECK(count_charts(page) == 1); // the training loss
  for (const char* missing :
       {"validation loss: not available", "validation BLEU: not available", "head_metrics.jsonl: not available",
        "head similarity: not available", "votes.json: not available", "prune.json: not available"})
    CHECK_MESSAGE(page.find(missing) != std::string::npos, missing);
  CHECK(page.find("data-expected=\"1\"") != std::string::npos);
}

TEST_CASE("report: broken optional files are noted and skipped, not fatal") {
  TempDir t;
  write(t.path, "log.jsonl",
        "not "
        "json\n[1,2]\n{\"type\":\"valid\",\"update\":\"ten\",\"loss\":3}\n{\"type\":\"valid\",\"update\":5,\"loss\":3}"
        "\n");
  write(t.path, "votes.json", "{\"rule\": ");
  write(t.path, "prune.json", "[1, 2, 3]");
  write(t.path, "head_metrics.jsonl",
        "{\"type\":\"head_metrics\",\"update\":1,\"modules\":\"oops\"}\n{\"type\":\"head_metrics\",\"update\":2,"
        "\"modules\":[{\"module\":\"m\",\"similarity\":[[1,\"x\"],[null]],\"labels\":[0,\"?\"]}]}\n");
  write(t.path, "eval_test.json", "{\"bleu\": \"high\", \"ppl\": null}");
  RunData r = load_run(t.path.string(), "");
  CHECK(r.valid_loss.size() == 1);
  CHECK(r.votes.is_null());
  CHECK(r.prune.is_null());
  CHECK(r.head_metrics.size() == 1);
  CHECK(r.notes.size() == 3); // the two broken log lines, votes.json, prune.json
  const std::string page = render_report({r}, {});
  CHECK(page.find("votes.json: not available") != std::string::npos);
  CHECK(page.find("not a JSON object") != std::string::npos);
  CHECK(count_charts(page) == 3); // validation loss, and a heatmap pair (one measurement: first = last)
}

TEST_CASE("report: a missing run directory, or one without log.jsonl, is an input error naming it") {
  TempDir t;
  const std::string missing = (t.path / "no-such-run").string();
  try {
    load_run(missing, "");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find(missing) != std::string::npos);
  }
  try {
    load_run(t.path.string(), "");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("log.jsonl") != std::string::npos);
  }
  const std::string binary = pillars_binary();
  if (binary.empty()) {
    MESSAGE("not checked here: the binary half (pillars is not built beside pillars_tests)");
    return;
  }
  write_vanilla_run(t.path / "ok");
  const fs::path err = t.path / "err.txt";
  const std::string out = shell_quote((t.path / "r.html").string());
  CHECK(shell(shell_quote(binary) + " report " + shell_quote((t.path / "ok").string()) + " " + shell_quote(missing) +
              " -o " + out + " 2>" + shell_quote(err.string())) == 2);
  CHECK(slurp(err).find(missing) != std::string::npos);
  CHECK_FALSE(fs::exists(t.path / "r.html"));
  CHECK(shell(shell_quote(binary) + " report " + shell_quote(t.path.string()) + " -o " + out + " 2>" +
              shell_quote(err.string())) == 2);
  CHECK(slurp(err).find("has no log.jsonl") != std::string::npos);
  CHECK(shell(shell_quote(binary) + " report --help >/dev/null") == 0);
}

TEST_CASE("report: text from the run files is escaped in the page") {
  TempDir t;
  const std::string evil = "<img src=x onerror=alert(1)>";
  write_ght_run(t.path / "run", evil);
  write(t.path / "run", "config.json", json{{"name", "<script>alert('name')</script>"}, {"task", evil}}.dump());
  RunData r = load_run((t.path / "run").string(), "", /*model_stats=*/false);
  const std::string page = render_report({r}, {"<b>title</b>", nullptr});
  CHECK(page.find("<img") == std::string::npos);
  CHECK(page.find("<script>alert") == std::string::npos);
  CHECK(page.find("<b>title") == std::string::npos);
  CHECK(page.find("&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(page.find("&lt;b&gt;title&lt;/b&gt;") != std::string::npos);
}

TEST_CASE("report: the GHT fixture fills every section") {
  TempDir t;
  write_ght_run(t.path / "ght");
  write_vanilla_run(t.path / "vanilla");
  std::vector<RunData> runs = {load_run((t.path / "ght").string(), ""), load_run((t.path / "vanilla").string(), "")};
  assign_names(runs);
  CHECK(runs[0].name == "ght");
  CHECK(runs[0].notes.size() == 1); // the line that is not JSON
  REQUIRE(runs[0].phases.size() == 2);
  CHECK(runs[0].phases[0].phase == "gct");
  CHECK(runs[0].phases[1].phase == "finetune");
  CHECK(runs[0].phases[1].update == 110);
  CHECK(runs[0].head_metrics.size() == 5);
  // Parameters: counted on the evaluated (pruned) checkpoint; FLOPs from its config at B=1, T=32.
  ParamStore params;
  init_transformer_params(fixture_model(), params, 1);
  REQUIRE(runs[0].model.parameters.has_value());
  CHECK(*runs[0].model.parameters == count_parameters(params, false));
  CHECK(runs[0].model.parameters_source == "checkpoint_best.safetensors");
  GraphOptions o;
  o.train = false;
  const double flops = count_flops(build_seq2seq_training_graph(fixture_model(), 1, 32, 32, o).graph).total() / 32;
  REQUIRE(runs[0].model.flops_per_token.has_value());
  CHECK(*runs[0].model.flops_per_token == doctest::Approx(flops));
  CHECK_FALSE(runs[1].model.parameters.has_value());
  // --split picks the evaluation file; a missing one is noted, not fatal.
  const RunData other = load_run((t.path / "ght").string(), "valid", /*model_stats=*/false);
  CHECK(other.eval.is_null());
  CHECK(other.notes.back() == "eval_valid.json: not found");

  const std::string page = render_report(runs, {"fixture", nullptr});
  // 4 curves (no ROUGE in a translation run); 11 metric charts; 6 modules × 2 heatmaps.
  CHECK(count_charts(page) == 4 + 11 + 12);
  CHECK(page.find("data-expected=\"27\"") != std::string::npos);
  CHECK(page.find("validation ROUGE: not available") != std::string::npos);
  CHECK(page.find("ght: finetune") != std::string::npos); // a phase marker on the shared curves
  CHECK(page.find("log scale") != std::string::npos);     // orthogonality spans decades
  CHECK(page.find("35.42") != std::string::npos);
  CHECK(page.find("123.4") != std::string::npos);
  CHECK(occurrences(page, "class=\"head kept\"") == 12); // 2 kept heads in 6 modules
  CHECK(page.find("h0, h2") != std::string::npos);
  CHECK(page.find("votes.json: not available") != std::string::npos); // the vanilla run
  // Self-contained: no external reference of any kind.
  for (const char* external : {"http:", "https:", "src=", "url(", "@import", "<link", "//cdn"})
    CHECK_MESSAGE(page.find(external) == std::string::npos, external);
}

TEST_CASE("report: head metrics a study stored as head_metrics.jsonl.xz read as the plain file does") {
  TempDir t;
  write_ght_run(t.path / "plain");
  write_ght_run(t.path / "packed");
  const fs::path packed = t.path / "packed";
  const std::string text = slurp(packed / "head_metrics.jsonl");
  const size_t cut = text.find('\n', text.size() / 2) + 1; // the first lines packed, the rest appended after
  write(packed, "head_metrics.jsonl.xz", pillars::data::xz_compress(text.substr(0, cut)));
  write(packed, "head_metrics.jsonl", text.substr(cut));
  const RunData a = load_run((t.path / "plain").string(), "", false), b = load_run(packed.string(), "", false);
  REQUIRE(a.head_metrics.size() == 5);
  CHECK(b.head_metrics == a.head_metrics);
  fs::remove(packed / "head_metrics.jsonl"); // only the packed part: its lines, in order
  const size_t first_part = load_run(packed.string(), "", false).head_metrics.size();
  CHECK((first_part > 0 && first_part < 5));
  write(packed, "head_metrics.jsonl.xz", "plain text where xz should be\n"); // corrupt: noted, not fatal
  const RunData c = load_run(packed.string(), "", false);
  CHECK(c.head_metrics.empty());
  const auto note = std::find_if(c.notes.begin(), c.notes.end(), [](const std::string& n) {
    return n.find("head_metrics.jsonl") != std::string::npos && n.find("not an .xz file") != std::string::npos;
  });
  CHECK_MESSAGE(note != c.notes.end(), "no note of the corrupt head_metrics.jsonl.xz");
}

TEST_CASE("report: headless chromium renders every chart without console errors, and the check can fail") {
  const std::string chromium = chromium_binary();
  if (chromium.empty()) {
    SKIP_TEST("no chromium on this machine (apt-get install chromium, see tools/install-deps.sh)");
    return;
  }
  const std::string binary = pillars_binary();
  if (binary.empty()) {
    SKIP_TEST("the pillars binary is not built beside pillars_tests");
    return;
  }
  TempDir t;
  write_ght_run(t.path / "ght");
  write_vanilla_run(t.path / "vanilla");
  const fs::path out = output_dir();
  const fs::path page = out / "report.html", png = out / "report.png";
  fs::remove(png);
  fs::remove(page); // an earlier run's: `report -o` replaces a file only with --force
  REQUIRE(shell(shell_quote(binary) + " report " + shell_quote((t.path / "ght").string()) + " " +
                shell_quote((t.path / "vanilla").string()) + " --title 'GHT fixture' -o " + shell_quote(page.string()) +
                " >/dev/null") == 0);

  const BrowserResult r = open_in_browser(chromium, page, t.path);
  REQUIRE(r.code == 0);
  for (const std::string& line : r.console) MESSAGE("console: ", line);
  CHECK(r.console.empty());
  CHECK(render_check(r.dom, "data-ok") == "1");
  CHECK(render_check(r.dom, "data-charts") == "27");
  CHECK(render_check(r.dom, "data-rendered") == "27");
  CHECK(render_check(r.dom, "data-errors") == "0");

  const BrowserResult shot =
      open_in_browser(chromium, page, t.path, "--screenshot=" + shell_quote(png.string()) + " --window-size=1400,3000");
  CHECK(shot.code == 0);
  const std::string bytes = slurp(png);
  CHECK(bytes.size() > 20000);
  CHECK(bytes.rfind("\x89PNG\r\n\x1a\n", 0) == 0);
  MESSAGE("report: ", page.string(), "  screenshot: ", png.string());

  // The check must be able to fail: a script error, and a chart that draws nothing.
  const std::string html = slurp(page);
  const fs::path broken = t.path / "broken.html", empty = t.path / "empty.html";
  std::string with_error = html, with_empty = html;
  with_error.insert(with_error.rfind("</body>"), "<script>no_such_function_in_the_report();</script>\n");
  with_empty.insert(with_empty.find("<div id=\"render-check\""),
                    "<svg class=\"chart\" width=\"40\" height=\"40\"></svg>\n");
  write(t.path, "broken.html", with_error);
  write(t.path, "empty.html", with_empty);
  const BrowserResult e = open_in_browser(chromium, broken, t.path);
  CHECK(render_check(e.dom, "data-ok") == "0");
  CHECK(render_check(e.dom, "data-errors") == "1");
  REQUIRE(e.console.size() == 1);
  CHECK(e.console[0].find("Uncaught ReferenceError") != std::string::npos);
  const BrowserResult z = open_in_browser(chromium, empty, t.path);
  CHECK(render_check(z.dom, "data-ok") == "0");
  CHECK(render_check(z.dom, "data-charts") == "28");
  CHECK(render_check(z.dom, "data-rendered") == "27");
  CHECK(z.console.empty());
}
