"""Quantized weights through `import tensorfs`: every logical weight of the hfquant reference models as float32
(dtype=None), bfloat16 and float16, whole, loaded, and as row and column slices (a tensor-parallel rank's share);
a broken weight's one-line error; and a remote FP8 model whose weights are read over HTTP fetching only the bytes of
their own parts, counted in nginx's log."""
import json
import os

import numpy as np
import pytest
import torch

import tensorfs
from quantized_fixtures import MALFORMED, malformed_models
from quantized_models import (HFQUANT, bf16_bits, e4m3_codes, expected_values, f16_bits, fp8_block,
                              hfquant_manifest, same_16_bits, write_model)
from remote_servers import Nginx, requests_in
from safetensors_files import write_safetensors
from tensorfs_mount import same_floats, wait_until

MANIFEST = hfquant_manifest()
FOLDERS = sorted(MANIFEST)


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_weight_in_every_dtype(folder):
    logical = MANIFEST[folder]["logical"]
    path = os.path.join(HFQUANT, folder)
    with tensorfs.safe_open(path, framework="np") as f:
        for name, entry in logical.items():
            assert name in f.keys()
            got = f.get_tensor(name)
            assert got.dtype == np.float32
            assert same_floats(expected_values(entry), got), name
    loaded = tensorfs.load(path, framework="pt", dtype="bf16")
    halves = tensorfs.load(path, framework="np", dtype="f16", tensors="model.layers.*")
    for name, entry in logical.items():
        expected = expected_values(entry)
        assert loaded[name].dtype == torch.bfloat16 and list(loaded[name].shape) == entry["shape"]
        assert same_16_bits(loaded[name].view(torch.int16).numpy().view("<u2"), expected, "bf16"), name
        assert same_16_bits(halves[name].view("<u2"), expected, "f16"), name


@pytest.mark.parametrize("folder", ["gptq4-actorder", "awq", "mxfp4", "ct-w4-asym", "fp8-block", "nvfp4"])
def test_slices_of_a_rank(folder):
    """Rows and columns of every weight, cut as a tensor-parallel job of 3 ranks cuts them."""
    with tensorfs.safe_open(os.path.join(HFQUANT, folder), framework="np") as f:
        for name, entry in MANIFEST[folder]["logical"].items():
            expected = expected_values(entry)
            rows, columns = expected.shape[-2], expected.shape[-1]
            for rank in range(3):
                r0, r1 = rows * rank // 3, rows * (rank + 1) // 3
                c0, c1 = columns * rank // 3, columns * (rank + 1) // 3
                sliced = f.get_slice(name)
                assert same_floats(expected[..., r0:r1, :], sliced[..., r0:r1, :]), (name, rank)
                assert same_floats(expected[..., c0:c1], sliced[..., c0:c1]), (name, rank)


def test_a_broken_weight_raises_one_line(tmp_path):
    folders = malformed_models(str(tmp_path))
    for case, (weight, word, _) in MALFORMED.items():
        with tensorfs.safe_open(folders[case], framework="np") as f:
            assert f.get_tensor("good").shape == (4, 8)
            with pytest.raises(tensorfs.Error) as raised:
                f.get_tensor(weight)
            message = str(raised.value)
            assert "\n" not in message and weight in message and word in message, (case, message)


class FetchedRanges:
    """A 3-weight FP8-block model served by nginx, each weight 4 MiB and each part's byte range in the file."""

    def __init__(self, folder):
        rng = np.random.default_rng(9)
        self.weights, tensors, self.expected = [], [], {}
        for index in range(3):
            name = f"model.layers.{index}.mlp.down_proj.weight"
            values = rng.standard_normal((2048, 2048)).astype(np.float32)
            scales = (np.abs(values).reshape(16, 128, 16, 128).max(axis=(1, 3)) / 448).astype(np.float32)
            codes = e4m3_codes(values / np.repeat(np.repeat(scales, 128, 0), 128, 1))
            tensors += [(name, "F8_E4M3", [2048, 2048], codes.tobytes()),
                        (name + "_scale_inv", "F32", [16, 16], scales.tobytes())]
            self.expected[name] = fp8_block(codes, scales, (128, 128))
            self.weights.append(name)
        write_model(folder, tensors, {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})
        data = open(os.path.join(folder, "model.safetensors"), "rb").read()
        header_length = int.from_bytes(data[:8], "little")
        header = json.loads(data[8:8 + header_length])
        self.spans = {name: (8 + header_length + entry["data_offsets"][0], 8 + header_length + entry["data_offsets"][1])
                      for name, entry in header.items() if name != "__metadata__"}
        self.nginx = Nginx(folder)

    def ranges_since(self, before, count):
        """The (first, last) byte ranges of model.safetensors nginx answered after its first `before` lines, once
        there are `count` of them."""
        def ranges():
            found = []
            for method, uri, status, _, asked, _ in requests_in(self.nginx.log_lines()[before:]):
                if uri == "/model.safetensors" and asked.startswith("bytes="):
                    first, last = asked.removeprefix("bytes=").split("-")
                    found.append((int(first), int(last)))
            return found
        wait_until(lambda: len(ranges()) >= count)
        return ranges()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                       "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))})
    model = FetchedRanges(str(tmp_path_factory.mktemp("fp8")))
    yield model
    model.nginx.stop()


def test_a_remote_weight_fetches_only_its_parts(served):
    url = f"http://127.0.0.1:{served.nginx.http}/model.safetensors"
    name = served.weights[1]
    with tensorfs.safe_open(url, framework="np", disk_cache_size=0) as f:
        before = len(served.nginx.log_lines())
        got = f.get_tensor(name)
        after = len(served.nginx.log_lines())
        ranges = served.ranges_since(before, 2)
    assert same_floats(served.expected[name], got)
    parts = [served.spans[name], served.spans[name + "_scale_inv"]]
    inside = [any(begin <= first and last < end for begin, end in parts) for first, last in ranges]
    assert all(inside), (ranges, parts)
    # Every byte of both parts was asked for once, nothing else.
    fetched = sum(last + 1 - first for first, last in ranges)
    assert fetched == sum(end - begin for begin, end in parts), (ranges, parts, after - before)
