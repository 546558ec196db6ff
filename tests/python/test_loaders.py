"""tensorfs.safe_open in the place of safetensors.safe_open, used as transformers' and vLLM's safetensors loaders use
it: transformers' load_state_dict (the metadata's "format" checked, then either every get_tensor, or for a model
made on the meta device get_slice's shape and get_dtype mapped through its str_to_torch_dtype table), vLLM's
weights iterator (keys, get_tensor, narrowed per tensor-parallel rank by its linear layers' weight loaders), and the
sharded reads of tensor-parallel loaders (text-generation-inference's get_sharded: get_slice(k)[start:stop] by
rows, [:, start:stop] by columns, for each rank of 1, 2 and 4). The same code reads a safetensors file, a GGUF and a
PyTorch checkpoint, written here with writers sharing no code with tensorfs, each read from the local disk, from
nginx over HTTP and as the Hugging Face Hub, and from the tests' S3 store; every value is checked against the
values the files were written from (a Q8_0 weight's as the independent numpy dequantization gives them)."""
import math
import os

import numpy as np
import pytest
import torch

import tensorfs
from gguf_writer import GGML_Q8_0, dequantize_q8_0, quantize_q8_0, write
from remote_servers import HUB_REPO, Nginx
from s3_servers import S3Server
from safetensors_files import write_safetensors

# transformers.modeling_utils.str_to_torch_dtype, as it stands for a torch without the unsigned dtypes.
STR_TO_TORCH_DTYPE = {"BOOL": torch.bool, "U8": torch.uint8, "I8": torch.int8, "I16": torch.int16,
                      "F16": torch.float16, "BF16": torch.bfloat16, "I32": torch.int32, "F32": torch.float32,
                      "F64": torch.float64, "I64": torch.int64}
for _name, _dtype in (("U16", "uint16"), ("U32", "uint32"), ("U64", "uint64")):
    if hasattr(torch, _dtype):
        STR_TO_TORCH_DTYPE[_name] = getattr(torch, _dtype)

ROWS, COLUMNS = 12, 64   # 12 rows: 4 ranks of 3, 2 of 6; 64 columns: whole Q8_0 blocks per rank
rng = np.random.default_rng(47)
EMBED = rng.standard_normal((ROWS, COLUMNS), dtype=np.float32)
PROJ = rng.standard_normal((COLUMNS, ROWS), dtype=np.float32).astype(np.float16)
BF16_BITS = (rng.integers(0, 1 << 16, (ROWS, COLUMNS), dtype=np.uint32) & 0xBFFF).astype(np.uint16)
POSITIONS = np.arange(-ROWS, ROWS, dtype=np.int64).reshape(2, ROWS)
Q8_0 = quantize_q8_0(rng.standard_normal(ROWS * COLUMNS, dtype=np.float32))


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def write_sources(folder):
    """{kind: (path, {name: (torch dtype, values as float64 or int64 numpy)})}."""
    sources = {}
    path = str(folder / "model.safetensors")
    write_safetensors(path, [("model.embed.weight", "F32", EMBED.shape, EMBED.tobytes()),
                             ("model.proj.weight", "F16", PROJ.shape, PROJ.tobytes()),
                             ("model.gate.weight", "BF16", BF16_BITS.shape, BF16_BITS.tobytes()),
                             ("model.positions", "I64", POSITIONS.shape, POSITIONS.tobytes())],
                      metadata={"format": "pt"})
    sources["safetensors"] = (path, {"model.embed.weight": (torch.float32, EMBED),
                                     "model.proj.weight": (torch.float16, PROJ),
                                     "model.gate.weight": (torch.bfloat16, bf16_values(BF16_BITS)),
                                     "model.positions": (torch.int64, POSITIONS)})
    path = str(folder / "model.gguf")
    write(path, [], [("token_embd.weight", EMBED), ("blk.0.ffn_down.weight", PROJ),
                     ("blk.0.ffn_gate.weight", (ROWS, COLUMNS), GGML_Q8_0, Q8_0)])
    sources["gguf"] = (path, {"token_embd.weight": (torch.float32, EMBED),
                              "blk.0.ffn_down.weight": (torch.float16, PROJ),
                              "blk.0.ffn_gate.weight": (torch.float32, dequantize_q8_0(Q8_0).reshape(ROWS, COLUMNS))})
    path = str(folder / "pytorch_model.bin")
    torch.save({"model.embed.weight": torch.from_numpy(EMBED), "model.proj.weight": torch.from_numpy(PROJ),
                "model.gate.weight": torch.from_numpy(BF16_BITS.view(np.int16)).view(torch.bfloat16),
                "model.positions": torch.from_numpy(POSITIONS)}, path)
    sources["pytorch"] = (path, dict(sources["safetensors"][1]))
    return sources


KINDS = ["safetensors", "gguf", "pytorch"]
WHERE = ["local", "http", "hub", "s3"]
BUCKET = "loaders"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """{(kind, where): (SOURCE, expected)}: the files served by nginx (plain and as the Hub) and an S3 store, with
    this process's environment pointed at them and a disk cache of its own while the module's tests run."""
    folder = tmp_path_factory.mktemp("loaders")
    files = write_sources(folder)
    nginx = Nginx(str(folder))
    s3 = S3Server()
    saved = dict(os.environ)
    try:
        s3.create_bucket(BUCKET)
        s3.put_tree(BUCKET, str(folder))
        os.environ.update(s3.env(XDG_CACHE_HOME=str(tmp_path_factory.mktemp("cache")), NO_PROXY="127.0.0.1,localhost",
                                 no_proxy="127.0.0.1,localhost", HF_ENDPOINT=f"http://127.0.0.1:{nginx.hub}"))
        os.environ.pop("HF_TOKEN", None)
        places = {"local": lambda name: str(folder / name),
                  "http": lambda name: f"http://127.0.0.1:{nginx.http}/{name}",
                  "hub": lambda name: f"hf://{HUB_REPO}/{name}",
                  "s3": lambda name: f"s3://{BUCKET}/{name}"}
        yield {(kind, where): (places[where](os.path.basename(path)), expected)
               for kind, (path, expected) in files.items() for where in WHERE}
    finally:
        os.environ.clear()
        os.environ.update(saved)
        nginx.stop()
        s3.stop()


def transformers_load_state_dict(checkpoint_file, map_location="cpu"):
    """transformers.modeling_utils.load_state_dict's safetensors branch."""
    with tensorfs.safe_open(checkpoint_file, framework="pt") as f:
        metadata = f.metadata()
        if metadata is not None and metadata.get("format") not in ["pt", "tf", "flax", "mlx"]:
            raise OSError(f"The safetensors archive passed at {checkpoint_file} does not contain the valid metadata.")
        state_dict = {}
        for k in f.keys():
            if map_location == "meta":
                _slice = f.get_slice(k)
                k_dtype = _slice.get_dtype()
                if k_dtype in STR_TO_TORCH_DTYPE:
                    dtype = STR_TO_TORCH_DTYPE[k_dtype]
                else:
                    raise ValueError(f"Cannot load safetensors of unknown dtype {k_dtype}")
                state_dict[k] = torch.empty(size=_slice.get_shape(), dtype=dtype, device="meta")
            else:
                state_dict[k] = f.get_tensor(k)
        return state_dict


def vllm_weights_iterator(files):
    """vllm.model_executor.model_loader.weight_utils.safetensors_weights_iterator."""
    for st_file in files:
        with tensorfs.safe_open(st_file, framework="pt") as f:
            for name in f.keys():
                param = f.get_tensor(name)
                yield name, param


def vllm_shard(loaded_weight, dim, tp_rank, tp_size):
    """What vLLM's ColumnParallelLinear (dim 0) and RowParallelLinear (dim 1) weight loaders keep of a weight."""
    shard_size = loaded_weight.shape[dim] // tp_size
    return loaded_weight.narrow(dim, tp_rank * shard_size, shard_size)


def tgi_get_sharded(f, tensor_name, dim, rank, world_size):
    """text_generation_server.utils.weights.Weights.get_sharded (safetensors' get_slice, one rank's block)."""
    slice_ = f.get_slice(tensor_name)
    size = slice_.get_shape()[dim]
    block_size = (size + world_size - 1) // world_size
    start = rank * block_size
    stop = (rank + 1) * block_size
    if dim == 0:
        tensor = slice_[start:stop]
    elif dim == 1:
        tensor = slice_[:, start:stop]
    else:
        raise NotImplementedError("Let's make that generic when needed")
    return tensor


def as_expected(tensor):
    return tensor.to(torch.float64 if tensor.dtype.is_floating_point else torch.int64).numpy()


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_transformers_load_state_dict(sources, kind, where):
    path, expected = sources[kind, where]
    state_dict = transformers_load_state_dict(path)
    assert sorted(state_dict) == sorted(expected) and list(state_dict) == sorted(expected)
    meta = transformers_load_state_dict(path, map_location="meta")
    for name, (dtype, values) in expected.items():
        tensor = state_dict[name]
        assert tensor.dtype == dtype == meta[name].dtype, name
        assert tuple(tensor.shape) == values.shape == tuple(meta[name].shape), name
        assert np.array_equal(as_expected(tensor), values), name


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_vllm_weights_iterator_and_tensor_parallel_shards(sources, kind, where):
    path, expected = sources[kind, where]
    weights = dict(vllm_weights_iterator([path]))
    assert weights.keys() == expected.keys()
    for name, (dtype, values) in expected.items():
        if values.ndim != 2:
            continue
        for tp_size in (1, 2, 4):
            for tp_rank in range(tp_size):
                for dim in (0, 1):
                    shard = vllm_shard(weights[name], dim, tp_rank, tp_size)
                    size = values.shape[dim] // tp_size
                    wanted = values[tp_rank * size:(tp_rank + 1) * size] if dim == 0 else \
                        values[:, tp_rank * size:(tp_rank + 1) * size]
                    assert shard.dtype == dtype and np.array_equal(as_expected(shard), wanted), (name, dim)


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("kind", KINDS)
def test_sharded_slices_of_each_rank(sources, kind, where):
    path, expected = sources[kind, where]
    with tensorfs.safe_open(path, framework="pt") as f:
        for name, (dtype, values) in expected.items():
            assert STR_TO_TORCH_DTYPE[f.get_slice(name).get_dtype()] == dtype, name
            if values.ndim != 2:
                continue
            for world_size in (1, 2, 4):
                for rank in range(world_size):
                    for dim in (0, 1):
                        block = math.ceil(values.shape[dim] / world_size)
                        wanted = values[rank * block:(rank + 1) * block] if dim == 0 else \
                            values[:, rank * block:(rank + 1) * block]
                        tensor = tgi_get_sharded(f, name, dim, rank, world_size)
                        assert tensor.dtype == dtype and tuple(tensor.shape) == wanted.shape, (name, dim, rank)
                        assert np.array_equal(as_expected(tensor), wanted), (name, dim, rank, world_size)
