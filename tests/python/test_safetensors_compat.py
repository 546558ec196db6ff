"""tensorfs.safe_open against what safetensors documents for its safe_open (docs: "Torch API", "Numpy API", "Speed
Comparison" and "Metadata parsing") and what its own test-suite (bindings/python/tests/test_simple.py,
test_pt_comparison.py) expects of it: names sorted by keys() and in file order by offset_keys(), the metadata,
every dtype torch has read exactly (bool, zero-sized and 0-d tensors too), get_slice's shapes, dtypes and the keys of
test_numpy_slice and test_torch_slice, the devices safe_open takes, a missing file as FileNotFoundError. The files
are written by an independent writer and each expected value comes from the numpy arrays written. Where tensorfs
differs on purpose (docs/python.md): metadata() always holds "format": "pt"; errors are Python's (KeyError,
IndexError, ValueError) rather than SafetensorError."""
import numpy as np
import pytest
import torch

import tensorfs
from safetensors_files import write_safetensors

# safetensors' dtype names and the numpy dtypes of their bytes.
DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
          "U8": "u1", "BOOL": "?"}
TORCH = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
         "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
         "BOOL": torch.bool}


def write(path, arrays, metadata=None):
    """{name: numpy array or (safetensors dtype, shape, bytes)}, stored in the order given."""
    tensors = []
    for name, array in arrays.items():
        if isinstance(array, tuple):
            tensors.append((name, *array))
        else:
            dtype = next(key for key, value in DTYPES.items() if np.dtype(value) == array.dtype)
            tensors.append((name, dtype, array.shape, np.ascontiguousarray(array).tobytes()))
    write_safetensors(str(path), tensors, metadata)
    return str(path)


def test_keys_sorted_and_offset_keys_in_file_order(tmp_path):
    # safetensors writes its header sorted; a file written otherwise still gives keys() sorted.
    order = ["layers.10.w", "b", "layers.2.w", "a", "B", "é"]
    path = write(tmp_path / "order.safetensors", {name: np.full(3, i, "<f4") for i, name in enumerate(order)})
    with tensorfs.safe_open(path, framework="pt") as f:
        assert f.keys() == sorted(order)
        assert f.offset_keys() == order
        assert [int(f.get_tensor(name)[0]) for name in f.offset_keys()] == list(range(len(order)))


def test_metadata(tmp_path):
    # "Metadata parsing": {"format": "pt"} as torch's save_file writes it; other keys as given, all str.
    tensors = {"a": np.zeros(2, "<f4")}
    for given, expected in (({"format": "pt"}, {"format": "pt"}),
                            ({"framework": "pt", "name": "x"}, {"format": "pt", "framework": "pt", "name": "x"}),
                            ({"format": "np"}, {"format": "np"}),
                            (None, {"format": "pt"})):   # safetensors: None; tensorfs: always a "format"
        path = write(tmp_path / "m.safetensors", tensors, given)
        with tensorfs.safe_open(path, framework="np") as f:
            assert f.metadata() == expected, given


def test_every_dtype_and_shape_exactly(tmp_path):
    rng = np.random.default_rng(3)
    arrays = {f"t.{name}": rng.standard_normal((3, 5)).astype(dtype) if name[0] == "F" else
              rng.integers(-100 if name[0] == "I" else 0, 100, (3, 5)).astype(dtype)
              for name, dtype in DTYPES.items() if name != "BOOL"}
    arrays["t.BOOL"] = rng.integers(0, 2, (2, 2)).astype(bool)   # test_pt_comparison.test_odd_dtype
    arrays["zero_sized"] = np.zeros((2, 0), "<f4")                 # test_zero_sized
    arrays["empty"] = np.zeros(0, "<i8")
    arrays["scalar"] = np.array(2.5, "<f4")
    bits = rng.integers(0, 1 << 16, (4, 2), dtype=np.uint32).astype(np.uint16) & 0xBFFF
    arrays["t.BF16"] = ("BF16", (4, 2), bits.tobytes())
    path = write(tmp_path / "dtypes.safetensors", arrays)
    with tensorfs.safe_open(path, framework="pt", device="cpu") as f:
        for name, array in arrays.items():
            tensor = f.get_tensor(name)
            if name == "t.BF16":
                assert tensor.dtype == torch.bfloat16 and f.get_slice(name).get_dtype() == "BF16"
                assert np.array_equal(tensor.view(torch.int16).numpy().view("<u2"), bits)
                continue
            dtype = next(key for key, value in DTYPES.items() if np.dtype(value) == array.dtype)
            assert tensor.dtype == TORCH[dtype] and f.get_slice(name).get_dtype() == dtype, name
            assert list(tensor.shape) == list(array.shape) == f.get_slice(name).get_shape(), name
            assert np.array_equal(tensor.numpy(), array), name
    with tensorfs.safe_open(path, framework="np") as f:
        for name, array in arrays.items():
            if name != "t.BF16":
                got = f.get_tensor(name)
                assert got.dtype == array.dtype and np.array_equal(got, array), name


@pytest.mark.parametrize("framework", ["np", "pt"])
def test_slices_as_safetensors_tests_take_them(tmp_path, framework):
    """test_numpy_slice and test_torch_slice: a (10, 5) tensor and its parts."""
    a = np.random.default_rng(4).standard_normal((10, 5)).astype("<f4")
    path = write(tmp_path / "slice.safetensors", {"a": a})
    with tensorfs.safe_open(path, framework=framework, device="cpu") as f:
        slice_ = f.get_slice("a")
        assert slice_.get_shape() == [10, 5] and slice_.get_dtype() == "F32"
        for key in (slice(None), (), slice(None, 2), (slice(None), slice(None, 2)), (0, slice(None, 2)),
                    (slice(2, None), 0), (slice(2, None), 1), (slice(2, None), -1), (slice(2, None), slice(1, 2)),
                    (Ellipsis, slice(2, None)), 0, -1, (slice(1, 8, 3), slice(None, None, 2))):
            tensor = slice_[key]
            expected = a[key]
            assert list(tensor.shape) == list(expected.shape), key
            got = tensor if framework == "np" else tensor.numpy()
            assert np.array_equal(got, expected), key
        for key in ((slice(2, None), -6), (slice(2, None), 20), (slice(None), slice(None), slice(None, 2))):
            with pytest.raises(IndexError):   # safetensors: SafetensorError "Invalid index -6 for dimension 1..."
                slice_[key]


def test_devices_as_safetensors_takes_them(tmp_path):
    path = write(tmp_path / "d.safetensors", {"a": np.arange(4, dtype="<f4")})
    for device in ("cpu", torch.device("cpu")):
        with tensorfs.safe_open(path, framework="pt", device=device) as f:
            assert f.get_tensor("a").device.type == "cpu"
        assert tensorfs.load(path, device=device)["a"].device.type == "cpu"
    if not torch.cuda.is_available():
        # Refused when opened, as torch refuses it, not at the first tensor.
        for device in ("cuda", "cuda:0", 0, 3, torch.device("cuda:1")):
            with pytest.raises(RuntimeError, match="cannot be used by this torch"):
                tensorfs.safe_open(path, framework="pt", device=device)
            with pytest.raises(RuntimeError, match="cannot be used by this torch"):
                tensorfs.load(path, device=device)
    for device in ("cuda:a", "gpu", "cuda:", -1, "cpu:1"):
        with pytest.raises(ValueError, match="invalid"):
            tensorfs.safe_open(path, framework="pt", device=device)
    for device in (1.5, None, [0]):
        with pytest.raises(TypeError):
            tensorfs.safe_open(path, framework="pt", device=device)
    with pytest.raises(ValueError, match="numpy arrays live on the CPU"):
        tensorfs.safe_open(path, framework="np", device="cuda:0")


def test_a_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        tensorfs.safe_open(str(tmp_path / "missing.safetensors"), framework="pt")
