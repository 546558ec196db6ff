"""Hostile tensor names: every tensor is reachable under its escaped directory name (interface contract, "Names"),
model.json's "renamed" maps them, nothing appears outside the tree, and lookups behave like any filesystem's."""
import errno
import json
import os
import shutil
import struct
import tempfile
import unittest

from tensorfs_mount import Mount, run

RESERVED_ROOT_NAMES = (b"model.json", b"model.safetensors", b"source")
TENSOR_FILES = ["dequant.bf16", "dequant.f16", "dequant.f32", "dequant.npy", "meta.json", "raw"]
LONG_UTF8 = "é" * 200  # 400 bytes of two-byte characters: the cut must not split one
HOSTILE_NAMES = [
    "plain.weight", "a/b", "/abs", "a/../../b", "../escape", "..", ".", "x\0y", "\0", ".hidden", ".tensorfs",
    "model.json", "model.safetensors", "model.safetensors.x", "%2F", "%", "100%", "n" * 300, "/" * 300, LONG_UTF8,
    "raw", "meta.json", "source",
]


def escaped(name):
    """The directory name the contract gives `name`, before any cut of a name over 255 bytes."""
    data = name.encode()
    out = bytearray()
    for i, byte in enumerate(data):
        if byte in b"%/\0" or (i == 0 and (byte == ord(".") or data in RESERVED_ROOT_NAMES)):
            out += b"%%%02X" % byte
        else:
            out.append(byte)
    return out.decode()


def write_safetensors(path, names):
    """One F32 tensor of two values per name: (index, -index)."""
    header, data = {}, b""
    for i, name in enumerate(names):
        header[name] = {"dtype": "F32", "shape": [2], "data_offsets": [len(data), len(data) + 8]}
        data += struct.pack("<2f", i, -i)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


class HostileNames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-names-")
        cls.source = os.path.join(cls.folder, "hostile.safetensors")
        write_safetensors(cls.source, HOSTILE_NAMES)
        cls.mount = Mount(cls.source).__enter__()
        with open(os.path.join(cls.mount.path, "model.json")) as f:
            cls.model = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.mount.__exit__(None, None, None)
        shutil.rmtree(cls.folder)

    def directory_of(self, name):
        return self.model["renamed"].get(name, name)

    def test_validate_accepts_the_names(self):
        result = run("validate", self.source)
        self.assertEqual(result.returncode, 0, result.stderr)

    def test_every_name_maps_to_its_escaped_directory(self):
        self.assertEqual(self.model["tensor_count"], len(HOSTILE_NAMES))
        for name in HOSTILE_NAMES:
            with self.subTest(name=name):
                directory = self.directory_of(name)
                expected = escaped(name)
                if len(expected.encode()) <= 255:
                    self.assertEqual(directory, expected)
                    self.assertEqual(name in self.model["renamed"], expected != name)
                else:
                    # Cut, with a hash suffix: a prefix of the escaped name, whole characters and escapes only.
                    self.assertLessEqual(len(directory.encode()), 255)
                    stem = directory[:directory.rindex("~")]
                    self.assertTrue(expected.startswith(stem))
                    self.assertGreater(len(stem.encode()), 200)
                    self.assertFalse(stem.endswith("%") or stem[-2:-1] == "%")
        directories = [self.directory_of(name) for name in HOSTILE_NAMES]
        self.assertEqual(len(set(directories)), len(directories))
        self.assertEqual(self.model["renamed"].keys() - set(HOSTILE_NAMES), set())

    def test_root_holds_exactly_the_tree(self):
        root = sorted(os.listdir(self.mount.path))
        self.assertEqual(root, sorted(["model.json", "model.safetensors", ".tensorfs", "source"] +
                                      [self.directory_of(n) for n in HOSTILE_NAMES]))
        for entry in root:
            self.assertNotIn("/", entry)
        # The root's model.json, model.safetensors and .tensorfs are its own, not tensors named like them.
        self.assertEqual(self.model["format"], "safetensors")
        self.assertEqual(os.path.getsize(os.path.join(self.mount.path, "model.safetensors")),
                         self.model["export"]["size"])
        self.assertEqual(self.directory_of("model.safetensors"), "%6Dodel.safetensors")
        self.assertEqual(self.directory_of("source"), "%73ource")
        self.assertTrue(os.path.isdir(os.path.join(self.mount.path, "source")))
        self.assertEqual(sorted(os.listdir(os.path.join(self.mount.path, ".tensorfs"))), ["metrics", "stats.json"])

    def test_every_tensor_is_reachable_with_its_bytes_and_name(self):
        for i, name in enumerate(HOSTILE_NAMES):
            with self.subTest(name=name):
                folder = os.path.join(self.mount.path, self.directory_of(name))
                self.assertEqual(sorted(os.listdir(folder)), TENSOR_FILES)
                with open(os.path.join(folder, "raw"), "rb") as f:
                    self.assertEqual(f.read(), struct.pack("<2f", i, -i))
                with open(os.path.join(folder, "dequant.f32"), "rb") as f:
                    self.assertEqual(f.read(), struct.pack("<2f", i, -i))
                with open(os.path.join(folder, "meta.json")) as f:
                    self.assertEqual(json.load(f)["name"], name)

    def test_nothing_appears_outside_the_tree(self):
        self.assertEqual(os.listdir(self.mount.tmp), ["mnt"])
        self.assertEqual(os.listdir(self.folder), ["hostile.safetensors"])
        # readdir itself: no entry is '.', '..' or holds a '/' or NUL beyond the two of every directory.
        entries = [e.name for e in os.scandir(self.mount.path)]
        self.assertFalse({".", ".."} & set(entries))
        self.assertFalse([e for e in entries if "/" in e or "\0" in e])

    def test_dot_and_dotdot_are_the_filesystem_s(self):
        m = self.mount.path
        self.assertEqual(os.stat(os.path.join(m, "..")).st_ino, os.stat(self.mount.tmp).st_ino)
        self.assertEqual(os.stat(os.path.join(m, ".")).st_ino, os.stat(m).st_ino)
        tensor = os.path.join(m, self.directory_of("a/b"))
        self.assertEqual(os.stat(os.path.join(tensor, "..")).st_ino, os.stat(m).st_ino)
        with open(os.path.join(tensor, "..", "model.json")) as f:
            self.assertEqual(json.load(f)["format"], "safetensors")
        # The tensor named ".." is its escaped directory, never the parent.
        dotdot = os.path.join(m, self.directory_of(".."))
        self.assertEqual(sorted(os.listdir(dotdot)), TENSOR_FILES)

    def test_absent_and_malformed_lookups_fail_like_any_filesystem(self):
        m = self.mount.path
        tensor = os.path.join(m, self.directory_of("a/b"))
        cases = [
            (os.path.join(m, "absent"), errno.ENOENT),
            (os.path.join(m, "a"), errno.ENOENT),  # "a/b" made no folder "a"
            (os.path.join(m, "a", "b"), errno.ENOENT),
            (os.path.join(tensor, "absent"), errno.ENOENT),
            (os.path.join(tensor, "..", "absent"), errno.ENOENT),
            (os.path.join(tensor, "..", "..", "mnt", "absent"), errno.ENOENT),
            (os.path.join(tensor, "raw", "x"), errno.ENOTDIR),
            (os.path.join(m, "model.json", "x"), errno.ENOTDIR),
            (os.path.join(m, ".tensorfs", "absent"), errno.ENOENT),
            (os.path.join(m, "x" * 256), errno.ENAMETOOLONG),
            (os.path.join(m, "%2E%2E"), errno.ENOENT),
        ]
        for path, code in cases:
            with self.subTest(path=path):
                with self.assertRaises(OSError) as caught:
                    os.stat(path)
                self.assertEqual(caught.exception.errno, code)


if __name__ == "__main__":
    unittest.main()
