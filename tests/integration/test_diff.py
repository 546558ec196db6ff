"""`tensorfs diff A B`: its metrics against numpy's (float64) on checkpoints the tests write, pairing by name and by
llama.cpp's GGUF names (q/k rows permuted as the converter does), JSON Lines and CSV parsed back, exit statuses, and a
remote side served by nginx."""
import csv
import io
import json
import math
import os
import shutil
import subprocess
import tempfile
import unittest

import numpy as np

import gguf_writer
import remote_servers
from safetensors_files import write_safetensors
from tensorfs_mount import VECTORS, run, wait_until


def numpy_metrics(a, b):
    """The metrics `diff` documents, computed by numpy in float64 from float32 values."""
    a = np.asarray(a, dtype=np.float32).ravel()
    b = np.asarray(b, dtype=np.float32).ravel()
    finite = np.isfinite(a) & np.isfinite(b)
    da, db = a[finite].astype(np.float64), b[finite].astype(np.float64)
    d = da - db
    n = len(d)
    sq_diff, sq_a, sq_b = float(np.sum(d * d)), float(np.sum(da * da)), float(np.sum(db * db))
    rmse = math.sqrt(sq_diff / n) if n else 0.0
    if rmse == 0:
        relative = 0.0
    else:
        relative = math.inf if sq_a == 0 else rmse / math.sqrt(sq_a / n)
    cosine = None if sq_a == 0 or sq_b == 0 else float(np.sum(da * db)) / math.sqrt(sq_a * sq_b)
    snr = math.inf if sq_diff == 0 else (-math.inf if sq_a == 0 else 10 * math.log10(sq_a / sq_diff))
    both_nan = np.isnan(a) & np.isnan(b)
    return {"differing": int(np.sum((a != b) & ~both_nan)), "compared": n,
            "nan_a": int(np.isnan(a).sum()), "nan_b": int(np.isnan(b).sum()),
            "inf_a": int(np.isinf(a).sum()), "inf_b": int(np.isinf(b).sum()),
            "max_abs_diff": float(np.max(np.abs(d))) if n else 0.0,
            "rmse": rmse, "relative_rmse": relative, "cosine": cosine, "snr_db": snr}


def as_number(value):
    """A figure of the JSON output: a number, "inf"/"-inf", or null (undefined)."""
    return float(value) if isinstance(value, str) else value


def diff(*args):
    return run("diff", *args)


def json_lines(*args):
    """(pairs by A's name or else B's, summary) of `diff --json`; exit status 0 or 1."""
    result = diff("--json", *args)
    assert result.returncode in (0, 1), result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[-1]["kind"] == "summary"
    pairs = {(line["a"] if line["a"] is not None else line["b"]): line for line in lines[:-1]}
    return pairs, lines[-1], result.returncode


def f32(values):
    return np.ascontiguousarray(values, dtype=np.float32)


def bf16_bytes(values):
    return (f32(values).view(np.uint32) >> 16).astype(np.uint16).tobytes()


def entry(name, values, dtype="F32"):
    values = f32(values)
    data = bf16_bytes(values) if dtype == "BF16" else values.tobytes()
    return (name, dtype, values.shape, data)


# The converter's permutation (LlamaModel.permute in llama.cpp's convert_hf_to_gguf.py), in numpy.
def permute(weights, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (weights.reshape(n_head, 2, weights.shape[0] // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def unpermute(weights, heads):
    """The inverse of permute(weights, heads, heads)."""
    return (weights.reshape(heads, weights.shape[0] // heads // 2, 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


HIDDEN, HEADS, KV_HEADS, FFN, VOCAB, LAYERS = 64, 4, 2, 96, 40, 2
HEAD_DIM = HIDDEN // HEADS

HF_TO_GGUF = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "input_layernorm": "attn_norm",
              "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}


def hf_model(rng, biases):
    """A small llama-like model in Hugging Face naming: {name: float32 array}, grouped-query attention."""
    tensors = {"model.embed_tokens.weight": rng.standard_normal((VOCAB, HIDDEN)) * 0.05}
    for layer in range(LAYERS):
        p = f"model.layers.{layer}."
        tensors[p + "self_attn.q_proj.weight"] = rng.standard_normal((HEADS * HEAD_DIM, HIDDEN)) * 0.05
        tensors[p + "self_attn.k_proj.weight"] = rng.standard_normal((KV_HEADS * HEAD_DIM, HIDDEN)) * 0.05
        tensors[p + "self_attn.v_proj.weight"] = rng.standard_normal((KV_HEADS * HEAD_DIM, HIDDEN)) * 0.05
        if biases:
            for proj, rows in (("q_proj", HEADS * HEAD_DIM), ("k_proj", KV_HEADS * HEAD_DIM),
                               ("v_proj", KV_HEADS * HEAD_DIM)):
                tensors[p + f"self_attn.{proj}.bias"] = rng.standard_normal(rows) * 0.05
        tensors[p + "self_attn.o_proj.weight"] = rng.standard_normal((HIDDEN, HEADS * HEAD_DIM)) * 0.05
        tensors[p + "input_layernorm.weight"] = 1 + rng.standard_normal(HIDDEN) * 0.1
        tensors[p + "post_attention_layernorm.weight"] = 1 + rng.standard_normal(HIDDEN) * 0.1
        tensors[p + "mlp.gate_proj.weight"] = rng.standard_normal((FFN, HIDDEN)) * 0.05
        tensors[p + "mlp.up_proj.weight"] = rng.standard_normal((FFN, HIDDEN)) * 0.05
        tensors[p + "mlp.down_proj.weight"] = rng.standard_normal((HIDDEN, FFN)) * 0.05
    tensors["model.norm.weight"] = 1 + rng.standard_normal(HIDDEN) * 0.1
    tensors["lm_head.weight"] = rng.standard_normal((VOCAB, HIDDEN)) * 0.05
    return {name: f32(values) for name, values in tensors.items()}


def gguf_name(hf):
    stem, _, suffix = hf.rpartition(".")
    top = {"model.embed_tokens": "token_embd", "model.norm": "output_norm", "lm_head": "output"}
    if stem in top:
        return f"{top[stem]}.{suffix}"
    _, _, layer, rest = stem.split(".", 3)
    return f"blk.{layer}.{HF_TO_GGUF[rest]}.{suffix}"


def convert(tensors, architecture, path, ggml_type):
    """The GGUF llama.cpp's converter would write: names mapped, llama's q/k permuted, matrices in `ggml_type`
    (vectors in F32). Returns {gguf name: the float32 values ggml decodes, in the GGUF's row order}."""
    entries, decoded = [], {}
    for name, values in tensors.items():
        if architecture == "gemma" and name.endswith("norm.weight"):
            values = values + np.float32(1)   # Gemma's converter: llama.cpp's norm multiplies by w, Gemma's by 1 + w
        if architecture == "llama" and ".q_proj." in name:
            values = permute(values, HEADS, HEADS)
        elif architecture == "llama" and ".k_proj." in name:
            values = permute(values, HEADS, KV_HEADS)
        stored, values_back = gguf_writer.encode(values, ggml_type if values.ndim == 2 else gguf_writer.GGML_F32)
        target = gguf_name(name)
        entries.append((target, values.shape, ggml_type if values.ndim == 2 else gguf_writer.GGML_F32, stored))
        decoded[target] = values_back.reshape(values.shape)
    metadata = {"general.architecture": architecture, f"{architecture}.block_count": LAYERS,
                f"{architecture}.attention.head_count": HEADS, f"{architecture}.attention.head_count_kv": KV_HEADS}
    gguf_writer.write_gguf(path, metadata, entries)
    return decoded


class DiffTest(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tensorfs-diff-")
        self.rng = np.random.default_rng(21)

    def tearDown(self):
        shutil.rmtree(self.folder, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.folder, name)

    def write(self, name, entries):
        write_safetensors(self.path(name), entries)
        return self.path(name)

    def assert_metrics(self, line, expected, places=9):
        for key, want in expected.items():
            got = as_number(line[key])
            if want is None or got is None:
                self.assertIsNone(got, key)
                self.assertIsNone(want, key)
            elif isinstance(want, int):
                self.assertEqual(got, want, key)
            elif math.isinf(want):
                self.assertEqual(got, want, key)
            else:
                self.assertAlmostEqual(got, want, delta=10 ** -places * max(1.0, abs(want)), msg=key)

    def test_equal(self):
        values = self.rng.standard_normal((32, 48))
        a = self.write("a.safetensors", [entry("w", values), entry("bias", values[0])])
        b = self.write("b.safetensors", [entry("w", values), entry("bias", values[0])])
        pairs, summary, status = json_lines(a, b)
        self.assertEqual(status, 0)
        self.assertEqual((summary["paired"], summary["identical"], summary["different"]), (2, 2, 0))
        self.assertEqual(summary["snr_db"], "inf")
        for line in pairs.values():
            self.assertEqual(line["status"], "identical")
            self.assertTrue(line["bytes_identical"])
            self.assert_metrics(line, numpy_metrics(values if line["a"] == "w" else values[0],
                                                    values if line["a"] == "w" else values[0]))
        self.assertEqual(diff("--quiet", a, b).returncode, 0)

    def test_one_value_changed(self):
        values = f32(self.rng.standard_normal((64, 32)))
        changed = values.copy()
        changed[17, 3] += 0.25
        a = self.write("a.safetensors", [entry("w", values)])
        b = self.write("b.safetensors", [entry("w", changed)])
        pairs, summary, status = json_lines(a, b)
        self.assertEqual(status, 1)
        self.assertEqual(pairs["w"]["status"], "different")
        self.assertFalse(pairs["w"]["bytes_identical"])
        expected = numpy_metrics(values, changed)
        self.assertEqual(expected["differing"], 1)
        self.assert_metrics(pairs["w"], expected)
        self.assertEqual(summary["worst"][0]["a"], "w")

    def test_nan_and_inf_are_counted_apart(self):
        values = f32(self.rng.standard_normal(1000))
        other = f32(values + self.rng.standard_normal(1000) * 0.01)
        values[[3, 500]] = np.nan
        other[500] = np.nan           # NaN against NaN: equal, not a differing value
        other[7] = np.inf
        values[999] = -np.inf
        other[999] = -np.inf
        a = self.write("a.safetensors", [entry("v", values)])
        b = self.write("b.safetensors", [entry("v", other)])
        pairs, _, status = json_lines(a, b)
        self.assertEqual(status, 1)
        expected = numpy_metrics(values, other)
        self.assertEqual((expected["nan_a"], expected["nan_b"], expected["inf_a"], expected["inf_b"]), (2, 1, 1, 2))
        self.assertEqual(expected["compared"], 996)
        self.assert_metrics(pairs["v"], expected)
        self.assertTrue(all(math.isfinite(as_number(pairs["v"][k])) for k in ("rmse", "relative_rmse", "snr_db")))

    def test_zero_tensors(self):
        zeros = np.zeros((8, 8))
        empty = np.zeros((0, 16))
        a = self.write("a.safetensors", [entry("zeros", zeros), entry("empty", empty), entry("from_zero", zeros)])
        b = self.write("b.safetensors", [entry("zeros", zeros), entry("empty", empty),
                                         entry("from_zero", np.full((8, 8), 0.5))])
        pairs, _, status = json_lines(a, b)
        self.assertEqual(status, 1)
        for name, mine, other in (("zeros", zeros, zeros), ("empty", empty, empty),
                                  ("from_zero", zeros, np.full((8, 8), 0.5))):
            self.assert_metrics(pairs[name], numpy_metrics(mine, other))
        self.assertEqual(pairs["zeros"]["status"], "identical")
        self.assertIsNone(pairs["zeros"]["cosine"])
        self.assertEqual(pairs["empty"]["status"], "identical")
        self.assertEqual(pairs["empty"]["elements"], 0)
        self.assertEqual(pairs["from_zero"]["relative_rmse"], "inf")
        self.assertEqual(pairs["from_zero"]["snr_db"], "-inf")

    def test_bf16_against_f32_of_the_same_values(self):
        values = f32(self.rng.standard_normal((16, 64)))
        rounded = (values.view(np.uint32) & 0xFFFF0000).view(np.float32)   # exactly representable in BF16
        a = self.write("a.safetensors", [entry("w", rounded, "BF16"), entry("x", values, "BF16")])
        b = self.write("b.safetensors", [entry("w", rounded), entry("x", values)])
        pairs, _, status = json_lines(a, b)
        self.assertEqual(status, 1)   # x lost bits in BF16
        self.assertEqual(pairs["w"]["status"], "identical")
        self.assertFalse(pairs["w"]["bytes_identical"])
        self.assertEqual((pairs["w"]["dtype_a"], pairs["w"]["dtype_b"]), ("BF16", "F32"))
        truncated = (values.view(np.uint32) & 0xFFFF0000).view(np.float32)
        self.assert_metrics(pairs["x"], numpy_metrics(truncated, values))
        self.assertEqual(diff("--tensors", "w", a, b).returncode, 0)

    def test_missing_extra_and_shape_mismatch(self):
        values = self.rng.standard_normal((4, 8))
        a = self.write("a.safetensors", [entry("both", values), entry("only_a", values), entry("shape", values)])
        b = self.write("b.safetensors", [entry("both", values), entry("shape", values.reshape(8, 4)),
                                         entry("only_b", values)])
        pairs, summary, status = json_lines(a, b)
        self.assertEqual(status, 1)
        self.assertEqual(pairs["only_a"]["status"], "only_in_a")
        self.assertEqual(pairs["only_b"]["status"], "only_in_b")
        self.assertEqual(pairs["shape"]["status"], "shape_mismatch")
        self.assertEqual((pairs["shape"]["shape_a"], pairs["shape"]["shape_b"]), ([4, 8], [8, 4]))
        self.assertNotIn("rmse", pairs["shape"])
        self.assertEqual((summary["paired"], summary["identical"], summary["shape_mismatch"], summary["only_in_a"],
                          summary["only_in_b"]), (2, 1, 1, 1, 1))
        # Only the tensors both have, and equal: nothing differs.
        self.assertEqual(diff("--tensors", "both", a, b).returncode, 0)

    def test_csv_holds_the_json_figures(self):
        values = f32(self.rng.standard_normal((16, 16)))
        a = self.write("a.safetensors", [entry("w", values), entry("gone", values), entry("zeros", np.zeros(8))])
        b = self.write("b.safetensors", [entry("w", values * 1.01), entry("zeros", np.zeros(8))])
        pairs, _, _ = json_lines(a, b)
        result = diff("--csv", a, b)
        self.assertEqual(result.returncode, 1, result.stderr)
        rows = {row["a"]: row for row in csv.DictReader(io.StringIO(result.stdout))}
        self.assertEqual(set(rows), {"w", "gone", "zeros"})
        self.assertEqual((rows["zeros"]["status"], rows["zeros"]["snr_db"], rows["zeros"]["cosine"],
                          rows["zeros"]["bytes_identical"]), ("identical", "inf", "", "true"))
        self.assertEqual(json.loads(rows["w"]["shape_a"]), [16, 16])
        for key in ("max_abs_diff", "rmse", "relative_rmse", "cosine", "snr_db"):
            self.assertEqual(float(rows["w"][key]), pairs["w"][key], key)
        self.assertEqual(int(rows["w"]["differing"]), numpy_metrics(values, values * 1.01)["differing"])
        self.assertEqual((rows["gone"]["status"], rows["gone"]["rmse"]), ("only_in_a", ""))

    def test_table_on_stdout(self):
        values = self.rng.standard_normal((4, 4))
        a = self.write("a.safetensors", [entry("w", values)])
        b = self.write("b.safetensors", [entry("w", values + 1)])
        result = diff(a, b)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("different", result.stdout)
        self.assertIn("worst by relative RMSE", result.stdout)
        self.assertEqual(result.stderr, "")   # no progress line off a terminal

    def test_progress_line_on_a_terminal_only(self):
        values = self.rng.standard_normal((64, 64))
        a = self.write("a.safetensors", [entry("w", values), entry("x", values)])
        b = self.write("b.safetensors", [entry("w", values), entry("x", values * 2)])
        controller, terminal = os.openpty()
        try:
            result = subprocess.run([os.environ["TENSORFS_BIN"], "diff", a, b], stdout=subprocess.PIPE,
                                    stderr=terminal, text=True, timeout=120)
            os.close(terminal)
            terminal = None
            shown = b""
            while True:
                try:
                    piece = os.read(controller, 65536)
                except OSError:   # EIO: the terminal's other end is closed and everything was read
                    break
                if not piece:
                    break
                shown += piece
        finally:
            if terminal is not None:
                os.close(terminal)
            os.close(controller)
        self.assertEqual(result.returncode, 1)
        self.assertIn(b"comparing 2/2 tensors: 64.0 KiB of 64.0 KiB (100%)", shown)
        quiet = subprocess.run([os.environ["TENSORFS_BIN"], "diff", "--quiet", a, b], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=120)
        self.assertEqual(quiet.stderr, b"")
        self.assertTrue(quiet.stdout.startswith(b"paired 2: 1 identical, 1 different"), quiet.stdout)   # no rows

    def test_trouble_is_status_2(self):
        values = self.rng.standard_normal((4, 4))
        a = self.write("a.safetensors", [entry("w", values)])
        bad = self.path("bad.safetensors")
        with open(bad, "wb") as f:
            f.write(b"\xff" * 16)
        # A llama GGUF without its head counts: its q/k rows cannot be put back in order.
        headless = self.path("headless.gguf")
        gguf_writer.write_gguf(headless, {"general.architecture": "llama"},
                               [("token_embd.weight", (4, 4), gguf_writer.GGML_F32, f32(values).tobytes())])
        for args in ((a, self.path("missing.safetensors")), (a, bad), ("--tensors", "nothing*", a, a), (a, headless),
                     ("--names", "gguf", a, a), ("--names", "other", a, a), (a,), ("--json", "--csv", a, a)):
            result = diff(*args)
            self.assertEqual(result.returncode, 2, args)
            self.assertTrue(result.stderr.startswith("tensorfs: "), (args, result.stderr))
            self.assertEqual(len(result.stderr.splitlines()), 1, (args, result.stderr))

    def hf_and_gguf(self, architecture, ggml_type, biases=False):
        tensors = hf_model(self.rng, biases)
        hf = self.write("hf.safetensors", [entry(name, values) for name, values in tensors.items()])
        gguf = self.path(f"{architecture}-{ggml_type}.gguf")
        decoded = convert(tensors, architecture, gguf, ggml_type)
        return tensors, hf, gguf, decoded

    def check_gguf_pairing(self, architecture, ggml_type, biases):
        tensors, hf, gguf, decoded = self.hf_and_gguf(architecture, ggml_type, biases)
        for a, b, hf_is_a in ((hf, gguf, True), (gguf, hf, False)):
            pairs, summary, status = json_lines("--names", "gguf", a, b)
            self.assertEqual(status, 1)
            self.assertEqual(summary["names"], "gguf")
            self.assertEqual((summary["only_in_a"], summary["only_in_b"], summary["shape_mismatch"]), (0, 0, 0))
            self.assertEqual(summary["paired"], len(tensors))
            for name, values in tensors.items():
                line = pairs[name if hf_is_a else gguf_name(name)]
                self.assertEqual(line["a" if hf_is_a else "b"], name)
                self.assertEqual(line["b" if hf_is_a else "a"], gguf_name(name))
                back = decoded[gguf_name(name)]
                heads = {".q_proj.": HEADS, ".k_proj.": KV_HEADS}
                for part, count in heads.items():
                    if architecture == "llama" and part in name:
                        back = unpermute(back, count)
                        self.assertEqual(line["unpermuted_heads"], count)
                expected = numpy_metrics(values, back) if hf_is_a else numpy_metrics(back, values)
                self.assert_metrics(line, expected)
                self.assertLess(as_number(line["relative_rmse"]), 0.01 if ggml_type == gguf_writer.GGML_Q8_0
                                else 0.001, name)
            # auto pairs by GGUF names too, since exactly one side is a GGUF.
            auto_pairs, _, _ = json_lines(a, b)
            self.assertEqual(auto_pairs.keys(), pairs.keys())
        return tensors, hf, gguf, decoded

    def test_llama_hf_against_gguf_f16_and_q8_0(self):
        for ggml_type in (gguf_writer.GGML_F16, gguf_writer.GGML_Q8_0):
            with self.subTest(ggml_type=ggml_type):
                tensors, hf, gguf, decoded = self.check_gguf_pairing("llama", ggml_type, biases=False)
                pairs, _, _ = json_lines(hf, gguf)
                # Undone wrongly (not at all, or with the query heads for the key heads), the figures are far off
                # the ones diff gives: it does undo the converter's permutation, with the right head counts.
                for hf_name, heads in (("model.layers.0.self_attn.q_proj.weight", HEADS),
                                       ("model.layers.1.self_attn.k_proj.weight", KV_HEADS)):
                    back = decoded[gguf_name(hf_name)]
                    got = as_number(pairs[hf_name]["relative_rmse"])
                    for wrong in (back, unpermute(back, HEADS if heads == KV_HEADS else KV_HEADS)):
                        far = numpy_metrics(tensors[hf_name], wrong)["relative_rmse"]
                        self.assertGreater(far, 0.5)
                        self.assertGreater(far, 50 * got)

    def test_qwen2_hf_against_gguf_has_no_permutation(self):
        for ggml_type in (gguf_writer.GGML_F16, gguf_writer.GGML_Q8_0):
            with self.subTest(ggml_type=ggml_type):
                tensors, hf, gguf, _ = self.check_gguf_pairing("qwen2", ggml_type, biases=True)
                pairs, _, _ = json_lines(hf, gguf)
                self.assertTrue(all(line["unpermuted_heads"] == 0 for line in pairs.values()))
                self.assertIn("model.layers.1.self_attn.k_proj.bias", pairs)

    def test_gemma_norms_have_the_converters_one_taken_off(self):
        tensors, hf, gguf, decoded = self.hf_and_gguf("gemma", gguf_writer.GGML_F16)
        pairs, summary, _ = json_lines(hf, gguf)
        self.assertEqual((summary["paired"], summary["only_in_a"], summary["only_in_b"]), (len(tensors), 0, 0))
        for name in ("model.norm.weight", "model.layers.1.input_layernorm.weight"):
            self.assertEqual(pairs[name]["gguf_added"], 1.0)
            back = decoded[gguf_name(name)] - np.float32(1)
            self.assert_metrics(pairs[name], numpy_metrics(tensors[name], back))
            self.assertLess(as_number(pairs[name]["relative_rmse"]), 1e-6)
        self.assertEqual(pairs["model.layers.1.mlp.up_proj.weight"]["gguf_added"], 0.0)

    def test_a_gguf_against_its_own_export(self):
        # llama.cpp's tiny Q4_K_M model against the F32 safetensors `tensorfs convert` makes of it: auto pairs by
        # GGUF names, and names the map does not know (the export keeps llama.cpp's) pair as they are, unpermuted.
        gguf = os.path.join(VECTORS, "gguf", "tiny-llama-Q4_K_M.gguf")
        exported = self.path("export.safetensors")
        self.assertEqual(run("convert", gguf, exported).returncode, 0)
        pairs, summary, status = json_lines(gguf, exported)
        self.assertEqual(status, 0)
        self.assertEqual(summary["names"], "gguf")
        self.assertEqual(summary["paired"], summary["identical"])
        self.assertEqual((summary["only_in_a"], summary["only_in_b"]), (0, 0))
        self.assertTrue(all(line["unpermuted_heads"] == 0 for line in pairs.values()))
        self.assertIn("Q4_K", {line["dtype_a"] for line in pairs.values()})

    def test_same_names_do_not_pair_hf_with_gguf(self):
        tensors, hf, gguf, _ = self.hf_and_gguf("llama", gguf_writer.GGML_F16)
        pairs, summary, status = json_lines("--names", "same", hf, gguf)
        self.assertEqual(status, 1)
        self.assertEqual((summary["paired"], summary["only_in_a"], summary["only_in_b"]),
                         (0, len(tensors), len(tensors)))

    def test_remote_side_gives_the_same_figures(self):
        values = f32(self.rng.standard_normal((1024, 512)))   # 2 MiB: more than one block of the remote reads
        served = os.path.join(self.folder, "served")
        os.makedirs(served)
        write_safetensors(os.path.join(served, "a.safetensors"), [entry("w", values), entry("v", values[0])])
        b = self.write("b.safetensors", [entry("w", values * 0.99 + 0.001), entry("v", values[0])])
        server = remote_servers.Nginx(served)
        try:
            environment = dict(os.environ, XDG_CACHE_HOME=self.path("cache"), NO_PROXY="127.0.0.1",
                               no_proxy="127.0.0.1")
            url = f"http://127.0.0.1:{server.http}/a.safetensors"
            remote = subprocess.run([os.environ["TENSORFS_BIN"], "diff", "--json", url, b], capture_output=True,
                                    text=True, timeout=120, env=environment)
            # Each byte is fetched once, though the equal tensor's stored bytes are read twice (values, then bytes),
            # the header read that opens the source included (its bytes are kept): every byte of the file is read,
            # so exactly the file is sent. Wait (bounded) for nginx to log it all.
            size = os.path.getsize(os.path.join(served, "a.safetensors"))

            def fetched():
                return sum(r[3] for r in remote_servers.requests_in(server.log_lines()) if r[1] == "/a.safetensors")

            wait_until(lambda: fetched() >= size)
            self.assertEqual(fetched(), size)
        finally:
            server.stop()
        local = diff("--json", os.path.join(served, "a.safetensors"), b)
        self.assertEqual(remote.returncode, 1, remote.stderr)
        self.assertEqual(local.returncode, 1, local.stderr)
        remote_lines = [json.loads(line) for line in remote.stdout.splitlines()]
        local_lines = [json.loads(line) for line in local.stdout.splitlines()]
        remote_lines[-1].pop("a")
        local_lines[-1].pop("a")
        self.assertEqual(remote_lines, local_lines)
        self.assert_metrics(local_lines[0], numpy_metrics(values, values * 0.99 + 0.001))


if __name__ == "__main__":
    unittest.main()
