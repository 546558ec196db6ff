"""The commands people type: ls, info, cat, validate (no FUSE), stats (on a real mount), --help, --version and the
mount options of the bare `tensorfs SOURCE MOUNTPOINT -o ...` form. Every command runs on a GGUF file, a GGUF split
set, a safetensors file and a sharded safetensors folder, and its output is checked against the reference vectors
(manifest.json and the expected .f32 files), not only its exit status. The commands that read a SOURCE run again on
the same files over HTTP, from a Hub-like server (remote_servers.py) and from an S3 store (s3_servers.py)."""
import collections
import hashlib
import io
import json
import os
import pty
import re
import struct
import subprocess
import tempfile
import unittest

import numpy as np

import remote_servers
import s3_servers
from tensorfs_mount import BIN, VECTORS, Mount, is_mounted, manifest, run, same_floats, unmount

Tensor = collections.namedtuple("Tensor", "name dtype shape elements nbytes file offset raw_sha256 expected")
Source = collections.namedtuple("Source", "label path format files tensors metadata")


def gguf_tensor(entry, t):
    return Tensor(t["name"], t["ggml_type"].upper(), t["numpy_shape"], t["nelements"], t["raw_nbytes"],
                  os.path.basename(entry["file"]), t["data_offset"], t["raw_sha256"],
                  os.path.join(VECTORS, t["expected_f32"]))


def safetensors_tensor(entry, t):
    return Tensor(t["name"], t["dtype"], t["shape"], t["nelements"], t["raw_nbytes"], os.path.basename(entry["file"]),
                  t["abs_offset"], t["raw_sha256"], os.path.join(VECTORS, t["expected_f32"]))


def sources(where=remote_servers.LOCAL):
    """The four kinds of SOURCE, described from manifest.json alone, as SOURCEs of `where`. (A web server has no
    listing: there the sharded model is named by its index, which the folder rule picks.)"""
    m = manifest()
    gguf = {e["file"]: e for e in m["gguf"]}
    st = {e["file"]: e for e in m["safetensors"]}
    split = [gguf[f"gguf/split/tiny-llama-Q4_K_M-0000{i}-of-00003.gguf"] for i in (1, 2, 3)]
    shards = [st[f"safetensors/sharded/model-0000{i}-of-00003.safetensors"] for i in (1, 2, 3)]

    def gguf_source(label, entries, metadata):
        return Source(label, where.source(entries[0]["file"]), "gguf",
                      [(os.path.basename(e["file"]), e["file_size"]) for e in entries],
                      [gguf_tensor(e, t) for e in entries for t in e["tensors"]], metadata)

    def kv(entry):
        return {item["key"]: item["value"] for item in entry["metadata"]}

    sharded_metadata = dict(shards[0]["metadata"], total_size=m["safetensors_index"]["total_size"])
    return [
        gguf_source("gguf mixed", [gguf["gguf/mixed.gguf"]], kv(gguf["gguf/mixed.gguf"])),
        gguf_source("gguf tiny-llama", [gguf["gguf/tiny-llama-Q4_K_M.gguf"]], kv(gguf["gguf/tiny-llama-Q4_K_M.gguf"])),
        gguf_source("gguf split set", split, None),
        Source("safetensors file", where.source("safetensors/all_dtypes.safetensors"), "safetensors",
               [("all_dtypes.safetensors", st["safetensors/all_dtypes.safetensors"]["file_size"])],
               [safetensors_tensor(st["safetensors/all_dtypes.safetensors"], t)
                for t in st["safetensors/all_dtypes.safetensors"]["tensors"]],
               st["safetensors/all_dtypes.safetensors"]["metadata"]),
        Source("safetensors sharded folder",
               where.source("safetensors/sharded" if where.lists_folders else
                            "safetensors/sharded/model.safetensors.index.json"), "safetensors",
               [(os.path.basename(e["file"]), e["file_size"]) for e in shards],
               [safetensors_tensor(e, t) for e in shards for t in e["tensors"]], sharded_metadata),
    ]


def cat(source, tensor, *flags):
    """`tensorfs cat` with binary stdout."""
    return subprocess.run([BIN, "cat", source, tensor, *flags], capture_output=True, timeout=120)


def expected_values(tensor):
    return np.fromfile(tensor.expected, dtype="<f4").reshape(tensor.shape)


UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def assert_size_text(test, text, size):
    """`6.0 KiB` is `size` to its printed precision: one decimal below 100 of a unit, none above."""
    number, unit = text.split(" ")
    precision = 1 if unit == "B" else (0.05 if float(number) < 100 else 0.5) * UNITS[unit]
    test.assertLessEqual(abs(float(number) * UNITS[unit] - size), precision, f"{text} for {size} bytes")


def columns(line):
    """Cells of a table line: columns are two or more spaces apart; cells hold single spaces."""
    return re.split(r" {2,}", line.strip())


def sanitized_binary():
    with open(BIN, "rb") as f:
        return b"__asan_init" in f.read()


def write_safetensors(path, tensors, metadata=None):
    """A small safetensors file: tensors is a list of (name, dtype, shape, bytes)."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


class CommandsWithoutFuse(unittest.TestCase):
    where = remote_servers.LOCAL

    @classmethod
    def setUpClass(cls):
        cls.sources = sources(cls.where)

    def test_ls_table_lists_name_dtype_shape_size(self):
        for source in self.sources:
            with self.subTest(source=source.label):
                result = run("ls", source.path)
                self.assertEqual(result.returncode, 0, result.stderr)
                lines = result.stdout.splitlines()
                self.assertEqual(columns(lines[0]), ["NAME", "DTYPE", "SHAPE", "SIZE"])
                rows = {columns(line)[0]: columns(line) for line in lines[1:]}
                self.assertEqual(len(lines) - 1, len(source.tensors))
                self.assertEqual(set(rows), {t.name for t in source.tensors})
                for t in source.tensors:
                    name, dtype, shape, size = rows[t.name]
                    self.assertEqual(dtype, t.dtype, t.name)
                    self.assertEqual(json.loads(shape), t.shape, t.name)
                    assert_size_text(self, size, t.nbytes)
                # Columns line up: every SIZE cell ends where the header's does.
                self.assertEqual({len(line) for line in lines}, {len(lines[0])})

    def test_ls_json_is_the_meta_json_of_every_tensor(self):
        for source in self.sources:
            with self.subTest(source=source.label):
                result = run("ls", source.path, "--json")
                self.assertEqual(result.returncode, 0, result.stderr)
                metas = json.loads(result.stdout)
                self.assertEqual(sorted(m["name"] for m in metas), sorted(t.name for t in source.tensors))
                by_name = {m["name"]: m for m in metas}
                for t in source.tensors:
                    meta = by_name[t.name]
                    self.assertEqual((meta["dtype"], meta["shape"], meta["elements"], meta["nbytes"]),
                                     (t.dtype, t.shape, t.elements, t.nbytes), t.name)
                    self.assertEqual((meta["file"], meta["offset"]), (t.file, t.offset), t.name)
                    self.assertEqual(meta["dequant"], {"dtype": "float32", "shape": t.shape, "nbytes": t.elements * 4})

    def test_ls_json_equals_the_mounted_meta_json_files(self):
        source = self.sources[1]
        metas = json.loads(run("ls", source.path, "--json").stdout)
        with Mount(source.path) as m:
            for meta in metas:
                with open(m.tensor(meta["name"], "meta.json")) as f:
                    self.assertEqual(json.load(f), meta)

    def info_summary(self, text):
        """The `key  value` lines before the first blank line of `tensorfs info`."""
        summary = {}
        for line in text.split("\n\n")[0].splitlines():
            key, value = line[:17].strip(), line[17:]
            summary.setdefault(key or "files", [])
            if key == "files" or not key:
                summary["files"].append(value)
            else:
                summary[key] = value
        return summary

    def test_info_text_figures(self):
        for source in self.sources:
            with self.subTest(source=source.label):
                result = run("info", source.path)
                self.assertEqual(result.returncode, 0, result.stderr)
                summary = self.info_summary(result.stdout)
                parameters = sum(t.elements for t in source.tensors)
                nbytes = sum(t.nbytes for t in source.tensors)
                self.assertEqual(summary["format"], source.format)
                self.assertEqual(summary["tensors"], str(len(source.tensors)))
                self.assertEqual(summary["parameters"].split(" ")[0], str(parameters))
                self.assertEqual(summary["size"].split(" ")[0], str(nbytes))
                self.assertEqual(summary["bits per weight"], f"{8 * nbytes / parameters:.2f}")
                self.assertEqual([f.split(" (")[0] for f in summary["files"]], [name for name, _ in source.files])
                for line, (_, size) in zip(summary["files"], source.files):
                    assert_size_text(self, line.split(" (")[1].rstrip(")"), size)

                # The dtype table: tensors, parameters and bits per weight per dtype.
                table = result.stdout.split("\n\n")[1].splitlines()
                self.assertEqual(columns(table[0]), ["DTYPE", "TENSORS", "PARAMETERS", "SIZE", "BITS/WEIGHT"])
                counted = collections.Counter(t.dtype for t in source.tensors)
                params, stored = collections.Counter(), collections.Counter()
                for t in source.tensors:
                    params[t.dtype] += t.elements
                    stored[t.dtype] += t.nbytes
                shown = {columns(row)[0]: columns(row)[1:3] + columns(row)[-1:] for row in table[1:]}
                self.assertEqual(shown, {d: [str(counted[d]), str(params[d]),
                                             f"{8 * stored[d] / params[d]:.2f}" if params[d] else "-"]
                                         for d in counted})

    def test_info_text_metadata_shortened(self):
        tiny = run("info", self.sources[1].path).stdout
        metadata = tiny.split("\n\n")[2].splitlines()
        self.assertEqual(metadata[0], "metadata (21 keys)")
        lines = {columns(line)[0]: columns(line)[1] for line in metadata[1:]}
        self.assertEqual(lines["general.architecture"], "llama")
        self.assertEqual(lines["llama.attention.layer_norm_rms_epsilon"], "1e-05")
        self.assertRegex(lines["tokenizer.ggml.tokens"], r'^\[512 items: "<unk>", "<s>", "</s>", .*, \.\.\.\]$')
        self.assertRegex(lines["tokenizer.ggml.scores"], r"^\[512 items: 0, 0, .*, \.\.\.\]$")

        mixed = run("info", self.sources[0].path).stdout.split("\n\n")[2]
        self.assertIn('  test.string_ctrl      line1\\nline2\\t"quoted" back\\slash\n', mixed)
        self.assertIn('  test.arr_str          ["alpha", "βeta", "", "with space", "emoji 🦙", '
                      '"quote\\"and\\\\backslash"]\n', mixed)
        self.assertIn("  test.f32              3.1415927\n", mixed)
        self.assertIn("  test.u64              18446744073709551615\n", mixed)
        self.assertIn('  test.string_empty     ""\n', mixed)

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "long.safetensors")
            write_safetensors(path, [("w", "F32", [1], b"\0\0\0\0")], {"template": "é" * 300, "short": "ok"})
            text = run("info", path).stdout
            self.assertIn("  template  " + "é" * 80 + "... (600 bytes)\n", text)
            self.assertIn("  short     ok\n", text)

    def test_info_json_is_model_json_plus_figures(self):
        for source in self.sources:
            with self.subTest(source=source.label):
                result = run("info", source.path, "--json")
                self.assertEqual(result.returncode, 0, result.stderr)
                info = json.loads(result.stdout)
                parameters = sum(t.elements for t in source.tensors)
                nbytes = sum(t.nbytes for t in source.tensors)
                self.assertEqual(info["format"], source.format)
                self.assertEqual(info["files"], [{"path": p, "size": s} for p, s in source.files])
                self.assertEqual(info["tensor_count"], len(source.tensors))
                self.assertEqual(info["total_nbytes"], nbytes)
                self.assertEqual(info["parameter_count"], parameters)
                self.assertAlmostEqual(info["bits_per_weight"], 8 * nbytes / parameters, places=12)
                counted = collections.Counter(t.dtype for t in source.tensors)
                self.assertEqual({d: v["tensors"] for d, v in info["dtypes"].items()}, dict(counted))
                self.assertEqual(sum(v["nbytes"] for v in info["dtypes"].values()), nbytes)
                if source.metadata is not None:
                    self.assertEqual(info["metadata"], source.metadata)
                with Mount(source.path) as m, open(os.path.join(m.path, "model.json")) as f:
                    model = json.load(f)
                self.assertEqual({k: v for k, v in info.items() if k in model}, model)

    def test_cat_f32_is_the_expected_values(self):
        for source in self.sources:
            for t in source.tensors:
                with self.subTest(source=source.label, tensor=t.name):
                    result = cat(source.path, t.name)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    actual = np.frombuffer(result.stdout, dtype="<f4").reshape(t.shape)
                    self.assertTrue(same_floats(expected_values(t), actual))

    def test_cat_f32_is_the_default(self):
        # One tensor per source: the values of the default are checked for every tensor above, and the flag takes
        # the same road for each (every process a sanitized build starts costs about 0.1 s of CPU).
        for source in self.sources:
            t = source.tensors[0]
            with self.subTest(source=source.label, tensor=t.name):
                result = cat(source.path, t.name, "--f32")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout, cat(source.path, t.name).stdout)

    def test_cat_npy_loads_with_numpy(self):
        for source in self.sources:
            for t in source.tensors:
                with self.subTest(source=source.label, tensor=t.name):
                    result = cat(source.path, t.name, "--npy")
                    self.assertEqual(result.returncode, 0, result.stderr)
                    array = np.load(io.BytesIO(result.stdout))
                    self.assertEqual(array.dtype, np.dtype("<f4"))
                    self.assertTrue(same_floats(expected_values(t), array))

    def test_cat_raw_is_the_stored_bytes(self):
        for source in self.sources:
            for t in source.tensors:
                with self.subTest(source=source.label, tensor=t.name):
                    result = cat(source.path, t.name, "--raw")
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertEqual(len(result.stdout), t.nbytes)
                    self.assertEqual(hashlib.sha256(result.stdout).hexdigest(), t.raw_sha256)

    def test_cat_takes_the_directory_name_too(self):
        source = self.where.source("malformed/name_with_slash.safetensors")
        metas = json.loads(run("ls", source, "--json").stdout)
        slashed = next(m for m in metas if "/" in m["name"])
        directory = slashed["name"].replace("%", "%25").replace("/", "%2F")
        by_name = cat(source, slashed["name"], "--raw")
        by_directory = cat(source, directory, "--raw")
        self.assertEqual(by_name.returncode, 0, by_name.stderr)
        self.assertEqual(by_directory.returncode, 0, by_directory.stderr)
        self.assertEqual(by_name.stdout, by_directory.stdout)
        self.assertEqual(len(by_name.stdout), slashed["nbytes"])

    def test_cat_refuses_a_terminal(self):
        leader, follower = pty.openpty()
        try:
            result = subprocess.run([BIN, "cat", self.sources[0].path, "blk.0.f32.weight"], stdout=follower,
                                    stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(follower)
            os.close(leader)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(len(result.stderr.splitlines()), 1)
        self.assertRegex(result.stderr, r"^tensorfs: cat writes binary data, not to a terminal")

    def test_cat_refusals_are_one_line(self):
        source = self.sources[0].path
        for args, message in [((source, "no.such.tensor"), "no tensor named 'no.such.tensor'"),
                              ((source,), "cat needs SOURCE and TENSOR"),
                              ((source, "blk.0.f32.weight", "--raw", "--npy"),
                               "one of --f32, --npy, --bf16, --f16, --raw"),
                              ((source, "blk.0.f32.weight", "--f64"), "unknown option '--f64'")]:
            with self.subTest(args=args):
                result = subprocess.run([BIN, "cat", *args], capture_output=True, text=True, timeout=60)
                self.assertEqual(result.returncode, 1)
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertTrue(result.stderr.startswith("tensorfs: "), result.stderr)
                self.assertIn(message, result.stderr)
                self.assertEqual(result.stdout, "")

    def test_cat_of_a_dtype_without_float32(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "complex.safetensors")
            raw = struct.pack("<4f", 1.0, -2.0, 0.5, 3.0)
            write_safetensors(path, [("z", "C64", [2], raw)])
            result = cat(path, "z")
            self.assertEqual(result.returncode, 1)
            self.assertEqual(result.stderr.decode(), "tensorfs: z: dtype C64 has no float32 conversion; use --raw\n")
            self.assertEqual(cat(path, "z", "--raw").stdout, raw)

    @unittest.skipIf(sanitized_binary(), "AddressSanitizer keeps freed memory in quarantine: no bound to check")
    def test_cat_streams_a_big_tensor_in_bounded_memory(self):
        elements = 24 << 20  # 48 MiB of F16, 96 MiB of float32
        values = (np.arange(elements, dtype=np.uint32) % 50000).astype(np.float16)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "big.safetensors")
            write_safetensors(path, [("big", "F16", [elements // 1024, 1024], values.tobytes())])
            out = os.path.join(tmp, "big.f32")
            # A child's peak RSS counts what it had before exec, so a child of this (big) process would show
            # our memory: a small Python in between runs the command and reports its peak alone (in KiB).
            measure = ("import os, sys, subprocess\n"
                       "out = open(sys.argv[1], 'wb')\n"
                       "child = subprocess.Popen(sys.argv[2:], stdout=out)\n"
                       "_, status, usage = os.wait4(child.pid, 0)\n"
                       "print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)\n")
            result = subprocess.run(["/usr/bin/python3", "-S", "-c", measure, out, BIN, "cat", path, "big"],
                                    capture_output=True, text=True, timeout=300)
            status, peak_kib = map(int, result.stdout.split())
            self.assertEqual(status, 0, result.stderr)
            self.assertTrue(np.array_equal(np.fromfile(out, dtype="<f4"), values.astype(np.float32)))
            self.assertLess(peak_kib, 48 * 1024)  # far less than the 96 MiB of values

    def test_validate(self):
        for source in self.sources:
            with self.subTest(source=source.label):
                result = run("validate", source.path)
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertEqual(result.stdout, f"{source.path}: valid {source.format}, {len(source.tensors)} "
                                                f"tensors in {len(source.files)} file(s)\n")

    def test_invalid_sources_are_refused_by_every_command(self):
        for bad in ["malformed/bad_magic.gguf", "malformed/truncated_data.safetensors", "no/such/file.gguf"]:
            path = self.where.source(bad)
            for command in (["ls", path], ["info", path], ["cat", path, "x"], ["validate", path]):
                with self.subTest(command=command):
                    result = subprocess.run([BIN, *command], capture_output=True, text=True, timeout=60,
                                            stdin=subprocess.DEVNULL)
                    self.assertEqual(result.returncode, 1)
                    self.assertEqual(result.stdout, "")
                    lines = result.stderr.splitlines()
                    self.assertGreaterEqual(len(lines), 1)
                    for line in lines:
                        self.assertTrue(line.startswith("tensorfs: "), line)
                    self.assertIn(os.path.basename(path), lines[0])

    def test_usage_errors_are_one_line(self):
        for args in [[], ["ls"], ["info", "a", "b"], ["ls", "x", "--yaml"], ["lss", "model.gguf"], ["stats"],
                     ["umount"], ["mount", "only-one"]]:
            with self.subTest(args=args):
                result = run(*args)
                self.assertEqual(result.returncode, 1)
                self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)
                self.assertRegex(result.stderr, r"^tensorfs: .*; try 'tensorfs --help'\n$")

    def test_help(self):
        for args in (["--help"], ["-h"], ["help"]):
            with self.subTest(args=args):
                result = run(*args)
                self.assertEqual(result.returncode, 0)
                self.assertTrue(result.stdout.startswith("usage: tensorfs mount SOURCE MOUNTPOINT"))
                for command in ("umount", "ls", "info", "cat", "convert", "validate", "stats", "cache_size=SIZE",
                                "export_dtype="):
                    self.assertIn(command, result.stdout)
                # Ours first, then libfuse's own mount options.
                ours, _, libfuse = result.stdout.partition("libfuse options:\n")
                self.assertIn("exit status", ours)
                self.assertIn("-o allow_other", libfuse)
                self.assertIn("-o auto_unmount", libfuse)

    def test_version(self):
        result = run("--version")
        self.assertEqual(result.returncode, 0)
        lines = result.stdout.splitlines()
        self.assertRegex(lines[0], r"^tensorfs \d+\.\d+\.\d+$")
        self.assertRegex(lines[1], r"^libfuse 3\.\d+")
        self.assertRegex(lines[2], r"FUSE kernel interface version 7\.\d+")
        self.assertRegex(lines[-1], r"^dequant kernels: (portable|avx2|avx512)$")

    def test_version_names_the_kernel_path_that_tensorfs_kernels_chose(self):
        best = run("--version").stdout.splitlines()[-1].split(": ")[1]
        for path in ("portable", "avx2", "avx512"):
            with self.subTest(path=path):
                result = run("--version", env={**os.environ, "TENSORFS_KERNELS": path})
                last = result.stdout.splitlines()[-1]
                order = ["portable", "avx2", "avx512"]
                if order.index(path) < order.index(best):
                    self.assertEqual(last, f"dequant kernels: {path} (TENSORFS_KERNELS; this CPU runs {best})")
                else:  # the CPU's best, or a path it lacks: its best
                    self.assertEqual(last, f"dequant kernels: {best}")
        result = run("--version", env={**os.environ, "TENSORFS_KERNELS": "sse9"})
        self.assertEqual(result.returncode, 0)
        self.assertEqual(result.stdout.splitlines()[-1], f"dequant kernels: {best}")
        self.assertIn("TENSORFS_KERNELS='sse9' is none of portable, avx2, avx512", result.stderr)


class StatsOfAMount(unittest.TestCase):
    def test_stats_after_reads(self):
        for source in sources()[1:]:
            if source.label == "gguf split set":
                continue
            t = max(source.tensors, key=lambda t: t.nbytes)
            with self.subTest(source=source.label), Mount(source.path, "--cache-size", "64M") as m:
                with open(m.tensor(t.name, "raw"), "rb") as f:
                    self.assertEqual(len(f.read()), t.nbytes)
                with open(m.tensor(t.name, "dequant.f32"), "rb") as f:
                    self.assertTrue(same_floats(expected_values(t),
                                                np.frombuffer(f.read(), dtype="<f4").reshape(t.shape)))
                result = run("stats", m.path, "--json")
                self.assertEqual(result.returncode, 0, result.stderr)
                stats = json.loads(result.stdout)
                self.assertGreaterEqual(stats["reads"]["raw"]["bytes"], t.nbytes)
                self.assertGreaterEqual(stats["reads"]["dequant.f32"]["bytes"], t.elements * 4)
                self.assertEqual(stats["cache"]["budget"], 64 << 20)
                self.assertEqual(stats["read_errors"], 0)

                text = run("stats", m.path)
                self.assertEqual(text.returncode, 0, text.stderr)
                rows = {columns(line)[0]: columns(line)[1] if len(columns(line)) > 1 else ""
                        for line in text.stdout.splitlines()}
                raw = stats["reads"]["raw"]
                self.assertRegex(rows["raw"], rf"^reads {raw['reads']}, bytes ")
                self.assertIn("budget 64.0 MiB (67108864)", rows["cache"])
                self.assertEqual(rows["read_errors"], "0")

    def test_stats_of_a_folder_that_is_not_a_mount(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = run("stats", tmp)
        self.assertEqual(result.returncode, 1)
        self.assertEqual(result.stderr, f"tensorfs: {tmp}: not a mount (tensorfs status lists the tensorfs mounts)\n")


class BareFormMountOptions(unittest.TestCase):
    """`tensorfs SOURCE MOUNTPOINT -o ...`, as mount.fuse3 runs it."""

    SOURCE = os.path.join(VECTORS, "gguf/tiny-llama-Q4_K_M.gguf")

    def mount_options(self, path):
        with open("/proc/self/mountinfo") as f:
            for line in f:
                fields = line.split()
                if fields[4] == os.path.realpath(path):
                    return fields[5].split(",")
        return None

    def test_what_mount8_passes_is_accepted(self):
        with tempfile.TemporaryDirectory() as tmp:
            try:
                result = run(self.SOURCE, tmp, "-o", "rw,noatime,nodev,suid,defaults,noauto,nofail,_netdev,"
                             "x-systemd.automount,comment=x,relatime,cache_size=32M,threads=4")
                self.assertEqual(result.returncode, 0, result.stderr)
                options = self.mount_options(tmp)
                self.assertIn("ro", options)  # read-only in spite of `rw`
                self.assertIn("noatime", options)
                self.assertIn("nodev", options)
                with open(os.path.join(tmp, ".tensorfs/stats.json")) as f:
                    self.assertEqual(json.load(f)["cache"]["budget"], 32 << 20)
            finally:
                if is_mounted(tmp):
                    unmount(tmp)

    def test_max_read_is_taken(self):
        # libfuse refuses a session whose init names another max_read than the mount's options.
        with tempfile.TemporaryDirectory() as tmp:
            try:
                result = run(self.SOURCE, tmp, "-o", "max_read=65536")
                self.assertEqual(result.returncode, 0, result.stderr)
                with open("/proc/self/mountinfo") as f:
                    [line] = [line for line in f if line.split()[4] == os.path.realpath(tmp)]
                self.assertIn("max_read=65536", line.split()[-1].split(","))  # the superblock's options
                with open(os.path.join(tmp, "source", os.path.basename(self.SOURCE)), "rb") as served, \
                        open(self.SOURCE, "rb") as source:
                    self.assertTrue(served.read() == source.read())
            finally:
                if is_mounted(tmp):
                    unmount(tmp)

    def test_unknown_options_are_one_clear_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            for options, message in [("ro,bogus", "unknown mount option 'bogus'"),
                                     ("max_read=lots", "unknown mount option 'max_read=lots'"),
                                     ("cache_size=huge", "bad cache_size 'huge'"),
                                     ("threads=0", "bad threads '0'"),
                                     ("export_dtype=int8", "bad export_dtype 'int8'")]:
                with self.subTest(options=options):
                    result = run(self.SOURCE, tmp, "-o", options)
                    self.assertFalse(is_mounted(tmp))
                    self.assertEqual(result.returncode, 1)
                    self.assertRegex(result.stderr, rf"^tensorfs: {re.escape(message)}.*; try 'tensorfs --help'\n$")


class CommandsOverHttp(CommandsWithoutFuse):
    """The commands that read a SOURCE, on the same files fetched by range requests."""
    where = remote_servers.HTTP
    # These read no SOURCE, or write one of their own: once is enough.
    test_cat_refuses_a_terminal = None
    test_cat_refusals_are_one_line = None
    test_cat_of_a_dtype_without_float32 = None
    test_cat_streams_a_big_tensor_in_bounded_memory = None
    test_usage_errors_are_one_line = None
    test_help = None
    test_version = None


class CommandsFromTheHub(CommandsOverHttp):
    """What the Hub adds is addressing and listing: the values that cat writes are checked over HTTP already."""
    where = remote_servers.HUB
    test_cat_f32_is_the_expected_values = None
    test_cat_f32_is_the_default = None
    test_cat_npy_loads_with_numpy = None


class CommandsFromS3(CommandsOverHttp):
    """What S3 adds is addressing, signing and listing: the values that cat writes are checked over HTTP already."""
    where = s3_servers.S3
    test_cat_f32_is_the_expected_values = None
    test_cat_f32_is_the_default = None
    test_cat_npy_loads_with_numpy = None


if __name__ == "__main__":
    unittest.main()
