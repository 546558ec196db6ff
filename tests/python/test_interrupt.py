"""Ctrl-C during any wait of the module raises KeyboardInterrupt within 1 s: opening a source, get_tensor (fetching a
stored tensor, and fetching and decoding a quantized one), a slice, raw(), load(), info() and diff(), each while the
server holds every request unanswered (a FaultProxy between tensorfs and nginx). The fetches already started go on
once the server answers, and the handle stays usable: every call then gives the values the files were written
from."""
import os
import signal
import threading
import time

import numpy as np
import pytest
import torch   # imported before any signal: an import that Ctrl-C ends leaves torch broken

import tensorfs
from gguf_writer import GGML_Q8_0, dequantize_q8_0, quantize_q8_0, write
from remote_servers import FaultProxy, Nginx
from safetensors_files import write_safetensors

ROWS, COLUMNS = 1024, 1024   # 4 MiB of F32; 1.1 MB of Q8_0: both past the first 64 KiB that opening a file reads
VALUES = np.random.default_rng(5).standard_normal((ROWS, COLUMNS), dtype=np.float32)
Q8_0 = quantize_q8_0(VALUES.ravel())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = tmp_path_factory.mktemp("interrupt")
    write_safetensors(str(folder / "w.safetensors"), [("w", "F32", [ROWS, COLUMNS], VALUES.tobytes())])
    write(str(folder / "q.gguf"), [], [("q", (ROWS, COLUMNS), GGML_Q8_0, Q8_0)])
    nginx = Nginx(str(folder))
    proxy = FaultProxy(nginx.http)
    os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    yield proxy, str(tmp_path_factory.mktemp("cache"))
    proxy.stop()
    nginx.stop()


def interrupted_within_a_second(call):
    """Sends this process SIGINT 0.3 s into `call`; returns the seconds from the signal to KeyboardInterrupt."""
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.3, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
        return time.monotonic() - sent[0]
    finally:
        timer.join()


def test_ctrl_c_ends_every_wait_and_the_handle_stays_usable(served):
    proxy, cache = served
    url = f"http://127.0.0.1:{proxy.port}/"
    options = {"cache_dir": cache, "timeout": 60}
    weights = tensorfs.safe_open(url + "w.safetensors", framework="np", **options)
    quantized = tensorfs.safe_open(url + "q.gguf", framework="pt", **options)
    proxy.hold()   # from now on, no range request is answered
    waits = {
        "safe_open": lambda: tensorfs.safe_open(url + "w.safetensors", framework="np", cache_dir=cache + "-2"),
        "get_tensor (fetch)": lambda: weights.get_tensor("w"),
        "get_tensor (fetch and decode)": lambda: quantized.get_tensor("q"),
        "get_slice": lambda: weights.get_slice("w")[500:600, 7],
        "raw": lambda: weights.raw("w"),
        "load": lambda: tensorfs.load(url + "q.gguf", **options),
        "info": lambda: tensorfs.info(url + "q.gguf", cache_dir=cache + "-3"),
        "diff": lambda: tensorfs.diff(url + "q.gguf", url + "w.safetensors", names="same", **options),
    }
    seconds = {name: interrupted_within_a_second(call) for name, call in waits.items()}
    assert all(elapsed < 1.0 for elapsed in seconds.values()), seconds
    assert proxy.held > 0
    proxy.released.set()   # the server answers again: the fetches under way go on
    assert np.array_equal(weights.get_tensor("w"), VALUES)
    assert np.array_equal(weights.get_slice("w")[500:600, 7], VALUES[500:600, 7])
    assert weights.raw("w") == VALUES.tobytes()
    decoded = dequantize_q8_0(Q8_0).reshape(ROWS, COLUMNS)
    assert quantized.get_tensor("q").dtype == torch.float32
    assert np.array_equal(quantized.get_tensor("q").numpy(), decoded)
    assert np.array_equal(tensorfs.load(url + "q.gguf", **options)["q"].numpy(), decoded)
    weights.close()
    quantized.close()
