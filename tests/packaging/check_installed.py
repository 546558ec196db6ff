"""The installed tensorfs package, used as a user would: run by test_install.py with a venv's python, from a folder
outside the source tree. Checks that the package comes from that venv, that importing it and keys(), metadata(),
raw(), info() and get_slice(...).get_shape() import neither numpy nor torch, and then, for each framework, that its
arrays hold the file's values when the framework is installed and that a clear ModuleNotFoundError names it when it
is not. Exits non-zero on the first check that fails. Python 3.9 syntax: it runs under every Python tensorfs
supports.

    VENV/bin/python check_installed.py CHECKPOINT --numpy yes|no --torch yes|no [--block-numpy]

--block-numpy makes numpy unimportable first (torch then runs without it): framework="pt" must not need numpy.
"""
import argparse
import fnmatch
import importlib.metadata
import importlib.util
import json
import os
import struct
import sys
import sysconfig


def stored_tensors(path):
    """{name: (dtype, shape, bytes)} read from the safetensors file itself."""
    with open(path, "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    header.pop("__metadata__", None)
    return {name: (t["dtype"], t["shape"], data[t["data_offsets"][0]:t["data_offsets"][1]])
            for name, t in header.items()}


def imported(module):
    return sys.modules.get(module) is not None  # --block-numpy leaves None there


def expect_missing(module, call):
    try:
        call()
    except ModuleNotFoundError as error:
        message = str(error)
        assert error.name == module, (error.name, message)
        assert f"needs {module}" in message and f"pip install {module}" in message, message
        assert sys.executable in message, message
        return message
    raise AssertionError(f"no ModuleNotFoundError for {module}")


def expect_type_error(call):
    try:
        call()
    except TypeError as error:
        assert "U64" in str(error), str(error)
        return
    raise AssertionError("a U64 tensor under torch raised no TypeError")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("checkpoint")
    parser.add_argument("--numpy", choices=("yes", "no"), required=True)
    parser.add_argument("--torch", choices=("yes", "no"), required=True)
    parser.add_argument("--block-numpy", action="store_true")
    args = parser.parse_args()
    if args.block_numpy:
        sys.modules["numpy"] = None  # `import numpy` raises ModuleNotFoundError from now on
    has_numpy = not args.block_numpy and importlib.util.find_spec("numpy") is not None
    has_torch = importlib.util.find_spec("torch") is not None
    assert has_numpy == (args.numpy == "yes"), f"numpy installed: {has_numpy}, expected {args.numpy}"
    assert has_torch == (args.torch == "yes"), f"torch installed: {has_torch}, expected {args.torch}"

    import tensorfs

    # The package installed in this venv: not the build tree's, not the system's.
    assert sys.prefix != sys.base_prefix, f"{sys.executable} is not a venv's"
    site = sysconfig.get_paths()["platlib"]
    expected = os.path.join(site, "tensorfs", "__init__.py")
    assert os.path.realpath(tensorfs.__file__) == os.path.realpath(expected), (tensorfs.__file__, expected)
    assert os.path.realpath(tensorfs._tensorfs.__file__).startswith(os.path.realpath(site) + os.sep)
    distribution = importlib.metadata.distribution("tensorfs")
    assert distribution.version == tensorfs.__version__, (distribution.version, tensorfs.__version__)
    assert distribution.metadata["Requires-Python"] == ">=3.9", distribution.metadata["Requires-Python"]
    assert all("extra ==" in r for r in distribution.requires or []), distribution.requires
    assert sorted(distribution.metadata.get_all("Provides-Extra")) == ["numpy", "torch"]
    assert not imported("numpy") and not imported("torch"), "import tensorfs imported a framework"

    tensors = stored_tensors(args.checkpoint)
    with tensorfs.safe_open(args.checkpoint, framework="np") as f:
        assert f.keys() == sorted(tensors) and f.offset_keys() == list(tensors), f.offset_keys()
        assert f.metadata()["generator"] == "reference kit" and f.metadata()["format"] == "pt", f.metadata()
        for name, (dtype, shape, data) in tensors.items():
            assert f.raw(name) == data, name
            part = f.get_slice(name)
            # The dtype numpy arrays get: float32 for the floats numpy lacks.
            returned = "F32" if dtype in ("BF16", "F8_E4M3", "F8_E5M2") else dtype
            assert part.get_shape() == shape and part.get_dtype() == returned, (name, part.get_shape(), dtype)
    info = tensorfs.info(args.checkpoint)
    assert info["format"] == "safetensors" and info["tensor_count"] == len(tensors), info
    assert not imported("numpy") and not imported("torch"), "keys/metadata/raw/info imported a framework"
    done = [f"tensorfs {tensorfs.__version__} from {tensorfs.__file__}", f"keys, metadata, raw, info: {len(tensors)}"
            " tensors, no framework imported"]

    if has_numpy:
        import numpy as np
        numpy_dtypes = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
                        "I8": "|i1", "U8": "|u1", "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "|b1"}
        weights = tensorfs.load(args.checkpoint, framework="np")
        with tensorfs.safe_open(args.checkpoint, framework="np") as f:
            for name, (dtype, shape, data) in tensors.items():
                array = f.get_tensor(name)
                assert list(array.shape) == shape, (name, array.shape)
                if dtype in numpy_dtypes:
                    assert array.dtype == np.dtype(numpy_dtypes[dtype]) and array.tobytes() == data, name
                    assert weights[name].tobytes() == data, name
                elif dtype == "BF16":  # float32, the bfloat16 bits in the upper half
                    bits = np.frombuffer(data, "<u2").astype("<u4") << 16
                    assert array.dtype == np.float32 and array.tobytes() == bits.astype("<u4").tobytes(), name
        done.append(f"numpy {np.__version__}: get_tensor and load of every dtype, the file's bytes")
    else:
        message = expect_missing("numpy", lambda: tensorfs.safe_open(args.checkpoint, framework="np")
                                 .get_tensor("dtype.f32"))
        expect_missing("numpy", lambda: tensorfs.load(args.checkpoint, framework="np"))
        done.append(f"numpy missing: {message}")

    if has_torch:
        import torch
        same_width = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        # Unsigned integers exactly or not at all (docs/python.md): U16 as int32, U32 as int64, U64 refused.
        unsigned = {"U16": "H", "U32": "I"}
        with tensorfs.safe_open(args.checkpoint, framework="pt") as f:
            for name, (dtype, shape, data) in tensors.items():
                if dtype == "U64":
                    expect_type_error(lambda: f.get_tensor(name))
                    continue
                tensor = f.get_tensor(name)
                if dtype in unsigned:
                    values = struct.unpack(f"<{len(data) // struct.calcsize(unsigned[dtype])}{unsigned[dtype]}", data)
                    assert tensor.reshape(-1).tolist() == list(values), name
                    continue
                assert list(tensor.shape) == shape, (name, tensor.shape)
                torch_dtype = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
                               "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32, "I16": torch.int16,
                               "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}.get(dtype)
                if torch_dtype is None or not data:
                    continue
                assert tensor.dtype == torch_dtype, (name, tensor.dtype)
                # Bit for bit (NaN included), without numpy: the file's bytes as a tensor of the same width.
                expected_bits = torch.frombuffer(bytearray(data), dtype=same_width[tensor.element_size()])
                assert torch.equal(tensor.reshape(-1).view(same_width[tensor.element_size()]), expected_bits), name
            rows = f.get_slice("dtype.f64")[1:3]
            assert torch.equal(rows, f.get_tensor("dtype.f64")[1:3]), "get_slice rows"
        expect_type_error(lambda: tensorfs.load(args.checkpoint, framework="pt"))   # it holds a U64 tensor
        weights = tensorfs.load(args.checkpoint, framework="pt", tensors="dtype.[!u]*")
        assert sorted(weights) == sorted(n for n in tensors if fnmatch.fnmatch(n, "dtype.[!u]*")), sorted(weights)
        done.append(f"torch {torch.__version__}: get_tensor, get_slice and load, the file's bytes" +
                    (" (numpy blocked)" if args.block_numpy else ""))
        if args.block_numpy:
            assert sys.modules["numpy"] is None, "numpy was imported"
    else:
        message = expect_missing("torch", lambda: tensorfs.safe_open(args.checkpoint).get_tensor("dtype.f32"))
        expect_missing("torch", lambda: tensorfs.load(args.checkpoint))
        done.append(f"torch missing: {message}")
    print("\n".join(f"  {line}" for line in done))


if __name__ == "__main__":
    main()
