"""What a tensorfs.safe_open handle and the module's functions give, against the command's own answers: metadata,
files(), info() (= `tensorfs info --json`), diff() (= `tensorfs diff --json`), slices against whole tensors,
arrays with no copy over the file (and no warning from torch), eight threads on one handle, large arrays in memory of
the module's own, dtypes, model=, and help(tensorfs)."""
import concurrent.futures
import importlib.metadata
import json
import math
import os
import pydoc
import shutil
import warnings

import numpy as np
import pytest
import torch

import tensorfs
from mount_compare import array_bytes
from safetensors_files import write_safetensors
from tensorfs_mount import VECTORS, read_file, run

MIXED = os.path.join(VECTORS, "gguf", "mixed.gguf")
SHARDED = os.path.join(VECTORS, "safetensors", "sharded", "model.safetensors.index.json")
ALL_DTYPES = os.path.join(VECTORS, "safetensors", "all_dtypes.safetensors")
SPLIT = os.path.join(VECTORS, "gguf", "split", "tiny-llama-Q4_K_M-00001-of-00003.gguf")
TINY = os.path.join(VECTORS, "gguf", "tiny-llama-Q4_K_M.gguf")


def command_json(*args):
    result = run(*args)
    assert result.returncode in (0, 1), result.stderr
    return result.stdout


def test_metadata_as_safetensors_gives_it(tmp_path):
    with tensorfs.safe_open(SHARDED) as f:
        info = json.loads(command_json("info", "--json", SHARDED))
        expected = {k: v if isinstance(v, str) else json.dumps(v) for k, v in info["metadata"].items()}
        assert f.metadata() == expected and f.metadata()["format"] == "pt"
    with tensorfs.safe_open(MIXED) as f:
        metadata = f.metadata()
        info = json.loads(command_json("info", "--json", MIXED))["metadata"]
        assert list(metadata) == ["format"] + list(info) and metadata["format"] == "pt"
        for key, value in info.items():
            assert metadata[key] == value if isinstance(value, str) else json.loads(metadata[key]) == value, key
    plain = str(tmp_path / "plain.safetensors")
    write_safetensors(plain, [("x", "F32", [2], np.array([1, 2], "<f4").tobytes())])
    with tensorfs.safe_open(plain) as f:
        assert f.metadata() == {"format": "pt"}   # always, as loaders check it


FIGURES = ("max_abs_diff", "rmse", "relative_rmse", "cosine", "snr_db")


def figures_as_floats(row):
    """A row of `tensorfs diff --json` with its figures as Python floats: JSON's "inf" and "-inf" strings as
    infinities, null as nan."""
    row = dict(row)
    for key in FIGURES:
        if key in row:
            row[key] = math.nan if row[key] is None else float(row[key])
    if "worst" in row:
        row["worst"] = [figures_as_floats(worst) for worst in row["worst"]]
    return row


def test_info_files_and_diff_are_the_commands():
    for source in (MIXED, SHARDED, SPLIT):
        info = json.loads(command_json("info", "--json", source))
        assert tensorfs.info(source) == info
        with tensorfs.safe_open(source) as f:
            assert f.files() == info["files"] and len(f.files()) >= 1
    for a, b, kwargs, flags in ((TINY, SPLIT, {}, []), (SHARDED, TINY, {"names": "auto"}, []),
                                (MIXED, MIXED, {"tensors": "blk.0.q*"}, ["--tensors", "blk.0.q*"])):
        rows = [json.loads(line) for line in command_json("diff", "--json", *flags, a, b).splitlines()]
        got = tensorfs.diff(a, b, **kwargs)
        # nan == nan only as text: the rows are compared as JSON.
        assert json.dumps(got) == json.dumps([figures_as_floats(row) for row in rows])
        assert rows[-1]["kind"] == "summary"
        for row in got:
            assert all(isinstance(row[key], float) for key in FIGURES if key in row), row
    identical = tensorfs.diff(MIXED, MIXED, tensors="blk.0.f32.weight")
    assert identical[0]["snr_db"] == math.inf and identical[0]["max_abs_diff"] == 0.0


def test_info_of_a_folder_of_several_models_is_the_commands(tmp_path):
    for name in ("a.gguf", "b.gguf"):
        os.symlink(MIXED if name == "a.gguf" else TINY, tmp_path / name)
    info = json.loads(command_json("info", "--json", str(tmp_path)))
    assert [model["path"] for model in info["models"]] == ["a.gguf", "b.gguf"]
    assert tensorfs.info(str(tmp_path)) == info
    picked = json.loads(command_json("info", "--json", "--model", "b.gguf", str(tmp_path)))
    assert picked["tensor_count"] == 21 and tensorfs.info(str(tmp_path), model="b.gguf") == picked


def test_slices_are_the_parts_of_whole_tensors():
    keys = [0, -1, 1, slice(None), slice(1, None), slice(0, 2), slice(None, None, 2), (slice(None), slice(3, 40)),
            (..., slice(100, 300, 7)), (1, slice(250, 260)), (-2, -1), (slice(0, 3, 2), ...), (), ...,
            (slice(2, 1),), (slice(None), slice(5, 5))]
    for framework in ("np", "pt"):
        for dtype in (None, "bf16"):
            with tensorfs.safe_open(MIXED, framework=framework, dtype=dtype) as f:
                for name in f.keys():
                    whole = f.get_tensor(name)
                    part = f.get_slice(name)
                    assert part.get_shape() == list(whole.shape)
                    for key in keys if whole.ndim == 2 else [0, slice(1, 3), ...]:
                        got, expected = part[key], whole[key]
                        assert tuple(got.shape) == tuple(expected.shape), (name, key)
                        assert got.dtype == expected.dtype
                        assert array_bytes(got) == array_bytes(expected), (name, key)
    # get_dtype() names the dtype of what get_tensor and [...] give, in safetensors' spelling.
    for framework, dtype, names in (("pt", None, {"blk.0.q4_k.weight": "F32", "blk.0.bf16.weight": "BF16"}),
                                    ("np", None, {"blk.0.q4_k.weight": "F32", "blk.0.bf16.weight": "F32"}),
                                    ("pt", "bf16", {"blk.0.q4_k.weight": "BF16", "blk.0.f32.weight": "BF16"}),
                                    ("np", "f16", {"blk.0.q4_k.weight": "F16", "blk.0.f32.weight": "F16"})):
        with tensorfs.safe_open(MIXED, framework=framework, dtype=dtype) as f:
            for name, expected in names.items():
                assert f.get_slice(name).get_dtype() == expected, (framework, dtype, name)
    with tensorfs.safe_open(ALL_DTYPES) as f:
        assert f.get_slice("dtype.u16").get_dtype() == "I32" and f.get_tensor("dtype.u16").dtype == torch.int32
        assert f.get_slice("scalar.f32")[...].shape == ()


def mapping_of(address):
    """The path of the mapping of this process that holds `address`, or None."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            begin, end = (int(x, 16) for x in fields[0].split("-"))
            if begin <= address < end:
                return fields[5] if len(fields) > 5 else ""
    return None


def test_local_tensors_in_their_stored_dtype_are_the_files_pages(tmp_path):
    source = str(tmp_path / "copy.gguf")
    shutil.copy(MIXED, source)
    original = read_file(source)
    with tensorfs.safe_open(source, framework="np") as f:
        array = f.get_tensor("blk.0.f32.weight")
        assert mapping_of(array.ctypes.data) == source
        assert not array.flags.writeable
        rows = f.get_slice("blk.0.f32.weight")[1:3]
        assert mapping_of(rows.ctypes.data) == source and np.array_equal(rows, array[1:3])
        decoded = f.get_tensor("blk.0.q4_k.weight")   # decoded: an array of its own
        assert mapping_of(decoded.ctypes.data) != source and decoded.flags.writeable
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # torch warns about tensors over read-only memory: there must be none
        with tensorfs.safe_open(source, framework="pt") as f:
            tensors = [f.get_tensor("blk.0.f32.weight") for _ in range(3)]
            bf16 = f.get_tensor("blk.0.bf16.weight")
            assert bf16.dtype == torch.bfloat16 and mapping_of(bf16.data_ptr()) == source
            assert mapping_of(tensors[0].data_ptr()) == source
            tensors[0][0, 0] = 12345.0   # a copy-on-write page of this process: the file never changes
            loaded = tensorfs.load(source, tensors="blk.0.f*")
            assert all(mapping_of(t.data_ptr()) == source for t in loaded.values())
    assert read_file(source) == original
    with tensorfs.safe_open(source, framework="pt") as f:
        assert f.get_tensor("blk.0.f32.weight")[0, 0] != 12345.0


def test_eight_threads_on_one_handle_agree_with_one():
    with tensorfs.safe_open(MIXED, framework="np", dtype="f32") as f:
        names = f.keys()
        alone = {name: f.get_tensor(name) for name in names}
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            for _ in range(3):
                results = list(pool.map(lambda name: (name, f.get_tensor(name).tobytes()), names * 2))
                assert all(alone[name].tobytes() == data for name, data in results)
                parts = list(pool.map(lambda name: (name, f.get_slice(name)[1:].tobytes()), names))
                assert all(alone[name][1:].tobytes() == data for name, data in parts)


def test_large_arrays_of_any_size_hold_their_values_and_their_memory_is_reused(tmp_path):
    """Arrays of 4 MiB and more get memory of the module's own (a mapping of whole pages, kept for the next array of
    the same size once released): float32 from BF16 of sizes that are whole 2 MiB, whole pages only, or neither,
    each written once, dropped, and written again into the kept memory, then from four threads at once."""
    rng = np.random.default_rng(31)
    shapes = {"odd": (1025, 2049), "pages": (1024, 1025), "2mib": (2048, 1024)}   # 8.4 MB, 4.2 MB, 8 MiB of f32
    bits = {name: rng.integers(0, 1 << 16, size=shape, dtype=np.uint16) & 0xBFFF for name, shape in shapes.items()}
    source = str(tmp_path / "large.safetensors")
    write_safetensors(source, [(name, "BF16", shape, bits[name].tobytes()) for name, shape in shapes.items()])
    expected = {name: (b.astype(np.uint32) << 16).view(np.float32) for name, b in bits.items()}
    with tensorfs.safe_open(source, framework="np", dtype="f32") as f:
        for _ in range(3):
            for name in shapes:
                array = f.get_tensor(name)
                assert array.shape == shapes[name] and array.tobytes() == expected[name].tobytes()
                array[-1, -1] = 1.0   # the array's own memory, up to its last element
                del array
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda name: (name, f.get_tensor(name).tobytes()), list(shapes) * 4))
        assert all(expected[name].tobytes() == data for name, data in results)


def test_dtypes():
    with tensorfs.safe_open(ALL_DTYPES, framework="np") as f:
        assert f.get_tensor("dtype.bf16").dtype == np.float32   # numpy has no bfloat16
        assert f.get_tensor("dtype.u16").dtype == np.uint16
        assert f.get_tensor("dtype.f8_e4m3").dtype == np.float32
    with tensorfs.safe_open(ALL_DTYPES, framework="np", dtype="bf16") as f:
        assert f.get_tensor("dtype.bf16").dtype == np.uint16   # the bfloat16 bits
        assert f.get_tensor("dtype.i32").dtype == np.int32     # integers keep theirs
    with tensorfs.safe_open(ALL_DTYPES, framework="pt", dtype=torch.float16) as f:
        assert f.get_tensor("dtype.bf16").dtype == torch.float16
        assert f.get_tensor("dtype.u16").dtype == torch.int32     # torch 1.13 has no uint16: int32 holds its values
    with tensorfs.safe_open(ALL_DTYPES, framework="pt") as f:
        assert f.get_tensor("dtype.u32").dtype == torch.int64     # ... and no uint32: int64
    with tensorfs.safe_open(MIXED, framework="pt") as f:
        assert f.get_tensor("blk.0.q4_k.weight").dtype == torch.float32
        assert f.get_tensor("blk.0.bf16.weight").dtype == torch.bfloat16


def test_a_folder_of_several_models_needs_model(tmp_path):
    for name in ("a.gguf", "b.gguf"):
        os.symlink(MIXED if name == "a.gguf" else TINY, tmp_path / name)
    several = r"holds 2 models \(a.gguf, b.gguf\); pick one with model=PATH, or name its file as SOURCE"
    with pytest.raises(tensorfs.Error, match=several):
        tensorfs.safe_open(str(tmp_path))
    with tensorfs.safe_open(str(tmp_path), model="b.gguf") as f:
        assert f.keys() == tensorfs.safe_open(TINY).keys()


def test_help_and_metadata_of_the_package():
    text = pydoc.render_doc(tensorfs)
    for word in ("safe_open", "load", "info", "diff", "get_slice", "get_tensor", "offset_keys", "release_memory",
                 "SourceNotFoundError"):
        assert word in text
    assert "Returns a SafeOpen" in pydoc.render_doc(tensorfs.safe_open)
    assert tensorfs.__license__ == "Apache-2.0"
    assert importlib.metadata.metadata("tensorfs")["License"] == "Apache-2.0"
    assert importlib.metadata.version("tensorfs") == tensorfs.__version__
    assert tensorfs.safe_open.__module__ == "tensorfs" and tensorfs.release_memory.__module__ == "tensorfs"
    stubs = os.path.join(os.path.dirname(tensorfs.__file__), "__init__.pyi")
    with open(stubs) as f:
        assert "def release_memory() -> int" in f.read()
