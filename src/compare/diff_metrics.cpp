#include "diff_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace tensorfs::compare {
namespace {

// Positions are taken this many at a time: a run with no NaN or infinity on either side (nearly every run) goes
// through the vector loop, the others one position at a time.
constexpr std::size_t kRun = 64;

// Four lanes of float32 and float64. GCC and clang lower these to whatever vectors the target has: the AVX2 version
// of the loop below runs them in ymm registers, the baseline one in pairs of xmm registers.
using Floats4 = float __attribute__((vector_size(16)));
using Doubles4 = double __attribute__((vector_size(32)));
using Ints4 = std::int32_t __attribute__((vector_size(16)));

constexpr std::uint32_t kExponent = 0x7f800000u;   // all ones: an infinity or a NaN

bool run_is_finite(const float* a, const float* b, std::size_t count) {
    std::uint32_t non_finite = 0;
    for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t bits_a, bits_b;
        std::memcpy(&bits_a, a + i, 4);
        std::memcpy(&bits_b, b + i, 4);
        non_finite |= static_cast<std::uint32_t>((bits_a & kExponent) == kExponent);
        non_finite |= static_cast<std::uint32_t>((bits_b & kExponent) == kExponent);
    }
    return non_finite == 0;
}

void add_one(DiffSums& sums, float a, float b) {
    const bool finite_a = std::isfinite(a), finite_b = std::isfinite(b);
    sums.nan_a += std::isnan(a);
    sums.nan_b += std::isnan(b);
    sums.inf_a += std::isinf(a);
    sums.inf_b += std::isinf(b);
    if (a != b && !(std::isnan(a) && std::isnan(b))) ++sums.differing;
    if (!finite_a || !finite_b) return;
    const double da = a, db = b, d = da - db;
    ++sums.compared;
    sums.max_abs_diff = std::max(sums.max_abs_diff, std::fabs(d));
    sums.sum_sq_diff += d * d;
    sums.sum_sq_a += da * da;
    sums.sum_sq_b += db * db;
    sums.sum_ab += da * db;
}

// By reference: a 32-byte vector passed by value changes the ABI between the AVX2 version and the baseline one.
double lanes_sum(const Doubles4& v) { return (v[0] + v[1]) + (v[2] + v[3]); }

// The hot loop of `diff`: it must keep up with the decoders, hence the vectors, an AVX2 version, and two sets of
// accumulators (eight positions a step) so that each sum waits on its previous add half as often. Inlined into
// each version below, which differ only in the instructions the compiler may use.
[[gnu::always_inline]] inline void add_positions(DiffSums& sums, const float* a, const float* b, std::size_t count) {
    constexpr int kSets = 2;
    Doubles4 sq_diff[kSets]{}, sq_a[kSets]{}, sq_b[kSets]{}, ab[kSets]{}, max_abs[kSets]{};
    Ints4 differ{};
    std::size_t i = 0;
    for (; i + kRun <= count; i += kRun) {
        if (!run_is_finite(a + i, b + i, kRun)) {
            for (std::size_t k = i; k < i + kRun; ++k) add_one(sums, a[k], b[k]);
            continue;
        }
        for (std::size_t k = i; k < i + kRun; k += 4 * kSets) {
            for (int set = 0; set < kSets; ++set) {
                Floats4 fa, fb;
                std::memcpy(&fa, a + k + 4 * set, sizeof fa);
                std::memcpy(&fb, b + k + 4 * set, sizeof fb);
                differ -= (fa != fb);   // -1 in each lane that differs
                const Doubles4 da = __builtin_convertvector(fa, Doubles4);
                const Doubles4 db = __builtin_convertvector(fb, Doubles4);
                const Doubles4 d = da - db;
                const Doubles4 abs_d = d < 0 ? -d : d;
                max_abs[set] = abs_d > max_abs[set] ? abs_d : max_abs[set];
                sq_diff[set] += d * d;
                sq_a[set] += da * da;
                sq_b[set] += db * db;
                ab[set] += da * db;
            }
        }
        sums.compared += kRun;
    }
    for (; i < count; ++i) add_one(sums, a[i], b[i]);
    sums.elements += count;
    sums.differing += static_cast<std::uint64_t>(differ[0]) + static_cast<std::uint64_t>(differ[1]) +
                      static_cast<std::uint64_t>(differ[2]) + static_cast<std::uint64_t>(differ[3]);
    sums.sum_sq_diff += lanes_sum(sq_diff[0] + sq_diff[1]);
    sums.sum_sq_a += lanes_sum(sq_a[0] + sq_a[1]);
    sums.sum_sq_b += lanes_sum(sq_b[0] + sq_b[1]);
    sums.sum_ab += lanes_sum(ab[0] + ab[1]);
    const Doubles4 largest = max_abs[0] > max_abs[1] ? max_abs[0] : max_abs[1];
    sums.max_abs_diff = std::max({sums.max_abs_diff, largest[0], largest[1], largest[2], largest[3]});
}

__attribute__((target("avx2"))) void add_positions_avx2(DiffSums& sums, const float* a, const float* b,
                                                        std::size_t count) {
    add_positions(sums, a, b, count);
}

void add_positions_baseline(DiffSums& sums, const float* a, const float* b, std::size_t count) {
    add_positions(sums, a, b, count);
}

}  // namespace

// Chosen here rather than with target_clones, which gcc and clang resolve differently for a member function
// defined apart from its declaration (clang's build did not link; docs/ci.md).
void DiffSums::add(const float* a, const float* b, std::size_t count) {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    (avx2 ? add_positions_avx2 : add_positions_baseline)(*this, a, b, count);
}

void DiffSums::merge(const DiffSums& other) {
    elements += other.elements;
    compared += other.compared;
    differing += other.differing;
    nan_a += other.nan_a;
    nan_b += other.nan_b;
    inf_a += other.inf_a;
    inf_b += other.inf_b;
    max_abs_diff = std::max(max_abs_diff, other.max_abs_diff);
    sum_sq_diff += other.sum_sq_diff;
    sum_sq_a += other.sum_sq_a;
    sum_sq_b += other.sum_sq_b;
    sum_ab += other.sum_ab;
}

DiffMetrics metrics_of(const DiffSums& sums) {
    constexpr double kInfinity = std::numeric_limits<double>::infinity();
    DiffMetrics metrics;
    const double compared = static_cast<double>(sums.compared);
    metrics.rmse = sums.compared == 0 ? 0 : std::sqrt(sums.sum_sq_diff / compared);
    if (metrics.rmse == 0) {
        metrics.relative_rmse = 0;
    } else {
        metrics.relative_rmse = sums.sum_sq_a == 0 ? kInfinity : metrics.rmse / std::sqrt(sums.sum_sq_a / compared);
    }
    metrics.cosine = sums.sum_sq_a == 0 || sums.sum_sq_b == 0 ? std::numeric_limits<double>::quiet_NaN()
                                                              : sums.sum_ab / std::sqrt(sums.sum_sq_a * sums.sum_sq_b);
    if (sums.sum_sq_diff == 0) {
        metrics.snr_db = kInfinity;
    } else {
        metrics.snr_db = sums.sum_sq_a == 0 ? -kInfinity : 10 * std::log10(sums.sum_sq_a / sums.sum_sq_diff);
    }
    return metrics;
}

}  // namespace tensorfs::compare
