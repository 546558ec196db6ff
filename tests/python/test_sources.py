"""tensorfs.safe_open and tensorfs.load give exactly the bytes and values a real mount of the same SOURCE gives (its
`raw`, `dequant.f32`, `dequant.bf16` and `dequant.f16` files, read through the kernel), for every kind of source the
tests serve: local files, HTTP from nginx, nginx laid out as the Hugging Face Hub, and the S3 store of
tests/servers. The checkpoints: safetensors of every dtype, a sharded safetensors model with its index, a GGUF with
every quant type of the test vectors, a GGUF split set, and PyTorch checkpoints in both formats of torch.save."""
import os
import shutil

import pytest
import torch

import tensorfs
from mount_compare import mounted_tensors, refused
from pytorch_checkpoints import every_dtype_state_dict
from remote_servers import HUB_REPO, Nginx
from s3_servers import S3Server
from tensorfs_mount import VECTORS, Mount

CHECKPOINTS = ["all_dtypes.safetensors", "sharded/model.safetensors.index.json", "mixed.gguf",
               "split/tiny-llama-Q4_K_M-00002-of-00003.gguf", "pytorch/state.pt", "pytorch/legacy.pt"]
KINDS = ["local", "http", "hub", "s3"]
BUCKET = "checkpoints"


class Served:
    """The checkpoints in a folder, and served from it by nginx (plain and as the Hub) and by an S3 store; this
    process's environment (which every mount it starts inherits) points at them, with a disk cache of its own."""

    def __init__(self, folder):
        self.folder = folder
        self.nginx = Nginx(folder)
        self.s3 = S3Server()
        try:
            self.s3.create_bucket(BUCKET)
            self.s3.put_tree(BUCKET, folder)
        except Exception:
            self.stop()
            raise
        os.environ.update(self.s3.env(
            XDG_CACHE_HOME=os.path.join(os.path.dirname(folder), "cache"), NO_PROXY="127.0.0.1,localhost",
            no_proxy="127.0.0.1,localhost", HF_ENDPOINT=f"http://127.0.0.1:{self.nginx.hub}"))
        os.environ.pop("HF_TOKEN", None)

    def source(self, kind, relative):
        return {"local": os.path.join(self.folder, relative),
                "http": f"http://127.0.0.1:{self.nginx.http}/{relative}",
                "hub": f"hf://{HUB_REPO}/{relative}",
                "s3": f"s3://{BUCKET}/{relative}"}[kind]

    def stop(self):
        self.nginx.stop()
        self.s3.stop()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    folder = str(tmp_path_factory.mktemp("served") / "checkpoints")
    for part in ("sharded", "split", "pytorch"):
        os.makedirs(os.path.join(folder, part))
    shutil.copy(os.path.join(VECTORS, "safetensors", "all_dtypes.safetensors"), folder)
    shutil.copy(os.path.join(VECTORS, "gguf", "mixed.gguf"), folder)
    for name in os.listdir(os.path.join(VECTORS, "safetensors", "sharded")):
        if name.endswith((".safetensors", ".json")):
            shutil.copy(os.path.join(VECTORS, "safetensors", "sharded", name), os.path.join(folder, "sharded"))
    for name in os.listdir(os.path.join(VECTORS, "gguf", "split")):
        shutil.copy(os.path.join(VECTORS, "gguf", "split", name), os.path.join(folder, "split"))
    state = every_dtype_state_dict()
    torch.save(state, os.path.join(folder, "pytorch", "state.pt"))
    torch.save(state, os.path.join(folder, "pytorch", "legacy.pt"), _use_new_zipfile_serialization=False)
    served = Served(folder)
    yield served
    served.stop()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
def test_the_mounts_bytes_and_values(served, kind, checkpoint):
    source = served.source(kind, checkpoint)
    with Mount(source) as mount:
        tensors = mounted_tensors(mount, source)
        names = [t.meta["name"] for t in tensors]
        assert len(names) > 0
        with tensorfs.safe_open(source, framework="np") as f:
            assert f.keys() == sorted(names) and f.offset_keys() == names
            for tensor in tensors:
                name = tensor.meta["name"]
                assert f.raw(name) == tensor.file("raw"), name
                tensor.check(f.get_tensor(name), "np", None)
        with tensorfs.safe_open(source, framework="pt") as f:
            for tensor in tensors:
                if refused(tensor.meta["dtype"], "pt", None):
                    with pytest.raises(TypeError, match="no exact dtype"):
                        f.get_tensor(tensor.meta["name"])
                else:
                    tensor.check(f.get_tensor(tensor.meta["name"]), "pt", None)
        for framework, dtype in (("np", None), ("np", "f32"), ("np", "bf16"), ("np", "f16"), ("pt", None),
                                 ("pt", "bf16")):
            if any(refused(tensor.meta["dtype"], framework, dtype) for tensor in tensors):
                with pytest.raises(TypeError, match="no exact dtype"):
                    tensorfs.load(source, framework=framework, dtype=dtype)
                continue
            loaded = tensorfs.load(source, framework=framework, dtype=dtype)
            assert list(loaded) == names
            for tensor in tensors:
                tensor.check(loaded[tensor.meta["name"]], framework, dtype)
