"""Smaller promises of the module: a remote safe_open sends no request for side files (config.json, tokenizer
files) it never uses; an unknown tensor name raises KeyError suggesting the name the command suggests;
tensorfs.release_memory() gives the memory kept for arrays back to the system."""
import os
import re

import numpy as np
import pytest

import tensorfs
from remote_servers import HUB_REPO, Nginx, requests_in
from safetensors_files import write_safetensors
from tensorfs_mount import VECTORS, run

MIXED = os.path.join(VECTORS, "gguf", "mixed.gguf")
SIDE_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "README.md")


def test_a_remote_handle_asks_for_no_side_file(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    values = np.arange(64 * 1024, dtype="<f4").reshape(256, 256)
    write_safetensors(str(folder / "model.safetensors"), [("w", "F32", values.shape, values.tobytes())],
                      metadata={"format": "pt"})
    for name in SIDE_FILES:
        (folder / name).write_text("{}")
    nginx = Nginx(str(folder))
    try:
        os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                           "HF_ENDPOINT": f"http://127.0.0.1:{nginx.hub}"})
        os.environ.pop("HF_TOKEN", None)
        for source, logs in ((f"http://127.0.0.1:{nginx.http}/model.safetensors", ("access.log",)),
                             (f"hf://{HUB_REPO}/model.safetensors", ("hub.log", "cdn.log"))):
            before = {log: len(nginx.log_lines(log)) for log in logs}
            with tensorfs.safe_open(source, framework="np", cache_dir=str(tmp_path / "cache")) as f:
                assert f.keys() == ["w"] and f.metadata() == {"format": "pt"}
                assert np.array_equal(f.get_tensor("w"), values)
                assert np.array_equal(f.get_slice("w")[3:5], values[3:5])
                assert f.files() == tensorfs.info(source, cache_dir=str(tmp_path / "cache"))["files"]
            uris = [uri for log in logs for _, uri, *_ in requests_in(nginx.log_lines(log)[before[log]:])]
            assert uris and not [uri for uri in uris if uri.endswith(SIDE_FILES)], (source, uris)
            if source.startswith("http"):
                assert set(uris) == {"/model.safetensors"}
    finally:
        nginx.stop()


def test_an_unknown_name_suggests_what_the_command_suggests():
    for wrong in ("blk.0.f32.weigh", "blk.0.q4k.weight", "token_embd"):
        command = run("cat", "--raw", MIXED, wrong)
        assert command.returncode != 0
        suggested = re.search(r"did you mean '([^']*)'", command.stderr)
        with tensorfs.safe_open(MIXED) as f:
            for call in (f.get_tensor, f.get_slice, f.raw):
                with pytest.raises(KeyError) as raised:
                    call(wrong)
                message = raised.value.args[0]
                assert f"no tensor named '{wrong}'" in message
                if suggested:
                    assert f"did you mean '{suggested[1]}'?" in message, (message, command.stderr)
                else:
                    assert "did you mean" not in message
    assert re.search(r"did you mean", run("cat", "--raw", MIXED, "blk.0.f32.weigh").stderr)
    with tensorfs.safe_open(MIXED) as f, pytest.raises(KeyError) as raised:
        f.get_tensor("nothing.like.any.name.at.all")
    assert "did you mean" not in raised.value.args[0]


def resident_bytes():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) * 1024


def test_release_memory_gives_the_kept_memory_back(tmp_path):
    bits = np.random.default_rng(2).integers(0, 1 << 16, (4096, 4096), dtype=np.uint32).astype("<u2") & 0xBFFF
    path = str(tmp_path / "bf16.safetensors")
    write_safetensors(path, [("w", "BF16", bits.shape, bits.tobytes())])
    size = 4096 * 4096 * 4   # 64 MiB of float32, written by the module into memory of its own
    with tensorfs.safe_open(path, framework="np", dtype="f32") as f:
        array = f.get_tensor("w")
        assert np.array_equal(array, (bits.astype(np.uint32) << 16).view(np.float32))
        del array   # its memory is kept for the next array of its size
    kept = resident_bytes()
    assert tensorfs.release_memory() >= size
    assert kept - resident_bytes() >= size * 0.9
    assert tensorfs.release_memory() == 0

