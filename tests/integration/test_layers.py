"""Every include of the project points down a layer (tests/layers.txt), and the check itself finds what it must."""
import os
import shutil
import tempfile
import unittest

from layer_check import PROJECT, wrong_includes


class LayerTest(unittest.TestCase):
    def test_every_include_points_down(self):
        self.assertEqual(wrong_includes(), [])

    def test_the_check_finds_includes_up_and_across(self):
        # A copy of the project's sources with three wrong includes added: up from io to vfs, across from format to
        # remote, and up through a header of include/tensorfs/ that belongs to vfs.
        root = tempfile.mkdtemp(prefix="tensorfs-layers-")
        self.addCleanup(shutil.rmtree, root)
        for part in ("src", "include"):
            shutil.copytree(os.path.join(PROJECT, part), os.path.join(root, part))
        with open(os.path.join(root, "src", "io", "chunk_cache.cpp"), "a") as f:
            f.write('#include "tensorfs/content.hpp"\n')
        with open(os.path.join(root, "src", "format", "gguf.cpp"), "a") as f:
            f.write('#include "remote/hub.hpp"\n')
        with open(os.path.join(root, "include", "tensorfs", "chunk_cache.hpp"), "a") as f:
            f.write('#include "tensorfs/tree.hpp"\n')
        found = wrong_includes(root)
        self.assertEqual(len(found), 3, found)
        self.assertTrue(any(line.startswith("src/io/chunk_cache.cpp:") and "a layer above" in line for line in found))
        self.assertTrue(any(line.startswith("src/format/gguf.cpp:") and "a sibling layer" in line for line in found))
        self.assertTrue(any(line.startswith("include/tensorfs/chunk_cache.hpp:") for line in found))


if __name__ == "__main__":
    unittest.main()
