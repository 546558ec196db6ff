"""What tensorfs.load fetches goes to the disk cache around the page cache (O_DIRECT, whole blocks, an ordinary write
for the tail of a block that is not a whole number of pages): a mount on the same cache then reads the same bytes
from it and fetches none."""
import os

import numpy as np

import tensorfs
from remote_servers import Nginx
from safetensors_files import write_safetensors
from tensorfs_mount import Mount, mount_stats, read_file, wait_until

ROWS, COLUMNS = 777, 1031   # 3.06 MiB of float32: three whole blocks and a short one, none a multiple of a page


def test_a_mount_on_the_cache_a_load_filled_reads_it_and_fetches_nothing(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    values = np.random.default_rng(11).standard_normal((ROWS, COLUMNS), dtype=np.float32)
    write_safetensors(str(folder / "w.safetensors"), [("w", "F32", [ROWS, COLUMNS], values.tobytes())])
    cache = str(tmp_path / "cache")
    os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    nginx = Nginx(str(folder))
    try:
        url = f"http://127.0.0.1:{nginx.http}/w.safetensors"
        loaded = tensorfs.load(url, framework="np", cache_dir=cache)
        assert np.array_equal(loaded["w"], values)
        with Mount(url, "--cache-dir", cache) as mount:
            assert read_file(mount.tensor("w", "raw")) == values.tobytes()
            assert wait_until(lambda: mount_stats(mount)["remote"]["readahead"]["connections_in_use"] == 0)
            assert mount_stats(mount)["remote"]["bytes_fetched"] == 0
    finally:
        nginx.stop()
