"""Model checkpoints read into torch tensors and numpy arrays, from any place, without a mount.

The same engine as the `tensorfs` command and its FUSE mount: safetensors (one file, sharded, an index), GGUF (one
file or a split set; every ggml type decoded), PyTorch .bin/.pt/.pth (read without running their pickle), from the
local disk, http(s):// URLs, the Hugging Face Hub (hf://ORG/REPO) and S3 (s3://BUCKET/KEY), fetching only what is
read through the disk cache a mount uses. Where safetensors has a call, tensorfs has it with the same name,
arguments and behaviour:

    import tensorfs
    with tensorfs.safe_open("hf://org/repo", framework="pt") as f:     # as safetensors.safe_open
        for name in f.keys():
            tensor = f.get_tensor(name)
        rows = f.get_slice("model.embed_tokens.weight")[0:2]           # fetches only those rows
    weights = tensorfs.load("model-Q4_K_M.gguf", dtype="bf16")        # every tensor, read in parallel
    tensorfs.info("model.gguf")                                        # = tensorfs info --json
    tensorfs.diff("model.safetensors", "model-Q4_K_M.gguf")            # = tensorfs diff --json rows

Errors: tensorfs.Error (an OSError, errno, strerror and filename set) with the command's message, and a subclass
per kind: SourceNotFoundError (also a FileNotFoundError), AccessDeniedError (a PermissionError), UnavailableError
(a ConnectionError), TimedOutError (a TimeoutError), InvalidSourceError, UnsupportedError; KeyError for an unknown
tensor name; TypeError for an unknown option. Licensed under the Apache License 2.0.
"""
from tensorfs import _tensorfs
from tensorfs._tensorfs import (
    AccessDeniedError,
    Error,
    InvalidSourceError,
    SafeOpen,
    Slice,
    SourceNotFoundError,
    TimedOutError,
    UnavailableError,
    UnsupportedError,
    diff,
    info,
    load,
    release_memory,
    safe_open,
)

__version__ = _tensorfs.__version__
__license__ = "Apache-2.0"
__all__ = [
    "safe_open",
    "load",
    "info",
    "diff",
    "release_memory",
    "SafeOpen",
    "Slice",
    "Error",
    "InvalidSourceError",
    "SourceNotFoundError",
    "AccessDeniedError",
    "UnavailableError",
    "TimedOutError",
    "UnsupportedError",
]

# Shown as tensorfs.X (help(), repr(), tracebacks), where users find them.
for _name in __all__:
    globals()[_name].__module__ = __name__
del _name
