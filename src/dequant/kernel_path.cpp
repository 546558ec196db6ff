// Which kernels run: the widest instruction set the CPU has, chosen once per process, or a lower one that the
// environment asks for (TENSORFS_KERNELS, for tests and benchmarks that compare paths through a real mount).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tensorfs/dtype.hpp"

namespace tensorfs {
namespace {

constexpr KernelPath kPaths[] = {KernelPath::portable, KernelPath::avx2, KernelPath::avx512};

KernelPath detect_cpu_path() {
    // Every x86 CPU with AVX2 and FMA also has F16C (clang's __builtin_cpu_supports does not know "f16c"), and
    // every one with AVX-512 also has AVX2. __builtin_cpu_supports also checks that the operating system saves
    // the wider registers.
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    // The kernels need no VBMI, but it marks the CPUs (Ice Lake, Zen 4 and later) whose clock hardly drops for
    // 512-bit arithmetic; on the first AVX-512 generation (Skylake-SP, Cascade Lake) a daemon that mostly waits
    // for FUSE would pay the slower clock for every request, so those take the AVX2 path.
    const bool avx512_without_clock_penalty = avx512 && __builtin_cpu_supports("avx512vbmi");
    return avx512_without_clock_penalty ? KernelPath::avx512 : avx2 ? KernelPath::avx2 : KernelPath::portable;
}

KernelPath choose_active_path() {
    const KernelPath cpu = cpu_kernel_path();
    const char* wanted = std::getenv("TENSORFS_KERNELS");
    if (wanted == nullptr || *wanted == '\0') return cpu;
    for (const KernelPath path : kPaths) {
        if (kernel_path_name(path) == wanted) return path < cpu ? path : cpu;
    }
    std::fprintf(stderr, "tensorfs: TENSORFS_KERNELS='%s' is none of portable, avx2, avx512; using %s\n", wanted,
                 std::string(kernel_path_name(cpu)).c_str());
    return cpu;
}

}  // namespace

std::string_view kernel_path_name(KernelPath path) {
    switch (path) {
        case KernelPath::portable:
            return "portable";
        case KernelPath::avx2:
            return "avx2";
        case KernelPath::avx512:
            return "avx512";
    }
    return "portable";
}

KernelPath cpu_kernel_path() {
    static const KernelPath path = detect_cpu_path();
    return path;
}

KernelPath active_kernel_path() {
    static const KernelPath path = choose_active_path();
    return path;
}

DequantKernel kernel_for(const TypeTraits& type, KernelPath path) {
    if (path >= KernelPath::avx512 && type.avx512 != nullptr) return type.avx512;
    if (path >= KernelPath::avx2 && type.avx2 != nullptr) return type.avx2;
    return type.portable;
}

DequantKernel active_kernel(const TypeTraits& type) { return kernel_for(type, active_kernel_path()); }

}  // namespace tensorfs
