"""The module's arrays against the files of a real mount of the same SOURCE (the contract: values and bytes equal
what the mount gives, `raw` and `dequant.*`)."""
import json
import os

import numpy as np
import torch

from tensorfs_mount import read_file, run, same_floats

# Stored dtypes each framework keeps as they are with dtype=None (safetensors, ggml and PyTorch spellings); the
# others come back as float32, but for the unsigned integers torch lacks (1.13 has no uint16/32/64, and no float8):
# uint16 and uint32 come back widened to int32 and int64, uint64 is refused unless a float dtype is asked for.
NUMPY_KEEPS = {"F64", "F32", "F16", "I64", "I32", "I16", "I8", "U8", "BOOL", "U16", "U32", "U64", "C64",
               "float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool", "complex64",
               "complex128"}
TORCH_KEEPS = (NUMPY_KEEPS - {"U16", "U32", "U64"}) | {"BF16", "bfloat16"}
INTEGERS = {"I64", "I32", "I16", "I8", "U8", "BOOL", "U16", "U32", "U64",
            "int64", "int32", "int16", "int8", "uint8", "bool"}
WIDENED = {dtype: stored for dtype, stored, name in (("U16", "<u2", "uint16"), ("U32", "<u4", "uint32"))
           if not hasattr(torch, name)}
VIEW_FILES = {None: "dequant.f32", "f32": "dequant.f32", "bf16": "dequant.bf16", "f16": "dequant.f16"}


def ls_json(source):
    """`tensorfs ls --json SOURCE`: every tensor's meta.json, in the command's order."""
    result = run("ls", "--json", source)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def array_bytes(array):
    """The bytes of a numpy array or a torch tensor in C order (torch's bfloat16 through int16)."""
    if isinstance(array, torch.Tensor):
        if array.dtype == torch.bfloat16:
            array = array.view(torch.int16)
        array = array.contiguous().numpy()
    return np.ascontiguousarray(array).tobytes()


def as_numpy(array):
    if isinstance(array, torch.Tensor):
        return (array.float() if array.dtype == torch.bfloat16 else array).numpy()
    return array


def refused(dtype_name, framework, dtype):
    """Whether a tensor stored as `dtype_name` is refused (TypeError) for `framework` and `dtype`: a uint64 in a
    torch without uint64, no float dtype asked for."""
    return framework == "pt" and dtype is None and dtype_name == "U64" and not hasattr(torch, "uint64")


class MountedTensor:
    """One tensor of a mount: its meta.json and its files' bytes, read through the kernel."""

    def __init__(self, mount, meta, renamed):
        self.meta = meta
        self.folder = os.path.join(mount.path, renamed.get(meta["name"], meta["name"]))

    def file(self, name):
        return read_file(os.path.join(self.folder, name))

    def check(self, array, framework, dtype):
        """That `array` (get_tensor or load with `framework` and `dtype`) holds what this mount's files hold."""
        meta = self.meta
        assert list(array.shape) == meta["shape"], meta["name"]
        if framework == "pt" and meta["dtype"] in WIDENED:
            assert array.dtype in (torch.int32, torch.int64), meta["name"]
            stored = np.frombuffer(self.file("raw"), WIDENED[meta["dtype"]])
            assert np.array_equal(array.numpy().ravel(), stored), meta["name"]
            return
        keeps = NUMPY_KEEPS if framework == "np" else TORCH_KEEPS
        stored = meta["dtype"] in keeps and (dtype is None or meta["dtype"] in INTEGERS or meta["dequant"] is None)
        if not stored:
            assert array_bytes(array) == self.file(VIEW_FILES[dtype]), (meta["name"], dtype)
        elif "stride" not in meta:
            assert array_bytes(array) == self.file("raw"), (meta["name"], dtype)
        else:
            # A view that is not contiguous: its stored bytes are the ones it spans; its values are dequant.f32's.
            values = np.frombuffer(self.file("dequant.f32"), "<f4").reshape(meta["shape"])
            assert same_floats(values, as_numpy(array).astype(np.float32)), meta["name"]


def mounted_tensors(mount, source):
    """MountedTensor of every tensor of the mount of `source`, in `tensorfs ls` order."""
    with open(os.path.join(mount.path, "model.json")) as f:
        renamed = json.load(f)["renamed"]
    return [MountedTensor(mount, meta, renamed) for meta in ls_json(source)]
