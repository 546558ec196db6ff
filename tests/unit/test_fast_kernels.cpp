// The fast kernels of every path this CPU runs (avx2, avx512), each against the reference data and against the
// portable kernel of its type (which test_ggml_kernels.cpp and test_small_floats.cpp check against ggml's vectors
// and the format definitions): the vectors, whole and in two runs from misaligned buffers; random blocks of every
// count from 1 to 17 and a large input, with finite scales and fully random bytes; blocks whose f16 scale fields
// hold each special value (zeros, subnormals, infinities, NaNs with payloads); every code of the one-byte and
// sub-byte float types. Inputs end right before an inaccessible page and outputs sit between canaries, so a kernel
// that reads or writes past its blocks fails. A path this CPU lacks cannot run here: the test says so.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
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

// The paths wider than portable that this CPU runs.
std::vector<KernelPath> fast_paths_here() {
    std::vector<KernelPath> paths;
    for (const KernelPath path : {KernelPath::avx2, KernelPath::avx512}) {
        if (path <= cpu_kernel_path()) {
            paths.push_back(path);
        } else {
            BOOST_TEST_MESSAGE("this CPU lacks the " << kernel_path_name(path) << " path: its kernels cannot run here");
        }
    }
    return paths;
}

// The kernel a row has for exactly this path (not a fallback), or nullptr.
DequantKernel own_kernel(const TypeTraits& type, KernelPath path) {
    return path == KernelPath::avx512 ? type.avx512 : path == KernelPath::avx2 ? type.avx2 : type.portable;
}

const std::vector<std::string> kSafetensorsFastDtypes = {"F16",         "BF16",        "F8_E4M3", "F8_E5M2",
                                                         "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0", "F4",
                                                         "F6_E2M3",     "F6_E3M2"};

// Every row with a fast kernel: the ggml types by id, then the safetensors dtypes (F16 and BF16 share ggml's).
std::vector<const TypeTraits*> rows_with_fast_kernels() {
    std::vector<const TypeTraits*> rows;
    for (std::uint32_t id = 0; id < 256; ++id) {
        const TypeTraits* type = ggml_type_by_id(id);
        if (type != nullptr && (type->avx2 != nullptr || type->avx512 != nullptr)) rows.push_back(type);
    }
    for (const std::string& name : kSafetensorsFastDtypes) {
        const TypeTraits* type = safetensors_dtype_by_name(name);
        BOOST_REQUIRE(type != nullptr);
        rows.push_back(type);
    }
    return rows;
}

std::string label(const TypeTraits& type, KernelPath path) {
    return std::string(type.name) + (type.ggml_id < 0 ? " (safetensors)" : "") + " [" +
           std::string(kernel_path_name(path)) + "]";
}

// Bit-for-bit comparison (NaN payloads included) of two decodes of the same blocks.
void check_identical_bits(const std::vector<float>& expected, const float* actual, const std::string& what) {
    std::size_t differences = 0, first = 0;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const bool same = std::bit_cast<std::uint32_t>(expected[i]) == std::bit_cast<std::uint32_t>(actual[i]);
        if (!same && differences++ == 0) first = i;
    }
    BOOST_CHECK_MESSAGE(differences == 0, what << ": " << differences << " of " << expected.size()
                                                << " values differ in their bits, first at " << first << " (0x"
                                                << std::hex << std::bit_cast<std::uint32_t>(expected[first]) << " vs 0x"
                                                << std::bit_cast<std::uint32_t>(actual[first]) << std::dec << ")");
}

// Memory whose usable bytes end right before an inaccessible page, so a kernel that reads past the blocks it was
// given crashes the test instead of passing by luck.
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

// Decodes `nblocks` blocks from `src` into a buffer surrounded by canaries, checks the canaries survived and returns
// the values. The output starts one float past a 32-byte boundary, to catch aligned-store assumptions.
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

// The path's kernel against the portable one on the blocks `bytes`, read from the end of guarded memory.
void compare_with_portable(const TypeTraits& type, KernelPath path, const std::vector<std::uint8_t>& bytes,
                           const std::string& what) {
    const std::size_t nblocks = bytes.size() / type.block_bytes;
    const GuardedBytes src(bytes);
    const auto portable = decode_fenced(type.portable, type, src.data(), nblocks, what + " (portable)");
    const auto fast = decode_fenced(own_kernel(type, path), type, src.data(), nblocks, what);
    check_identical_bits(portable, fast.data(), what);
}

// A tensor of the reference vectors: where its stored bytes are and what they decode to.
struct Vector {
    std::string what;
    const TypeTraits* type;
    std::string file;
    std::uint64_t offset, nbytes, elements;
    std::string expected;
};

std::vector<Vector> vectors_with_fast_kernels() {
    std::vector<Vector> all;
    for (const auto& v : test::gguf_vectors()) {
        const TypeTraits* type = ggml_type_by_id(v.type_id);
        if (type != nullptr && type->avx2 != nullptr) {
            all.push_back({v.name, type, v.file, v.offset, v.nbytes, v.elements, v.expected});
        }
    }
    for (const auto& file : test::manifest()["safetensors"]) {
        for (const auto& t : file["tensors"]) {
            const TypeTraits* type = safetensors_dtype_by_name(t["dtype"].get<std::string>());
            if (type == nullptr || type->avx2 == nullptr) continue;
            all.push_back({t["name"], type, test::vectors_path(file["file"]), t["abs_offset"], t["raw_nbytes"],
                           t["nelements"], test::vectors_path(t["expected_f32"])});
        }
    }
    return all;
}

// The f16 values a scale field is set to in turn: zeros, subnormals, normals, the largest, infinities, quiet and
// signalling NaNs with payloads.
constexpr std::uint16_t kSpecialHalves[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x0400, 0x3C00, 0xBC00, 0x7BFF,
                                            0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x7C01, 0xFD55, 0x7FFF};

// IQ1_M keeps its f16 scale in the top nibbles of the four u16 at byte 48 of the block, lowest nibble first.
void set_iq1_m_scale(std::uint8_t* block, std::uint16_t scale) {
    for (unsigned k = 0; k < 4; ++k) {
        std::uint8_t& high_byte = block[48 + 2 * k + 1];
        high_byte = static_cast<std::uint8_t>((high_byte & 0x0F) | (((scale >> (4 * k)) & 0xF) << 4));
    }
}

}  // namespace

BOOST_AUTO_TEST_SUITE(fast_kernels)

BOOST_AUTO_TEST_CASE(every_type_with_a_float32_conversion_has_fast_kernels_on_both_paths) {
    // Only plain copies and integer conversions (which ggml has no to_float for) stay portable.
    const std::set<std::string> portable_only{"F32", "F64", "I8", "I16", "I32", "I64"};
    std::size_t ggml_types = 0;
    for (std::uint32_t id = 0; id < 256; ++id) {
        const TypeTraits* type = ggml_type_by_id(id);
        if (type == nullptr || !type->has_dequant()) continue;
        const bool fast = type->avx2 != nullptr && type->avx512 != nullptr;
        BOOST_CHECK_MESSAGE(fast != portable_only.contains(std::string(type->name)),
                            type->name << (fast ? " has" : " lacks") << " fast kernels");
        ggml_types += fast;
    }
    BOOST_TEST(ggml_types == 27u);
    for (const std::string& name : kSafetensorsFastDtypes) {
        const TypeTraits* type = safetensors_dtype_by_name(name);
        BOOST_CHECK_MESSAGE(type->avx2 != nullptr && type->avx512 != nullptr, name << " lacks fast kernels");
    }
    for (const auto& [name, id] : {std::pair{"F16", 1u}, std::pair{"BF16", 30u}}) {
        BOOST_CHECK(safetensors_dtype_by_name(name)->avx2 == ggml_type_by_id(id)->avx2);
        BOOST_CHECK(safetensors_dtype_by_name(name)->avx512 == ggml_type_by_id(id)->avx512);
    }
}

BOOST_AUTO_TEST_CASE(paths_are_named_and_chosen_once) {
    BOOST_TEST(kernel_path_name(KernelPath::portable) == "portable");
    BOOST_TEST(kernel_path_name(KernelPath::avx2) == "avx2");
    BOOST_TEST(kernel_path_name(KernelPath::avx512) == "avx512");
    BOOST_TEST(static_cast<int>(active_kernel_path()) <= static_cast<int>(cpu_kernel_path()));
    if (std::getenv("TENSORFS_KERNELS") == nullptr) BOOST_CHECK(active_kernel_path() == cpu_kernel_path());
    BOOST_TEST_MESSAGE("this CPU runs the " << kernel_path_name(cpu_kernel_path()) << " path; active: "
                                            << kernel_path_name(active_kernel_path()));
}

BOOST_AUTO_TEST_CASE(kernel_for_takes_the_widest_kernel_up_to_the_path) {
    const TypeTraits& q4_k = *ggml_type_by_id(12);
    BOOST_CHECK(kernel_for(q4_k, KernelPath::portable) == q4_k.portable);
    BOOST_CHECK(kernel_for(q4_k, KernelPath::avx2) == q4_k.avx2);
    BOOST_CHECK(kernel_for(q4_k, KernelPath::avx512) == q4_k.avx512);
    const TypeTraits& f32 = *ggml_type_by_id(0);  // no fast kernel: portable on every path
    for (const KernelPath path : {KernelPath::portable, KernelPath::avx2, KernelPath::avx512}) {
        BOOST_CHECK(kernel_for(f32, path) == f32.portable);
    }
    // A row with an AVX2 kernel only falls back to it on the AVX-512 path.
    const TypeTraits avx2_only{"X", -1, 1, 1, q4_k.portable, q4_k.avx2, nullptr};
    BOOST_CHECK(kernel_for(avx2_only, KernelPath::avx512) == q4_k.avx2);
    BOOST_CHECK(active_kernel(q4_k) == kernel_for(q4_k, active_kernel_path()));
    BOOST_CHECK(kernel_for(*safetensors_dtype_by_name("C64"), KernelPath::avx512) == nullptr);
}

// Every vector tensor of a type with fast kernels: whole, then as two runs split at a block boundary from a source
// one byte past an aligned start into an output one float past an aligned start.
BOOST_AUTO_TEST_CASE(fast_kernels_decode_the_vectors_like_ggml) {
    const auto vectors = vectors_with_fast_kernels();
    for (const KernelPath path : fast_paths_here()) {
        std::set<std::string> types;
        for (const Vector& v : vectors) {
            const TypeTraits& type = *v.type;
            const std::string what = v.what + " " + label(type, path);
            const std::uint64_t nblocks = v.elements / type.block_elements;
            BOOST_REQUIRE_EQUAL(v.nbytes, nblocks * type.block_bytes);
            const DequantKernel kernel = own_kernel(type, path);
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
            kernel(shifted.data() + 1 + first * type.block_bytes, nblocks - first,
                   split.data() + 1 + first * type.block_elements);
            test::check_same_floats(expected, split.data() + 1, v.elements,
                                    what + " in two runs split at block " + std::to_string(first) + ", misaligned");
            types.insert(std::string(type.name));
        }
        BOOST_TEST_MESSAGE(kernel_path_name(path) << ": vectors of " << types.size() << " types decoded");
        BOOST_TEST(types.size() >= 27u);
    }
}

// ggml's f16 and bf16 to_float results are exact bit patterns, NaN payloads included (a signalling f16 NaN comes out
// quiet with the rest of its payload): the vectors hold every f16 and every bf16 bit pattern. The fast kernels must
// give those bits, since they decode safetensors F16/BF16 too, where no NaN-tolerant comparison applies.
BOOST_AUTO_TEST_CASE(f16_and_bf16_give_ggml_bits_including_nan_payloads) {
    for (const KernelPath path : fast_paths_here()) {
        std::size_t tensors = 0;
        for (const auto& v : test::gguf_vectors()) {
            const TypeTraits* type = ggml_type_by_id(v.type_id);
            if (type == nullptr || (type->name != "F16" && type->name != "BF16")) continue;
            const auto raw = test::read_bytes(v.file, v.offset, v.nbytes);
            std::vector<float> out(v.elements);
            own_kernel(*type, path)(raw.data(), v.elements, out.data());
            check_identical_bits(test::read_f32_file(v.expected), out.data(), v.name + " " + label(*type, path));
            ++tensors;
        }
        BOOST_TEST(tensors >= 2u);
    }
}

// Every block count from 1 to 17 (so the element-wise types' steps of 16 values and their remainders are all
// exercised) and a large input, with finite scales and with fully random bytes (every f16 pattern in the scales).
BOOST_AUTO_TEST_CASE(fast_equals_portable_bit_for_bit_on_random_blocks) {
    for (const KernelPath path : fast_paths_here()) {
        std::uint64_t seed = 1;
        for (const TypeTraits* type : rows_with_fast_kernels()) {
            for (const auto scales : {test::Scales::finite, test::Scales::random}) {
                const std::string kind = scales == test::Scales::finite ? " blocks, finite scales" : " random blocks";
                for (std::size_t nblocks = 1; nblocks <= 17; ++nblocks) {
                    compare_with_portable(*type, path, test::random_blocks(*type, nblocks, seed++, scales),
                                          label(*type, path) + ", " + std::to_string(nblocks) + kind);
                }
                const std::size_t large = (std::size_t{1} << 20) / type->block_elements + 3;  // ~4 MB of floats
                compare_with_portable(*type, path, test::random_blocks(*type, large, seed++, scales),
                                      label(*type, path) + ", " + std::to_string(large) + kind);
            }
        }
    }
}

// Each f16 field of every block (a ggml type's scales and mins, or F16's elements) set to each special value in
// turn, the other bytes random.
BOOST_AUTO_TEST_CASE(fast_equals_portable_on_special_f16_scales) {
    for (const KernelPath path : fast_paths_here()) {
        std::size_t types = 0;
        for (const TypeTraits* type : rows_with_fast_kernels()) {
            const auto fields = test::f16_fields(type->name);
            if ((fields.empty() && type->name != "IQ1_M") || type->ggml_id < 0) continue;
            constexpr std::size_t kBlocks = 64;
            for (const std::uint16_t special : kSpecialHalves) {
                auto bytes = test::random_blocks(*type, kBlocks, special, test::Scales::random);
                for (std::size_t b = 0; b < kBlocks; ++b) {
                    if (type->name == "IQ1_M") set_iq1_m_scale(bytes.data() + b * type->block_bytes, special);
                    // Block b sets the fields that bit f of b selects, so that every mix of special and random
                    // fields occurs.
                    for (std::size_t f = 0; f < fields.size(); ++f) {  // IQ1_M has none
                        if (((b >> f) & 1u) != 0 || fields.size() == 1) {
                            std::memcpy(bytes.data() + b * type->block_bytes + fields[f], &special, 2);
                        }
                    }
                }
                char hex[8];
                std::snprintf(hex, sizeof hex, "%04x", special);
                compare_with_portable(*type, path, bytes, label(*type, path) + ", f16 fields 0x" + hex);
            }
            ++types;
        }
        BOOST_TEST(types >= 20u);
    }
}

// The one-byte float codes: all 256, in every position of a step of 16 (each run is the 256 codes rotated by one);
// F4: every byte; F6: every code in every position of its group.
BOOST_AUTO_TEST_CASE(fast_equals_portable_on_every_small_float_code) {
    for (const KernelPath path : fast_paths_here()) {
        for (const char* name : {"F8_E4M3", "F8_E5M2", "F8_E4M3FNUZ", "F8_E5M2FNUZ", "F8_E8M0", "F4"}) {
            const TypeTraits& type = *safetensors_dtype_by_name(name);
            std::vector<std::uint8_t> bytes;
            for (unsigned rotation = 0; rotation < 16; ++rotation) {
                for (unsigned i = 0; i < 256; ++i) bytes.push_back(static_cast<std::uint8_t>(i + rotation));
            }
            compare_with_portable(type, path, bytes, label(type, path) + ", every code");
        }
        for (const char* name : {"F6_E2M3", "F6_E3M2"}) {
            const TypeTraits& type = *safetensors_dtype_by_name(name);
            std::vector<std::uint8_t> bytes;
            for (unsigned code = 0; code < 64 * 4; ++code) {  // groups of 4 codes: c, c + 17, c + 34, c + 51 (mod 64)
                std::uint32_t word = 0;
                for (unsigned k = 0; k < 4; ++k) word |= ((code + 17 * k) % 64) << (6 * k);
                for (unsigned byte = 0; byte < 3; ++byte) {
                    bytes.push_back(static_cast<std::uint8_t>(word >> (8 * byte)));
                }
            }
            compare_with_portable(type, path, bytes, label(type, path) + ", every code in every position");
        }
    }
}

BOOST_AUTO_TEST_SUITE_END()
