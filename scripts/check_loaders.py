"""llama.cpp's greedy generation from MOUNT/source/x.gguf equals its generation from x.gguf on disk, with and
without mmap, for a mount of a local folder, of an HTTP URL (nginx), of a Hub-like repo (nginx) and of an S3
prefix (the tests' S3 store). Run by scripts/check-loaders, which builds llama_greedy and sets TENSORFS_BIN.

    /usr/bin/python3 scripts/check_loaders.py --greedy PATH [--tokens N]

Prints one line per source and load mode, and exits 1 if any generation differs from the one from disk."""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "integration"))

import gguf_writer  # noqa: E402
import s3_servers  # noqa: E402
from remote_servers import HUB_REPO, Nginx, remote_env  # noqa: E402
from tensorfs_mount import Mount  # noqa: E402

PROMPT = "once upon a time there was a model"
LOAD_MODES = ("mmap", "none")   # llama.cpp maps the file, or reads it into memory (--no-mmap)


def generate(greedy, model, mode, tokens):
    """The token ids of llama.cpp's greedy continuation of PROMPT."""
    result = subprocess.run([greedy, model, mode, str(tokens), PROMPT], stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"llama_greedy {model} {mode} failed: {result.stderr}")
    return [int(token) for token in result.stdout.split()]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--greedy", required=True)
    parser.add_argument("--tokens", type=int, default=32)
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="tensorfs-check-loaders-")
    servers = []
    try:
        data = os.path.join(scratch, "data")
        os.makedirs(os.path.join(data, "tiny"))
        model = os.path.join(data, "tiny", "x.gguf")
        gguf_writer.tiny_llama(model, seed=0)
        other = os.path.join(scratch, "other.gguf")   # the same model with other weights
        gguf_writer.tiny_llama(other, seed=1)

        expected = {mode: generate(args.greedy, model, mode, args.tokens) for mode in LOAD_MODES}
        control = generate(args.greedy, other, "mmap", args.tokens)
        print("from disk:", *expected["mmap"])
        print("other weights:", *control)
        if expected["mmap"] != expected["none"] or control == expected["mmap"] or len(expected["mmap"]) < 2:
            print("FAIL: generation from disk does not tell models apart, or depends on mmap")
            return 1

        nginx = Nginx(data)
        servers.append(nginx)
        store = s3_servers.S3Server()
        servers.append(store)
        store.create_bucket("models")
        store.put_tree("models", data)
        cache = os.path.join(scratch, "cache")
        web = remote_env(cache, {"HF_ENDPOINT": f"http://127.0.0.1:{nginx.hub}"})
        sources = [("local folder", os.path.join(data, "tiny"), None),
                   ("http", f"http://127.0.0.1:{nginx.http}/tiny/x.gguf", web),
                   ("hub", f"hf://{HUB_REPO}/tiny", web),
                   ("s3", "s3://models/tiny/", store.env(XDG_CACHE_HOME=cache, NO_PROXY="127.0.0.1"))]
        failures = 0
        for label, source, env in sources:
            with Mount(source, env=env) as m:
                for mode in LOAD_MODES:
                    got = generate(args.greedy, os.path.join(m.path, "source", "x.gguf"), mode, args.tokens)
                    same = got == expected[mode]
                    failures += not same
                    print(f"{label:12} {mode:4}  {len(got)} tokens: {'same' if same else f'DIFFERENT: {got}'}")
        print("PASS" if failures == 0 else f"FAIL: {failures} generations differ from the ones from disk")
        return 1 if failures else 0
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
