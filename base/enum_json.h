// JSON for enums with names (base/enum_names.h): written as their word, read back from it.
//
//   nlohmann::json j = Device::cuda;      // "cuda"
//   j.get<Device>();                      // Device::cuda; an unknown word throws
//
// A separate header so that the many files that only need enum_name() do not parse nlohmann/json.
// The build defines JSON_DISABLE_ENUM_SERIALIZATION: nlohmann's own fallback (an enum as its
// number) is off, so converting an enum without this header is a compile error, never a number.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "base/enum_names.h"

// JSON: an enum with names is written as its word and read back from it.
template <pillars::NamedEnum E>
struct nlohmann::adl_serializer<E> {
  static void to_json(nlohmann::json& j, E e) { j = pillars::enum_name(e); }
  static void from_json(const nlohmann::json& j, E& e) {
    const auto v = pillars::enum_from_name<E>(j.get<std::string>());
    if (!v) throw std::invalid_argument("unknown name \"" + j.get<std::string>() + "\"");
    e = *v;
  }
};
