"""Quantized weights at the edges of their schemes (quantized_fixtures.py: shapes that do not divide by the block or
group, NaN and subnormal FP8 bytes, MXFP4 exponents 0 and 255, a GPTQ zero of 0, act-order, packed zero points), and
malformed ones: only the broken weight fails, with one line naming it and what is wrong; everything else mounts and
reads."""
import errno
import json
import os
import shutil
import tempfile
import unittest

import numpy as np

from quantized_fixtures import MALFORMED, edge_models, malformed_models
from quantized_models import same_16_bits
from tensorfs_mount import Mount, read_file, run, same_floats


def setUpModule():
    global ROOT, EDGES, BROKEN
    ROOT = tempfile.mkdtemp(prefix="tensorfs-quantized-")
    EDGES = edge_models(os.path.join(ROOT, "edges"))
    BROKEN = malformed_models(os.path.join(ROOT, "malformed"))


def tearDownModule():
    shutil.rmtree(ROOT)


class EdgesOfEachScheme(unittest.TestCase):
    def test_values_in_every_view(self):
        for name, (folder, weights) in EDGES.items():
            with self.subTest(model=name), Mount(folder) as mount:
                for weight, expected in weights.items():
                    got = np.frombuffer(read_file(mount.tensor(weight, "dequant.f32")), dtype="<f4")
                    self.assertTrue(same_floats(expected.ravel(), got), weight)
                    for kind in ("bf16", "f16"):
                        self.assertTrue(same_16_bits(read_file(mount.tensor(weight, f"dequant.{kind}")), expected,
                                                     kind), (weight, kind))
                    self.assertEqual(json.loads(read_file(mount.tensor(weight, "meta.json")))["shape"],
                                     list(expected.shape))
                    # Every run of rows alone, as a reader of a slice asks for it (each row its own read).
                    row = expected.shape[-1] * 4
                    with open(mount.tensor(weight, "dequant.f32"), "rb") as f:
                        rows = expected.reshape(-1, expected.shape[-1])
                        for index in (len(rows) - 1, len(rows) // 2):
                            got_row = np.frombuffer(os.pread(f.fileno(), row, index * row), dtype="<f4")
                            self.assertTrue(same_floats(rows[index], got_row), (weight, index))

    def test_cat_and_validate(self):
        for name, (folder, weights) in EDGES.items():
            with self.subTest(model=name):
                self.assertEqual(run("validate", folder).returncode, 0, run("validate", folder).stderr)
                weight, expected = next(iter(weights.items()))
                result = run("cat", folder, weight, text=False)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertTrue(same_floats(expected.ravel(), np.frombuffer(result.stdout, dtype="<f4")))


class MalformedWeights(unittest.TestCase):
    def test_validate_names_the_weight_and_what_is_wrong(self):
        for case, (weight, word, _) in MALFORMED.items():
            with self.subTest(case=case):
                result = run("validate", BROKEN[case])
                self.assertEqual(result.returncode, 1, result.stdout)
                lines = result.stderr.strip().splitlines()
                self.assertEqual(len(lines), 1, result.stderr)
                self.assertIn(weight, lines[0])
                self.assertIn(word, lines[0])
        result = run("validate", BROKEN["no-tensors"])
        self.assertEqual(result.returncode, 1)
        self.assertIn("gptq", result.stderr)

    def test_only_the_broken_weight_fails(self):
        for case, (weight, word, shows_in) in MALFORMED.items():
            with self.subTest(case=case), Mount(BROKEN[case]) as mount:
                good = np.frombuffer(read_file(mount.tensor("good", "dequant.f32")), dtype="<f4")
                self.assertEqual(good.size, 32)
                meta = json.loads(read_file(mount.tensor(weight, "meta.json")))
                if shows_in == "shapes":
                    self.assertIsNone(meta["dequant"])
                    self.assertIn(word, meta["quantization"]["error"])
                    self.assertNotIn("dequant.f32", os.listdir(os.path.join(mount.path, weight)))
                else:
                    with self.assertRaises(OSError) as failed:
                        read_file(mount.tensor(weight, "dequant.f32"))
                    self.assertEqual(failed.exception.errno, errno.EIO)
                # Its stored bytes are there all the same, and the mount goes on serving.
                self.assertGreater(len(read_file(mount.tensor(weight, "raw"))), 0)
                self.assertEqual(read_file(mount.tensor("good", "dequant.f32")), good.tobytes())
                cat = run("cat", BROKEN[case], weight)
                self.assertEqual(cat.returncode, 1)
                self.assertEqual(len(cat.stderr.strip().splitlines()), 1, cat.stderr)
                self.assertIn(weight, cat.stderr)
                self.assertIn(word, cat.stderr)

    def test_a_config_without_its_tensors_still_mounts(self):
        with Mount(BROKEN["no-tensors"]) as mount:
            model = json.loads(read_file(os.path.join(mount.path, "model.json")))
            self.assertEqual(len(model["quantization"]["problems"]), 1)
            self.assertEqual(len(read_file(mount.tensor("good", "dequant.f32"))), 128)


if __name__ == "__main__":
    unittest.main()
