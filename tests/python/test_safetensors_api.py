"""safetensors_usage.py, written only against safetensors' API, runs unchanged with tensorfs.safe_open as
safetensors.safe_open (Debian has no safetensors package: a module of that name holding tensorfs's safe_open
stands in), and gives what an independent reader of the files (tests/integration/safetensors_reader.py) finds in
them; and the same code reads a GGUF."""
import os
import sys
import types

import numpy as np
import pytest
import torch

import tensorfs
from safetensors_reader import SafetensorsFile
from tensorfs_mount import VECTORS, read_file

SHARD = os.path.join(VECTORS, "safetensors", "sharded", "model-00001-of-00003.safetensors")
ALL_DTYPES = os.path.join(VECTORS, "safetensors", "all_dtypes.safetensors")
NUMPY = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
         "U8": "u1", "BOOL": "?", "BF16": "<i2"}


@pytest.fixture(scope="module")
def usage():
    sys.modules["safetensors"] = types.SimpleNamespace(safe_open=tensorfs.safe_open)
    import safetensors_usage
    yield safetensors_usage
    del sys.modules["safetensors"]


def independent(path):
    data = read_file(path)
    parsed = SafetensorsFile(data)
    return {name: (dtype, shape, data[begin:end]) for name, dtype, shape, begin, end in parsed.tensors}, parsed.metadata


def as_stored(tensor):
    if isinstance(tensor, np.ndarray):
        return tensor
    return (tensor.view(torch.int16) if tensor.dtype == torch.bfloat16 else tensor).numpy()


def test_the_same_code_reads_safetensors(usage):
    for path, framework in ((SHARD, "pt"), (ALL_DTYPES, "np")):
        expected, metadata = independent(path)
        assert usage.metadata(path) == {"format": "pt", **(metadata or {})}
        tensors = usage.load_all(path, framework)
        assert list(tensors) == sorted(expected)
        for name, (dtype, shape, data) in expected.items():
            if dtype in NUMPY and (framework == "pt" or dtype != "BF16"):
                assert list(tensors[name].shape) == shape
                assert as_stored(tensors[name]).tobytes() == data, name
    with pytest.raises(TypeError, match="U64 values have no exact dtype"):   # torch 1.13 has no uint64
        usage.load_all(ALL_DTYPES)
    expected, _ = independent(SHARD)
    dtype, shape, data = expected["model.embed_tokens.weight"]
    rows, full_shape, got_dtype = usage.first_rows(SHARD, "model.embed_tokens.weight", 5)
    assert full_shape == tuple(shape) and got_dtype == dtype == "BF16"
    stored = np.frombuffer(data, "<i2").reshape(shape)
    assert np.array_equal(as_stored(rows), stored[:5])
    column = usage.last_column(SHARD, "model.embed_tokens.weight")
    assert np.array_equal(column, (stored[:, -1].astype(np.uint32) << 16).view("<f4"))   # BF16 as float32 in numpy


def test_the_same_code_reads_a_gguf(usage):
    path = os.path.join(VECTORS, "gguf", "tiny-llama-Q4_K_M.gguf")
    tensors = usage.load_all(path, framework="np")
    assert len(tensors) == 21 and all(t.dtype == np.float32 for t in tensors.values())
    rows, shape, dtype = usage.first_rows(path, "token_embd.weight", 3)
    assert dtype == "F32" and np.array_equal(rows.numpy(), tensors["token_embd.weight"][:3])
    assert usage.metadata(path)["general.architecture"] == "llama"
