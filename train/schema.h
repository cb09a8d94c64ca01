// A table-driven schema for JSON configuration files, and the one generic validator that walks a
// parsed document against it. The experiment file (train/experiment.h) is described by such a
// table; the same table fills in defaults, prints the JSON Schema (draft 2020-12) that
// `pillars schema` shows, and the Markdown field table of experiments/README.md.
//
//   std::vector<schema::Field> fields = {
//       schema::Field::section("optim", "the optimizer"),
//       schema::Field::number("optim.lr", "peak learning rate").def(5e-4).greater_than(0),
//       schema::Field::enumeration("optim.schedule", {"inverse_sqrt", "cosine"}, "...").def("inverse_sqrt"),
//   };
//   nlohmann::json resolved = schema::validate(doc, fields); // every default filled in
//   // throws schema::FieldError{path, "\"optim.lr\" must be a number > 0, got -1"} on the first error
//
// Fields are named by dotted paths; a path's parent must be a `section` (a JSON object) listed
// before it. Validation reports the FIRST error only, in a fixed order: within each object, unknown
// keys (with the nearest valid key as a hint), then the fields in table order (missing required
// key, wrong type, out of range, not an allowed value), descending into sections as they come.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace pillars::schema {

enum class Type { Section, String, Integer, Number, Boolean, Enum, NumberArray };

struct Field {
  std::string path; // "optim.lr"
  Type type = Type::String;
  std::string description;
  nlohmann::json default_value; // null: no default (required, nullable-absent, or default_note)
  std::string default_note;     // a default that the table cannot hold ("the file's stem")
  bool required = false;
  bool nullable = false;                  // null (or absent) is allowed and means "not set"
  bool non_empty = false;                 // strings: "" is not allowed
  bool readable_path = false;             // strings: names a file that must be readable (checked by the caller)
  std::string pattern, pattern_note;      // strings: a regex the whole value must match, and its meaning in words
  std::optional<double> minimum, maximum; // numbers, integers, array elements
  bool exclusive_minimum = false, exclusive_maximum = false;
  std::vector<std::string> allowed; // enums
  int array_length = 0;             // number arrays: the fixed length

  static Field section(std::string path, std::string description);
  static Field string(std::string path, std::string description);
  static Field integer(std::string path, std::string description);
  static Field number(std::string path, std::string description);
  static Field boolean(std::string path, std::string description);
  static Field enumeration(std::string path, std::vector<std::string> allowed, std::string description);
  static Field number_array(std::string path, int length, std::string description);

  // Chainable refinements: Field::integer("seed", "...").def(1).at_least(0)
  Field& def(nlohmann::json v) {
    default_value = std::move(v);
    return *this;
  }
  Field& note(std::string n) {
    default_note = std::move(n);
    return *this;
  }
  Field& require() {
    required = true;
    return *this;
  }
  Field& optional() {
    nullable = true;
    return *this;
  }
  Field& not_empty() {
    non_empty = true;
    return *this;
  }
  Field& readable() {
    readable_path = true;
    return *this;
  }
  Field& matches(std::string regex, std::string meaning) {
    pattern = std::move(regex);
    pattern_note = std::move(meaning);
    return *this;
  }
  Field& at_least(double v) {
    minimum = v;
    exclusive_minimum = false;
    return *this;
  }
  Field& greater_than(double v) {
    minimum = v;
    exclusive_minimum = true;
    return *this;
  }
  Field& at_most(double v) {
    maximum = v;
    exclusive_maximum = false;
    return *this;
  }
  Field& less_than(double v) {
    maximum = v;
    exclusive_maximum = true;
    return *this;
  }

  std::string name() const;   // the last path component: "lr"
  std::string parent() const; // the section's path: "optim" ("" at the top)
};

// A validation error: which field, and the whole message (which names the field itself, e.g.
// "\"optim.lr\" must be a number > 0, got -1"). Callers prefix it with the file it came from.
struct FieldError : InputError {
  std::string path;
  FieldError(std::string p, const std::string& message) : InputError(message), path(std::move(p)) {}
};

// Checks `doc` against `fields` and returns it with every absent field's default filled in
// (absent optional fields become null). Throws FieldError on the first error.
nlohmann::json validate(const nlohmann::json& doc, const std::vector<Field>& fields);

// The field at `path`, or nullptr.
const Field* find_field(const std::vector<Field>& fields, const std::string& path);

// The JSON Schema (draft 2020-12) for the table: types, descriptions, defaults, enums, ranges,
// required keys, additionalProperties: false on every object.
nlohmann::json json_schema(const std::vector<Field>& fields, const std::string& title, const std::string& description);

// One Markdown table: key, type, default, allowed values, description.
std::string markdown_table(const std::vector<Field>& fields);

// Applies one `--set key.path=value` to `doc` (objects on the way are created). The value is
// parsed as JSON, falling back to the plain text; for a string-typed field a non-string value is
// taken as its text (`--set name=2024` sets "2024"). Throws FieldError (path = the key) when
// the text has no '=' or the path runs through a value that is not an object.
void apply_override(nlohmann::json& doc, const std::string& assignment, const std::vector<Field>& fields);

// Edit distance with adjacent transpositions (optimal string alignment).
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate nearest to `typed` if it is close enough to be a plausible typo (or `typed` is a
// near prefix of it), else "".
std::string nearest(const std::string& typed, const std::vector<std::string>& candidates);

// Where `text` first nests arrays and objects more than max_depth levels deep, found by a scan
// without recursion (strings skipped); nullopt if it never does. Run it before parsing text from a
// user: nlohmann's parser copes with any depth, but printing or destroying a value recurses once
// per level, so a 100,000-deep document would overflow the stack while its error is reported.
struct TextPosition {
  int64_t line = 1, column = 0; // both from 1
};
std::optional<TextPosition> json_too_deep(const std::string& text, int64_t max_depth);

// A JSON value for a message: strings quoted, long values cut; with_kind adds " (string)" etc.
std::string describe_value(const nlohmann::json& v, bool with_kind);

} // namespace pillars::schema
