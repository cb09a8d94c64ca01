// Numbers as the study's Markdown tables print them: fixed decimals, a sign on differences, and
// p-values to three decimals ("<0.001" below, "n/a" where the test is undefined).
#pragma once
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace pillars::study {

inline std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
inline std::string signed_fixed(double v, int decimals) {
  std::string text = fixed(v, decimals);
  if (v >= 0) text.insert(text.begin(), '+');
  return text;
}
inline std::string p_text(const nlohmann::json& p) {
  if (!p.is_number()) return "n/a";
  const double v = p.get<double>();
  return v < 0.001 ? "<0.001" : fixed(v, 3);
}

} // namespace pillars::study
