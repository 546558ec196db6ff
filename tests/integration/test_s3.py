"""What s3:// sources add (their acceptance, the formats read from an S3 store, is in the other tests): the test
store's front is first proven to refuse what S3 refuses; then, through it, a sharded index and a folder of 1,500
shards by prefix (ListObjectsV2 pages), temporary credentials with a session token, the shared files and profiles,
unsigned reads of a public bucket, each refusal as one line with S3's code, the remote layer's network faults and
disk cache, an object overwritten under a live mount, and no secret anywhere a user or another process sees."""
import calendar
import errno
import json
import os
import shutil
import tempfile
import time
import unittest

import numpy as np

import s3_servers
from remote_servers import FaultProxy
from s3_servers import ACCOUNT, BUCKET, PUBLIC_BUCKET, TEMPORARY
from tensorfs_mount import VECTORS, Mount, daemon_pids, manifest, read_at, run, same_floats, wait_until
from test_remote import (BLOCK, HEAD, READAHEAD, after_blocks_of, make_model, read_file, stats_of,
                         write_safetensors)

SHARDED = "safetensors/sharded"
SECRETS = (ACCOUNT["secret_key"], TEMPORARY["secret_key"], TEMPORARY["session_token"])
SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
             b'<Message>Please reduce your request rate.</Message></Error>')


def tensor_names(mountpoint):
    own = ("model.json", "model.safetensors", ".tensorfs", "source")
    return sorted(n for n in os.listdir(mountpoint) if n not in own)


class S3Test(unittest.TestCase):
    """Tests on the shared store (s3_servers.shared()), each with a disk cache of its own."""

    @classmethod
    def setUpClass(cls):
        cls.server = s3_servers.shared()

    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        self.addCleanup(shutil.rmtree, self.cache, ignore_errors=True)

    def env(self, keys=ACCOUNT, **extra):
        return self.server.env(keys, XDG_CACHE_HOME=self.cache, NO_PROXY="127.0.0.1", **extra)

    def mount(self, source, env=None, *options):
        m = Mount(source, *options, env=env or self.env()).__enter__()
        self.addCleanup(m.__exit__, None, None, None)
        return m

    def log_mark(self):
        return len(self.server.log())

    def requests_since(self, mark):
        return self.server.log()[mark:]

    def change_settings(self, **changes):
        """Changes the front's settings for this test only."""
        self.server.change_settings(**changes)
        self.addCleanup(self.server.change_settings, region="us-east-1", clock_offset_seconds=0,
                        accounts=[ACCOUNT, TEMPORARY])

    def assert_one_line(self, result, source, *parts):
        """A refusal: exit status 1, one line naming the source, with `parts` in it and no secret."""
        self.assertEqual(result.returncode, 1, result.stderr)
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith(f"tensorfs: {source}: "), lines[0])
        for part in parts:
            self.assertIn(part, lines[0])
        for secret in SECRETS:
            self.assertNotIn(secret, result.stderr + result.stdout)
        return lines[0]


class FrontRefusesWhatS3Refuses(S3Test):
    """The front is only worth testing against if it refuses bad signatures: requests signed by AWS's own signer
    (tests/servers/s3_sign.js), sent as signed and then altered. (Every test process also checks the first three
    cases when it starts the store: s3_servers.shared().)"""

    KEY = "gguf/mixed.gguf"

    def signed_headers(self, path, query, keys=ACCOUNT, date=None, headers=None):
        return self.server.signed_headers(path, query, keys, date, headers)

    def send(self, target, headers):
        return self.server.send(target, headers)

    def test_a_request_signed_right_is_served(self):
        path = f"/{BUCKET}/{self.KEY}"
        self.assertEqual(self.send(path, self.signed_headers(path, {})), (200, None))
        # A listing whose query is not in canonical order on the wire is served too: S3 sorts it itself.
        query = {"prefix": "gguf/", "list-type": "2", "delimiter": "/"}
        headers = self.signed_headers(f"/{BUCKET}", query)
        self.assertEqual(self.send(f"/{BUCKET}?prefix=gguf%2F&list-type=2&delimiter=%2F", headers), (200, None))

    def test_a_wrong_secret_is_refused(self):
        path = f"/{BUCKET}/{self.KEY}"
        wrong = dict(ACCOUNT, secret_key=ACCOUNT["secret_key"] + "x")
        self.assertEqual(self.send(path, self.signed_headers(path, {}, keys=wrong)), (403, "SignatureDoesNotMatch"))

    def test_a_tampered_query_or_path_is_refused(self):
        headers = self.signed_headers(f"/{BUCKET}", {"list-type": "2", "prefix": "gguf/"})
        self.assertEqual(self.send(f"/{BUCKET}?list-type=2&prefix=safetensors%2F", headers),
                         (403, "SignatureDoesNotMatch"))
        self.assertEqual(self.send(f"/{BUCKET}?list-type=2&prefix=gguf%2F&max-keys=1", headers),
                         (403, "SignatureDoesNotMatch"))
        headers = self.signed_headers(f"/{BUCKET}/{self.KEY}", {})
        self.assertEqual(self.send(f"/{BUCKET}/gguf/align64.gguf", headers), (403, "SignatureDoesNotMatch"))

    def test_a_stale_or_altered_date_is_refused(self):
        path = f"/{BUCKET}/{self.KEY}"
        stale = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 20 * 60))
        self.assertEqual(self.send(path, self.signed_headers(path, {}, date=stale)), (403, "RequestTimeTooSkewed"))
        headers = self.signed_headers(path, {})
        signed_at = calendar.timegm(time.strptime(headers["x-amz-date"], "%Y%m%dT%H%M%SZ"))
        headers["x-amz-date"] = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(signed_at + 1))
        self.assertEqual(self.send(path, headers), (403, "SignatureDoesNotMatch"))

    def test_unsigned_amz_headers_and_missing_tokens_are_refused(self):
        path = f"/{BUCKET}/{self.KEY}"
        headers = self.signed_headers(path, {})
        self.assertEqual(self.send(path, dict(headers, **{"x-amz-meta-extra": "1"})), (403, "AccessDenied"))
        self.assertEqual(self.send(path, self.signed_headers(path, {}, keys=TEMPORARY)), (200, None))
        without_token = {k: v for k, v in TEMPORARY.items() if k != "session_token"}
        self.assertEqual(self.send(path, self.signed_headers(path, {}, keys=without_token)), (403, "InvalidToken"))

    def test_unsigned_requests_read_public_buckets_only(self):
        self.assertEqual(self.send(f"/{PUBLIC_BUCKET}/{self.KEY}", {}), (200, None))
        self.assertEqual(self.send(f"/{BUCKET}/{self.KEY}", {}), (403, "AccessDenied"))


class IndexesAndPrefixes(S3Test):
    def check_sharded_model(self, m):
        entry = manifest()["safetensors_index"]
        with open(os.path.join(m.path, "model.json")) as f:
            model = json.load(f)
        self.assertEqual(sorted(f["path"] for f in model["files"]),
                         sorted(f for f in os.listdir(os.path.join(VECTORS, SHARDED)) if f.endswith(".safetensors")))
        self.assertEqual(model["metadata"]["total_size"], entry["total_size"])
        for shard in (e for e in manifest()["safetensors"] if e["file"].startswith(SHARDED + "/")):
            for t in shard["tensors"]:
                expected = np.fromfile(os.path.join(VECTORS, t["expected_f32"]), dtype="<f4")
                self.assertTrue(same_floats(expected, np.fromfile(m.tensor(t["name"], "dequant.f32"), dtype="<f4")))

    def test_a_sharded_index_by_its_key_and_by_its_prefix(self):
        for source in (f"s3://{BUCKET}/{SHARDED}/model.safetensors.index.json", f"s3://{BUCKET}/{SHARDED}/",
                       f"s3://{BUCKET}/{SHARDED}"):
            with self.subTest(source=source):
                mark = self.log_mark()
                m = self.mount(source)
                self.check_sharded_model(m)
                requests = self.requests_since(mark)
                self.assertTrue(requests)
                for request in requests:
                    self.assertEqual(request["who"], ACCOUNT["access_key"], request)
                    self.assertIn("x-amz-content-sha256", request["signed_headers"].split(";"))

    def test_a_folder_of_1500_shards_is_listed_page_by_page(self):
        bucket = "many-shards"
        data = tempfile.mkdtemp(prefix="tensorfs-shards-")
        self.addCleanup(shutil.rmtree, data, ignore_errors=True)
        names = [f"t{i:04d}" for i in range(1500)]
        os.makedirs(os.path.join(data, "model", "sub"))
        os.makedirs(os.path.join(data, "model-other"))
        for i, name in enumerate(names):
            write_safetensors(os.path.join(data, "model", f"shard-{i:04d}.safetensors"),
                              [(name, np.full(2, i, dtype=np.float32))])
        # Neither a key under a deeper prefix nor one of a sibling prefix belongs to the folder.
        write_safetensors(os.path.join(data, "model", "sub", "deeper.safetensors"), [("deeper", np.zeros(1, np.float32))])
        write_safetensors(os.path.join(data, "model-other", "x.safetensors"), [("other", np.zeros(1, np.float32))])
        self.server.create_bucket(bucket)
        self.server.put_tree(bucket, data)

        mark = self.log_mark()
        m = self.mount(f"s3://{bucket}/model/")
        self.assertEqual(tensor_names(m.path), names)
        with open(m.tensor("t1234", "raw"), "rb") as f:
            self.assertEqual(np.frombuffer(f.read(), "<f4").tolist(), [1234.0, 1234.0])
        listings = [r for r in self.requests_since(mark) if "list-type=2" in r["query"]]
        # The folder rule's listing (with a delimiter), then source/'s (every key under the prefix): two pages each.
        folder = [r for r in listings if "delimiter=" in r["query"]]
        every = [r for r in listings if "delimiter=" not in r["query"]]
        self.assertEqual((len(folder), len(every)), (2, 2), listings)
        self.assertIn("continuation-token=", folder[1]["query"])
        self.assertIn("continuation-token=", every[1]["query"])
        self.assertTrue(all(r["status"] == 200 for r in listings))
        self.assertEqual(len(os.listdir(os.path.join(m.path, "source"))), 1500 + 1)  # and sub/
        self.assertEqual(os.listdir(os.path.join(m.path, "source", "sub")), ["deeper.safetensors"])


class Credentials(S3Test):
    SOURCE = f"s3://{BUCKET}/gguf/mixed.gguf"

    def check_reads(self, env, who):
        mark = self.log_mark()
        result = run("cat", self.SOURCE, "blk.0.f32.weight", "--raw", env=env, text=False)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(result.stdout)
        requests = self.requests_since(mark)
        self.assertTrue(requests and all(r["who"] == who and r["status"] < 300 for r in requests), requests)
        return requests

    def test_temporary_credentials_sign_their_session_token(self):
        requests = self.check_reads(self.env(TEMPORARY), TEMPORARY["access_key"])
        self.assertTrue(all("x-amz-security-token" in r["signed_headers"].split(";") for r in requests))

    def test_keys_region_and_endpoint_from_the_shared_files_and_a_profile(self):
        self.change_settings(region="eu-west-3")
        folder = tempfile.mkdtemp(prefix="tensorfs-aws-")
        self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
        with open(os.path.join(folder, "credentials"), "w") as f:
            f.write(f"[default]\naws_access_key_id = AKIADEFAULTWRONG\naws_secret_access_key = wrong\n\n"
                    f"[reader]\naws_access_key_id = {ACCOUNT['access_key']}\n"
                    f"aws_secret_access_key = {ACCOUNT['secret_key']}\n")
        with open(os.path.join(folder, "config"), "w") as f:
            f.write(f"[default]\nregion = us-east-1\n\n[profile reader]\nregion = eu-west-3\n"
                    f"endpoint_url = {self.server.endpoint}\n")
        env = self.env(None, AWS_SHARED_CREDENTIALS_FILE=os.path.join(folder, "credentials"),
                       AWS_CONFIG_FILE=os.path.join(folder, "config"), AWS_PROFILE="reader")
        del env["AWS_ENDPOINT_URL_S3"]
        self.check_reads(env, ACCOUNT["access_key"])

        # The region names the scope of every signature: a wrong one is refused, with the bucket's region.
        result = run("ls", self.SOURCE, env=dict(env, AWS_REGION="us-west-1"))
        self.assert_one_line(result, self.SOURCE, "AuthorizationHeaderMalformed", "AWS_REGION=eu-west-3")
        result = run("ls", self.SOURCE, env=dict(env, AWS_PROFILE="absent"))
        self.assertEqual(result.returncode, 1)
        self.assertIn("no profile 'absent'", result.stderr)

    def test_without_credentials_a_public_bucket_reads_unsigned(self):
        source = f"s3://{PUBLIC_BUCKET}/gguf/mixed.gguf"
        mark = self.log_mark()
        m = self.mount(source, self.env(None))
        entry = next(g for g in manifest()["gguf"] if g["file"] == "gguf/mixed.gguf")
        self.assertEqual(tensor_names(m.path), sorted(t["name"] for t in entry["tensors"]))
        requests = self.requests_since(mark)
        self.assertTrue(requests and all(r["who"] == "anonymous" and r["signed_headers"] is None for r in requests))
        result = run("ls", self.SOURCE, env=self.env(None))
        self.assert_one_line(result, self.SOURCE, "AccessDenied", "no AWS credentials")

    def test_no_secret_in_the_tree_stats_or_command_line(self):
        source = f"s3://{BUCKET}/{SHARDED}/"
        m = self.mount(source, self.env(TEMPORARY))
        seen = [read_file(os.path.join(m.path, "model.json")), read_file(os.path.join(m.path, ".tensorfs/stats.json")),
                read_file("/proc/self/mountinfo")]
        with open(os.path.join(m.path, "model.safetensors"), "rb") as f:
            seen.append(f.read(1 << 16))  # its header, with the source's metadata
        for name in tensor_names(m.path)[:3]:
            seen.append(read_file(m.tensor(name, "meta.json")))
        [pid] = daemon_pids(m.path)
        seen.append(read_file(f"/proc/{pid}/cmdline"))
        seen.append(run("stats", m.path, "--json", text=False).stdout)
        for secret in SECRETS:
            self.assertFalse(any(secret.encode() in text for text in seen), secret)


class Refusals(S3Test):
    """Each of S3's refusals as one line with its code and what to do, exit status 1, nothing mounted."""

    def test_no_such_bucket_and_no_such_key(self):
        source = "s3://absent-bucket/model.gguf"
        self.assert_one_line(run("info", source, env=self.env()), source, "NoSuchBucket", "HTTP 404")
        source = f"s3://{BUCKET}/absent.safetensors"
        self.assert_one_line(run("info", source, env=self.env()), source, "NoSuchKey")
        source = f"s3://{BUCKET}/{SHARDED}/absent.safetensors.index.json"
        with tempfile.TemporaryDirectory() as folder:
            self.assert_one_line(run("mount", source, folder, env=self.env()), source, "NoSuchKey")

    def test_access_denied(self):
        restricted = {"access_key": "AKIARESTRICTED000001", "secret_key": "restricted/secret", "buckets": ["other"]}
        self.change_settings(accounts=[ACCOUNT, TEMPORARY, restricted])
        source = f"s3://{BUCKET}/gguf/mixed.gguf"
        self.assert_one_line(run("ls", source, env=self.env(restricted)), source, "AccessDenied", "HTTP 403",
                             "AKIARESTRICTED000001")
        self.assert_one_line(run("ls", f"s3://{BUCKET}/gguf/", env=self.env(restricted)), f"s3://{BUCKET}/gguf/",
                             "AccessDenied")

    def test_signature_does_not_match(self):
        source = f"s3://{BUCKET}/gguf/mixed.gguf"
        wrong = dict(ACCOUNT, secret_key="not/the+secret")
        self.assert_one_line(run("validate", source, env=self.env(wrong)), source, "SignatureDoesNotMatch",
                             "secret key from the environment")
        unknown = dict(ACCOUNT, access_key="AKIAUNKNOWN000000001")
        self.assert_one_line(run("validate", source, env=self.env(unknown)), source, "InvalidAccessKeyId")

    def test_request_time_too_skewed(self):
        self.change_settings(clock_offset_seconds=3600)
        source = f"s3://{BUCKET}/gguf/mixed.gguf"
        self.assert_one_line(run("ls", source, env=self.env()), source, "RequestTimeTooSkewed", "clock")

    def test_slow_down_that_never_ends(self):
        proxy = FaultProxy(self.server.front)
        self.addCleanup(proxy.stop)
        proxy.queue(*[("status", 503, {}, SLOW_DOWN)] * 100)
        source = f"s3://{BUCKET}/gguf/mixed.gguf"
        env = self.env(AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{proxy.port}")
        self.assert_one_line(run("ls", source, env=env), source, "SlowDown", "HTTP 503")


class WebIdentity(S3Test):
    """AWS web identity (AWS_ROLE_ARN + AWS_WEB_IDENTITY_TOKEN_FILE): a mount gets temporary keys from the front's
    STS, which expire in 3 s there, and goes on reading across their expiry: it renews them before, with the token
    file read again at each renewal (a new token there, the old one no longer taken by STS)."""

    ROLE = "arn:aws:iam::123456789012:role/tensorfs-reader"
    BUCKET = "web-identity"
    TOKENS = ["eyJ.first-token.sig", "eyJ.second-token.sig"]

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        data = tempfile.mkdtemp(prefix="tensorfs-s3-data-")
        try:
            rng = np.random.default_rng(7)
            write_safetensors(os.path.join(data, "model.safetensors"),
                              [("w", rng.standard_normal(6 << 18, dtype=np.float32))])  # 6 MiB
            cls.bytes = read_file(os.path.join(data, "model.safetensors"))
        finally:
            shutil.rmtree(data)
        cls.server.create_bucket(cls.BUCKET)
        cls.server.put(cls.BUCKET, "model.safetensors", cls.bytes)

    def setUp(self):
        super().setUp()
        self.change_settings(sts={"role_arn": self.ROLE, "tokens": self.TOKENS[:1], "duration_seconds": 3,
                                  "buckets": [self.BUCKET]})
        self.addCleanup(self.server.change_settings, sts=None)
        self.token_file = os.path.join(self.cache, "token")
        with open(self.token_file, "w") as f:
            f.write(self.TOKENS[0] + "\n")

    def read_and_check(self, m, offset):
        """Reads a page at `offset` of the object (a fetch of its own); returns the access keys that signed its
        requests, the last one last."""
        mark = self.log_mark()
        self.assertEqual(read_at(os.path.join(m.path, "source", "model.safetensors"), offset),
                         self.bytes[offset:offset + 4096])

        def fetched():
            return [r for r in self.requests_since(mark)
                    if r["path"].endswith("/model.safetensors") and r["status"] == 206]
        # The front may write a request's line just after the client has its last byte.
        self.assertTrue(wait_until(fetched), self.requests_since(mark))
        return [r["who"] for r in fetched()]

    def wait_for_expiry(self, keys):
        """Until temporary `keys` have expired at the front (a bounded wait on the front's clock), then checks that
        the front refuses them."""
        self.assertTrue(wait_until(lambda: time.time() * 1000 > keys["expires_ms"] + 50, 60))
        self.assertTrue(self.server.expired(keys))

    def test_a_mount_reads_across_the_expiry_of_its_keys_and_a_new_token_in_the_file(self):
        env = self.env(None, AWS_ROLE_ARN=self.ROLE, AWS_WEB_IDENTITY_TOKEN_FILE=self.token_file,
                       AWS_ROLE_SESSION_NAME="tensorfs-test", AWS_ENDPOINT_URL_STS=self.server.endpoint)
        m = self.mount(f"s3://{self.BUCKET}/model.safetensors", env, "-o", "readahead=0")
        first = self.server.issued_keys()[-1]
        self.assertEqual((first["session_name"], first["token"]), ("tensorfs-test", self.TOKENS[0]))
        self.assertLessEqual(set(self.read_and_check(m, 1 << 20)), {k["access_key"] for k in self.server.issued_keys()})

        self.wait_for_expiry(first)
        signers = self.read_and_check(m, 3 << 20)
        self.assertNotIn(first["access_key"], signers)
        who = signers[-1]

        # A new token in the file, and STS takes only that one from now on: the next renewal reads it.
        with open(self.token_file + ".new", "w") as f:
            f.write(self.TOKENS[1] + "\n")
        os.replace(self.token_file + ".new", self.token_file)
        self.server.change_settings(sts={"role_arn": self.ROLE, "tokens": self.TOKENS[1:], "duration_seconds": 3,
                                         "buckets": [self.BUCKET]})
        self.wait_for_expiry(next(k for k in self.server.issued_keys() if k["access_key"] == who))
        who = self.read_and_check(m, 5 << 20)[-1]
        [last] = [k for k in self.server.issued_keys() if k["access_key"] == who]
        self.assertEqual(last["token"], self.TOKENS[1])
        # Only temporary keys signed the reads, and no secret of theirs is on the daemon's command line.
        [pid] = daemon_pids(m.path)
        cmdline = read_file(f"/proc/{pid}/cmdline")
        for keys in self.server.issued_keys():
            self.assertNotIn(keys["secret_key"].encode(), cmdline)

    def test_a_token_that_sts_refuses_is_one_line_that_says_why(self):
        source = f"s3://{self.BUCKET}/model.safetensors"
        with open(self.token_file, "w") as f:
            f.write("eyJ.forged.sig")
        env = self.env(None, AWS_ROLE_ARN=self.ROLE, AWS_WEB_IDENTITY_TOKEN_FILE=self.token_file,
                       AWS_ENDPOINT_URL_STS=self.server.endpoint)
        line = self.assert_one_line(run("ls", source, env=env), source, "InvalidIdentityToken", self.ROLE,
                                    "trust policy")
        self.assertNotIn("eyJ.forged.sig", line)
        # Half a web identity is named, not taken for no credentials at all.
        del env["AWS_ROLE_ARN"]
        self.assert_one_line(run("ls", source, env=env), source, "AWS_WEB_IDENTITY_TOKEN_FILE is set without "
                             "AWS_ROLE_ARN")


class S3Model(S3Test):
    """A 68 MiB model (test_remote.make_model) in a bucket of its own."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.bucket = "big-model-" + cls.__name__.lower()
        data = tempfile.mkdtemp(prefix="tensorfs-s3-data-")
        try:
            cls.spans, cls.values = make_model(data, 1)
            cls.bytes = read_file(os.path.join(data, "big.safetensors"))
        finally:
            shutil.rmtree(data)
        cls.server.create_bucket(cls.bucket)
        cls.server.put(cls.bucket, "big.safetensors", cls.bytes)
        cls.source = f"s3://{cls.bucket}/big.safetensors"

    def raw_of(self, name):
        offset, size = self.spans[name]
        return self.bytes[offset:offset + size]


class NetworkFaults(S3Model):
    """The remote layer's fault cases, between tensorfs and the store: the right bytes or EIO for that read only."""

    def setUp(self):
        super().setUp()
        self.proxy = FaultProxy(self.server.front)
        self.addCleanup(self.proxy.stop)
        self.m = self.mount(self.source, self.env(AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{self.proxy.port}"))

    def tearDown(self):
        self.assertTrue(daemon_pids(self.m.path), "the daemon died")

    def test_slow_down_then_success(self):
        self.proxy.queue(("status", 503, {}, SLOW_DOWN), ("status", 503, {}, SLOW_DOWN))
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))
        self.assertGreaterEqual(stats_of(self.m)["retries"], 2)

    def test_internal_error_then_success(self):
        body = b"<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>"
        self.proxy.queue(("status", 500, {}, body))
        self.assertEqual(read_file(self.m.tensor("c", "raw")), self.raw_of("c"))
        self.assertGreaterEqual(stats_of(self.m)["retries"], 1)

    def test_connection_cut_and_body_cut_short(self):
        self.proxy.queue(("cut",), ("short",))
        self.assertEqual(read_file(self.m.tensor("b", "raw")), self.raw_of("b"))
        self.assertGreaterEqual(stats_of(self.m)["retries"], 2)

    def test_a_slow_store_makes_reads_slow_not_wrong(self):
        self.proxy.delay = 0.2
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))

    def test_a_store_that_keeps_failing_fails_that_read_with_eio_only(self):
        self.proxy.queue(*[("status", 503, {}, SLOW_DOWN)] * 100)
        with self.assertRaises(OSError) as caught:
            read_file(self.m.tensor("a", "raw"))
        self.assertEqual(caught.exception.errno, errno.EIO)
        with self.proxy.lock:
            self.proxy.faults.clear()
        self.assertEqual(read_file(self.m.tensor("c", "raw")), self.raw_of("c"))
        self.assertEqual(read_file(self.m.tensor("a", "raw")), self.raw_of("a"))


class SharedRemoteLayer(S3Model):
    def test_only_what_is_read_is_fetched_and_a_remount_reads_from_the_disk_cache(self):
        mark = self.log_mark()
        m = Mount(self.source, "-o", f"readahead={READAHEAD}", env=self.env()).__enter__()
        try:
            self.assertEqual(read_file(m.tensor("b", "raw")), self.raw_of("b"))
        finally:
            m.__exit__(None, None, None)
        # The daemon writes the blocks it still holds to the disk cache before it ends.
        self.assertTrue(wait_until(lambda: not daemon_pids(m.path)), "the daemon outlived its mount")
        # The requests for the model's object; the others are the side files the mount probed (none there).
        requests = [r for r in self.requests_since(mark) if r["path"].endswith("/big.safetensors")]
        self.assertEqual(requests[0]["range"], f"bytes=0-{HEAD - 1}")
        offset, size = self.spans["b"]
        fetched = sum(r["bytes"] for r in requests[1:])
        self.assertGreaterEqual(fetched, size)
        self.assertLessEqual(fetched, size + READAHEAD + 3 * BLOCK)
        for request in requests[1:]:
            first, last = map(int, request["range"][len("bytes="):].split("-"))
            self.assertGreaterEqual(first, offset - BLOCK)
            self.assertLessEqual(last, offset + size + READAHEAD + BLOCK)

        mark = self.log_mark()
        m = self.mount(self.source)
        self.assertEqual(read_file(m.tensor("b", "raw")), self.raw_of("b"))
        requests = self.requests_since(mark)
        big = [r for r in requests if r["path"].endswith("/big.safetensors")]
        self.assertEqual(big[0]["range"], f"bytes=0-{HEAD - 1}")  # the mount's own
        # The rest, if any, is the read-ahead going on past the tensor (it follows the reader): never its bytes.
        for request in big[1:]:
            first = int(request["range"][len("bytes="):].split("-")[0])
            self.assertGreaterEqual(first, after_blocks_of(offset, size))


class ObjectOverwritten(S3Model):
    def test_reads_of_an_overwritten_object_fail_with_eio_never_mixed(self):
        m = self.mount(self.source)
        self.assertEqual(read_file(m.tensor("a", "raw")), self.raw_of("a"))
        data = tempfile.mkdtemp(prefix="tensorfs-s3-data-")
        self.addCleanup(shutil.rmtree, data, ignore_errors=True)
        make_model(data, 2)  # the same layout and size, other values: another ETag
        self.server.put(self.bucket, "big.safetensors", read_file(os.path.join(data, "big.safetensors")))

        mark = self.log_mark()
        for name in ("b", "d"):
            with self.assertRaises(OSError) as caught:
                read_file(m.tensor(name, "raw"))
            self.assertEqual(caught.exception.errno, errno.EIO)
        self.assertIn("PreconditionFailed", [r.get("error") for r in self.requests_since(mark)])
        with open(os.path.join(m.path, ".tensorfs", "stats.json")) as f:
            stats = json.load(f)
        self.assertEqual(stats["remote"]["objects_changed"], 1)
        self.assertGreaterEqual(stats["read_errors"], 1)
        self.assertTrue(daemon_pids(m.path))


if __name__ == "__main__":
    unittest.main()
