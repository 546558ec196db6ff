#!/usr/bin/python3
"""Writes the benchmark's inputs: large checkpoints made of valid bytes, quickly (a few random blocks repeated).

usage: bench_inputs.py FOLDER [--scale S] [--only read,moe,million,remote]

FOLDER/bf16.safetensors      BF16 model, 16 tensors of 4096 x 16384 x S (2 GiB at S=1)
FOLDER/q4_k.gguf             Q4_K model, 16 tensors of 16384 x 4096 x S (576 MiB of blocks at S=1)
FOLDER/q6_k.gguf             Q6_K model, 12 tensors of 16384 x 4096 x S (630 MiB of blocks at S=1)
FOLDER/<type>.gguf           for each low-bit type of LOW_BIT_TYPES (iq2_xxs, iq3_s, q2_k, q3_k, iq1_s): 4 tensors
                             of 65536 x 4096 x S (200-440 MiB of blocks at S=1)
FOLDER/moe-small/            100,000 F32 tensors in 200 safetensors shards + index, sparse files
FOLDER/moe-large/            the same names and shards with a data section 100 times larger, sparse files
FOLDER/moe-million/          1,000,000 F32 tensors in 1,000 safetensors shards + index, sparse files
FOLDER/remote/big.safetensors  one BF16 tensor of 512 MiB x S, for the remote figures
FOLDER/remote/moe-small/       moe-small again, served over HTTP by the remote figures
S < 1 makes everything smaller, for a quick try of the script itself. --only writes some of them: read (the
safetensors and GGUF models above), moe (the two 100,000-tensor checkpoints), million, remote; all but million by
default.
"""
import argparse
import json
import os
import struct

import numpy as np

# id, elements per block, bytes per block, byte offsets of the block's f16 scale fields (ggml-common.h block_*)
GGML_TYPES = {
    "Q4_K": (12, 256, 144, (0, 2)),
    "Q6_K": (14, 256, 210, (208,)),
    "Q2_K": (10, 256, 84, (80, 82)),
    "Q3_K": (11, 256, 110, (108,)),
    "IQ2_XXS": (16, 256, 66, (0,)),
    "IQ3_S": (21, 256, 110, (0,)),
    "IQ1_S": (19, 256, 50, (0,)),
}
LOW_BIT_TYPES = ("IQ2_XXS", "IQ3_S", "Q2_K", "Q3_K", "IQ1_S")
REPEAT_BYTES = 8 << 20   # random bytes made once and written again and again


def bf16_bytes(values):
    """float32 -> bfloat16 with round-to-nearest-even."""
    bits = values.astype("<f4").view("<u4").astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()


def write_repeated(f, pattern, nbytes):
    while nbytes > 0:
        piece = pattern[:nbytes]
        f.write(piece)
        nbytes -= len(piece)


def safetensors_header(entries, metadata=None):
    """entries: [(name, dtype, shape, nbytes)] laid out back to back. Returns the header bytes (length prefixed)."""
    header, offset = {"__metadata__": metadata or {}}, 0
    for name, dtype, shape, nbytes in entries:
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text, offset


def write_bf16_model(path, scale, rng):
    rows, cols = 4096, int(16384 * scale)
    entries = [(f"model.layers.{i}.mlp.up_proj.weight", "BF16", (rows, cols), rows * cols * 2) for i in range(16)]
    header, total = safetensors_header(entries, {"format": "pt"})
    pattern = bf16_bytes(rng.standard_normal(REPEAT_BYTES // 2).astype("<f4") * 0.02)
    with open(path, "wb") as f:
        f.write(header)
        write_repeated(f, pattern, total)


def write_remote_model(path, scale, rng):
    """One 512 MiB BF16 tensor (at scale 1) and a small one after it."""
    rows, cols = 16384, int(16384 * scale)
    entries = [("big", "BF16", (rows, cols), rows * cols * 2), ("small", "BF16", (1024,), 2048)]
    header, total = safetensors_header(entries, {"format": "pt"})
    pattern = bf16_bytes(rng.standard_normal(REPEAT_BYTES // 2).astype("<f4") * 0.02)
    with open(path, "wb") as f:
        f.write(header)
        write_repeated(f, pattern, total)


def quant_blocks(type_name, count, rng):
    """`count` valid blocks: random quants (any bytes are valid grid indices, signs and sub-scales), finite small
    f16 scales where ggml keeps them."""
    _, _, block_bytes, scale_fields = GGML_TYPES[type_name]
    blocks = rng.integers(0, 256, size=(count, block_bytes), dtype=np.uint8)
    for field in scale_fields:
        scales = (rng.random(count) * 0.01 + 0.001).astype("<f2").view(np.uint8).reshape(count, 2)
        blocks[:, field:field + 2] = scales
    return blocks.tobytes()


def gguf_string(text):
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def write_gguf_model(path, type_name, tensor_count, scale, rng, rows=16384):
    type_id, block_elements, block_bytes, _ = GGML_TYPES[type_name]
    ne0, ne1 = 4096, int(rows * scale)            # ggml order: ne0 is the row length
    nbytes = ne0 * ne1 // block_elements * block_bytes
    alignment = 32
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, tensor_count, 1))
    out += gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
    offset = 0
    for i in range(tensor_count):
        out += gguf_string(f"blk.{i}.ffn_up.weight") + struct.pack("<I", 2) + struct.pack("<QQ", ne0, ne1)
        out += struct.pack("<IQ", type_id, offset)
        offset += nbytes + (-nbytes % alignment)
    out += b"\0" * (-len(out) % alignment)
    pattern = quant_blocks(type_name, REPEAT_BYTES // block_bytes, rng)
    with open(path, "wb") as f:
        f.write(out)
        for _ in range(tensor_count):
            write_repeated(f, pattern, nbytes)
            f.write(b"\0" * (-nbytes % alignment))


def write_sparse_checkpoint(folder, tensors, shards, elements):
    """`tensors` F32 tensors of `elements` each, spread over `shards` files whose data sections are holes."""
    os.makedirs(folder, exist_ok=True)
    per_shard = tensors // shards
    weight_map, total = {}, 0
    for s in range(shards):
        file_name = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
        entries = []
        for t in range(per_shard):
            name = f"model.layers.{s}.mlp.experts.{t}.down_proj.weight"
            entries.append((name, "F32", (elements,), elements * 4))
            weight_map[name] = file_name
        header, data_bytes = safetensors_header(entries)
        with open(os.path.join(folder, file_name), "wb") as f:
            f.write(header)
            f.truncate(len(header) + data_bytes)
        total += data_bytes
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("folder")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--only", default="read,moe,remote", help="comma-separated: read, moe, million, remote")
    args = parser.parse_args()
    only = set(args.only.split(","))
    rng = np.random.default_rng(5)
    os.makedirs(args.folder, exist_ok=True)
    if "read" in only:
        write_bf16_model(os.path.join(args.folder, "bf16.safetensors"), args.scale, rng)
        write_gguf_model(os.path.join(args.folder, "q4_k.gguf"), "Q4_K", 16, args.scale, rng)
        write_gguf_model(os.path.join(args.folder, "q6_k.gguf"), "Q6_K", 12, args.scale, rng)
        for type_name in LOW_BIT_TYPES:  # 1 GiB of float32 per tensor, so that raw's first pass reads 50-110 MB
            write_gguf_model(os.path.join(args.folder, f"{type_name.lower()}.gguf"), type_name, 4, args.scale, rng,
                             rows=65536)
    tensors = max(200, int(100_000 * min(args.scale, 1.0)))
    if "moe" in only:
        write_sparse_checkpoint(os.path.join(args.folder, "moe-small"), tensors, 200, 1024)
        write_sparse_checkpoint(os.path.join(args.folder, "moe-large"), tensors, 200, 102400)
    if "million" in only:
        millions = max(1000, int(1_000_000 * min(args.scale, 1.0)))
        write_sparse_checkpoint(os.path.join(args.folder, "moe-million"), millions, 1000, 1024)
    if "remote" in only:
        remote = os.path.join(args.folder, "remote")
        os.makedirs(remote, exist_ok=True)
        write_remote_model(os.path.join(remote, "big.safetensors"), args.scale, rng)
        write_sparse_checkpoint(os.path.join(remote, "moe-small"), tensors, 200, 1024)


if __name__ == "__main__":
    main()
