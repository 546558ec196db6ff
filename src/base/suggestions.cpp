#include "tensorfs/suggestions.hpp"

#include <algorithm>

namespace tensorfs {
namespace {

// Levenshtein distance, with a swap of two neighbours counting as one edit (the commonest typo).
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t change = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + change});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
    }
    return d[a.size()][b.size()];
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string_view>& candidates) {
    constexpr std::size_t kMostEdits = 2;
    std::string best;
    std::size_t best_distance = kMostEdits + 1;
    for (const std::string_view candidate : candidates) {
        const std::size_t distance = edit_distance(word, candidate);
        if (distance < best_distance && distance < word.size()) {
            best = candidate;
            best_distance = distance;
        }
    }
    return best;
}

std::string nearest_tensor_name(std::string_view word, const std::vector<std::string_view>& names) {
    std::string_view extended;
    for (const std::string_view name : names) {
        if (name.size() <= word.size() || !name.starts_with(word) || name[word.size()] != '.') continue;
        if (extended.empty() || name.substr(word.size()) == ".weight") extended = name;
    }
    return extended.empty() ? nearest(word, names) : std::string(extended);
}

std::string did_you_mean(std::string_view word, const std::vector<std::string_view>& candidates) {
    const std::string found = nearest(word, candidates);
    return found.empty() ? std::string() : "; did you mean '" + found + "'?";
}

}  // namespace tensorfs
