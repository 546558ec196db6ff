"""Checkpoints written by real PyTorch (Debian's python3-torch), and what torch.load gives for them, tensor by tensor
under the dotted names tensorfs gives them."""
import json
import os

import numpy as np
import torch


def every_dtype_state_dict():
    """A state dict with every dtype torch 1.13 can save, special values included, and the shapes and layouts
    that need care: a 0-d and an empty tensor, views that are not contiguous, tied weights."""
    torch.manual_seed(0)
    floats = torch.tensor([0.0, -0.0, 1.0, -2.5, 3.1415926, 1e-40, -1e-45, 65504.0, 1e30, float("inf"),
                           float("-inf"), float("nan")], dtype=torch.float64)
    state = {
        "float64": floats.clone(),
        "float32": floats.to(torch.float32).reshape(3, 4),
        "float16": floats.to(torch.float16).reshape(2, 2, 3),
        "bfloat16": floats.to(torch.bfloat16),
        "int8": torch.tensor([-128, -1, 0, 1, 127], dtype=torch.int8),
        "int16": torch.tensor([-32768, -1, 0, 1, 32767], dtype=torch.int16),
        "int32": torch.tensor([-2**31, -1, 0, 16777217, 2**31 - 1], dtype=torch.int32),
        "int64": torch.tensor([-2**63, -1, 0, 2**53 + 1, 2**63 - 1], dtype=torch.int64),
        "uint8": torch.arange(256, dtype=torch.uint8).reshape(16, 16),
        "bool": torch.tensor([[True, False, True], [False, False, True]]),
        "complex64": torch.tensor([1 + 2j, -3.5j, 0], dtype=torch.complex64),
        "complex128": torch.tensor([[1 + 2j], [float("inf") - 1j]], dtype=torch.complex128),
        "scalar": torch.tensor(2.75),
        "empty": torch.zeros(3, 0),
        "layer.weight": torch.randn(6, 4),
        "conv.weight": torch.randn(5, 3, 2, 2).to(memory_format=torch.channels_last),
    }
    state["transposed"] = state["layer.weight"].t()                    # stride (1, 4), shares the weight's storage
    state["columns"] = state["layer.weight"][:, 1:3]                    # stride (4, 1), storage offset 1
    state["expanded"] = torch.arange(3.0).reshape(3, 1).expand(3, 4)    # stride (1, 0)
    state["tail"] = state["layer.weight"].reshape(-1)[8:]               # contiguous, storage offset 8
    state["tied.weight"] = state["layer.weight"]                        # the same tensor under two names
    state["bfloat16.t"] = torch.randn(3, 5).to(torch.bfloat16).t()      # views of other dtypes
    state["int32.t"] = torch.arange(-6, 6, dtype=torch.int32).reshape(3, 4).t()
    state["parameter"] = torch.nn.Parameter(torch.randn(2, 2))
    return state


def training_checkpoint():
    """A nested training checkpoint: model and optimizer state dicts, epoch, loss, settings."""
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.randn(2, 4)).sum().backward()
    optimizer.step()
    return {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": 3, "loss": 0.125,
            "name": "run-7", "finished": False, "notes": None, "steps": [10, 20, 30], "dtype": torch.float16}


def flatten(obj, prefix=""):
    """{dotted name: tensor} and {dotted name: plain value}, as tensorfs names them."""
    tensors, metadata = {}, {}

    def walk(value, name):
        if isinstance(value, torch.Tensor):
            tensors[name] = value
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{name}.{key}" if name else str(key))
        elif isinstance(value, (list, tuple)):
            if value and all(v is None or isinstance(v, (bool, int, float, str)) for v in value):
                metadata[name] = list(value)
            else:
                for i, item in enumerate(value):
                    walk(item, f"{name}.{i}" if name else str(i))
        elif isinstance(value, torch.dtype):
            metadata[name] = str(value)
        elif value is None or isinstance(value, (bool, int, float, str)):
            metadata[name] = value

    walk(obj, prefix)
    return tensors, metadata


TORCH_TYPE_NAMES = {
    torch.float64: "float64", torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
    torch.int8: "int8", torch.int16: "int16", torch.int32: "int32", torch.int64: "int64", torch.uint8: "uint8",
    torch.bool: "bool", torch.complex64: "complex64", torch.complex128: "complex128",
}


# What model.safetensors keeps a contiguous tensor as (export_dtype=keep); a dtype missing here has no
# safetensors dtype (complex128).
SAFETENSORS_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int8: "I8",
    torch.int16: "I16", torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8", torch.bool: "BOOL",
    torch.complex64: "C64",
}


def exported(tensor):
    """(dtype, bytes) of `tensor` in model.safetensors with export_dtype=keep, or None when it is left out: a
    contiguous tensor keeps its dtype and stored bytes; a view is served from its values in C order, in its own
    dtype when that is float32, bfloat16 or float16, else as float32 (complex views have no values)."""
    if tensor.is_contiguous():
        dtype = SAFETENSORS_DTYPES.get(tensor.dtype)
        return None if dtype is None else (dtype, expected_raw(tensor))
    if tensor.dtype in (torch.float32, torch.bfloat16, torch.float16):
        return SAFETENSORS_DTYPES[tensor.dtype], expected_raw(tensor.contiguous())
    return None if tensor.is_complex() else ("F32", expected_f32(tensor).tobytes())


def storage_bytes(tensor):
    return bytes(tensor.storage().untyped().tolist())


def expected_raw(tensor):
    """The bytes tensorfs serves as raw: the tensor's elements in its storage, from its first to its last."""
    element = tensor.element_size()
    if tensor.numel() == 0:
        return b""
    last = tensor.storage_offset() + sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return storage_bytes(tensor)[tensor.storage_offset() * element:(last + 1) * element]


def expected_f32(tensor):
    """What dequant.f32 holds: the values as float32 in C order (torch's own conversion: one rounding)."""
    return tensor.detach().to(torch.float32).contiguous().numpy().reshape(-1)


def write_sharded(folder, state, shards=2):
    """A transformers-style sharded checkpoint: pytorch_model-0000K-of-0000N.bin and its index."""
    names = list(state)
    weight_map, total = {}, 0
    for k in range(shards):
        part = {name: state[name] for name in names[k::shards]}
        file = f"pytorch_model-{k + 1:05d}-of-{shards:05d}.bin"
        torch.save(part, os.path.join(folder, file))
        for name, tensor in part.items():
            weight_map[name] = file
            total += tensor.numel() * tensor.element_size()
    with open(os.path.join(folder, "pytorch_model.bin.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f)


def as_numpy_bytes(array):
    return np.ascontiguousarray(array).tobytes()
