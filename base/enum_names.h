// Enumerations that have names: the words of an experiment file ("cuda", "per_group", "gelu"),
// turned into enums once, when the file is loaded, and back into the same words wherever they are
// written (config.json, checkpoints, logs, messages).
//
// An enum opts in with one function beside its definition, in the same namespace (found by
// argument-dependent lookup), listing every value with its word:
//
//   enum class Device : uint8_t { cpu, cuda };
//   constexpr auto enum_table(Device) { return enum_words<Device>({{Device::cpu, "cpu"}, {Device::cuda, "cuda"}}); }
//
// and then has:
//   enum_name(Device::cuda)            "cuda"
//   enum_from_name<Device>("cuda")     std::optional<Device>
//   enum_names<Device>()               {"cpu", "cuda"}: the experiment schema's allowed values
//   parse_enum<Device>("gpu", "--device")   InputError: --device must be one of cpu, cuda; got "gpu"
//   nlohmann::json(Device::cuda)       "cuda", and json.get<Device>() back (an unknown word throws),
//                                      with base/enum_json.h (the build defines
//                                      JSON_DISABLE_ENUM_SERIALIZATION, so an enum without it
//                                      never silently becomes a number)
// The table is the only place the words are spelled.
#pragma once
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <type_traits>
#include <vector>

#include "base/error.h"

namespace pillars {

// The table's type: enum_words<E>({{E::a, "a"}, {E::b, "b"}}) is a std::array of (value, word) pairs.
template <class E, size_t N>
constexpr std::array<std::pair<E, const char*>, N> enum_words(const std::pair<E, const char*> (&list)[N]) {
  std::array<std::pair<E, const char*>, N> table{};
  for (size_t i = 0; i < N; ++i) table[i] = list[i];
  return table;
}

// True for the enums that have an enum_table.
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) {
  enum_table(e);
};

template <NamedEnum E>
const char* enum_name(E e) {
  for (const auto& [value, word] : enum_table(E{}))
    if (value == e) return word;
  return "?";
}

template <NamedEnum E>
std::optional<E> enum_from_name(std::string_view word) {
  for (const auto& [value, w] : enum_table(E{}))
    if (word == w) return value;
  return std::nullopt;
}

template <NamedEnum E>
std::vector<std::string> enum_names() {
  std::vector<std::string> words;
  for (const auto& [value, word] : enum_table(E{})) words.emplace_back(word);
  return words;
}

// The value named `word`, or an InputError naming `what` (a field, a flag) and the known words.
template <NamedEnum E>
E parse_enum(std::string_view word, std::string_view what) {
  if (const auto v = enum_from_name<E>(word)) return *v;
  std::string known;
  for (const std::string& w : enum_names<E>()) known += (known.empty() ? "" : ", ") + w;
  throw InputError(str_cat(what, " must be one of ", known, "; got \"", word, "\""));
}

} // namespace pillars
