// "Did you mean …?" for a mistyped command or option.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tensorfs {

// The candidate nearest to `word` by edit distance, if it is near enough to be a typo of it (at most 2 edits, and
// fewer than the word's length); else "".
std::string nearest(std::string_view word, const std::vector<std::string_view>& candidates);

// The tensor name `word` most likely stands for: the name that is `word` and a suffix after a dot
// ("token_embd" for "token_embd.weight"; ".weight" first), else the nearest one as nearest() finds it; else "".
std::string nearest_tensor_name(std::string_view word, const std::vector<std::string_view>& names);

// "; did you mean 'X'?" for the nearest candidate, or "".
std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace tensorfs
