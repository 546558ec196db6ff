"""get_slice of a remote tensor fetches only the bytes of the rows (or blocks) asked for when they lie a block (1 MiB)
or more apart: one range per run of rows, nothing of the rest of the tensor; runs closer together (a column slice's)
come from the whole blocks that hold them, all in one range. Counted in nginx's access log, with the values of the
same part of the whole tensor read locally."""
import os

import numpy as np
import pytest

import tensorfs
from gguf_writer import write
from remote_servers import Nginx, connections_in, requests_in
from safetensors_files import write_safetensors
from tensorfs_mount import wait_until

ROWS, COLUMNS = 512, 1024
# Rows of a block and 4 KiB each: a column slice's runs lie more than a block apart.
FAR_ROWS, FAR_COLUMNS = 64, (1 << 18) + 1024
BLOCK, HEAD = 1 << 20, 1 << 16  # the disk cache's block, and what opening a file fetches of it
Q4_K, Q4_K_BLOCK, Q4_K_ELEMENTS = 12, 144, 256


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("slices")
    values = np.random.default_rng(7).standard_normal((ROWS, COLUMNS), dtype=np.float32)
    write_safetensors(str(folder / "w.safetensors"), [("w", "F32", [ROWS, COLUMNS], values.tobytes())])
    # Q4_K blocks with random bytes but finite scales (their first 4 bytes: two float16 of 1.0).
    blocks = bytearray(np.random.default_rng(8).integers(0, 256, ROWS * COLUMNS // Q4_K_ELEMENTS * Q4_K_BLOCK,
                                                         dtype=np.uint8).tobytes())
    for at in range(0, len(blocks), Q4_K_BLOCK):
        blocks[at:at + 4] = np.array([1.0, 1.0], "<f2").tobytes()
    write(str(folder / "q.gguf"), [], [("q", (ROWS, COLUMNS), Q4_K, bytes(blocks))])
    far = np.random.default_rng(9).standard_normal((FAR_ROWS, FAR_COLUMNS), dtype=np.float32)
    write_safetensors(str(folder / "far.safetensors"), [("far", "F32", [FAR_ROWS, FAR_COLUMNS], far.tobytes())])
    nginx = Nginx(str(folder))
    os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                       "XDG_CACHE_HOME": str(tmp_path_factory.mktemp("cache"))})
    yield folder, nginx
    nginx.stop()


def fetched_ranges(nginx, before, file, count):
    """The byte ranges (first, last) of `file` that nginx answered after its first `before` log lines, once there are
    `count` of them (nginx writes a line when it has sent the answer, so lines of the opening's requests, which
    this leaves out, may still come after `before`: the side files it probes, the file's first 64 KiB)."""
    def ranges():
        found = []
        for method, uri, status, _, asked, _ in requests_in(nginx.log_lines()[before:]):
            if uri != "/" + file or asked == "bytes=0-65535":
                continue
            assert method == "GET" and status == 206, (method, uri, status)
            first, last = asked.removeprefix("bytes=").split("-")
            found.append((int(first), int(last)))
        return sorted(found)

    wait_until(lambda: len(ranges()) >= count)
    return ranges()


F32_ROW = COLUMNS * 4
Q4_K_ROW = COLUMNS // Q4_K_ELEMENTS * Q4_K_BLOCK


# The byte ranges each key must fetch, as [first, end) from the tensor's first byte. Rows past the file's first 64 KiB,
# which opening it fetched (and reads there take from memory).
@pytest.mark.parametrize("name, file, key, expected", [
    ("w", "w.safetensors", slice(100, 103), [(100 * F32_ROW, 103 * F32_ROW)]),
    ("q", "q.gguf", slice(300, 302), [(300 * Q4_K_ROW, 302 * Q4_K_ROW)]),
    ("far", "far.safetensors", (slice(5, 8, 2), slice(2, 5)), [(r * FAR_COLUMNS * 4 + 8, r * FAR_COLUMNS * 4 + 20)
                                                                for r in (5, 7)]),
])
def test_only_the_rows_bytes_are_fetched(served, name, file, key, expected):
    folder, nginx = served
    with tensorfs.safe_open(str(folder / file), framework="np") as local:
        whole = local.get_tensor(name)
    with tensorfs.safe_open(f"http://127.0.0.1:{nginx.http}/{file}", framework="np", disk_cache_size=0) as remote:
        before = len(nginx.log_lines())
        got = remote.get_slice(name)[key]
        ranges = fetched_ranges(nginx, before, file, len(expected))
    assert np.array_equal(got, whole[key], equal_nan=True)
    # Where the tensor's bytes start in the file: the first range, less where it starts in the tensor.
    start = ranges[0][0] - expected[0][0]
    assert ranges == [(start + first, start + end - 1) for first, end in expected]


# Runs less than a block apart: the blocks that hold them, in one range, less the first 64 KiB (the open fetched them).
@pytest.mark.parametrize("name, file, key", [
    ("w", "w.safetensors", (slice(70, 72), slice(2, 5))),
    ("w", "w.safetensors", (slice(None), slice(10, 20))),
    ("q", "q.gguf", (slice(200, None), slice(10, 20))),
    ("q", "q.gguf", (slice(200, 230, 10), slice(None))),
])
def test_runs_close_together_come_from_their_whole_blocks(served, name, file, key):
    folder, nginx = served
    with tensorfs.safe_open(str(folder / file), framework="np") as local:
        expected = local.get_tensor(name)[key]
    with tensorfs.safe_open(f"http://127.0.0.1:{nginx.http}/{file}", framework="np", disk_cache_size=0) as remote:
        before = len(nginx.log_lines())
        got = remote.get_slice(name)[key]
        [(first, last)] = fetched_ranges(nginx, before, file, 1)
    assert np.array_equal(got, expected, equal_nan=True)
    # Every run here lies in the file's first blocks: from the end of the open's bytes to a block's border (or the
    # file's end).
    assert first == HEAD and ((last + 1) % BLOCK == 0 or last + 1 == os.path.getsize(folder / file))


def test_ranges_in_parallel_go_on_the_connections_already_open(served):
    # A few columns of 63 rows a block apart: a range request per row, 16 in flight (max_connections), each a short
    # answer. libcurl keeps 5 connections unless told otherwise, and then nearly every request connected anew.
    folder, nginx = served
    with tensorfs.safe_open(f"http://127.0.0.1:{nginx.http}/far.safetensors", framework="np", disk_cache_size=0,
                            max_connections=16) as remote:
        before = len(nginx.log_lines())
        remote.get_slice("far")[1:, 10:20]
        assert len(fetched_ranges(nginx, before, "far.safetensors", FAR_ROWS - 1)) == FAR_ROWS - 1
    lines = nginx.log_lines()[before:]
    connections = connections_in(lines)
    assert connections <= 2 * 16, f"{connections} connections for {len(lines)} requests"
