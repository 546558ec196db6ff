"""The diff section of scripts/bench: `tensorfs diff` of a 1 GiB BF16 checkpoint (Hugging Face names) against a Q4_K
GGUF of the same weights (llama.cpp's names, q rows permuted as its converter does), against the baseline of
`tensorfs cat --f32` of every tensor of both into /dev/null, one process per tensor, one after the other.

The Q4_K blocks are made here in numpy by a plain quantizer (per 32-value sub-block: scale and minimum from its range,
6-bit sub-scales, 4-bit quants, packed as ggml's block_q4_K), not by ggml's search for the best scales: the values
are near the weights (the diff says how near) and the file is what ggml would decode. Each layer repeats the same
matrices, made once, so that the inputs take seconds to write."""
import json
import os
import resource
import struct
import subprocess
import time

import numpy as np

from bench_inputs import bf16_bytes, gguf_string, safetensors_header

HIDDEN, FFN, HEADS, LAYERS = 4096, 12288, 32, 8   # 64 M weights a layer: 1 GiB of BF16
Q4_K_ID, Q4_K_BYTES = 12, 144


def quantize_q4_k(values):
    """float32 values (a multiple of 256) -> block_q4_K bytes: f16 d, f16 dmin, 12 bytes of 6-bit scales and mins,
    128 bytes of 4-bit quants (sub-blocks 2c and 2c+1 share bytes 32c..32c+31, low and high nibbles)."""
    x = values.reshape(-1, 8, 32).astype(np.float32)
    low = np.minimum(x.min(axis=2), 0)
    scale = (x.max(axis=2) - low) / 15
    d = scale.max(axis=1) / 63
    dmin = -low.min(axis=1) / 63
    d16, dmin16 = d.astype(np.float16), dmin.astype(np.float16)
    d32, dmin32 = d16.astype(np.float32), dmin16.astype(np.float32)
    sc = np.clip(np.round(np.divide(scale, d32[:, None], out=np.zeros_like(scale), where=d32[:, None] > 0)), 0, 63)
    mn = np.clip(np.round(np.divide(-low, dmin32[:, None], out=np.zeros_like(low), where=dmin32[:, None] > 0)),
                 0, 63)
    step = (d32[:, None] * sc)[:, :, None]
    q = np.round(np.divide(x + (dmin32[:, None] * mn)[:, :, None], step, out=np.zeros_like(x), where=step > 0))
    q = np.clip(q, 0, 15).astype(np.uint8)
    sc, mn = sc.astype(np.uint8), mn.astype(np.uint8)
    scales = np.empty((x.shape[0], 12), np.uint8)
    scales[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    scales[:, 4:8] = mn[:, 0:4] | ((mn[:, 4:8] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:8] & 0xF) | ((mn[:, 4:8] & 0xF) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(x.shape[0], 128)
    blocks = np.concatenate([d16.view(np.uint8).reshape(-1, 2), dmin16.view(np.uint8).reshape(-1, 2), scales, qs],
                            axis=1)
    return blocks.tobytes()


def permute(weights, heads):
    """llama.cpp's converter's row order of a query weight (LlamaModel.permute)."""
    return weights.reshape(heads, 2, weights.shape[0] // heads // 2, -1).swapaxes(1, 2).reshape(weights.shape)


def write_inputs(work, scale):
    """(bf16 path, gguf path, bf16 tensor names, gguf tensor names)."""
    layers = max(1, int(LAYERS * scale))
    rng = np.random.default_rng(21)
    bf16_path, gguf_path = os.path.join(work, "diff-hf.safetensors"), os.path.join(work, "diff-q4_k.gguf")
    if os.path.exists(gguf_path):
        return bf16_path, gguf_path, *names(layers)
    q = (rng.standard_normal((HIDDEN, HIDDEN), dtype=np.float32) * 0.02)
    up = (rng.standard_normal((FFN, HIDDEN), dtype=np.float32) * 0.02)
    q_bf16, up_bf16 = bf16_bytes(q), bf16_bytes(up)
    # The GGUF quantizes the BF16 values, as a conversion of the BF16 checkpoint would.
    as_read = {name: (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view(np.float32).reshape(shape)
               for name, data, shape in (("q", q_bf16, q.shape), ("up", up_bf16, up.shape))}
    q_q4k = b"".join(quantize_q4_k(rows) for rows in np.array_split(permute(as_read["q"], HEADS), 16))
    up_q4k = b"".join(quantize_q4_k(rows) for rows in np.array_split(as_read["up"], 48))

    hf_names, gguf_names = names(layers)
    entries = []
    for name in hf_names:
        shape, data = ((HIDDEN, HIDDEN), q_bf16) if ".q_proj." in name else ((FFN, HIDDEN), up_bf16)
        entries.append((name, "BF16", shape, len(data)))
    with open(bf16_path, "wb") as f:
        f.write(safetensors_header(entries)[0])
        for name in hf_names:
            f.write(q_bf16 if ".q_proj." in name else up_bf16)

    header = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(gguf_names), 3))
    header += gguf_string("general.architecture") + struct.pack("<I", 8) + gguf_string("llama")
    for key in ("llama.attention.head_count", "llama.attention.head_count_kv"):
        header += gguf_string(key) + struct.pack("<II", 4, HEADS)
    offset = 0
    for name in gguf_names:
        rows, data = (HIDDEN, q_q4k) if ".attn_q." in name else (FFN, up_q4k)
        header += gguf_string(name) + struct.pack("<IQQ", 2, HIDDEN, rows) + struct.pack("<IQ", Q4_K_ID, offset)
        offset += len(data)   # a multiple of 32: no padding
    header += b"\0" * (-len(header) % 32)
    with open(gguf_path, "wb") as f:
        f.write(header)
        for name in gguf_names:
            f.write(q_q4k if ".attn_q." in name else up_q4k)
    return bf16_path, gguf_path, hf_names, gguf_names


def names(layers):
    hf, gguf = [], []
    for layer in range(layers):
        hf += [f"model.layers.{layer}.self_attn.q_proj.weight", f"model.layers.{layer}.mlp.up_proj.weight"]
        gguf += [f"blk.{layer}.attn_q.weight", f"blk.{layer}.ffn_up.weight"]
    return hf, gguf


def run(bench, work, scale):
    bf16, gguf, hf_names, gguf_names = write_inputs(work, scale)
    for source in (bf16, gguf):
        bench.warm(source)
    rounds, cpu_rounds, summary = [], [], None
    for _ in range(bench.rounds):
        started, cpu_started = time.monotonic(), children_cpu()
        result = subprocess.run([bench.tensorfs, "diff", "--json", bf16, gguf], capture_output=True, text=True)
        diff_seconds, diff_cpu = time.monotonic() - started, children_cpu() - cpu_started
        if result.returncode != 1:
            raise RuntimeError(f"tensorfs diff exited {result.returncode}: {result.stderr}")
        summary = json.loads(result.stdout.splitlines()[-1])
        started, cpu_started = time.monotonic(), children_cpu()
        with open(os.devnull, "wb") as null:
            for source, tensors in ((bf16, hf_names), (gguf, gguf_names)):
                for tensor in tensors:
                    subprocess.run([bench.tensorfs, "cat", "--f32", source, tensor], stdout=null, check=True)
        rounds.append((diff_seconds, time.monotonic() - started))
        cpu_rounds.append((diff_cpu, children_cpu() - cpu_started))
    if summary["paired"] != len(hf_names) or summary["only_in_a"] or summary["only_in_b"]:
        raise RuntimeError(f"diff did not pair every tensor: {summary}")
    print(f"   (diff: {summary['paired']} pairs, RMSE {summary['rmse']:.3g}, SNR {summary['snr_db']:.1f} dB)")
    bench.row("17. diff BF16 vs Q4_K GGUF (1 GiB) / cat --f32 of every tensor", rounds, "s", "<= 1.3")
    # CPU time moves less than wall time on a shared machine: what the metrics cost beyond decoding.
    bench.row("17. the same, CPU time (user + sys of the processes)", cpu_rounds, "s")


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
