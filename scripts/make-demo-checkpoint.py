#!/usr/bin/python3
"""Writes a small demo checkpoint: a safetensors file with a few llama-like tensors in BF16, F16 and F32.

usage: make-demo-checkpoint.py OUTPUT.safetensors
"""
import json
import struct
import sys

import numpy as np


def bf16_bytes(values):
    """float32 -> bfloat16 with round-to-nearest-even, as torch.to(bfloat16) does."""
    bits = values.astype("<f4").view("<u4").astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def main(path):
    rng = np.random.default_rng(0)
    tensors = {
        "model.embed_tokens.weight": ("BF16", (64, 32)),
        "model.layers.0.self_attn.q_proj.weight": ("BF16", (32, 32)),
        "model.layers.0.mlp.up_proj.weight": ("F16", (48, 32)),
        "model.layers.0.input_layernorm.weight": ("F32", (32,)),
        "model.norm.weight": ("F32", (32,)),
    }
    header, blobs, offset = {"__metadata__": {"format": "pt", "note": "tensorfs demo"}}, [], 0
    for name, (dtype, shape) in tensors.items():
        values = rng.standard_normal(shape).astype("<f4") * 0.02
        blob = {"BF16": bf16_bytes, "F16": lambda v: v.astype("<f2").tobytes(),
                "F32": lambda v: v.tobytes()}[dtype](values)
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


if __name__ == "__main__":
    main(sys.argv[1])
