"""Exact or refused (docs/python.md, "Dtypes"): unsigned integers that a torch lacks the dtype of come back widened to
a signed dtype that holds every value (U16 as int32, U32 as int64 where torch has no uint32), a U64 where torch has
no uint64 raises TypeError saying so unless a float dtype was asked for, numpy has them all; get_slice(k).get_dtype()
names the dtype that get_tensor and get_slice(k)[...] give, in safetensors' spelling. The values expected are those
the file was written from."""
import numpy as np
import pytest
import torch

import tensorfs
from safetensors_files import write_safetensors

N = 3 << 20   # 12 MiB of U32 widened to 24 MiB of int64: memory of the module's own, and several pieces
VALUES = {"U16": np.array([0, 1, 0x7FFF, 0x8000, 0xFFFF], "<u2"),
          "U32": np.array([0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF], "<u4"),
          "U64": np.array([0, 1, 2**53 + 1, 2**63, 2**64 - 1], "<u8")}
LARGE = (np.arange(N, dtype=np.uint64) * 2654435761 % (1 << 32)).astype("<u4")


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("unsigned") / "unsigned.safetensors")
    tensors = [(f"x.{dtype}", dtype, [5], array.tobytes()) for dtype, array in VALUES.items()]
    write_safetensors(path, tensors + [("large.U32", "U32", [N // 1024, 1024], LARGE.tobytes())])
    return path


def torch_dtype(name):
    return getattr(torch, name) if hasattr(torch, name) else None


def test_torch_gets_them_exactly_or_refuses(path):
    widened = {"U16": (torch_dtype("uint16") or torch.int32, "U16" if torch_dtype("uint16") else "I32"),
               "U32": (torch_dtype("uint32") or torch.int64, "U32" if torch_dtype("uint32") else "I64")}
    with tensorfs.safe_open(path, framework="pt") as f:
        for stored, (dtype, name) in widened.items():
            tensor = f.get_tensor(f"x.{stored}")
            assert tensor.dtype == dtype and f.get_slice(f"x.{stored}").get_dtype() == name
            assert [int(v) for v in tensor] == [int(v) for v in VALUES[stored]]
            part = f.get_slice(f"x.{stored}")[1:4]
            assert part.dtype == dtype and [int(v) for v in part] == [int(v) for v in VALUES[stored][1:4]]
        large = f.get_tensor("large.U32")
        assert np.array_equal(large.numpy().astype(np.uint64), LARGE.astype(np.uint64).reshape(-1, 1024))
        rows = f.get_slice("large.U32")[5:2000:7, 3:900]
        assert np.array_equal(rows.numpy().astype(np.uint64),
                              LARGE.reshape(-1, 1024)[5:2000:7, 3:900].astype(np.uint64))
        assert np.array_equal(tensorfs.load(path, tensors="large.*")["large.U32"].numpy(), large.numpy())
        if torch_dtype("uint64") is None:
            for call in (lambda: f.get_tensor("x.U64"), lambda: f.get_slice("x.U64")[0:2],
                         lambda: f.get_slice("x.U64").get_dtype(), lambda: tensorfs.load(path)):
                with pytest.raises(TypeError, match="U64 values have no exact dtype in this torch"):
                    call()
        else:
            assert [int(v) for v in f.get_tensor("x.U64")] == [int(v) for v in VALUES["U64"]]
    with tensorfs.safe_open(path, framework="pt", dtype="f32") as f:
        # Floats asked for: the values as float32 gives them.
        tensor = f.get_tensor("x.U64")
        assert tensor.dtype == torch.float32 and f.get_slice("x.U64").get_dtype() == "F32"
        assert np.array_equal(tensor.numpy(), VALUES["U64"].astype(np.float32))


def test_numpy_has_every_unsigned_dtype(path):
    with tensorfs.safe_open(path, framework="np") as f:
        for stored, array in VALUES.items():
            got = f.get_tensor(f"x.{stored}")
            assert got.dtype == array.dtype and np.array_equal(got, array)
            assert f.get_slice(f"x.{stored}").get_dtype() == stored
