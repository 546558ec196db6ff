// F16 and BF16 (GGUF and safetensors alike), 16 values per step. F16 uses the hardware conversion, which is exact
// for every pattern and, like ggml's to_float, makes a signalling NaN quiet and keeps the rest of its payload.
// BF16 is a 16-bit shift, as in ggml.

namespace float16 {

TENSORFS_TARGET inline void f16_step(const std::uint8_t* src, float* dst) { store16_f16(load32(src), dst); }
TENSORFS_TARGET inline void bf16_step(const std::uint8_t* src, float* dst) { store16_bf16(load32(src), dst); }

}  // namespace float16

TENSORFS_TARGET void f16(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<32, 32, 16, float16::f16_step>(src, 2 * n, dst);
}

TENSORFS_TARGET void bf16(const std::uint8_t* src, std::size_t n, float* dst) {
    in_steps<32, 32, 16, float16::bf16_step>(src, 2 * n, dst);
}
