"""Quantized checkpoints the tests make themselves, beyond the reference vectors: shapes that do not divide by the
block or group, NaN and subnormal FP8 bytes, MXFP4 exponents of 0 and 255, a GPTQ zero point of 0 (stored all-ones),
act-order, packed zero points of a row count that is no multiple of eight; and one broken weight per malformed
model. Each model's expected values come from quantized_models' own decoders."""
import os

import numpy as np

import quantized_models as qm

RNG_SEED = 45


def tensor(name, dtype, array):
    """A (name, dtype, shape, bytes) entry of write_safetensors from a numpy array of the stored encoding."""
    array = np.asarray(array)
    return (name, dtype, list(array.shape), np.ascontiguousarray(array).tobytes())


def bf16_tensor(name, values):
    values = np.asarray(values, dtype=np.float32)
    return (name, "BF16", list(values.shape), qm.bf16_bytes(values))


def random_bf16(rng, shape):
    return qm.bf16_bits(rng.standard_normal(shape).astype(np.float32))


def fp8_codes(rng, shape):
    """Random FP8 E4M3 bytes, NaN (0x7F, 0xFF) and subnormal ones (exponent 0) among them."""
    codes = rng.integers(0, 256, shape, dtype=np.uint8)
    flat = codes.reshape(-1)
    flat[:6] = [0x7F, 0xFF, 0x01, 0x07, 0x81, 0x80]
    return codes


def gptq_parts(rng, inputs, out, bits, groups, zero_fields, g_idx):
    """qweight, qzeros, scales of a GPTQ weight with random fields and the given zero fields [groups, out]."""
    q = rng.integers(0, 1 << bits, (inputs, out))
    qweight = qm.pack_along_rows(np.ascontiguousarray(q.T), bits).T.copy()   # packed along the input rows
    qzeros = qm.pack_along_rows(zero_fields, bits)
    scales = (rng.random((groups, out)) * 0.02 + 0.001).astype(np.float16)
    return qweight, qzeros, scales


def edge_models(root):
    """{name: (folder, {logical name: expected float32 values})} of valid models at the edges of each scheme."""
    rng = np.random.default_rng(RNG_SEED)
    models = {}

    # fp8-block: 300 x 200 is no multiple of the 128 x 128 blocks; BF16 scales.
    codes = fp8_codes(rng, (300, 200))
    scales = qm.bf16_bits(rng.random((3, 2)).astype(np.float32) * 4 + 0.5)
    scale_values = (scales.astype(np.uint32) << 16).view(np.float32)
    folder = os.path.join(root, "fp8-block-odd")
    qm.write_model(folder, [bf16_tensor("model.norm.weight", np.ones(200)),
                            tensor("model.layers.0.mlp.down_proj.weight", "F8_E4M3", codes),
                            ("model.layers.0.mlp.down_proj.weight_scale_inv", "BF16", [3, 2], scales.tobytes())],
                   {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]})
    models["fp8-block-odd"] = (folder, {"model.layers.0.mlp.down_proj.weight": qm.fp8_block(codes, scale_values,
                                                                                            (128, 128))})

    # fp8 with one scale for the tensor (0-d) and one per row (1-d, F16), as compressed-tensors stores them.
    per_tensor, per_row = fp8_codes(rng, (37, 53)), fp8_codes(rng, (41, 53))
    tensor_scale = np.float32(0.0371)
    row_scales = (rng.random(41) * 0.1 + 0.01).astype(np.float16)
    folder = os.path.join(root, "fp8-scales")
    qm.write_model(folder, [tensor("a.weight", "F8_E4M3", per_tensor), tensor("a.weight_scale", "F32",
                                                                                np.array(tensor_scale)),
                            tensor("a.input_scale", "F32", np.array([1.5], np.float32)),
                            tensor("b.weight", "F8_E4M3", per_row), tensor("b.weight_scale", "F16", row_scales)],
                   {"quant_method": "compressed-tensors", "format": "float-quantized",
                    "config_groups": {"group_0": {"targets": ["Linear"],
                                                  "weights": {"num_bits": 8, "type": "float", "strategy": "tensor"}}}})
    models["fp8-scales"] = (folder, {
        "a.weight": (qm.e4m3_values(per_tensor) * tensor_scale).astype(np.float32),
        "b.weight": (qm.e4m3_values(per_row) * row_scales.astype(np.float32)[:, None]).astype(np.float32)})

    # mxfp4: exponents 0 (subnormal values), 1, 126, 127, 254 (overflow to inf) and 255 (NaN).
    blocks = rng.integers(0, 256, (2, 40, 3, 16), dtype=np.uint8)
    exponents = rng.integers(110, 140, (2, 40, 3), dtype=np.uint8)
    exponents.reshape(-1)[:6] = [0, 1, 126, 127, 254, 255]
    folder = os.path.join(root, "mxfp4-edges")
    qm.write_model(folder, [tensor("model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", blocks),
                            tensor("model.layers.0.mlp.experts.gate_up_proj_scales", "U8", exponents)],
                   {"quant_method": "mxfp4"})
    models["mxfp4-edges"] = (folder, {"model.layers.0.mlp.experts.gate_up_proj": qm.mxfp4(blocks, exponents)})

    # nvfp4: 48 columns (three blocks of 16), one F8 block scale a NaN.
    packed = rng.integers(0, 256, (24, 24), dtype=np.uint8)
    block_scales = rng.integers(0x20, 0x60, (24, 3), dtype=np.uint8)
    block_scales[5, 1] = 0x7F
    global_scale = np.float32(0.00173)
    folder = os.path.join(root, "nvfp4-edges")
    qm.write_model(folder, [tensor("x.weight", "U8", packed), tensor("x.weight_scale", "F8_E4M3", block_scales),
                            tensor("x.weight_scale_2", "F32", np.array(global_scale)),
                            tensor("x.input_scale", "F32", np.array(1.0, np.float32))],
                   {"quant_method": "modelopt", "quant_algo": "NVFP4"})
    models["nvfp4-edges"] = (folder, {"x.weight": qm.nvfp4(packed, block_scales, global_scale)})

    # gptq 8 bits, v1, act-order over 200 input rows in groups of 64 (the last one short), a zero point of 0 (its
    # stored field all ones, which AutoGPTQ reads back as 256).
    inputs, out, groups = 200, 24, 4
    zero_fields = rng.integers(100, 156, (groups, out))
    zero_fields[0, :5] = 255
    g_idx = rng.permutation(np.arange(inputs) // 64).astype(np.int32)
    qweight, qzeros, scales = gptq_parts(rng, inputs, out, 8, groups, zero_fields, g_idx)
    folder = os.path.join(root, "gptq8-actorder")
    qm.write_model(folder, [tensor("m.qweight", "I32", qweight), tensor("m.qzeros", "I32", qzeros),
                            tensor("m.scales", "F16", scales), tensor("m.g_idx", "I32", g_idx)],
                   {"quant_method": "gptq", "bits": 8, "group_size": 64, "desc_act": True, "sym": False,
                    "checkpoint_format": "gptq"})
    models["gptq8-actorder"] = (folder, {"m.weight": qm.gptq(qweight, qzeros, scales, g_idx, 8, v1=True)})

    # gptq 2 bits, v2, no g_idx at all (the groups are the rows' order).
    inputs, out, groups = 96, 40, 3
    zero_fields = rng.integers(0, 4, (groups, out))
    qweight, qzeros, scales = gptq_parts(rng, inputs, out, 2, groups, zero_fields, None)
    folder = os.path.join(root, "gptq2-v2")
    qm.write_model(folder, [tensor("m.qweight", "I32", qweight), tensor("m.qzeros", "I32", qzeros),
                            tensor("m.scales", "F16", scales)],
                   {"quant_method": "gptq", "bits": 2, "group_size": 32, "desc_act": False, "sym": True,
                    "checkpoint_format": "gptq_v2"})
    models["gptq2-v2"] = (folder, {"m.weight": qm.gptq(qweight, qzeros, scales, np.arange(inputs) // 32, 2,
                                                       v1=False)})

    # awq: 200 input rows in groups of 64 (the last one short).
    inputs, out, groups = 200, 24, 4
    fields = rng.integers(0, 16, (inputs, out))
    zero_fields = rng.integers(0, 16, (groups, out))

    def awq_pack(values):   # column c of each eight at field AWQ_FIELD[c % 8]
        words = np.zeros((values.shape[0], values.shape[1] // 8), dtype=np.uint64)
        for c in range(8):
            words |= values[:, c::8].astype(np.uint64) << np.uint64(4 * qm.AWQ_FIELD[c])
        return words.astype(np.uint32).view("<i4")
    qweight, qzeros = awq_pack(fields), awq_pack(zero_fields)
    scales = (rng.random((groups, out)) * 0.02 + 0.001).astype(np.float16)
    folder = os.path.join(root, "awq-odd")
    qm.write_model(folder, [tensor("m.qweight", "I32", qweight), tensor("m.qzeros", "I32", qzeros),
                            tensor("m.scales", "F16", scales)],
                   {"quant_method": "awq", "bits": 4, "group_size": 64, "version": "gemm", "zero_point": True})
    models["awq-odd"] = (folder, {"m.weight": qm.awq(qweight, qzeros, scales, 64)})

    # pack-quantized 4 bits, asymmetric: 100 columns (no multiple of the eight a word holds) in groups of 32, 13
    # rows (zero points packed along them into two rows of words); and one act-order weight with weight_g_idx.
    out, inputs, groups = 13, 100, 4
    fields = rng.integers(0, 16, (out, inputs))
    zero_fields = rng.integers(0, 16, (out, groups))
    packed = qm.pack_along_rows(fields, 4)
    zero_words = np.ascontiguousarray(qm.pack_along_rows(np.ascontiguousarray(zero_fields.T), 4).T)
    scales = (rng.random((out, groups)) * 0.05 + 0.001).astype(np.float16)
    ordered = rng.integers(0, 16, (16, 64))
    ordered_zeros = rng.integers(0, 16, (16, 2))
    ordered_scales = (rng.random((16, 2)) * 0.05 + 0.001).astype(np.float32)
    ordered_g_idx = rng.permutation(np.arange(64) // 32).astype(np.int32)
    ordered_zero_words = np.ascontiguousarray(qm.pack_along_rows(np.ascontiguousarray(ordered_zeros.T), 4).T)
    folder = os.path.join(root, "pack-odd")
    qm.write_model(folder, [
        tensor("p.weight_packed", "I32", packed), tensor("p.weight_scale", "F16", scales),
        tensor("p.weight_zero_point", "I32", zero_words), tensor("p.weight_shape", "I64", np.array([out, inputs])),
        tensor("o.weight_packed", "I32", qm.pack_along_rows(ordered, 4)),
        tensor("o.weight_scale", "F32", ordered_scales), tensor("o.weight_zero_point", "I32", ordered_zero_words),
        tensor("o.weight_shape", "I32", np.array([16, 64], np.int32)), tensor("o.weight_g_idx", "I32", ordered_g_idx)],
        {"quant_method": "compressed-tensors", "format": "pack-quantized",
         "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
             "num_bits": 4, "type": "int", "strategy": "group", "group_size": 32, "symmetric": False}}}})
    models["pack-odd"] = (folder, {
        "p.weight": qm.pack_quantized(packed, scales, (out, inputs), 4, 32, zero_words),
        "o.weight": qm.pack_quantized(qm.pack_along_rows(ordered, 4), ordered_scales, (16, 64), 4, 32,
                                      ordered_zero_words, ordered_g_idx)})
    return models


# Each malformed model: its broken weight, the word its one-line error must hold, and whether the problem shows in
# the parts' shapes (no dequant files) or only in their values (the dequant files fail to read).
MALFORMED = {
    "missing-part": ("m.weight", "qzeros", "shapes"),
    "block-grid": ("m.weight", "weight_scale_inv", "shapes"),
    "wrong-dtype": ("m.weight", "I32", "shapes"),
    "g_idx-range": ("m.weight", "g_idx", "values"),
    "bits": ("m.weight", "bits", "shapes"),
    "variant": ("m.weight", "gemv", "shapes"),
    "weight_shape": ("m.weight", "weight_shape", "shapes"),
}


def malformed_models(root):
    """{case: folder} of models that each hold a good BF16 tensor, `good` (a good quantized weight where the config
    allows one) and one broken weight; plus "no-tensors", whose config declares GPTQ but holds none of its parts."""
    rng = np.random.default_rng(RNG_SEED + 1)
    good = bf16_tensor("good", rng.standard_normal((4, 8)))
    folders = {}

    def model(case, tensors, config):
        folders[case] = os.path.join(root, case)
        qm.write_model(folders[case], [good] + tensors, config)

    gptq_config = {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False, "sym": True}
    qweight, qzeros, scales = gptq_parts(rng, 64, 16, 4, 2, rng.integers(0, 16, (2, 16)), None)
    gptq = [tensor("m.qweight", "I32", qweight), tensor("m.qzeros", "I32", qzeros), tensor("m.scales", "F16", scales)]
    model("missing-part", [gptq[0], gptq[2]], gptq_config)
    model("g_idx-range", gptq + [tensor("m.g_idx", "I32", np.r_[np.zeros(63), [7]].astype(np.int32))], gptq_config)
    model("bits", gptq, dict(gptq_config, bits=3))
    model("block-grid", [tensor("m.weight", "F8_E4M3", fp8_codes(rng, (300, 200))),
                         tensor("m.weight_scale_inv", "F32", np.ones((2, 2), np.float32))],
          {"quant_method": "fp8", "weight_block_size": [128, 128]})
    awq = [tensor("m.qweight", "I32", rng.integers(0, 1 << 30, (64, 2), dtype=np.int32)),
           tensor("m.qzeros", "I32", rng.integers(0, 1 << 30, (2, 2), dtype=np.int32))]
    model("wrong-dtype", awq + [tensor("m.scales", "I32", np.ones((2, 16), np.int32))],
          {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemm"})
    model("variant", awq + [tensor("m.scales", "F16", np.ones((2, 16), np.float16))],
          {"quant_method": "awq", "bits": 4, "group_size": 32, "version": "gemv"})
    model("weight_shape", [tensor("m.weight_packed", "I32", rng.integers(0, 1 << 30, (13, 13), dtype=np.int32)),
                           tensor("m.weight_scale", "F16", np.ones((13, 1), np.float16)),
                           tensor("m.weight_shape", "I64", np.array([13, 500]))],
          {"quant_method": "compressed-tensors", "format": "pack-quantized"})
    model("no-tensors", [], gptq_config)
    return folders
