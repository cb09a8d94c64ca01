// The generic schema machinery: validation with defaults, nearest-key hints, JSON Schema and
// Markdown output, `--set` overrides. See schema.h.
#include "train/schema.h"

#include "train/limits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <regex>
#include <sstream>

namespace pillars::schema {

using nlohmann::json;

namespace {

Field make(std::string path, Type type, std::string description) {
  Field f;
  f.path = std::move(path);
  f.type = type;
  f.description = std::move(description);
  return f;
}

std::string quote(const std::string& s) { return describe_value(json(s), false); }

// 5e-4 → "0.0005", 1 → "1": how a bound reads in a message.
std::string format_number(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// " >= 0 and < 1", " > 0", "": the range part of a message.
std::string range_phrase(const Field& f) {
  std::string s;
  if (f.minimum) s += (f.exclusive_minimum ? " > " : " >= ") + format_number(*f.minimum);
  if (f.maximum)
    s += std::string(f.minimum ? " and" : "") + (f.exclusive_maximum ? " < " : " <= ") + format_number(*f.maximum);
  return s;
}

std::string allowed_list(const Field& f) {
  std::string s;
  for (const std::string& a : f.allowed) s += (s.empty() ? "" : ", ") + quote(a);
  return s;
}

// What the field's value must be, without its range: "an integer", "one of \"a\", \"b\"".
std::string type_phrase(const Field& f) {
  std::string s;
  switch (f.type) {
    case Type::Section:
      s = "an object";
      break;
    case Type::String:
      s = f.non_empty ? "a non-empty string" : "a string";
      break;
    case Type::Integer:
      s = "an integer";
      break;
    case Type::Number:
      s = "a number";
      break;
    case Type::Boolean:
      s = "true or false";
      break;
    case Type::Enum:
      s = "one of " + allowed_list(f);
      break;
    case Type::NumberArray:
      s = "an array of " + std::to_string(f.array_length) + " numbers";
      break;
  }
  return f.nullable ? s + " or null" : s;
}

[[noreturn]] void fail(const std::string& path, const std::string& message) { throw FieldError(path, message); }

[[noreturn]] void fail_type(const Field& f, const std::string& path, const json& v) {
  fail(path, quote(path) + " must be " + type_phrase(f) + ", got " + describe_value(v, true));
}

bool in_range(const Field& f, double x) {
  if (f.minimum && (f.exclusive_minimum ? !(x > *f.minimum) : !(x >= *f.minimum))) return false;
  if (f.maximum && (f.exclusive_maximum ? !(x < *f.maximum) : !(x <= *f.maximum))) return false;
  return true;
}

void check_range(const Field& f, const std::string& path, const json& v, const char* noun) {
  if (!in_range(f, v.get<double>()))
    fail(path, quote(path) + " must be " + noun + range_phrase(f) + ", got " + describe_value(v, false));
}

// Checks one present, non-section value and returns it in canonical form (integers as integers).
json check_value(const Field& f, const std::string& path, const json& v) {
  if (v.is_null()) {
    if (f.nullable) return v;
    fail_type(f, path, v);
  }
  switch (f.type) {
    case Type::Section:
      break; // handled by the caller
    case Type::String: {
      if (!v.is_string()) fail_type(f, path, v);
      const std::string& s = v.get_ref<const std::string&>();
      if (f.non_empty && s.empty()) fail(path, quote(path) + " must be a non-empty string, got \"\"");
      if (!f.pattern.empty() && !std::regex_match(s, std::regex(f.pattern)))
        fail(path, quote(path) + " must be " + f.pattern_note + ", got " + describe_value(v, false));
      return v;
    }
    case Type::Integer: {
      json out = v;
      if (v.is_number_float()) { // 10.0 and 1e3 are integers too (as in JSON Schema)
        const double d = v.get<double>();
        if (d != std::floor(d) || std::fabs(d) > 9.2e18) fail_type(f, path, v);
        out = static_cast<int64_t>(d);
      } else if (v.is_number_unsigned()) {
        if (v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
          fail(path, quote(path) + " is too large, got " + describe_value(v, false));
        out = v.get<int64_t>();
      } else if (!v.is_number_integer()) {
        fail_type(f, path, v);
      }
      check_range(f, path, out, "an integer");
      return out;
    }
    case Type::Number:
      if (!v.is_number()) fail_type(f, path, v);
      check_range(f, path, v, "a number");
      return v;
    case Type::Boolean:
      if (!v.is_boolean()) fail_type(f, path, v);
      return v;
    case Type::Enum:
      if (!v.is_string()) fail_type(f, path, v);
      if (std::find(f.allowed.begin(), f.allowed.end(), v.get<std::string>()) == f.allowed.end()) {
        const std::string near = nearest(v.get<std::string>(), f.allowed);
        fail(path, quote(path) + " must be one of " + allowed_list(f) + ", got " + describe_value(v, false) +
                       (near.empty() ? "" : " — did you mean " + quote(near) + "?"));
      }
      return v;
    case Type::NumberArray: {
      if (!v.is_array()) fail_type(f, path, v);
      if (static_cast<int>(v.size()) != f.array_length)
        fail(path, quote(path) + " must be " + type_phrase(f) + ", got " + describe_value(v, false) + " (" +
                       std::to_string(v.size()) + (v.size() == 1 ? " element)" : " elements)"));
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string at = path + "[" + std::to_string(i) + "]";
        if (!v[i].is_number()) fail(at, quote(at) + " must be a number, got " + describe_value(v[i], true));
        check_range(f, at, v[i], "a number");
      }
      return v;
    }
  }
  return v;
}

std::string join(const std::string& parent, const std::string& name) {
  return parent.empty() ? name : parent + "." + name;
}

// "unknown key ..." with the best hint we can give: a sibling that looks like a typo, else a field
// of the same name in another section, else the list of keys allowed here.
[[noreturn]] void fail_unknown(const std::string& parent, const std::string& key, const std::vector<Field>& fields) {
  const std::string path = join(parent, key);
  std::vector<std::string> siblings, leaves, leaf_paths;
  for (const Field& f : fields) {
    if (f.parent() == parent) siblings.push_back(f.name());
    if (f.type != Type::Section) {
      leaves.push_back(f.name());
      leaf_paths.push_back(f.path);
    }
  }
  std::string msg = "unknown key " + quote(path);
  std::string near = nearest(key, siblings);
  if (!near.empty()) fail(path, msg + " — did you mean " + quote(join(parent, near)) + "?");
  near = nearest(key, leaves);
  if (!near.empty()) {
    const size_t i = std::find(leaves.begin(), leaves.end(), near) - leaves.begin();
    fail(path, msg + " — did you mean " + quote(leaf_paths[i]) + "?");
  }
  std::string known;
  for (const std::string& s : siblings) known += (known.empty() ? "" : ", ") + s;
  fail(path, msg + " (allowed " + (parent.empty() ? "at the top level" : "in " + quote(parent)) + ": " + known + ")");
}

void validate_object(const json& obj, const std::string& parent, const std::vector<Field>& fields, json& out) {
  out = json::object();
  for (const auto& [key, value] : obj.items()) {
    const Field* f = find_field(fields, join(parent, key));
    if (!f) fail_unknown(parent, key, fields);
  }
  for (const Field& f : fields) {
    if (f.parent() != parent) continue;
    const std::string name = f.name();
    const auto it = obj.find(name);
    if (f.type == Type::Section) {
      if (it == obj.end() && f.required) fail(f.path, "missing required key " + quote(f.path));
      if (it != obj.end() && !it->is_object()) fail_type(f, f.path, *it);
      validate_object(it == obj.end() ? json::object() : *it, f.path, fields, out[name]);
    } else if (it == obj.end()) {
      if (f.required) fail(f.path, "missing required key " + quote(f.path));
      out[name] = f.default_value;
    } else {
      out[name] = check_value(f, f.path, *it);
    }
  }
}

std::string escape_markdown(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

// "integer ≥ 0", "number in (0, 1]", "\"relu\" | \"gelu\"": the type column of the field table.
std::string markdown_type(const Field& f) {
  std::string s;
  switch (f.type) {
    case Type::Section:
      return "object";
    case Type::String:
      s = "string";
      break;
    case Type::Integer:
      s = "integer";
      break;
    case Type::Number:
      s = "number";
      break;
    case Type::Boolean:
      s = "boolean";
      break;
    case Type::Enum:
      for (const std::string& a : f.allowed) s += (s.empty() ? "" : " | ") + quote(a);
      break;
    case Type::NumberArray:
      s = std::to_string(f.array_length) + " numbers";
      break;
  }
  if (f.minimum && f.maximum)
    s += std::string(" in ") + (f.exclusive_minimum ? "(" : "[") + format_number(*f.minimum) + ", " +
         format_number(*f.maximum) + (f.exclusive_maximum ? ")" : "]");
  else if (f.minimum)
    s += (f.exclusive_minimum ? " > " : " ≥ ") + format_number(*f.minimum);
  else if (f.maximum)
    s += (f.exclusive_maximum ? " < " : " ≤ ") + format_number(*f.maximum);
  if (f.nullable) s += " or null";
  return s;
}

json field_schema(const Field& f) {
  json s = json::object();
  auto typed = [&](const char* t) { s["type"] = f.nullable ? json::array({t, "null"}) : json(t); };
  auto bounds = [&](json& into) {
    auto num = [](double v) {
      return v == std::floor(v) && std::fabs(v) < 1e15 ? json(static_cast<int64_t>(v)) : json(v);
    };
    if (f.minimum) into[f.exclusive_minimum ? "exclusiveMinimum" : "minimum"] = num(*f.minimum);
    if (f.maximum) into[f.exclusive_maximum ? "exclusiveMaximum" : "maximum"] = num(*f.maximum);
  };
  std::string description = f.description;
  if (f.required) description += " Required.";
  if (!f.default_note.empty()) description += " Default: " + f.default_note + ".";
  s["description"] = description;
  switch (f.type) {
    case Type::Section:
      s["type"] = "object";
      s["additionalProperties"] = false;
      s["properties"] = json::object();
      break;
    case Type::String:
      typed("string");
      if (f.non_empty) s["minLength"] = 1;
      if (!f.pattern.empty()) s["pattern"] = f.pattern;
      break;
    case Type::Integer:
      typed("integer");
      bounds(s);
      break;
    case Type::Number:
      typed("number");
      bounds(s);
      break;
    case Type::Boolean:
      typed("boolean");
      break;
    case Type::Enum: {
      typed("string");
      json values = f.allowed;
      if (f.nullable) values.push_back(nullptr);
      s["enum"] = values;
      break;
    }
    case Type::NumberArray: {
      typed("array");
      json items = {{"type", "number"}};
      bounds(items);
      s["items"] = items;
      s["minItems"] = f.array_length;
      s["maxItems"] = f.array_length;
      break;
    }
  }
  if (f.type != Type::Section && (!f.default_value.is_null() || f.nullable)) s["default"] = f.default_value;
  return s;
}

} // namespace

Field Field::section(std::string p, std::string d) { return make(std::move(p), Type::Section, std::move(d)); }
Field Field::string(std::string p, std::string d) { return make(std::move(p), Type::String, std::move(d)); }
Field Field::integer(std::string p, std::string d) { return make(std::move(p), Type::Integer, std::move(d)); }
Field Field::number(std::string p, std::string d) { return make(std::move(p), Type::Number, std::move(d)); }
Field Field::boolean(std::string p, std::string d) { return make(std::move(p), Type::Boolean, std::move(d)); }
Field Field::enumeration(std::string p, std::vector<std::string> allowed, std::string d) {
  Field f = make(std::move(p), Type::Enum, std::move(d));
  f.allowed = std::move(allowed);
  return f;
}
Field Field::number_array(std::string p, int length, std::string d) {
  Field f = make(std::move(p), Type::NumberArray, std::move(d));
  f.array_length = length;
  return f;
}

std::string Field::name() const {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}
std::string Field::parent() const {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? "" : path.substr(0, dot);
}

const Field* find_field(const std::vector<Field>& fields, const std::string& path) {
  for (const Field& f : fields)
    if (f.path == path) return &f;
  return nullptr;
}

json validate(const json& doc, const std::vector<Field>& fields) {
  if (!doc.is_object()) fail("", "the top level must be a JSON object, got " + describe_value(doc, true));
  json out;
  validate_object(doc, "", fields, out);
  return out;
}

json json_schema(const std::vector<Field>& fields, const std::string& title, const std::string& description) {
  json root = {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
               {"title", title},
               {"description", description},
               {"type", "object"},
               {"additionalProperties", false},
               {"properties", json::object()}};
  for (const Field& f : fields) {
    json* parent = &root;
    if (!f.parent().empty()) {
      json::json_pointer ptr;
      std::stringstream parts(f.parent());
      for (std::string part; std::getline(parts, part, '.');) ptr = ptr / "properties" / part;
      parent = &root.at(ptr); // throws if the table lists a field before its section
    }
    (*parent)["properties"][f.name()] = field_schema(f);
    if (f.required) (*parent)["required"].push_back(f.name());
  }
  return root;
}

std::string markdown_table(const std::vector<Field>& fields) {
  std::ostringstream os;
  os << "| key | type | default | description |\n|---|---|---|---|\n";
  for (const Field& f : fields) {
    std::string def;
    if (f.required)
      def = "**required**";
    else if (!f.default_note.empty())
      def = f.default_note;
    else if (f.type == Type::Section)
      def = "";
    else
      def = "`" + describe_value(f.default_value, false) + "`";
    const std::string key = f.type == Type::Section ? "**`" + f.path + "`**" : "`" + f.path + "`";
    os << "| " << key << " | " << escape_markdown(markdown_type(f)) << " | " << escape_markdown(def) << " | "
       << escape_markdown(f.description) << " |\n";
  }
  return os.str();
}

void apply_override(json& doc, const std::string& assignment, const std::vector<Field>& fields) {
  const size_t eq = assignment.find('=');
  if (eq == std::string::npos) fail(assignment, "expected KEY=VALUE (for example optim.lr=1e-3)");
  const std::string key = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  for (const std::string& p : parts)
    if (p.empty()) fail(key, "bad key " + quote(key) + ": expected a dotted path such as optim.lr");
  if (!doc.is_object()) fail("", "the top level must be a JSON object, got " + describe_value(doc, true));

  if (const auto at = json_too_deep(text, limits::kMaxJsonDepth))
    fail(key, str_cat(quote(key), ": the value is nested more than ", limits::kMaxJsonDepth,
                      " levels deep (at character ", at->column, ")"));
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) value = text;
  if (const Field* f = find_field(fields, key);
      f && (f->type == Type::String || f->type == Type::Enum) && !value.is_string() && !value.is_null())
    value = text;

  json* cur = &doc;
  std::string path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    path = join(path, parts[i]);
    json& next = (*cur)[parts[i]];
    if (next.is_null()) next = json::object();
    if (!next.is_object())
      fail(path, quote(path) + " is " + describe_value(next, true) + ", not an object: cannot set " + quote(key));
    cur = &next;
  }
  (*cur)[parts.back()] = value;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<size_t>> d(n + 1, std::vector<size_t>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (size_t i = 1; i <= n; ++i)
    for (size_t j = 1; j <= m; ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::string nearest(const std::string& typed, const std::vector<std::string>& candidates) {
  const size_t allowed = std::max<size_t>(1, typed.size() / 3);
  std::string best;
  size_t best_score = SIZE_MAX;
  for (const std::string& c : candidates) {
    size_t score = edit_distance(typed, c);
    if (score > allowed || score >= std::max(typed.size(), c.size())) score = SIZE_MAX;
    // `typed` close to a prefix of c ("multi31k" → "multi30k-de-en", "warmup" → "warmup_updates")
    if (typed.size() >= 3)
      for (size_t len = typed.size() > 2 ? typed.size() - 2 : 1; len <= std::min(c.size(), typed.size() + 2); ++len) {
        const size_t d = edit_distance(typed, c.substr(0, len));
        if (d <= std::max<size_t>(1, typed.size() / 4)) score = std::min(score, d + 1);
      }
    if (score < best_score) {
      best_score = score;
      best = c;
    }
  }
  return best_score == SIZE_MAX ? "" : best;
}

std::optional<TextPosition> json_too_deep(const std::string& text, int64_t max_depth) {
  int64_t depth = 0;
  TextPosition at{1, 0};
  bool in_string = false, escaped = false;
  for (const char c : text) {
    ++at.column;
    if (c == '\n') ++at.line, at.column = 0;
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return at;
    } else if (c == ']' || c == '}') {
      depth -= depth > 0;
    }
  }
  return std::nullopt;
}

std::string describe_value(const json& v, bool with_kind) {
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  if (!with_kind || v.is_null()) return s;
  const char* kind = v.is_string()    ? "string"
                     : v.is_boolean() ? "boolean"
                     : v.is_number()  ? "number"
                     : v.is_array()   ? "array"
                                      : "object";
  return s + " (" + kind + ")";
}

} // namespace pillars::schema
