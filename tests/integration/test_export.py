"""MOUNTPOINT/model.safetensors and `tensorfs convert` through real mounts: for every vector model and every
export_dtype, the file is valid for `tensorfs validate` and for an independent reader (safetensors_reader.py), laid
out as safetensors' writer does, holds every tensor under its name in the source's order with the source's
metadata, and each tensor's bytes equal its raw file (dtype kept) or its converted dequant.* file, bit for bit;
`cmp` of the mounted file and convert's output; numpy.memmap of a tensor at its offset; reads decode only the
tensors they cover; the 100 MB header limit; convert's progress line, temporary name, and what it leaves after a
failure or a signal."""
import json
import os
import pty
import resource
import signal
import shutil
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import remote_servers
import s3_servers
from safetensors_files import write_safetensors
from safetensors_reader import SafetensorsFile
from tensorfs_mount import BIN, VECTORS, Mount, mount_stats, read_file, run, wait_until

SOURCES = ["gguf/mixed.gguf", "gguf/align64.gguf", "gguf/tiny-llama-Q4_K_M.gguf",
           "gguf/split/tiny-llama-Q4_K_M-00002-of-00003.gguf", "safetensors/all_dtypes.safetensors",
           "safetensors/sharded/model.safetensors.index.json"]
DTYPES = ["keep", "bf16", "f16", "f32"]
VIEW_FILES = {"F32": "dequant.f32", "BF16": "dequant.bf16", "F16": "dequant.f16"}
INTEGERS = {"BOOL", "U8", "I8", "U16", "I16", "U32", "I32", "U64", "I64"}
SAFETENSORS_DTYPES = INTEGERS | {"F16", "BF16", "F32", "F64", "C64", "F8_E4M3", "F8_E5M2"}


def expected_dtype(stored, export_dtype):
    """What the contract makes of a tensor stored as `stored` (a safetensors or ggml type name)."""
    if stored in INTEGERS or export_dtype == "keep":
        return stored if stored in SAFETENSORS_DTYPES else "F32"
    return export_dtype.upper()


class EveryModelEveryDtype(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-export-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.folder)

    def check_model(self, source, export_dtype):
        with Mount(source, "-o", f"export_dtype={export_dtype}") as m:
            path = os.path.join(m.path, "model.safetensors")
            model = json.loads(read_file(os.path.join(m.path, "model.json")))
            data = read_file(path)
            self.assertEqual(os.stat(path).st_size, len(data))
            self.assertEqual(model["export"]["size"], len(data))
            self.assertEqual(model["export"]["dtype"], export_dtype)

            validated = run("validate", path)
            self.assertEqual(validated.returncode, 0, validated.stderr)
            parsed = SafetensorsFile(data)
            parsed.check_writer_layout()

            # Every tensor, in the source's order, under its own name (model.json "renamed" maps the folders).
            names = [t[0] for t in parsed.tensors]
            self.assertEqual(len(names), model["tensor_count"])
            folder_of = {name: model["renamed"].get(name, name) for name in names}
            root = set(os.listdir(m.path)) - {"model.json", "model.safetensors", ".tensorfs", "source"}
            self.assertEqual(sorted(folder_of.values()), sorted(root))
            metas = [json.loads(read_file(m.tensor(folder_of[n], "meta.json"))) for n in names]
            listed = json.loads(run("ls", "--json", source).stdout)
            self.assertEqual(names, [t["name"] for t in listed])
            self.assertEqual([(t["file"], t["offset"]) for t in metas], sorted((t["file"], t["offset"]) for t in metas))

            # Metadata: "format" first ("pt" unless the source has its own), then the source's as strings.
            self.assertEqual(next(iter(parsed.metadata)), "format")
            self.assertEqual(parsed.metadata["format"], model["metadata"].get("format", "pt"))
            self.assertEqual(set(parsed.metadata) - {"format"}, set(model["metadata"]) - {"format"})
            for key, value in model["metadata"].items():
                text = parsed.metadata[key]
                self.assertEqual(text if isinstance(value, str) else json.loads(text), value, key)

            for name, dtype, shape, begin, end in parsed.tensors:
                with self.subTest(tensor=name):
                    meta = metas[names.index(name)]
                    self.assertEqual(shape, meta["shape"])
                    self.assertEqual(dtype, expected_dtype(meta["dtype"], export_dtype))
                    own = read_file(m.tensor(folder_of[name], "raw")) if dtype == meta["dtype"] else \
                        read_file(m.tensor(folder_of[name], VIEW_FILES[dtype]))
                    self.assertEqual(data[begin:end], own)

            # Reads at odd offsets and lengths across tensor borders.
            borders = [t[3] for t in parsed.tensors] + [parsed.data_start]
            with open(path, "rb") as f:
                for border in borders[::3]:
                    for delta, length in ((-3, 7), (-1, 2), (0, 1), (1, 4099), (-4097, 9000)):
                        start = max(0, border + delta)
                        f.seek(start)
                        self.assertEqual(f.read(length), data[start:start + length])

            converted = os.path.join(self.folder, "converted.safetensors")
            result = run("convert", source, converted, "--dtype", export_dtype)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(subprocess.run(["cmp", path, converted]).returncode, 0)
            os.unlink(converted)
            return parsed, data

    def test_every_model_every_dtype(self):
        for relative in SOURCES:
            for export_dtype in DTYPES:
                with self.subTest(source=relative, export_dtype=export_dtype):
                    self.check_model(os.path.join(VECTORS, relative), export_dtype)

    def test_hostile_names_and_source_metadata(self):
        source = os.path.join(self.folder, "names.safetensors")
        names = ["a/b", "..", "model.safetensors", "model.json", "x\0y", "é" * 200, "%"]
        write_safetensors(source, [(n, "F16", [2], bytes([i, 0x3C, i, 0xBC])) for i, n in enumerate(names)],
                          metadata={"format": "np", "note": "kept"})
        for export_dtype in DTYPES:
            parsed, data = self.check_model(source, export_dtype)
            self.assertEqual([t[0] for t in parsed.tensors], names)
            self.assertEqual(parsed.metadata, {"format": "np", "note": "kept"})

    def test_a_remote_source_exports_the_same_bytes(self):
        # Over HTTP (nginx on 127.0.0.1, the remote layer's range requests), from the Hub-like server and from the
        # S3 store: the very bytes of the local file, for a GGUF split set (raw parts from three remote files) and a
        # sharded model.
        for where in (remote_servers.HTTP, remote_servers.HUB, s3_servers.S3):
            for relative, export_dtype in (("gguf/split/tiny-llama-Q4_K_M-00001-of-00003.gguf", "keep"),
                                           ("safetensors/sharded/model.safetensors.index.json", "f16")):
                with self.subTest(where=where.label, source=relative):
                    local = os.path.join(self.folder, "local.safetensors")
                    result = run("convert", os.path.join(VECTORS, relative), local, "--dtype", export_dtype)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    with Mount(where.source(relative), "-o", f"export_dtype={export_dtype}") as m:
                        self.assertEqual(read_file(os.path.join(m.path, "model.safetensors")), read_file(local))
                    os.unlink(local)

    def test_numpy_memmap_of_one_tensor_inside_the_file(self):
        with Mount(os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")) as m:
            path = os.path.join(m.path, "model.safetensors")
            parsed = SafetensorsFile(read_file(path))
            name, dtype, shape, begin, end = next(t for t in parsed.tensors if t[0] == "blk.1.ffn_up.weight")
            self.assertEqual(dtype, "F32")
            mapped = np.memmap(path, dtype="<f4", mode="r", offset=begin, shape=tuple(shape))
            expected = np.fromfile(m.tensor(name, "dequant.f32"), dtype="<f4").reshape(shape)
            self.assertEqual(mapped.tobytes(), expected.tobytes())
            del mapped

    def test_reads_decode_only_the_tensors_they_cover(self):
        with Mount(os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf"), "--cache-size", "1M") as m:
            path = os.path.join(m.path, "model.safetensors")
            model = json.loads(read_file(os.path.join(m.path, "model.json")))
            chunk = mount_stats(m)["cache"]["chunk_bytes"]
            fd = os.open(path, os.O_RDONLY)
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)   # no read-ahead: one page per read
                header_size = model["export"]["header_size"]
                header = json.loads(os.pread(fd, header_size - 8, 8))
                header.pop("__metadata__")
                for name, entry in header.items():
                    begin, end = (header_size + o for o in entry["data_offsets"])
                    if end - begin < 3 * 4096:
                        continue
                    stored = json.loads(read_file(m.tensor(name, "meta.json")))["dtype"]
                    with self.subTest(tensor=name, stored=stored):
                        before = mount_stats(m)["decode"]["bytes"]
                        os.pread(fd, 1, (begin + end) // 2)
                        decoded = mount_stats(m)["decode"]["bytes"] - before
                        if stored == entry["dtype"]:
                            self.assertEqual(decoded, 0)
                        else:
                            self.assertGreater(decoded, 0)
                            self.assertLessEqual(decoded, 2 * chunk)
            finally:
                os.close(fd)


class HeaderLimit(unittest.TestCase):
    def test_a_header_over_100_mb_gives_no_file_and_says_why(self):
        folder = tempfile.mkdtemp(prefix="tensorfs-export-")
        try:
            # A GGUF whose metadata holds a string of 10^8 bytes (GGUF has no limit; a safetensors header of that
            # size would be refused itself): its safetensors header cannot fit the limit.
            source = os.path.join(folder, "big.gguf")
            text = struct.pack("<Q", 3) + b"big" + struct.pack("<I", 8) + struct.pack("<Q", 10 ** 8) + b"x" * 10 ** 8
            tensor = struct.pack("<Q", 1) + b"t" + struct.pack("<IQIQ", 1, 1, 0, 0)
            head = b"GGUF" + struct.pack("<IQQ", 3, 1, 1) + text + tensor
            with open(source, "wb") as f:
                f.write(head + b"\0" * (-len(head) % 32) + struct.pack("<f", 1.0))
            with Mount(source) as m:
                self.assertNotIn("model.safetensors", os.listdir(m.path))
                self.assertFalse(os.path.exists(os.path.join(m.path, "model.safetensors")))
                model = json.loads(read_file(os.path.join(m.path, "model.json")))
                self.assertIn("100000000", model["export"]["error"])
                self.assertEqual(read_file(m.tensor("t", "raw")), struct.pack("<f", 1.0))   # the rest is all there
            out = os.path.join(folder, "out.safetensors")
            result = run("convert", source, out)
            self.assertEqual(result.returncode, 1)
            self.assertIn("100000000", result.stderr)
            self.assertEqual(len(result.stderr.splitlines()), 1)
            self.assertEqual(sorted(os.listdir(folder)), ["big.gguf"])
        finally:
            shutil.rmtree(folder)


class Convert(unittest.TestCase):
    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="tensorfs-convert-")
        self.addCleanup(shutil.rmtree, self.folder)
        self.source = os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")

    def test_progress_line_on_a_terminal_only(self):
        out = os.path.join(self.folder, "out.safetensors")
        leader, follower = pty.openpty()
        try:
            process = subprocess.Popen([BIN, "convert", self.source, out], stdin=subprocess.DEVNULL,
                                       stdout=subprocess.DEVNULL, stderr=follower)
            os.close(follower)
            text = b""
            while True:
                try:
                    piece = os.read(leader, 4096)
                except OSError:   # EIO: the terminal's other side closed
                    break
                if not piece:
                    break
                text += piece
            self.assertEqual(process.wait(timeout=120), 0)
        finally:
            os.close(leader)
        # The last redraw of the line: bytes, share, rate and the time it took; then the line ends.
        last = text.decode().split("\r")[-2] if text.endswith(b"\r\n") else text.decode().split("\r")[-1]
        self.assertRegex(last, rf"^writing {out}: [0-9.]+ MiB of [0-9.]+ MiB \(100%\), [0-9.]+ [KMG]iB/s, "
                               r"0:[0-9][0-9]\x1b\[K")
        self.assertTrue(text.endswith(b"\n"))
        result = run("convert", self.source, out)   # stderr a pipe: nothing
        self.assertEqual((result.returncode, result.stderr), (0, ""))

    def test_usage_and_unwritable_targets(self):
        for args, message in [((self.source,), "convert needs SOURCE and OUT.safetensors"),
                              ((self.source, "x", "--dtype", "int8"), "bad --dtype 'int8'"),
                              ((self.source, "x", "--bogus"), "unknown option '--bogus'"),
                              ((self.source, self.folder), "is a folder"),
                              ((self.source, os.path.join(self.folder, "absent", "x.safetensors")), "cannot create")]:
            with self.subTest(args=args):
                result = run("convert", *args)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertIn(message, result.stderr)
                self.assertEqual(len(result.stderr.splitlines()), 1)
        self.assertEqual(os.listdir(self.folder), [])

    def test_a_failed_write_leaves_nothing(self):
        out = os.path.join(self.folder, "out.safetensors")

        def small_file_limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

        result = subprocess.run([BIN, "convert", self.source, out], capture_output=True, text=True, timeout=120,
                                preexec_fn=small_file_limit)
        self.assertEqual(result.returncode, 1)
        self.assertIn(f"tensorfs: {out}: cannot write: File too large", result.stderr)
        self.assertEqual(os.listdir(self.folder), [])

    def test_a_signal_leaves_nothing(self):
        # A large sparse F32 model (8 GiB of zeros, no disk) converted to BF16: seconds of work at the least, and
        # the signal goes as soon as the temporary file exists.
        source = os.path.join(self.folder, "sparse.safetensors")
        count = 1 << 31
        header = json.dumps({"w": {"dtype": "F32", "shape": [count], "data_offsets": [0, 4 * count]}},
                            separators=(",", ":")).encode()
        header += b" " * (-len(header) % 8)
        with open(source, "wb") as f:
            f.write(len(header).to_bytes(8, "little") + header)
            f.truncate(8 + len(header) + 4 * count)
        out_folder = os.path.join(self.folder, "out")
        os.mkdir(out_folder)
        for signal_number in (signal.SIGINT, signal.SIGTERM):
            with self.subTest(signal=signal_number):
                process = subprocess.Popen([BIN, "convert", source, os.path.join(out_folder, "w.safetensors"),
                                            "--dtype", "bf16"], stderr=subprocess.PIPE)
                self.assertTrue(wait_until(lambda: os.listdir(out_folder) != []))
                self.assertTrue(os.listdir(out_folder)[0].startswith(".w.safetensors.tensorfs-"))
                process.send_signal(signal_number)
                self.assertEqual(process.wait(timeout=60), -signal_number)
                process.stderr.close()
                self.assertEqual(os.listdir(out_folder), [])


if __name__ == "__main__":
    unittest.main()
