"""Eight processes (a tensor-parallel job's ranks) open one remote model at once with a shared disk cache, and each
reads its own slice of every 2-D tensor (rows of some, columns of others) and every other tensor whole (norms, the
embedding): each rank gets exactly what numpy reads from the file, and the server sends the model's bytes once
(at most 1.05 times its size, counted at the server: nginx's access log, the S3 store's request log), in few
requests (a column slice touches every row, and is fetched as whole blocks, not a range per row). A process killed
while it fetches leaves no lock behind: another one takes its blocks over."""
import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

import s3_servers
from remote_servers import FaultProxy, Nginx, requests_in
from safetensors_files import write_safetensors
from tensorfs_mount import wait_until

RANKS = 8
HIDDEN, FFN, VOCAB, LAYERS = 1024, 2048, 2048, 2
DTYPES = {"F32": "<f4", "F16": "<f2"}
S3_BUCKET = "ranks"
# How each rank reads a tensor: its rows (column-parallel layers), its columns (row-parallel layers), or whole.
PLAN = {f"layers.{i}.{name}": how for i in range(LAYERS)
        for name, how in (("q.weight", "rows"), ("o.weight", "columns"), ("up.weight", "rows"),
                          ("down.weight", "columns"))}

# One rank: prints "ready" once imported, opens SOURCE when told to go, prints "opened", waits to be told again when
# asked to (argv[7] "wait"), reads every tensor as PLAN says, and saves what it read to OUT (.npz).
CHILD = r"""
import json, sys
import numpy as np
import tensorfs
source, rank, ranks, plan, out, options = (sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), json.loads(sys.argv[4]),
                                           sys.argv[5], json.loads(sys.argv[6]))
print("ready", flush=True)
sys.stdin.readline()
got = {}
with tensorfs.safe_open(source, framework="np", **options) as f:
    print("opened", flush=True)
    if sys.argv[7] == "wait":
        sys.stdin.readline()
    for name in f.keys():
        how = plan.get(name, "whole")
        if how == "whole":
            got[name] = f.get_tensor(name)
            continue
        part = f.get_slice(name)
        rows, columns = part.get_shape()
        if how == "rows":
            got[name] = part[rank * rows // ranks:(rank + 1) * rows // ranks]
        else:
            got[name] = part[:, rank * columns // ranks:(rank + 1) * columns // ranks]
np.savez(out, **got)
"""


def write_model(path):
    """An embedding, then per layer two norms and four weights, float32 and float16 (4 KiB norms between the weights:
    no tensor starts on a block's border)."""
    rng = np.random.default_rng(47)

    def tensor(name, dtype, shape):
        return name, dtype, shape, rng.standard_normal(shape, dtype=np.float32).astype(DTYPES[dtype]).tobytes()

    tensors = [tensor("embed.weight", "F16", [VOCAB, HIDDEN])]
    for i in range(LAYERS):
        tensors += [tensor(f"layers.{i}.input_norm.weight", "F32", [HIDDEN]),
                    tensor(f"layers.{i}.q.weight", "F32", [HIDDEN, HIDDEN]),
                    tensor(f"layers.{i}.o.weight", "F32", [HIDDEN, HIDDEN]),
                    tensor(f"layers.{i}.post_norm.weight", "F32", [HIDDEN]),
                    tensor(f"layers.{i}.up.weight", "F16", [FFN, HIDDEN]),
                    tensor(f"layers.{i}.down.weight", "F16", [HIDDEN, FFN])]
    write_safetensors(path, tensors)


def reference(path):
    """Every tensor of the safetensors file at `path`, read with numpy from its bytes."""
    with open(path, "rb") as f:
        data = f.read()
    size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + size])
    base = 8 + size
    return {name: np.frombuffer(data[base + entry["data_offsets"][0]:base + entry["data_offsets"][1]],
                                DTYPES[entry["dtype"]]).reshape(entry["shape"])
            for name, entry in header.items() if name != "__metadata__"}


def expected_part(values, how, rank):
    rows = values.shape[0]
    if how == "rows":
        return values[rank * rows // RANKS:(rank + 1) * rows // RANKS]
    if how == "columns":
        columns = values.shape[1]
        return values[:, rank * columns // RANKS:(rank + 1) * columns // RANKS]
    return values


class Rank:
    """One rank's process, started at once; go() lets it on to its next step."""

    def __init__(self, source, rank, out, env, plan=PLAN, wait=False, **options):
        environment = dict(os.environ, **env)
        # A sanitized module needs the sanitizers' runtime first (conftest.py keeps it in TENSORFS_PRELOAD).
        if os.environ.get("TENSORFS_PRELOAD"):
            environment["LD_PRELOAD"] = os.environ["TENSORFS_PRELOAD"]
        self.out = out
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, source, str(rank), str(RANKS), json.dumps(plan), out, json.dumps(options),
             "wait" if wait else "go"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
        self.expect("ready")

    def expect(self, line):
        got = self.process.stdout.readline().strip()
        if got != line:
            _, errors = self.process.communicate(timeout=300)
            raise AssertionError(f"rank said {got!r}, not {line!r}: {errors}")

    def go(self):
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def finish(self):
        _, errors = self.process.communicate(timeout=300)
        assert self.process.returncode == 0, errors
        return dict(np.load(self.out))


def run_ranks(source, tmp_path, env):
    """The ranks, started together and let go at once (each opens the model then); what each read."""
    cache = str(tmp_path / "cache")
    ranks = [Rank(source, rank, str(tmp_path / f"rank{rank}.npz"), env, cache_dir=cache) for rank in range(RANKS)]
    for rank in ranks:
        rank.go()
    return [rank.finish() for rank in ranks]


def check_values(read, values):
    for rank, got in enumerate(read):
        assert sorted(got) == sorted(values)
        for name, expected in values.items():
            part = expected_part(expected, PLAN.get(name, "whole"), rank)
            assert got[name].dtype == part.dtype and np.array_equal(got[name], part), (rank, name)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ranks")
    path = str(folder / "model.safetensors")
    write_model(path)
    os.environ.update({"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return path, reference(path)


@pytest.fixture(scope="module")
def nginx(model):
    server = Nginx(os.path.dirname(model[0]))
    yield server
    server.stop()


def test_eight_ranks_over_http_fetch_the_model_once(model, nginx, tmp_path):
    path, values = model
    before = len(nginx.log_lines())
    read = run_ranks(f"http://127.0.0.1:{nginx.http}/model.safetensors", tmp_path, {})
    check_values(read, values)
    answers = [r for r in requests_in(nginx.log_lines()[before:]) if r[1] == "/model.safetensors"]
    body_bytes = sum(r[3] for r in answers)
    size = os.path.getsize(path)
    assert body_bytes <= 1.05 * size, f"{body_bytes} bytes sent for a model of {size}"
    # Far fewer requests than the rows of one column-sliced weight: a range per row would be 8 x 4 x 1024 of them.
    assert len(answers) < HIDDEN, f"{len(answers)} requests"


def test_eight_ranks_from_s3_fetch_the_model_once(model, tmp_path):
    path, values = model
    server = s3_servers.shared()
    server.create_bucket(S3_BUCKET)
    with open(path, "rb") as f:
        server.put(S3_BUCKET, "model.safetensors", f.read())
    before = len(server.log())
    env = server.env(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    read = run_ranks(f"s3://{S3_BUCKET}/model.safetensors", tmp_path, env)
    check_values(read, values)
    answers = [r for r in server.log()[before:]
               if r["method"] == "GET" and r["path"] == f"/{S3_BUCKET}/model.safetensors"]
    body_bytes = sum(r["bytes"] for r in answers)
    size = os.path.getsize(path)
    assert body_bytes <= 1.05 * size, f"{body_bytes} bytes sent for a model of {size}"
    assert len(answers) < HIDDEN, f"{len(answers)} requests"


def test_a_process_killed_while_it_fetches_leaves_its_blocks_to_another(model, nginx, tmp_path):
    path, values = model
    source = f"http://127.0.0.1:{nginx.http}/model.safetensors"
    cache = str(tmp_path / "cache")
    whole = {name: "whole" for name in values}
    # Its requests go through a proxy that keeps them unanswered once it holds: it has taken the fetch locks of the
    # blocks it asked for, and never gets them.
    proxy = FaultProxy(nginx.http)
    try:
        # NO_PROXY (which the module's fixture sets) would send its requests past the proxy.
        stuck = Rank(source, 0, str(tmp_path / "stuck.npz"), {"NO_PROXY": "", "no_proxy": ""}, plan=whole, wait=True,
                     cache_dir=cache, proxy=f"http://127.0.0.1:{proxy.port}")
        stuck.go()
        stuck.expect("opened")
        proxy.hold()
        stuck.go()
        assert wait_until(lambda: proxy.held > 0, 60)
        other = Rank(source, 1, str(tmp_path / "other.npz"), {}, plan=whole, cache_dir=cache)
        other.go()
        other.expect("opened")
        # The other waits for the stuck one's blocks (timeout= is 20 s): once it is killed, the kernel lets go of its
        # locks and the other fetches them itself.
        stuck.process.send_signal(signal.SIGKILL)
        stuck.process.communicate(timeout=60)
        got = other.finish()
    finally:
        proxy.stop()
    for name, expected in values.items():
        assert np.array_equal(got[name], expected), name
