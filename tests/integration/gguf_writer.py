"""Writing small GGUF files for tests, laid out as the GGUF spec (ggml's docs/gguf.md) has it, and ggml's Q8_0
quantization (quantize_row_q8_0_ref) with its dequantization, in numpy."""
import struct

import numpy as np

GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
ALIGNMENT = 32
Q8_0_BLOCK = 32

_UINT32, _FLOAT32, _STRING = 4, 6, 8


def _string(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def _value(value):
    if isinstance(value, str):
        return struct.pack("<I", _STRING) + _string(value)
    if isinstance(value, float):
        return struct.pack("<If", _FLOAT32, value)
    return struct.pack("<II", _UINT32, value)


def quantize_q8_0(values):
    """float32 values (a multiple of 32 of them) -> Q8_0 blocks: an f16 scale, then 32 int8 quants."""
    blocks = np.asarray(values, dtype=np.float32).reshape(-1, Q8_0_BLOCK)
    amax = np.abs(blocks).max(axis=1)
    d = amax / 127
    inverse = np.divide(1.0, d, out=np.zeros_like(d), where=d != 0)
    scaled = (blocks * inverse[:, None].astype(np.float32)).astype(np.float64)
    quants = np.trunc(scaled + np.copysign(0.5, scaled)).astype(np.int8)   # roundf: halves away from zero
    out = bytearray()
    for scale, row in zip(d.astype(np.float16), quants):
        out += scale.tobytes() + row.tobytes()
    return bytes(out)


def dequantize_q8_0(data):
    """Q8_0 blocks -> float32 values, as ggml decodes them."""
    raw = np.frombuffer(data, dtype=np.uint8).reshape(-1, 2 + Q8_0_BLOCK)
    scales = raw[:, :2].copy().view(np.float16).astype(np.float32)
    quants = raw[:, 2:].copy().view(np.int8).astype(np.float32)
    return (quants * scales).astype(np.float32).ravel()


def encode(values, ggml_type):
    """(stored bytes, float32 values ggml decodes from them)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    if ggml_type == GGML_F32:
        return values.tobytes(), values.ravel()
    if ggml_type == GGML_F16:
        half = values.astype(np.float16)
        return half.tobytes(), half.astype(np.float32).ravel()
    data = quantize_q8_0(values.ravel())
    return data, dequantize_q8_0(data)


def write_gguf(path, metadata, tensors):
    """metadata: {key: str | int (uint32) | float}; tensors: [(name, numpy shape, ggml type, stored bytes)]."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, value in metadata.items():
        out += _string(key) + _value(value)
    offset, data = 0, bytearray()
    for name, shape, ggml_type, stored in tensors:
        dims = list(reversed(shape))   # ggml's ne: the row length first
        out += _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", ggml_type, offset)
        data += stored + b"\0" * (-len(stored) % ALIGNMENT)
        offset = len(data)
    out += b"\0" * (-len(out) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(out + data)
