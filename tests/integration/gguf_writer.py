"""A GGUF (version 3) writer written from the format's specification (ggml's docs/gguf.md), sharing no code with
tensorfs or ggml, a tiny llama-architecture model with random weights that llama.cpp loads and runs, and ggml's Q8_0
quantization (quantize_row_q8_0_ref) with its dequantization, in numpy.

    /usr/bin/python3 tests/integration/gguf_writer.py OUT.gguf [SEED]    writes tiny_llama(SEED) to OUT.gguf

Layout: "GGUF", version (u32), tensor count (u64), key/value count (u64); the key/value pairs; the tensor infos
(name, dimensions in ggml order, innermost first, ggml type, offset in the data); padding to the alignment; the
data, each tensor at an offset that is a multiple of the alignment (general.alignment, 32 by default)."""
import struct
import sys

import numpy as np

ALIGNMENT = 32

# Value types of the key/value section, by the spec's numbering.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
SCALAR_FORMATS = {UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i", FLOAT32: "<f",
                  BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d"}
GGML_F32, GGML_F16, GGML_Q8_0 = 0, 1, 8
# ggml tensor types that numpy arrays are stored as (by the numpy dtype of their elements).
GGML_TYPES = {"float32": GGML_F32, "float16": GGML_F16}
Q8_0_BLOCK = 32


def string(text):
    data = text.encode("utf-8")
    return struct.pack("<Q", len(data)) + data


def value(kind, item):
    if kind == STRING:
        return string(item)
    return struct.pack(SCALAR_FORMATS[kind], item)


class Array:
    """The value of an ARRAY key: `kind` is its elements' type."""

    def __init__(self, kind, items):
        self.kind, self.items = kind, list(items)


def write(path, metadata, tensors):
    """metadata: [(key, type, value)] with value an Array for type ARRAY; tensors: [(name, numpy array)] in
    numpy (row-major) shape, stored in ggml order (the shape reversed), or [(name, numpy shape, ggml type, stored
    bytes)] for tensors already encoded (Q8_0)."""
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(metadata)))
    for key, kind, item in metadata:
        out += string(key) + struct.pack("<I", kind)
        if kind == ARRAY:
            out += struct.pack("<IQ", item.kind, len(item.items))
            out += b"".join(value(item.kind, element) for element in item.items)
        else:
            out += value(kind, item)
    offset = 0
    blobs = []
    for tensor in tensors:
        if len(tensor) == 2:
            name, array = tensor
            shape, ggml_type = array.shape, GGML_TYPES[str(array.dtype)]
            data = np.ascontiguousarray(array).tobytes()
        else:
            name, shape, ggml_type, data = tensor
        out += string(name) + struct.pack("<I", len(shape))
        out += b"".join(struct.pack("<Q", d) for d in reversed(shape))
        out += struct.pack("<IQ", ggml_type, offset)
        blobs.append(data + bytes(-len(data) % ALIGNMENT))
        offset += len(blobs[-1])
    out += bytes(-len(out) % ALIGNMENT)
    with open(path, "wb") as f:
        f.write(out)
        for blob in blobs:
            f.write(blob)


def write_gguf(path, metadata, tensors):
    """write() with metadata as {key: str | int (UINT32) | float (FLOAT32)}."""
    kinds = {str: STRING, int: UINT32, float: FLOAT32}
    write(path, [(key, kinds[type(item)], item) for key, item in metadata.items()], tensors)


# The tiny model: 4 layers, 256 wide: about 17 MiB of float32, several of the remote layer's 8 MiB blocks.
EMBED, FEED_FORWARD, LAYERS, HEADS, KV_HEADS, CONTEXT = 256, 1024, 4, 8, 4, 256
WORDS = ["▁the", "▁a", "▁model", "▁reads", "▁tensors", "▁from", "▁disk", "▁and", "▁net", "▁llama", "▁once",
         "▁upon", "▁time", "▁there", "▁was", "s", "ed", "ing", "er", "."]


def tiny_vocabulary():
    """A SentencePiece-style vocabulary as llama.cpp's "llama" tokenizer takes it: <unk>, <s>, </s>, the 256
    byte tokens (<0xNN>, for text no piece covers), then words. Returns (tokens, scores, token types)."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + WORDS
    scores = [0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(len(WORDS))]
    types = [2, 3, 3] + [6] * 256 + [1] * len(WORDS)   # unknown, control, control, byte..., normal...
    return tokens, scores, types


def tiny_llama(path, seed=0):
    """Writes a llama-architecture GGUF with random weights (float32, norms float32, two tensors float16)."""
    rng = np.random.default_rng(seed)
    tokens, scores, types = tiny_vocabulary()
    head_dim = EMBED // HEADS
    metadata = [
        ("general.architecture", STRING, "llama"),
        ("general.name", STRING, "tensorfs tiny llama"),
        ("general.alignment", UINT32, ALIGNMENT),
        ("llama.context_length", UINT32, CONTEXT),
        ("llama.embedding_length", UINT32, EMBED),
        ("llama.block_count", UINT32, LAYERS),
        ("llama.feed_forward_length", UINT32, FEED_FORWARD),
        ("llama.rope.dimension_count", UINT32, head_dim),
        ("llama.attention.head_count", UINT32, HEADS),
        ("llama.attention.head_count_kv", UINT32, KV_HEADS),
        ("llama.attention.layer_norm_rms_epsilon", FLOAT32, 1e-5),
        ("llama.rope.freq_base", FLOAT32, 10000.0),
        ("tokenizer.ggml.model", STRING, "llama"),
        ("tokenizer.ggml.tokens", ARRAY, Array(STRING, tokens)),
        ("tokenizer.ggml.scores", ARRAY, Array(FLOAT32, scores)),
        ("tokenizer.ggml.token_type", ARRAY, Array(INT32, types)),
        ("tokenizer.ggml.unknown_token_id", UINT32, 0),
        ("tokenizer.ggml.bos_token_id", UINT32, 1),
        ("tokenizer.ggml.eos_token_id", UINT32, 2),
        ("tokenizer.ggml.add_bos_token", BOOL, True),
    ]

    def weight(rows, columns, dtype=np.float32):
        return (rng.standard_normal((rows, columns), dtype=np.float32) / np.sqrt(columns)).astype(dtype)

    def norm():
        return (1.0 + 0.1 * rng.standard_normal(EMBED, dtype=np.float32)).astype(np.float32)

    vocabulary = len(tokens)
    tensors = [("token_embd.weight", weight(vocabulary, EMBED, np.float16))]
    for layer in range(LAYERS):
        block = f"blk.{layer}."
        tensors += [(block + "attn_norm.weight", norm()),
                    (block + "attn_q.weight", weight(EMBED, EMBED)),
                    (block + "attn_k.weight", weight(KV_HEADS * head_dim, EMBED)),
                    (block + "attn_v.weight", weight(KV_HEADS * head_dim, EMBED)),
                    (block + "attn_output.weight", weight(EMBED, EMBED)),
                    (block + "ffn_norm.weight", norm()),
                    (block + "ffn_gate.weight", weight(FEED_FORWARD, EMBED)),
                    (block + "ffn_up.weight", weight(FEED_FORWARD, EMBED)),
                    (block + "ffn_down.weight", weight(EMBED, FEED_FORWARD))]
    tensors += [("output_norm.weight", norm()), ("output.weight", weight(vocabulary, EMBED, np.float16))]
    write(path, metadata, tensors)


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


if __name__ == "__main__":
    tiny_llama(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
