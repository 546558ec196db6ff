"""A tiny llama-like decoder in PyTorch, built as a framework builds a model from a folder: its shape from the
folder's config.json, its weights from the folder's model.safetensors (read here with the independent reader of
safetensors_reader.py over an mmap of the file, as the safetensors library maps it), or, for a legacy repo, from
its pytorch_model.bin by torch.load(weights_only=True).

    /usr/bin/python3 tiny_model.py CANARY safetensors|torch FOLDER OUT.npy [safetensors|torch FOLDER OUT.npy ...]

builds the model from each FOLDER and writes the logits of a fixed token sequence to its OUT.npy (several models in
one process: importing torch takes long). Before anything else it installs the canary: an audit hook
(PEP 578) that creates the file CANARY as soon as this process unpickles anything (every global a pickle names is
resolved through pickle.find_class, which raises the "pickle.find_class" audit event) or opens a PyTorch weight
file (*.bin, *.pt, *.pth). A loader that reads only config.json and model.safetensors leaves no canary."""
import json
import math
import mmap
import os
import sys

WEIGHT_FILE_SUFFIXES = (".bin", ".pt", ".pth")


def install_canary(path):
    def hook(event, args):
        opened = event == "open" and isinstance(args[0], (str, bytes, os.PathLike))
        if event == "pickle.find_class" or (opened and os.fsdecode(args[0]).endswith(WEIGHT_FILE_SUFFIXES)):
            if not os.path.exists(path):
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
    sys.addaudithook(hook)


def write_config(folder, **changes):
    config = {"architectures": ["TinyLlamaForCausalLM"], "model_type": "tiny-llama", "vocab_size": 97,
              "hidden_size": 64, "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4,
              "rms_norm_eps": 1e-5, "torch_dtype": "float32", **changes}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    return config


def random_state_dict(config, seed):
    """Weights for a model of `config`, in float32 except the embeddings in bfloat16 and the head in float16 (so
    that loading must keep three dtypes apart)."""
    import torch
    generator = torch.Generator().manual_seed(seed)
    hidden, inner = config["hidden_size"], config["intermediate_size"]

    def weight(rows, columns):
        return torch.randn(rows, columns, generator=generator) / math.sqrt(columns)

    state = {"model.embed_tokens.weight": weight(config["vocab_size"], hidden).to(torch.bfloat16)}
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}."
        for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
            state[prefix + "self_attn." + name + ".weight"] = weight(hidden, hidden)
        state[prefix + "mlp.gate_proj.weight"] = weight(inner, hidden)
        state[prefix + "mlp.up_proj.weight"] = weight(inner, hidden)
        state[prefix + "mlp.down_proj.weight"] = weight(hidden, inner)
        state[prefix + "input_layernorm.weight"] = 1 + 0.1 * torch.randn(hidden, generator=generator)
        state[prefix + "post_attention_layernorm.weight"] = 1 + 0.1 * torch.randn(hidden, generator=generator)
    state["model.norm.weight"] = 1 + 0.1 * torch.randn(hidden, generator=generator)
    state["lm_head.weight"] = weight(config["vocab_size"], hidden).to(torch.float16)
    return state


def write_repo(folder, weights, seed=0):
    """A model repo in `folder`: config.json, generation_config.json and the weights of random_state_dict() as
    model.safetensors, or as pytorch_model.bin by torch.save, in its zip format
    ("bin") or its legacy format ("legacy-bin"). Returns the state dict."""
    import torch
    config = write_config(folder)
    with open(os.path.join(folder, "generation_config.json"), "w") as f:
        json.dump({"bos_token_id": 1, "eos_token_id": 2}, f)
    state = random_state_dict(config, seed)
    if weights == "safetensors":
        from safetensors_files import write_safetensors
        names = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}
        write_safetensors(os.path.join(folder, "model.safetensors"),
                          [(name, names[tensor.dtype], tensor.shape, tensor.view(torch.uint8).numpy().tobytes())
                           for name, tensor in state.items()])
    else:
        torch.save(state, os.path.join(folder, "pytorch_model.bin"),
                   _use_new_zipfile_serialization=weights == "bin")
    return state


def logits(config, state, tokens):
    """The model's forward pass, in float32 whatever the weights' dtypes: embeddings, then per layer RMSNorm,
    causal multi-head attention with rotary positions, RMSNorm, SwiGLU; a last RMSNorm and the head."""
    import torch
    weights = {name: tensor.to(torch.float32) for name, tensor in state.items()}
    heads, eps = config["num_attention_heads"], config["rms_norm_eps"]
    hidden = config["hidden_size"]
    head_dim = hidden // heads
    count = len(tokens)

    def norm(x, name):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weights[name]

    positions = torch.arange(count, dtype=torch.float32)[:, None]
    frequencies = 10000.0 ** (-torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = positions * frequencies
    cos, sin = angles.cos(), angles.sin()

    def rotate(x):  # (heads, count, head_dim), the halves rotated as llama does
        first, second = x[..., :head_dim // 2], x[..., head_dim // 2:]
        return torch.cat([first * cos - second * sin, first * sin + second * cos], dim=-1)

    x = weights["model.embed_tokens.weight"][torch.tensor(tokens)]
    mask = torch.full((count, count), float("-inf")).triu(1)
    for layer in range(config["num_hidden_layers"]):
        prefix = f"model.layers.{layer}."
        h = norm(x, prefix + "input_layernorm.weight")
        q, k, v = (
            (h @ weights[prefix + f"self_attn.{n}_proj.weight"].T).view(count, heads, head_dim).transpose(0, 1)
            for n in "qkv")
        q, k = rotate(q), rotate(k)
        attention = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(head_dim) + mask, dim=-1) @ v
        x = x + attention.transpose(0, 1).reshape(count, hidden) @ weights[prefix + "self_attn.o_proj.weight"].T
        h = norm(x, prefix + "post_attention_layernorm.weight")
        gate = torch.nn.functional.silu(h @ weights[prefix + "mlp.gate_proj.weight"].T)
        x = x + (gate * (h @ weights[prefix + "mlp.up_proj.weight"].T)) @ weights[prefix + "mlp.down_proj.weight"].T
    return norm(x, "model.norm.weight") @ weights["lm_head.weight"].T


def read_safetensors(path):
    """{name: tensor} of the safetensors file at `path`, checked by the independent reader, over an mmap."""
    import numpy as np
    import torch
    from safetensors_reader import SafetensorsFile
    dtypes = {"F32": (np.float32, None), "F16": (np.float16, None), "BF16": (np.int16, torch.bfloat16)}
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    parsed = SafetensorsFile(mapped)
    state = {}
    for name, dtype, shape, begin, end in parsed.tensors:
        numpy_dtype, view = dtypes[dtype]
        values = np.frombuffer(mapped, numpy_dtype, (end - begin) // np.dtype(numpy_dtype).itemsize, begin)
        tensor = torch.from_numpy(values.copy()).reshape(shape)
        state[name] = tensor.view(view) if view is not None else tensor
    return state


TOKENS = [1, 17, 42, 5, 96, 0, 33, 64, 8, 71, 2, 50]


def main():
    install_canary(sys.argv[1])
    import numpy as np
    import torch
    runs = sys.argv[2:]
    for kind, folder, out in zip(runs[0::3], runs[1::3], runs[2::3]):
        with open(os.path.join(folder, "config.json")) as f:
            config = json.load(f)
        if kind == "safetensors":
            state = read_safetensors(os.path.join(folder, "model.safetensors"))
        else:
            state = torch.load(os.path.join(folder, "pytorch_model.bin"), weights_only=True)
        np.save(out, logits(config, state, TOKENS).detach().numpy())


if __name__ == "__main__":
    main()
