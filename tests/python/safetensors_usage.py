"""Code written only against safetensors' documented Python API, as its documentation shows it: safe_open as a
context manager, keys(), metadata(), get_tensor(), and get_slice() with get_shape(), get_dtype() and indexing.
test_safetensors_api.py runs it unchanged with tensorfs.safe_open in the place of safetensors.safe_open."""
from safetensors import safe_open


def load_all(path, framework="pt"):
    tensors = {}
    with safe_open(path, framework=framework, device="cpu") as f:
        for key in f.keys():
            tensors[key] = f.get_tensor(key)
    return tensors


def metadata(path):
    with safe_open(path, framework="pt", device="cpu") as f:
        return f.metadata()


def first_rows(path, name, rows):
    """The first `rows` rows of a 2-D tensor, and its shape and dtype."""
    with safe_open(path, framework="pt", device="cpu") as f:
        tensor_slice = f.get_slice(name)
        vocab_size, hidden_dim = tensor_slice.get_shape()
        return tensor_slice[:rows, :hidden_dim], (vocab_size, hidden_dim), tensor_slice.get_dtype()


def last_column(path, name, framework="np"):
    with safe_open(path, framework=framework) as f:
        return f.get_slice(name)[..., -1]
