"""A password in a URL, and the tokens in the environment, are gone from the daemon's /proc/PID/cmdline and
/proc/PID/environ once `tensorfs mount` returns, while the mount keeps using them (nginx's /private/ wants the
password for every request)."""
import os
import unittest

import remote_servers
from remote_servers import BASIC_PASSWORD, BASIC_USER
from tensorfs_mount import VECTORS, Mount, daemon_pids, manifest, read_file, run, wait_until

FILE = "safetensors/all_dtypes.safetensors"
HF_SECRET = "hf_token_never_in_proc_41"
AWS_SECRET = "aws-secret-never-in-proc-42"


def proc_file(pid, name):
    with open(f"/proc/{pid}/{name}", "rb") as f:
        return f.read()


class NoSecretInPs(unittest.TestCase):
    def setUp(self):
        remote_servers.use_remote_environment()
        self.port = remote_servers.nginx().http

    def private_url(self, password):
        return f"http://{BASIC_USER}:{password}@127.0.0.1:{self.port}/private/{FILE}"

    def test_the_server_wants_the_password(self):
        result = run("ls", self.private_url("wrong-password"))
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("401", result.stderr)
        self.assertNotIn("wrong-password", result.stderr)

    def test_daemon_shows_neither_password_nor_tokens(self):
        env = dict(os.environ, HF_TOKEN=HF_SECRET, AWS_SECRET_ACCESS_KEY=AWS_SECRET,
                   TENSORFS_TEST_MIRROR=self.private_url(BASIC_PASSWORD))
        # A disk cache of its own: mounting reads the header from the server, with the password.
        env["XDG_CACHE_HOME"] = os.path.join(env["XDG_CACHE_HOME"], "ps-secrets")
        with Mount(self.private_url(BASIC_PASSWORD), env=env) as mount:
            pids = daemon_pids(mount.path)
            self.assertEqual(len(pids), 1, pids)
            cmdline = proc_file(pids[0], "cmdline")
            environ = proc_file(pids[0], "environ")
            self.assertNotIn(BASIC_PASSWORD.encode(), cmdline)
            self.assertIn(f"http://{BASIC_USER}:{'*' * len(BASIC_PASSWORD)}@127.0.0.1".encode(), cmdline)
            for secret in (BASIC_PASSWORD, HF_SECRET, AWS_SECRET):
                self.assertNotIn(secret.encode(), environ)
            self.assertIn(b"HF_TOKEN=" + b"*" * len(HF_SECRET) + b"\0", environ)
            # The daemon still reads with the password: every tensor's stored bytes come through /private/.
            stored = read_file(os.path.join(VECTORS, FILE))
            entry = next(e for e in manifest()["safetensors"] if e["file"] == FILE)
            for tensor in entry["tensors"]:
                start = tensor["abs_offset"]
                self.assertEqual(read_file(os.path.join(mount.path, tensor["name"], "raw")),
                                 stored[start:start + tensor["raw_nbytes"]])
            with open("/proc/self/mountinfo") as f:
                self.assertNotIn(BASIC_PASSWORD, f.read())
            # Nor does the disk cache keep it (its keys name the URL). Blocks are written by a thread of the daemon.
            cache = os.path.join(env["XDG_CACHE_HOME"], "tensorfs")
            kept = lambda: [os.path.join(folder, name) for folder, _, names in os.walk(cache) for name in names]
            self.assertTrue(wait_until(lambda: any(path.endswith(".block") for path in kept())), kept())
            for path in kept():
                self.assertNotIn(BASIC_PASSWORD.encode(), read_file(path), path)


if __name__ == "__main__":
    unittest.main()
