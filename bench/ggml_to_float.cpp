// ggml's own to_float of a type, for bench_dequant to compare with. Not part of tensorfs and not built by its CMake:
// scripts/bench-dequant compiles this into a shared library in its scratch folder, against the headers and the
// libggml-base of the llama.cpp tree it fetched, and bench_dequant loads that library with dlopen.
#include "ggml.h"

extern "C" ggml_to_float_t tensorfs_bench_ggml_to_float(int type) {
    if (type < 0 || type >= GGML_TYPE_COUNT) return nullptr;
    const ggml_type_traits* traits = ggml_get_type_traits(static_cast<ggml_type>(type));
    return traits == nullptr ? nullptr : traits->to_float;
}
