// Line-level helpers shared by the loaders and the dataset builders.
//
//   split_lines("a\nb\n")          -> {"a", "b"}      (a last line without '\n' counts too)
//   select_lines(text, selection)  -> the lines of a split (registry.h: Selection)
//   escape_field("a\tb\n")         -> "a\\tb\\n"      the mirror's plain/ convention:
//   unescape_field("a\\tb\\n")     -> "a\tb\n"        \ CR LF TAB <-> \\ \r \n \t
//
// unescape_field rejects any other backslash sequence (a file that is not in this format),
// throwing InputError with `where` (e.g. "samsum/plain/train.summary line 12").
#pragma once
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "datasets/registry.h"

namespace pillars::data {

std::vector<std::string_view> split_lines(std::string_view text);
std::vector<std::string_view> select_lines(std::string_view text, const Selection& selection);

// The views point into `text`, so a temporary std::string would die before they are read
// (`for (auto l : split_lines(read_file(p)))` is a use-after-free). Refuse it at compile time:
// for an rvalue std::string these templates match exactly and are deleted.
template <class S>
requires std::is_same_v<S, std::string> std::vector<std::string_view> split_lines(S&& text)
= delete;
template <class S>
requires std::is_same_v<S, std::string> std::vector<std::string_view> select_lines(S&& text, const Selection& selection)
= delete;
std::string escape_field(std::string_view text);
std::string unescape_field(std::string_view text, const std::string& where);

} // namespace pillars::data
