"""The quantized section of scripts/bench (issue 45): the quantized schemes of the safetensors world, each figure
next to its baseline measured in the same round. One model per scheme of 4 weights of 4096 x 4096 (scaled), with
random stored values and ordinary scales, written here:

Q1. each scheme's weight decoded whole on one thread (bench_quantized_rows: parts read from the page cache, kernels,
    4 MiB of output at a time), into float32 and into bfloat16 / memcpy of the same output (target >= 0.5)
Q2. each scheme's weight read whole through a fresh mount, dequant.bf16 / its raw, both first passes with 1 MiB
    reads (bytes per second of each file; target >= 0.9: decoding is never what a reader waits for)
Q3. tensorfs.load(dtype="bf16") of a 1 GiB FP8-block model (64 weights of 4096 x 4096 and their block scales) from
    the local disk / tensorfs.load of the same model's BF16 original (written by tensorfs convert --dtype bf16),
    framework "pt", each in a fresh interpreter (target >= 0.8). Beside it, without a target: (Q3m) the BF16
    model's size written into new memory, as the module fills its arrays, / the same BF16 load; the original's
    load maps the file with no copy, which the decoded weights cannot.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

import bench_load
from bench_python import Python

SIDE = 4096
WEIGHTS = 4
CONFIGS = {
    "fp8-block": {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]},
    "fp8-channel": {"quant_method": "compressed-tensors", "format": "float-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}},
    "nvfp4": {"quant_method": "modelopt", "quant_algo": "NVFP4"},
    "mxfp4": {"quant_method": "mxfp4"},
    "gptq-int4-actorder": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": True, "sym": False},
    "awq-int4": {"quant_method": "awq", "bits": 4, "group_size": 128, "version": "gemm"},
    "pack-quantized-int4": {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {
        "group_0": {"targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "strategy": "group",
                                                       "group_size": 128, "symmetric": False}}}},
}


def fp8_bytes(rng, shape):
    """Random FP8 E4M3 bytes without the two NaN ones, as real weights are."""
    codes = rng.integers(0, 256, shape, dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] -= 1
    return codes


def scales(rng, shape, dtype):
    return (rng.random(shape, dtype=np.float32) * 0.01 + 0.001).astype(dtype)


def ints(rng, shape):
    return rng.integers(0, 1 << 31, shape, dtype=np.int32)


def weight_parts(scheme, name, rng, side):
    """(logical name, [(stored name, dtype, numpy array)]) of one weight of `scheme`, [side, side]."""
    groups = side // 128
    if scheme == "fp8-block":
        return name, [(name, "F8_E4M3", fp8_bytes(rng, (side, side))),
                      (name + "_scale_inv", "F32", scales(rng, (side // 128, side // 128), np.float32))]
    if scheme == "fp8-channel":
        return name, [(name, "F8_E4M3", fp8_bytes(rng, (side, side))),
                      (name + "_scale", "BF16", scales(rng, (side, 1), np.float32))]
    if scheme == "nvfp4":
        return name, [(name, "U8", rng.integers(0, 256, (side, side // 2), dtype=np.uint8)),
                      (name + "_scale", "F8_E4M3", rng.integers(0x30, 0x50, (side, side // 16), dtype=np.uint8)),
                      (name + "_scale_2", "F32", np.array(0.0003, np.float32))]
    if scheme == "mxfp4":   # 8 experts of [side / 8 x 8, side]: the same values as a [side, side] weight
        base = name.removesuffix(".weight")
        return base, [(base + "_blocks", "U8", rng.integers(0, 256, (8, side, side // 256, 16), dtype=np.uint8)),
                      (base + "_scales", "U8", rng.integers(118, 128, (8, side, side // 256), dtype=np.uint8))]
    base = name.removesuffix("weight")
    if scheme == "gptq-int4-actorder":
        return name, [(base + "qweight", "I32", ints(rng, (side // 8, side))),
                      (base + "qzeros", "I32", ints(rng, (groups, side // 8))),
                      (base + "scales", "F16", scales(rng, (groups, side), np.float16)),
                      (base + "g_idx", "I32", rng.permutation(np.arange(side) // 128).astype(np.int32))]
    if scheme == "awq-int4":
        return name, [(base + "qweight", "I32", ints(rng, (side, side // 8))),
                      (base + "qzeros", "I32", ints(rng, (groups, side // 8))),
                      (base + "scales", "F16", scales(rng, (groups, side), np.float16))]
    return name, [(base + "weight_packed", "I32", ints(rng, (side, side // 8))),
                  (base + "weight_scale", "F16", scales(rng, (side, groups), np.float16)),
                  (base + "weight_zero_point", "I32", ints(rng, (side // 8, groups))),
                  (base + "weight_shape", "I64", np.array([side, side], np.int64))]


def as_stored(dtype, array):
    if dtype == "BF16":
        return (np.ascontiguousarray(array, np.float32).view(np.uint32) >> 16).astype(np.uint16).tobytes()
    return np.ascontiguousarray(array).tobytes()


def write_model(folder, scheme, weights, side, rng):
    """One model of `weights` weights of `scheme`; returns the logical names."""
    tensors, names = [], []
    for index in range(weights):
        logical, parts = weight_parts(scheme, f"model.layers.{index}.mlp.down_proj.weight", rng, side)
        names.append(logical)
        tensors += [(stored, dtype, list(np.shape(array)), as_stored(dtype, array)) for stored, dtype, array in parts]
    write_quantized_model(folder, tensors, CONFIGS[scheme])
    return names


def rows_rate(bench, source, name):
    tool = os.path.join(os.path.dirname(bench.tensorfs), "bench", "bench_quantized_rows")
    return json.loads(subprocess.run([tool, source, name], check=True, capture_output=True, text=True).stdout)


def run(bench, scale):
    # The tests' writer of quantized models (tests/integration/quantized_models.py) and what its helpers read.
    os.environ.setdefault("TENSORFS_BIN", bench.tensorfs)
    os.environ.setdefault("TENSORFS_TEST_DATA", os.path.join(bench_load.ROOT, "tests", "data"))
    sys.path.insert(0, os.path.join(bench_load.ROOT, "tests", "integration"))
    global write_quantized_model
    from quantized_models import write_model as write_quantized_model
    side = max(256, int(SIDE * scale) // 256 * 256)
    rng = np.random.default_rng(45)
    root = tempfile.mkdtemp(prefix="quantized-", dir=bench.work)
    try:
        models = {}
        for scheme in CONFIGS:
            folder = os.path.join(root, scheme)
            models[scheme] = (folder, write_model(folder, scheme, WEIGHTS, side, rng))
            bench.warm(os.path.join(folder, "model.safetensors"))
        for scheme, (folder, names) in models.items():
            decoded = [rows_rate(bench, folder, names[i % len(names)]) for i in range(bench.rounds)]
            bench.row(f"Q1. {scheme}: decode to float32, 1 thread / memcpy", [(d["f32_gbs"], d["memcpy_f32_gbs"])
                                                                                for d in decoded], "GB/s", ">= 0.5")
            bench.row(f"Q1. {scheme}: decode to bfloat16, 1 thread / memcpy",
                      [(d["bf16_gbs"], d["memcpy_bf16_gbs"]) for d in decoded], "GB/s", ">= 0.5")
        for scheme, (folder, names) in models.items():
            pairs = []
            for i in range(bench.rounds):
                mountpoint = bench.mount(folder)
                weight = os.path.join(mountpoint, names[i % len(names)])
                if i % 2 == 0:
                    raw = bench.timed("seq", os.path.join(weight, "raw"))
                    bf16 = bench.timed("seq", os.path.join(weight, "dequant.bf16"))
                else:
                    bf16 = bench.timed("seq", os.path.join(weight, "dequant.bf16"))
                    raw = bench.timed("seq", os.path.join(weight, "raw"))
                bench.unmount(mountpoint)
                pairs.append((bf16, raw))
            bench.row(f"Q2. {scheme}: mount, dequant.bf16 first pass / raw first pass", pairs, "GB/s", ">= 0.9", 1e9)
        shutil.rmtree(root)
        load_rows(bench, scale, rng)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def load_rows(bench, scale, rng):
    """Q3 and Q3m."""
    folder = tempfile.mkdtemp(prefix="quantized-load-", dir=bench.work)
    try:
        fp8 = os.path.join(folder, "fp8")
        side = max(256, int(SIDE * scale) // 256 * 256)
        write_model(fp8, "fp8-block", 64, side, rng)
        original = os.path.join(folder, "bf16.safetensors")
        subprocess.run([bench.tensorfs, "convert", fp8, original, "--dtype", "bf16"], check=True)
        for path in (os.path.join(fp8, "model.safetensors"), original):
            bench.warm(path)
        size = os.path.getsize(original)
        python = Python(bench)
        loads, memory = [], []
        for _ in range(bench.rounds):
            plain = python.child("load", original)["seconds"]
            loads.append((size / python.child("load", fp8, dtype="bf16")["seconds"], size / plain))
            memory.append((size / python.new_memory_seconds(size), size / plain))
        gib = os.path.getsize(os.path.join(fp8, "model.safetensors")) / (1 << 30)
        bench.row(f"Q3. tensorfs.load(dtype=bf16) of a {gib:.2f} GiB FP8-block model / load of its BF16 original",
                  loads, "GB/s", ">= 0.8", 1e9)
        bench.row("Q3m. the BF16 model's size written into new memory / load of the BF16 original", memory, "GB/s",
                  None, 1e9)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
