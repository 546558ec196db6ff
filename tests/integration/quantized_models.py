"""Quantized checkpoints of the safetensors world for the tests: the reference vectors (tests/data/vectors/hfquant,
whose expected values were computed from the references by the vectors' own kit), the 16-bit roundings of their
values, and an independent numpy decoder of every scheme, written from the references' descriptions, for the
checkpoints the tests make themselves:

  fp8        DeepSeek-V3 inference/kernel.py weight_dequant: f32(fp8) * scale of the block
  nvfp4      ModelOpt qtensor/nvfp4_tensor.py: e2m1 * (f32(fp8 scale) * weight_scale_2)
  mxfp4      gpt-oss gpt_oss/torch/weights.py: ldexp(e2m1, exponent - 127), then transformers' transpose
  gptq       AutoGPTQ qlinear_cuda.py: scales[g_idx] * (q - zero), a v1 zero read back as (field & mask) + 1
  awq        AutoAWQ packing_utils.py: (q - zero) * scale, eight columns a word in the order 0 2 4 6 1 3 5 7
  pack       compressed-tensors pack_quantized.py + forward.py: (q - zero) * scale, zero points packed along dim 0
"""
import json
import lzma
import os

import numpy as np

from safetensors_files import write_safetensors
from tensorfs_mount import VECTORS

HFQUANT = os.path.join(VECTORS, "hfquant")
E2M1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32)
AWQ_FIELD = [0, 4, 1, 5, 2, 6, 3, 7]   # the field of a word that holds column c % 8


def hfquant_manifest():
    with open(os.path.join(HFQUANT, "manifest.json")) as f:
        return json.load(f)


def expected_values(entry):
    """The expected float32 values of one logical weight of the manifest, in its shape."""
    with lzma.open(os.path.join(HFQUANT, entry["expected_f32"] + ".xz")) as f:
        return np.frombuffer(f.read(), dtype="<f4").reshape(entry["shape"])


def bf16_bits(values):
    """float32 -> bfloat16 bits, to nearest even; every NaN the quiet 0x7FC0 (as dequant.bf16 gives it)."""
    bits = np.ascontiguousarray(values, dtype="<f4").view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def f16_bits(values):
    """float32 -> IEEE float16 bits, to nearest even, as numpy rounds."""
    with np.errstate(over="ignore"):
        return np.ascontiguousarray(values, dtype="<f4").astype("<f2").view("<u2")


def same_16_bits(got, expected_f32, kind):
    """Whether 16-bit values `got` (bytes or uint16) are `expected_f32` rounded (kind "bf16" or "f16"), NaN where
    it is NaN."""
    if isinstance(got, (bytes, bytearray)):
        got = np.frombuffer(got, dtype="<u2")
    got = np.asarray(got).view("<u2").ravel()
    flat = np.ascontiguousarray(expected_f32, dtype="<f4").ravel()
    if got.size != flat.size:
        return False
    nan = np.isnan(flat)
    wanted = bf16_bits(flat) if kind == "bf16" else f16_bits(flat)
    widened = (got.astype(np.uint32) << 16).view(np.float32) if kind == "bf16" else got.view("<f2")
    return bool(np.array_equal(got[~nan], wanted[~nan]) and np.isnan(widened[nan]).all())


# --- stored encodings -------------------------------------------------------------------------------------------

def e4m3_values(codes):
    """FP8 E4M3 ("fn": no infinities, 0x7F and 0xFF NaN) bytes as float32."""
    codes = np.asarray(codes, dtype=np.uint8).astype(np.int64)
    sign, exponent, mantissa = codes >> 7, (codes >> 3) & 15, codes & 7
    magnitude = np.where(exponent == 0, mantissa / 8 * 2.0 ** -6, (1 + mantissa / 8) * 2.0 ** (exponent - 7))
    values = np.where(sign == 1, -magnitude, magnitude)
    return np.where((codes & 0x7F) == 0x7F, np.nan, values).astype(np.float32)


E4M3_CODES = np.arange(256, dtype=np.uint8)
E4M3_FINITE = E4M3_CODES[~np.isnan(e4m3_values(E4M3_CODES))]
E4M3_ORDER = np.argsort(e4m3_values(E4M3_FINITE), kind="stable")


def e4m3_codes(values):
    """A nearest FP8 E4M3 byte of each value (to make checkpoints: which of two equally near ones is no matter)."""
    codes = E4M3_FINITE[E4M3_ORDER]
    levels = e4m3_values(codes).astype(np.float64)
    values = np.clip(np.asarray(values, dtype=np.float64), levels[0], levels[-1])
    above = np.clip(np.searchsorted(levels, values), 1, len(levels) - 1)
    nearer_below = values - levels[above - 1] <= levels[above] - values
    return codes[np.where(nearer_below, above - 1, above)]


def bf16_bytes(values):
    return bf16_bits(np.asarray(values, dtype="<f4")).tobytes()


def pack_along_rows(fields, bits):
    """Fields [rows, columns] of `bits` bits packed into int32 words along each row, lowest bits first."""
    per_word = 32 // bits
    rows, columns = fields.shape
    padded = np.zeros((rows, -(-columns // per_word) * per_word), dtype=np.uint64)
    padded[:, :columns] = fields
    words = np.zeros((rows, padded.shape[1] // per_word), dtype=np.uint64)
    for k in range(per_word):
        words |= padded[:, k::per_word] << np.uint64(bits * k)
    return words.astype(np.uint32).view("<i4")


def unpack_along_rows(words, bits, columns):
    """The inverse of pack_along_rows: [rows, columns] unsigned fields."""
    per_word = 32 // bits
    words = np.asarray(words).view(np.uint32).astype(np.int64)
    fields = np.stack([(words >> (bits * k)) & ((1 << bits) - 1) for k in range(per_word)], axis=2)
    return fields.reshape(words.shape[0], -1)[:, :columns]


# --- reference decoders -------------------------------------------------------------------------------------------

def fp8_block(weight_codes, scales, block):
    rows, columns = weight_codes.shape
    grid = np.repeat(np.repeat(np.asarray(scales, np.float32), block[0], 0), block[1], 1)[:rows, :columns]
    return (e4m3_values(weight_codes) * grid).astype(np.float32)


def nvfp4(packed, block_scale_codes, global_scale):
    rows, half = packed.shape
    values = np.empty((rows, half * 2), np.float32)
    values[:, 0::2], values[:, 1::2] = E2M1[packed & 15], E2M1[packed >> 4]
    scales = (e4m3_values(block_scale_codes) * np.float32(global_scale)).astype(np.float32)
    return (values * np.repeat(scales, 16, axis=1)[:, :half * 2]).astype(np.float32)


def mxfp4(blocks, exponents):
    experts, rows, groups, _ = blocks.shape
    values = np.empty((experts, rows, groups, 32), np.float32)
    values[..., 0::2], values[..., 1::2] = E2M1[blocks & 15], E2M1[blocks >> 4]
    with np.errstate(over="ignore"):   # exponent 254 and up: inf, as ldexp gives it in float32
        scaled = np.ldexp(values, exponents.astype(np.int32)[..., None] - 127).astype(np.float32)
    scaled = np.where(exponents[..., None] == 255, np.float32(np.nan), scaled)
    return scaled.reshape(experts, rows, groups * 32).transpose(0, 2, 1)


def gptq(qweight, qzeros, scales, g_idx, bits, v1):
    inputs = len(g_idx)
    q = unpack_along_rows(np.ascontiguousarray(np.asarray(qweight).T), bits, inputs).T   # [in, out]
    zeros = unpack_along_rows(qzeros, bits, scales.shape[1])
    if v1:
        zeros = zeros + 1
    groups = np.asarray(g_idx, dtype=np.int64)
    return (np.asarray(scales, np.float32)[groups] * (q - zeros[groups]).astype(np.float32)).T


def awq(qweight, qzeros, scales, group_size):
    def unpack(words):
        fields = unpack_along_rows(words, 4, words.shape[1] * 8).reshape(words.shape[0], -1, 8)
        return fields[:, :, AWQ_FIELD].reshape(words.shape[0], -1)
    out = scales.shape[1]
    q, zeros = unpack(qweight)[:, :out], unpack(qzeros)[:, :out]
    groups = np.arange(qweight.shape[0]) // group_size
    return ((q - zeros[groups]).astype(np.float32) * np.asarray(scales, np.float32)[groups]).T


def pack_quantized(packed, scales, shape, bits, group_size, zero_words=None, g_idx=None):
    out, inputs = shape
    offset = 1 << (bits - 1)
    q = unpack_along_rows(packed, bits, inputs)
    scales = np.asarray(scales, np.float32).reshape(out, -1)
    if zero_words is None:
        zeros = np.full(scales.shape, offset)
    else:
        zeros = unpack_along_rows(np.ascontiguousarray(np.asarray(zero_words).T), bits, out).T
    groups = np.asarray(g_idx) if g_idx is not None else np.arange(inputs) // group_size
    if scales.shape[1] == 1:
        groups = np.zeros(inputs, np.int64)
    return ((q - zeros[:, groups]).astype(np.float32) * scales[:, groups]).astype(np.float32)


# --- writing checkpoints -----------------------------------------------------------------------------------------

def write_model(folder, tensors, quantization_config=None, extra_config=None):
    """A one-file model in `folder`: model.safetensors holding `tensors` [(name, dtype, shape, bytes)], and a
    config.json with `quantization_config` (none when None)."""
    os.makedirs(folder, exist_ok=True)
    write_safetensors(os.path.join(folder, "model.safetensors"), tensors, {"format": "pt"})
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16"}
    if quantization_config is not None:
        config["quantization_config"] = quantization_config
    config.update(extra_config or {})
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
