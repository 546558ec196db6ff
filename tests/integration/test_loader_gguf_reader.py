"""An independent GGUF reader, @huggingface/gguf (the Hugging Face Hub's own, from npm; tests/servers/gguf_info.js
runs it), reads MOUNT/source/x.gguf by its file path and gets every metadata key, value and type and every tensor
info that it gets from the file itself: a real Q4_K_M model made by llama.cpp, a file of every ggml type, and the
three parts of a split model (all of them in source/ when the first is mounted), mounted from local files, over
HTTP, from a Hub-like server and from an S3 store. The tensor infos are also checked against the vectors' manifest,
made with ggml, so that two empty answers could not pass."""
import json
import os
import subprocess
import unittest

import remote_servers
import s3_servers
from tensorfs_mount import VECTORS, Mount, manifest

GGUF_INFO = os.path.join(s3_servers.SERVERS, "gguf_info.js")
# Mounted file (relative to the vectors) and the files source/ must hold, read and compared one by one.
SPLIT = "gguf/split/tiny-llama-Q4_K_M-0000{}-of-00003.gguf"
CASES = [("gguf/tiny-llama-Q4_K_M.gguf", ["gguf/tiny-llama-Q4_K_M.gguf"]),
         ("gguf/mixed.gguf", ["gguf/mixed.gguf"]),
         (SPLIT.format(1), [SPLIT.format(part) for part in (1, 2, 3)])]


def gguf_info(path):
    """What @huggingface/gguf reads from the GGUF file at `path`."""
    s3_servers.install_packages()
    result = subprocess.run([s3_servers.NODE, GGUF_INFO, path], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"gguf_info.js {path}: {result.stderr}")
    return json.loads(result.stdout)


def manifest_tensors(relative):
    """(name, shape in ggml order, ggml type, offset in the data section) of every tensor, as ggml listed them."""
    [entry] = [e for e in manifest()["gguf"] if e["file"] == relative]
    return [(t["name"], [str(d) for d in t["ne"]], t["ggml_type_id"], str(t["offset_in_data_section"]))
            for t in entry["tensors"]]


class GgufReader(unittest.TestCase):
    where = remote_servers.LOCAL

    def test_the_reader_gets_from_source_what_it_gets_from_the_file(self):
        for mounted, files in CASES:
            with self.subTest(mounted=mounted), Mount(self.where.source(mounted)) as m:
                for relative in files:
                    expected = gguf_info(os.path.join(VECTORS, relative))
                    read = gguf_info(os.path.join(m.path, "source", os.path.basename(relative)))
                    self.assertEqual(read, expected, relative)
                    self.assertEqual([(t["name"], t["shape"], t["dtype"], t["offset"]) for t in read["tensors"]],
                                     manifest_tensors(relative), relative)


class GgufReaderOverHttp(GgufReader):
    where = remote_servers.HTTP


class GgufReaderFromTheHub(GgufReader):
    where = remote_servers.HUB


class GgufReaderFromS3(GgufReader):
    where = s3_servers.S3


if __name__ == "__main__":
    unittest.main()
