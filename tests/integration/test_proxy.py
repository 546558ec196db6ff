"""-o proxy=URL, -o header=NAME:VALUE and libcurl's proxy variables, with Debian's squid as the proxy between tensorfs
and nginx: the bytes are right, and every request nginx answered went through squid, carrying the header."""
import os
import shutil
import tempfile
import unittest

import numpy as np

import remote_servers
from proxy_server import Squid
from remote_servers import requests_in
from tensorfs_mount import VECTORS, Mount, run, same_floats, wait_until

SHARDED = os.path.join(VECTORS, "safetensors", "sharded")
EXPECTED = os.path.join(SHARDED, "expected")
HEADER = ("X-Dragonfly-Use-P2P", "true")


class ThroughSquid(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.nginx = remote_servers.nginx()
        cls.squid = Squid()

    @classmethod
    def tearDownClass(cls):
        cls.squid.stop()

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        self.addCleanup(shutil.rmtree, self.cache, ignore_errors=True)
        self.marks = {name: self.log_length(name) for name in ("access.log", "hub.log", "cdn.log")}
        self.squid_mark = len(self.squid.requests())

    def log_length(self, name):
        return len(self.nginx.log_lines(name)) if os.path.exists(os.path.join(self.nginx.folder, name)) else 0

    def env(self, **proxies):
        """The remote tests' environment, with no proxy variable but `proxies`."""
        env = remote_servers.remote_env(self.cache)
        for name in ("http_proxy", "https_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
            env.pop(name, None)
        env.update(proxies)
        return env

    def served(self, log):
        """(URI, range) of the requests nginx answered in `log` since the test began."""
        return [(uri, ranges) for _, uri, _, _, ranges, _ in requests_in(self.nginx.log_lines(log)[self.marks[log]:])]

    def proxied(self, port):
        """(path, range, header) of the requests squid passed to 127.0.0.1:`port` since the test began."""
        prefix = f"http://127.0.0.1:{port}"
        return [(url[len(prefix):], ranges, header) for method, url, _, _, ranges, header in
                self.squid.requests()[self.squid_mark:] if method != "-" and url.startswith(prefix + "/")]

    def assert_values(self, m):
        for name in sorted(os.listdir(EXPECTED)):
            expected = np.fromfile(os.path.join(EXPECTED, name), dtype="<f4")
            self.assertTrue(same_floats(expected, np.fromfile(m.tensor(name[:-4], "dequant.f32"), dtype="<f4")), name)

    def test_a_mount_through_proxy_option_sends_every_request_through_squid_with_the_header(self):
        source = f"http://127.0.0.1:{self.nginx.http}/safetensors/sharded/model.safetensors.index.json"
        with Mount(source, "-o", f"proxy={self.squid.url},header={HEADER[0]}:{HEADER[1]}",
                   env=self.env(NO_PROXY="", no_proxy="")) as m:
            self.assert_values(m)
        served = self.served("access.log")
        self.assertTrue(served)
        self.assertTrue(wait_until(lambda: len(self.proxied(self.nginx.http)) >= len(served)))
        proxied = self.proxied(self.nginx.http)
        self.assertEqual(sorted(served), sorted((path, ranges) for path, ranges, _ in proxied))
        self.assertEqual({header for _, _, header in proxied}, {HEADER[1]})

    def test_the_hub_and_its_redirects_go_through_http_proxy_and_no_proxy_goes_direct(self):
        source = f"hf://{remote_servers.HUB_REPO}/safetensors/sharded"
        with Mount(source, "-o", f"cache_dir={self.cache}", env=self.env(http_proxy=self.squid.url)) as m:
            self.assert_values(m)
        for log, port in (("hub.log", self.nginx.hub), ("cdn.log", self.nginx.cdn)):
            served = self.served(log)
            self.assertTrue(served, log)
            self.assertTrue(wait_until(lambda: len(self.proxied(port)) >= len(served)), log)
            proxied = self.proxied(port)
            # The test Hub's nginx logs listings under the file it rewrites them to: compare their ranges.
            self.assertEqual(sorted(r for _, r in served), sorted(r for _, r, _ in proxied), log)
            if log == "cdn.log":
                self.assertEqual(sorted(served), sorted((path, ranges) for path, ranges, _ in proxied))
        # A host in NO_PROXY is reached directly, proxy= or not.
        direct = tempfile.mkdtemp(prefix="tensorfs-cache-", dir=self.cache)
        result = run("cat", f"http://127.0.0.1:{self.nginx.http}/safetensors/all_dtypes.safetensors", "dtype.f32",
                     "--raw", "--cache-dir", direct, "-o", f"proxy={self.squid.url}", text=False,
                     env=self.env(NO_PROXY="127.0.0.1"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(self.proxied(self.nginx.http), [])

    def test_other_commands_take_the_proxy_and_headers_with_o(self):
        source = f"http://127.0.0.1:{self.nginx.http}/safetensors/sharded/model.safetensors.index.json"
        result = run("cat", source, "lm_head.weight", "--cache-dir", self.cache, "-o",
                     f"proxy={self.squid.url},header={HEADER[0]}:{HEADER[1]}", text=False, env=self.env())
        self.assertEqual(result.returncode, 0, result.stderr)
        expected = np.fromfile(os.path.join(EXPECTED, "lm_head.weight.f32"), dtype="<f4")
        self.assertTrue(same_floats(expected, np.frombuffer(result.stdout, dtype="<f4")))
        served = self.served("access.log")
        self.assertTrue(wait_until(lambda: len(self.proxied(self.nginx.http)) >= len(served)))
        self.assertEqual({header for _, _, header in self.proxied(self.nginx.http)}, {HEADER[1]})

    def test_bad_values_are_refused(self):
        for option, words in (("header=X Bad:1", "bad header"), ("header=Range:bytes=0-1", "sets itself"),
                              ("header=Authorization:Bearer x", "HF_TOKEN"), ("proxy=", "needs a URL")):
            result = run("ls", "/nonexistent.safetensors", "-o", option)
            self.assertEqual(result.returncode, 1)
            self.assertIn(words, result.stderr)


if __name__ == "__main__":
    unittest.main()
