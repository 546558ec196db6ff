"""Bad input raises the documented errors and never crashes the process: a source that does not exist
(tensorfs.SourceNotFoundError, also FileNotFoundError), every file of the malformed corpora with the command's own
message (tensorfs.Error) with a file's bytes escaped, hostile pickles refused without running anything, unknown or
mount-only options (TypeError), bad values (ValueError), unknown tensor names (KeyError) and closed handles
(ValueError)."""
import errno
import json
import os
import re

import pytest

import tensorfs
from tensorfs_mount import DATA, VECTORS, run

MALFORMED = [os.path.join(VECTORS, "malformed", name)
             for name in sorted(os.listdir(os.path.join(VECTORS, "malformed")))]
PYTORCH = os.path.join(DATA, "pytorch", "malformed")
with open(os.path.join(PYTORCH, "manifest.json")) as f:
    PYTORCH_ENTRIES = json.load(f)["malformed"]
CORPUS = MALFORMED + [os.path.join(PYTORCH, entry["file"]) for entry in PYTORCH_ENTRIES]
GOOD = os.path.join(VECTORS, "gguf", "mixed.gguf")


@pytest.mark.parametrize("path", CORPUS, ids=os.path.basename)
def test_malformed_files_get_the_commands_message(path, tmp_path, monkeypatch):
    # In an empty folder: a hostile pickle, were it run, would create its canary here (or at /).
    monkeypatch.chdir(tmp_path)
    listed = run("ls", path)
    if listed.returncode == 0:
        with tensorfs.safe_open(path, framework="np") as f:
            for name in f.keys():
                try:
                    f.get_tensor(name)
                except tensorfs.Error as error:
                    assert "has no float32 values" in str(error)
    else:
        with pytest.raises(tensorfs.Error) as raised:
            tensorfs.load(path)
        lines = [line.removeprefix("tensorfs: ") for line in listed.stderr.splitlines()]
        more = len(lines) - 1
        # One line: the command's first, and how many more `validate` lists.
        expected = lines[0] + (f" (and {more} more problem{'s' * (more > 1)}: tensorfs validate lists them)"
                               if more else "")
        assert str(raised.value) == expected
        assert not isinstance(raised.value, tensorfs.SourceNotFoundError)
        assert raised.value.errno in (errno.EINVAL, errno.EOPNOTSUPP)
        assert lines[0].startswith(f"{raised.value.filename}: {raised.value.strerror}")
    canaries = [e["canary"] for e in PYTORCH_ENTRIES if "canary" in e and os.path.basename(path) == e["file"]]
    for canary in canaries:
        assert not os.path.exists(tmp_path / canary) and not os.path.exists(os.path.join("/", canary))


def test_a_missing_source_is_file_not_found(tmp_path):
    missing = str(tmp_path / "nothing.safetensors")
    for call in (lambda: tensorfs.safe_open(missing), lambda: tensorfs.load(missing), lambda: tensorfs.info(missing)):
        with pytest.raises(tensorfs.SourceNotFoundError) as raised:
            call()
        assert isinstance(raised.value, FileNotFoundError)
        assert isinstance(raised.value, tensorfs.Error) and isinstance(raised.value, OSError)
        assert str(raised.value) == f"{missing}: no such file or folder"


def test_a_missing_shard_is_file_not_found(tmp_path):
    index = os.path.join(VECTORS, "safetensors", "sharded", "model.safetensors.index.json")
    os.symlink(index, tmp_path / "model.safetensors.index.json")
    missing = 'names shard "model-00001-of-00003.safetensors", which is not a file'
    with pytest.raises(tensorfs.SourceNotFoundError, match=missing):
        tensorfs.safe_open(str(tmp_path / "model.safetensors.index.json"))


def test_options():
    with pytest.raises(TypeError, match="unknown option 'cache_sise'"):
        tensorfs.safe_open(GOOD, cache_sise="1G")
    with pytest.raises(TypeError, match="unknown option 'fsname'"):
        tensorfs.load(GOOD, fsname="m")   # libfuse's, which Python knows nothing of
    with pytest.raises(TypeError, match="unknown option 'allow_other'"):
        tensorfs.load(GOOD, allow_other=1)   # libfuse's flags take no value
    with pytest.raises(TypeError, match="'export_dtype'"):
        tensorfs.info(GOOD, export_dtype="bf16")
    with pytest.raises(ValueError, match="bad max_connections 'many'"):
        tensorfs.safe_open(GOOD, max_connections="many")
    with pytest.raises(ValueError, match="bad readahead"):
        tensorfs.safe_open(GOOD, readahead=-1)
    with pytest.raises(TypeError, match="takes a value"):
        tensorfs.safe_open(GOOD, readahead=True)
    with pytest.raises(ValueError, match="framework"):
        tensorfs.safe_open(GOOD, framework="tf")
    with pytest.raises(ValueError, match="dtype"):
        tensorfs.load(GOOD, dtype="int8")
    with pytest.raises(ValueError, match="device"):
        tensorfs.safe_open(GOOD, framework="np", device="cuda:0")
    with pytest.raises(ValueError, match="names"):
        tensorfs.diff(GOOD, GOOD, names="other")
    # Accepted: the mount's options for a source, with numbers and paths as values.
    with tensorfs.safe_open(GOOD, max_connections=4, readahead="16M", cache_size=64 << 20, threads=2,
                            disk_cache_size=0) as f:
        assert f.keys()


def test_unknown_names_and_closed_handles():
    handle = tensorfs.safe_open(GOOD, framework="np")
    with pytest.raises(KeyError):
        handle.get_tensor("no.such.tensor")
    with pytest.raises(KeyError):
        handle.get_slice("no.such.tensor")
    with pytest.raises(KeyError):
        handle.raw("no.such.tensor")
    with pytest.raises(TypeError):
        handle.get_tensor(7)
    part = handle.get_slice("blk.0.q4_k.weight")
    array = handle.get_tensor("blk.0.f32.weight")
    handle.close()
    handle.close()   # twice is fine, as for files
    for call in (handle.keys, handle.metadata, handle.files, lambda: handle.get_tensor("blk.0.f32.weight"),
                 lambda: handle.raw("blk.0.f32.weight"), lambda: part[0], part.get_shape, handle.__enter__):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert float(array.sum()) == float(array.sum())   # arrays outlive the handle (a mapping of the file)
    assert "closed" in repr(handle)
    with pytest.raises(KeyError, match="matches"):
        tensorfs.load(GOOD, tensors="no.such.*")


def test_slice_keys():
    with tensorfs.safe_open(GOOD, framework="np") as f:
        part = f.get_slice("blk.0.q4_k.weight")   # shape [3, 512]
        for key, error in ((3, IndexError), (-4, IndexError), ((0, 0, 0), IndexError), ((..., ...), IndexError),
                           (slice(None, None, -1), ValueError), (None, TypeError), ("0", TypeError),
                           ((0, [1]), TypeError)):
            with pytest.raises(error):
                part[key]


def test_a_bad_magic_reaches_no_terminal_raw(tmp_path):
    """A file's bytes in a message (a bad magic, its 4 bytes: 0x89 is no UTF-8, ESC starts a terminal's command) come
    escaped, from the command and the module alike."""
    path = str(tmp_path / "bad.gguf")
    with open(path, "wb") as f:
        f.write(b"\x89\x1b[2J" + bytes(60))
    command = run("info", path, text=False)
    assert command.returncode != 0
    text = command.stderr.decode("utf-8")   # strict: a raw 0x89 would raise here
    assert "'\\x89\\x1B[2'" in text and not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", text), text
    with pytest.raises(tensorfs.Error) as raised:
        tensorfs.safe_open(path)
    assert "'\\x89\\x1B[2'" in str(raised.value)
