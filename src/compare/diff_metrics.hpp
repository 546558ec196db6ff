// The sums behind `tensorfs diff`'s error metrics for one pair of tensors, accumulated in float64 over their float32
// values chunk by chunk, and the metrics made from them. Values that are NaN or infinite on either side are counted
// apart and left out of the sums, so that one of them never poisons a metric.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tensorfs::compare {

struct DiffSums {
    std::uint64_t elements = 0;   // positions seen
    std::uint64_t compared = 0;   // positions finite on both sides: the ones the sums cover
    std::uint64_t differing = 0;  // positions where a != b (NaN against NaN counts as equal, -0 against 0 too)
    std::uint64_t nan_a = 0, nan_b = 0, inf_a = 0, inf_b = 0;
    double max_abs_diff = 0;
    double sum_sq_diff = 0;  // Σ(a−b)²
    double sum_sq_a = 0;     // Σa²
    double sum_sq_b = 0;     // Σb²
    double sum_ab = 0;       // Σab

    // Adds `count` positions: a[i] against b[i].
    void add(const float* a, const float* b, std::size_t count);
    // Adds another run's sums (of other positions of the same pair, or of another pair for a total).
    void merge(const DiffSums& other);
};

// NaN stands for "undefined" (the cosine of a zero vector), ±infinity for an infinite figure.
struct DiffMetrics {
    double rmse = 0;           // sqrt(Σ(a−b)² / compared); 0 when nothing was compared
    double relative_rmse = 0;  // RMSE / RMS of A: 0 when the RMSE is 0, +inf when A is all zeros and B is not
    double cosine = 0;         // Σab / sqrt(Σa² Σb²); NaN when either side is all zeros
    double snr_db = 0;         // 10 log10(Σa² / Σ(a−b)²); +inf when the compared values are equal
};

DiffMetrics metrics_of(const DiffSums& sums);

}  // namespace tensorfs::compare
