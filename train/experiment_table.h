// The experiment table's rows (experiment.h): its fields in the order `pillars schema --markdown`
// lists them, split by section over three files, each returning its sections' rows:
//
//   experiment_fields_model.cpp     the top-level fields, `data` and `model`
//   experiment_fields_training.cpp  `optim`, `train`, `parallel` and `eval`
//   experiment_fields_heads.cpp     `heads` and `prune`
//
// Internal to train/experiment*.cpp: what the rest of the project reads is experiment_fields()
// and the loaders in experiment.h, built from these rows by experiment.cpp.
#pragma once
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/experiment.h"
#include "train/schema.h"

namespace pillars::experiment_table {

// One row of the table: the field, and how it reads from / writes to the Experiment struct.
struct Entry {
  schema::Field field;
  std::function<void(Experiment&, const nlohmann::json&)> read; // empty for sections
  std::function<nlohmann::json(const Experiment&)> write;
};

template <class T>
void read_value(const nlohmann::json& v, T& out) {
  v.get_to(out);
}
template <class T>
void read_value(const nlohmann::json& v, std::optional<T>& out) {
  if (v.is_null())
    out.reset();
  else
    out = v.get<T>();
}
template <class T>
nlohmann::json write_value(const T& x) {
  return nlohmann::json(x);
}
template <class T>
nlohmann::json write_value(const std::optional<T>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

// A section's heading row (no value of its own); a top-level field; a field of a section's struct.
inline Entry section(schema::Field f) { return {std::move(f), {}, {}}; }
template <class T>
Entry top(schema::Field f, T Experiment::*m) {
  return {std::move(f), [m](Experiment& e, const nlohmann::json& v) { read_value(v, e.*m); },
          [m](const Experiment& e) { return write_value(e.*m); }};
}
template <class S, class T>
Entry in(schema::Field f, S Experiment::*s, T S::*m) {
  return {std::move(f), [s, m](Experiment& e, const nlohmann::json& v) { read_value(v, (e.*s).*m); },
          [s, m](const Experiment& e) { return write_value((e.*s).*m); }};
}

// The rows of each file, in order; experiment.cpp joins them in this order.
std::vector<Entry> model_rows();    // name, task, seed, threads, description; data; model
std::vector<Entry> training_rows(); // optim, train, parallel, eval
std::vector<Entry> heads_rows();    // heads, prune

} // namespace pillars::experiment_table
