"""get_slice of a remote tensor fetches only the bytes of the rows (or blocks) asked for, counted in nginx's access
log: one range per run of rows, nothing of the rest of the tensor, and the values of the same part of the whole
tensor read locally."""
import os

import numpy as np
import pytest

import tensorfs
from gguf_writer import write
from remote_servers import Nginx, connections_in, requests_in
from safetensors_files import write_safetensors
from tensorfs_mount import wait_until

ROWS, COLUMNS = 512, 1024
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
    ("w", "w.safetensors", (slice(70, 72), slice(2, 5)), [(70 * F32_ROW + 8, 70 * F32_ROW + 20),
                                                          (71 * F32_ROW + 8, 71 * F32_ROW + 20)]),
    ("q", "q.gguf", slice(300, 302), [(300 * Q4_K_ROW, 302 * Q4_K_ROW)]),
    ("q", "q.gguf", (slice(200, 230, 10), slice(None)), [(r * Q4_K_ROW, (r + 1) * Q4_K_ROW) for r in (200, 210, 220)]),
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


def test_a_column_slice_fetches_the_blocks_that_hold_the_columns(served):
    folder, nginx = served
    with tensorfs.safe_open(str(folder / "q.gguf"), framework="np") as local:
        expected = local.get_tensor("q")[200:, 10:20]
    with tensorfs.safe_open(f"http://127.0.0.1:{nginx.http}/q.gguf", framework="np", disk_cache_size=0) as remote:
        before = len(nginx.log_lines())
        got = remote.get_slice("q")[200:, 10:20]
        ranges = fetched_ranges(nginx, before, "q.gguf", ROWS - 200)
    assert np.array_equal(got, expected, equal_nan=True)
    # One block of each row, the first of its four: the rows' first blocks, one row apart.
    assert len(ranges) == ROWS - 200 and all(last - first + 1 == Q4_K_BLOCK for first, last in ranges)
    assert all(b[0] - a[0] == Q4_K_ROW for a, b in zip(ranges, ranges[1:]))


def test_ranges_in_parallel_go_on_the_connections_already_open(served):
    # A few columns of 312 rows: a range request per row, 16 in flight (max_connections), each a short answer.
    # libcurl keeps 5 connections unless told otherwise, and then nearly every request connected anew.
    folder, nginx = served
    with tensorfs.safe_open(f"http://127.0.0.1:{nginx.http}/q.gguf", framework="np", disk_cache_size=0,
                            max_connections=16) as remote:
        before = len(nginx.log_lines())
        remote.get_slice("q")[200:, 10:20]
        fetched_ranges(nginx, before, "q.gguf", ROWS - 200)
    lines = nginx.log_lines()[before:]
    connections = connections_in(lines)
    assert connections <= 2 * 16, f"{connections} connections for {len(lines)} requests"
