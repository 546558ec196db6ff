// The AVX2 fast kernels: they decode the ggml vectors exactly (whole, in two runs, from misaligned buffers),
// they equal the portable kernels bit for bit on random blocks of every count from 1 to 17 and on large
// inputs, and they never touch a byte outside the blocks they are given. On a CPU without AVX2 the fast
// kernels cannot run: the test says so and checks the portable kernels against the vectors instead.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>

#include "random_blocks.hpp"
#include "tensorfs/dtype.hpp"
#include "vectors.hpp"

using namespace tensorfs;

namespace {

// The condition type_table.cpp's active_kernel() uses to pick the fast kernels.
bool cpu_runs_fast_kernels() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }

// The kernel these tests exercise for a row: its fast one where the CPU can run it, else the portable one.
DequantKernel kernel_under_test(const TypeTraits& type) {
    return cpu_runs_fast_kernels() ? type.fast : type.portable;
}

void report_missing_avx2_once() {
    static const bool reported = [] {
        if (!cpu_runs_fast_kernels()) {
            BOOST_TEST_MESSAGE("this CPU lacks AVX2/FMA: the fast kernels cannot run here; "
                               "checking the portable kernels of the same types instead");
        }
        return true;
    }();
    (void)reported;
}

// The ggml rows that have a fast kernel.
std::vector<const TypeTraits*> ggml_rows_with_fast_kernels() {
    std::vector<const TypeTraits*> rows;
    for (std::uint32_t id = 0; id < 256; ++id) {
        const TypeTraits* type = ggml_type_by_id(id);
        if (type != nullptr && type->fast != nullptr) rows.push_back(type);
    }
    return rows;
}

std::uint32_t bits_of(float f) {
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}

// Bit-for-bit comparison (NaN payloads included) of two decodes of the same blocks.
void check_identical_bits(const std::vector<float>& expected, const float* actual, const std::string& what) {
    std::size_t differences = 0, first = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        if (bits_of(expected[i]) != bits_of(actual[i]) && differences++ == 0) first = i;
    }
    BOOST_CHECK_MESSAGE(differences == 0, what << ": " << differences << " of " << expected.size()
                                                << " values differ in their bits, first at " << first << " (0x"
                                                << std::hex << bits_of(expected[first]) << " vs 0x"
                                                << bits_of(actual[first]) << std::dec << ")");
}

// Memory whose usable bytes end right before an inaccessible page, so a kernel that reads past the blocks
// it was given crashes the test instead of passing by luck.
class GuardedBytes {
public:
    explicit GuardedBytes(const std::vector<std::uint8_t>& bytes) {
        const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        const std::size_t usable = (bytes.size() + page - 1) / page * page;
        mapping_size_ = usable + page;
        void* mapping = mmap(nullptr, mapping_size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        BOOST_REQUIRE(mapping != MAP_FAILED);
        mapping_ = static_cast<std::uint8_t*>(mapping);
        BOOST_REQUIRE(mprotect(mapping_ + usable, page, PROT_NONE) == 0);
        data_ = mapping_ + usable - bytes.size();
        std::copy(bytes.begin(), bytes.end(), data_);
    }
    ~GuardedBytes() { munmap(mapping_, mapping_size_); }
    GuardedBytes(const GuardedBytes&) = delete;
    GuardedBytes& operator=(const GuardedBytes&) = delete;

    const std::uint8_t* data() const { return data_; }

private:
    std::uint8_t* mapping_ = nullptr;
    std::size_t mapping_size_ = 0;
    std::uint8_t* data_ = nullptr;
};

// Decodes `nblocks` blocks from `src` into a buffer surrounded by canaries, checks the canaries survived and
// returns the values. The output starts one float past a 32-byte boundary, to catch aligned-store assumptions.
std::vector<float> decode_fenced(DequantKernel kernel, const TypeTraits& type, const std::uint8_t* src,
                                 std::size_t nblocks, const std::string& what) {
    constexpr std::size_t kFence = 9;
    constexpr float kCanary = -12345.5f;
    const std::size_t count = nblocks * type.block_elements;
    std::vector<float> fenced(kFence + count + kFence, kCanary);
    kernel(src, nblocks, fenced.data() + kFence);
    const bool fences_intact =
        std::all_of(fenced.begin(), fenced.begin() + kFence, [](float f) { return f == kCanary; }) &&
        std::all_of(fenced.end() - kFence, fenced.end(), [](float f) { return f == kCanary; });
    BOOST_CHECK_MESSAGE(fences_intact, what << ": the kernel wrote outside its output");
    return {fenced.begin() + kFence, fenced.end() - kFence};
}

// Fast against portable on `nblocks` random blocks read from the end of guarded memory.
void compare_with_portable(const TypeTraits& type, std::size_t nblocks, std::uint64_t seed, test::Scales scales) {
    const std::string what = std::string(type.name) + ", " + std::to_string(nblocks) + " blocks, " +
                             (scales == test::Scales::finite ? "finite scales" : "fully random bytes");
    const GuardedBytes src(test::random_blocks(type, nblocks, seed, scales));
    const auto portable = decode_fenced(type.portable, type, src.data(), nblocks, what + " (portable)");
    const auto fast = decode_fenced(type.fast, type, src.data(), nblocks, what + " (fast)");
    check_identical_bits(portable, fast.data(), what);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fast_kernels)

// The issue names the types that fill real models; safetensors F16/BF16 share the GGUF kernels.
BOOST_AUTO_TEST_CASE(fast_kernels_cover_the_types_of_real_models) {
    std::set<std::string> names;
    for (const TypeTraits* type : ggml_rows_with_fast_kernels()) names.insert(std::string(type->name));
    const std::set<std::string> wanted{"F16", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K", "IQ4_XS", "MXFP4"};
    BOOST_CHECK(names == wanted);
    BOOST_CHECK(safetensors_dtype_by_name("F16")->fast == ggml_type_by_id(1)->fast);
    BOOST_CHECK(safetensors_dtype_by_name("BF16")->fast == ggml_type_by_id(30)->fast);
}

BOOST_AUTO_TEST_CASE(active_kernel_is_the_fast_one_on_this_cpu) {
    report_missing_avx2_once();
    for (const TypeTraits* type : ggml_rows_with_fast_kernels()) {
        BOOST_CHECK_MESSAGE(active_kernel(*type) == kernel_under_test(*type), type->name << ": wrong kernel picked");
    }
}

// Every vector tensor of a type with a fast kernel: whole, then as two runs split at a block boundary from
// a source one byte past an aligned start into an output one float past an aligned start.
BOOST_AUTO_TEST_CASE(fast_kernels_decode_the_vectors_like_ggml) {
    report_missing_avx2_once();
    std::size_t tensors = 0;
    for (const auto& v : test::gguf_vectors()) {
        const TypeTraits* type = ggml_type_by_id(v.type_id);
        if (type == nullptr || type->fast == nullptr) continue;
        const std::string what = v.name + " (" + std::string(type->name) + ")";
        const std::uint64_t nblocks = v.elements / type->block_elements;
        BOOST_REQUIRE_EQUAL(v.nbytes, nblocks * type->block_bytes);
        const DequantKernel kernel = kernel_under_test(*type);
        const auto raw = test::read_bytes(v.file, v.offset, v.nbytes);
        const auto expected = test::read_f32_file(v.expected);

        std::vector<float> whole(v.elements);
        kernel(raw.data(), nblocks, whole.data());
        test::check_same_floats(expected, whole.data(), whole.size(), what);

        std::vector<std::uint8_t> shifted(raw.size() + 1);
        std::copy(raw.begin(), raw.end(), shifted.begin() + 1);
        std::vector<float> split(v.elements + 1);
        const std::uint64_t first = nblocks / 2;
        kernel(shifted.data() + 1, first, split.data() + 1);
        kernel(shifted.data() + 1 + first * type->block_bytes, nblocks - first,
               split.data() + 1 + first * type->block_elements);
        test::check_same_floats(expected, split.data() + 1, v.elements,
                                what + " in two runs split at block " + std::to_string(first) + ", misaligned");
        ++tensors;
    }
    BOOST_TEST_MESSAGE(tensors << " vector tensors decoded with the " << (cpu_runs_fast_kernels() ? "fast" : "portable")
                               << " kernels");
    BOOST_TEST(tensors > 0);
}

// ggml's f16 and bf16 to_float results are exact bit patterns, NaN payloads included (a signalling f16 NaN comes
// out quiet with the rest of its payload): the vectors hold every f16 and every bf16 bit pattern. Both kernels
// must give those bits, since they decode safetensors F16/BF16 too, where no NaN-tolerant comparison applies.
BOOST_AUTO_TEST_CASE(f16_and_bf16_give_ggml_bits_including_nan_payloads) {
    report_missing_avx2_once();
    std::size_t tensors = 0;
    for (const auto& v : test::gguf_vectors()) {
        const TypeTraits* type = ggml_type_by_id(v.type_id);
        if (type == nullptr || (type->name != "F16" && type->name != "BF16")) continue;
        const auto raw = test::read_bytes(v.file, v.offset, v.nbytes);
        const auto expected = test::read_f32_file(v.expected);
        std::vector<float> out(v.elements);
        type->portable(raw.data(), v.elements, out.data());
        check_identical_bits(expected, out.data(), v.name + " (portable)");
        kernel_under_test(*type)(raw.data(), v.elements, out.data());
        check_identical_bits(expected, out.data(), v.name + (cpu_runs_fast_kernels() ? " (fast)" : " (portable)"));
        ++tensors;
    }
    BOOST_TEST(tensors >= 2);
}

// Every block count from 1 to 17 (so the F16/BF16 runs of 8 and their remainders are all exercised) and a
// large input, with finite scales and with fully random bytes (NaN and infinite scales, every f16 pattern).
BOOST_AUTO_TEST_CASE(fast_equals_portable_bit_for_bit_on_random_blocks) {
    report_missing_avx2_once();
    if (!cpu_runs_fast_kernels()) return;  // reported above; the vector tests covered the portable kernels
    std::uint64_t seed = 1;
    for (const TypeTraits* type : ggml_rows_with_fast_kernels()) {
        for (const auto scales : {test::Scales::finite, test::Scales::random}) {
            for (std::size_t nblocks = 1; nblocks <= 17; ++nblocks) {
                compare_with_portable(*type, nblocks, seed++, scales);
            }
            const std::size_t large = (std::size_t{1} << 20) / type->block_elements + 3;  // ~4 MB of floats
            compare_with_portable(*type, large, seed++, scales);
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
