"""An S3 store for the tests, on 127.0.0.1 only, started by them and stopped with them (never by name):
tests/servers/s3_server.js runs s3rver (the protocol) behind a front of our own that recomputes every request's
AWS Signature Version 4 with AWS's own signer and refuses what S3 refuses (SignatureDoesNotMatch,
RequestTimeTooSkewed, InvalidToken, AccessDenied...). Its npm packages are installed from the committed
package-lock.json with `npm ci` at first use.

The shared store holds tests/data/vectors in the bucket `vectors` (read with ACCOUNT's keys) and in the public
bucket `public-vectors` (read unsigned); `S3` below names the vectors there for the acceptance tests. Before any
test uses it, it is checked to refuse a wrong secret, a tampered query and a stale date."""
import atexit
import fcntl
import http.client
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse

from remote_servers import Where, _die_with_parent
from tensorfs_mount import VECTORS

SERVERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "servers")
NODE = shutil.which("node") or "/usr/bin/node"
NPM = shutil.which("npm") or "/usr/bin/npm"

# Keys of the store's accounts: long-term keys, and temporary ones that come with a session token. Characters
# that need escaping somewhere ('/', '+', '=') on purpose.
ACCOUNT = {"access_key": "AKIATENSORFSTEST0001", "secret_key": "tensorfs/test+secret=key"}
TEMPORARY = {"access_key": "ASIATENSORFSTEMP0001", "secret_key": "temporary/secret+key",
             "session_token": "FwoGZXIvYXdzE/session+token=="}
BUCKET = "vectors"
PUBLIC_BUCKET = "public-vectors"


def install_packages():
    """`npm ci` in tests/servers once (under a lock: test processes may start at the same time)."""
    with open(os.path.join(SERVERS, ".install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock_file = os.path.join(SERVERS, "package-lock.json")
        installed = os.path.join(SERVERS, "node_modules", ".package-lock.json")
        if os.path.exists(installed) and os.path.getmtime(installed) >= os.path.getmtime(lock_file):
            return
        result = subprocess.run([NPM, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=SERVERS,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            raise RuntimeError(f"npm ci in {SERVERS} failed:\n{result.stdout}{result.stderr}")


class S3Server:
    """One store: `front` is the port tensorfs talks to, `store` the s3rver port the tests write through
    (unsigned). `settings` as tests/servers/s3_server.js describes them."""

    def __init__(self, **settings):
        install_packages()
        self.folder = tempfile.mkdtemp(prefix="tensorfs-s3-")
        self.log_path = os.path.join(self.folder, "requests.log")
        settings.setdefault("accounts", [ACCOUNT, TEMPORARY])
        # s3rver makes its continuation tokens with DES, which OpenSSL 3 keeps in its legacy provider.
        self.process = subprocess.Popen([NODE, "--openssl-legacy-provider", os.path.join(SERVERS, "s3_server.js"),
                                         os.path.join(self.folder, "data"), self.log_path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
        self.process.stdin.write(json.dumps(settings))
        self.process.stdin.close()
        line = self.process.stdout.readline()  # the server prints its ports once it listens
        if not line:
            self.process.wait(timeout=30)
            raise RuntimeError("the S3 server did not start: " + self.process.stderr.read())
        ports = json.loads(line)
        self.front, self.store = ports["front"], ports["store"]
        self.endpoint = f"http://127.0.0.1:{self.front}"

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=30)
        self.process.stdout.close()
        self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def request(self, method, path, body=b"", port=None, headers=None):
        """An unsigned request straight to s3rver (or to `port`); returns (status, body)."""
        connection = http.client.HTTPConnection("127.0.0.1", port or self.store, timeout=60)
        try:
            connection.request(method, path, body=body, headers=headers or {})
            answer = connection.getresponse()
            return answer.status, answer.read()
        finally:
            connection.close()

    def create_bucket(self, bucket):
        status, body = self.request("PUT", "/" + bucket)
        assert status == 200, (status, body)

    def put(self, bucket, key, data):
        status, body = self.request("PUT", f"/{bucket}/{urllib.parse.quote(key)}", data)
        assert status == 200, (status, body)

    def put_tree(self, bucket, folder, prefix=""):
        """Every file under `folder` as an object, keyed by PREFIX + its path relative to the folder."""
        for parent, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(parent, name)
                with open(path, "rb") as f:
                    self.put(bucket, prefix + os.path.relpath(path, folder), f.read())

    def change_settings(self, **changes):
        status, body = self.request("PUT", "/.front/settings", json.dumps(changes).encode(), port=self.front)
        assert status == 204, (status, body)

    def put_with_checksum(self, bucket, key, data, checksum):
        """(status, S3's error code or None) of a PUT through the front (signed, as a client of AWS sends it) that
        carries x-amz-checksum-sha256: `checksum`, the base64 SHA-256 the client claims for `data`."""
        path = f"/{bucket}/{urllib.parse.quote(key)}"
        headers = self.signed_headers(path, {}, method="PUT", headers={"x-amz-checksum-sha256": checksum})
        status, body = self.request("PUT", path, data, port=self.front, headers=headers)
        text = body.decode(errors="replace")
        return status, text.split("<Code>")[1].split("</Code>")[0] if "<Code>" in text else None

    def signed_headers(self, path, query, keys=ACCOUNT, date=None, headers=None, method="GET"):
        """The headers of a request (a GET unless `method` says) of `path` with `query` ({name: value}) signed by
        AWS's own signer (tests/servers/s3_sign.js) with `keys`, at `date` (ISO 8601; default now)."""
        request = {"method": method, "host": f"127.0.0.1:{self.front}", "path": path, "query": query,
                   "headers": headers or {}, "region": "us-east-1",
                   "date": date or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **keys}
        result = subprocess.run([NODE, os.path.join(SERVERS, "s3_sign.js")], input=json.dumps(request),
                                capture_output=True, text=True, timeout=60, check=True)
        return json.loads(result.stdout)

    def send(self, target, headers):
        """(status, S3's error code or None) of a GET of `target` (path and query as sent) through the front."""
        status, body = self.request("GET", target, port=self.front, headers=headers)
        text = body.decode(errors="replace")
        return status, text.split("<Code>")[1].split("</Code>")[0] if "<Code>" in text else None

    def check_front(self):
        """Raises unless the front serves a request signed right and refuses one signed with a wrong secret, one
        whose query was changed after signing and one signed 20 minutes ago: what the tests rely on."""
        path, query = f"/{BUCKET}", {"list-type": "2", "prefix": "gguf/"}
        stale = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 20 * 60))
        wrong = dict(ACCOUNT, secret_key=ACCOUNT["secret_key"] + "x")
        cases = [("a right signature", path + "?list-type=2&prefix=gguf%2F", {}, (200, None)),
                 ("a wrong secret", path + "?list-type=2&prefix=gguf%2F", {"keys": wrong},
                  (403, "SignatureDoesNotMatch")),
                 ("a tampered query", path + "?list-type=2&prefix=safetensors%2F", {},
                  (403, "SignatureDoesNotMatch")),
                 ("a stale date", path + "?list-type=2&prefix=gguf%2F", {"date": stale},
                  (403, "RequestTimeTooSkewed"))]
        for what, target, signing, expected in cases:
            answer = self.send(target, self.signed_headers(path, query, **signing))
            if answer != expected:
                raise RuntimeError(f"the S3 front answers {answer} to {what}, not {expected}")

    def issued_keys(self):
        """The temporary keys the front's STS gave, in order (tests/servers/s3_server.js: /.front/sts)."""
        status, body = self.request("GET", "/.front/sts", port=self.front)
        assert status == 200, (status, body)
        return json.loads(body)

    def expired(self, keys):
        """Whether temporary `keys` (one of issued_keys()) have expired at the front: it refuses them."""
        path = f"/{BUCKET}"
        headers = self.signed_headers(path, {"list-type": "2"},
                                      keys={k: keys[k] for k in ("access_key", "secret_key", "session_token")})
        return self.send(path + "?list-type=2", headers) == (400, "ExpiredToken")

    def log(self):
        """One dict per request through the front: method, path, query, range, signed_headers, who, status,
        error (S3's code of a refusal), bytes."""
        with open(self.log_path) as f:
            return [json.loads(line) for line in f if line.endswith("\n")]

    def env(self, keys=ACCOUNT, endpoint=None, **extra):
        """The environment of a tensorfs that reads this store with `keys` (None: no credentials at all), through
        `endpoint` (default the front): the remote tests' environment without any AWS setting of the machine's."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update({"AWS_ENDPOINT_URL_S3": endpoint or self.endpoint,
                    "AWS_CONFIG_FILE": os.path.join(self.folder, "no-config"),
                    "AWS_SHARED_CREDENTIALS_FILE": os.path.join(self.folder, "no-credentials")})
        if keys is not None:
            env.update({"AWS_ACCESS_KEY_ID": keys["access_key"], "AWS_SECRET_ACCESS_KEY": keys["secret_key"]})
            if "session_token" in keys:
                env["AWS_SESSION_TOKEN"] = keys["session_token"]
        env.update(extra)
        return env


_shared = None


def shared():
    """The store with the test vectors, started at first use and stopped when the tests end."""
    global _shared
    if _shared is None:
        _shared = S3Server(public_buckets=[PUBLIC_BUCKET])
        atexit.register(_shared.stop)
        for bucket in (BUCKET, PUBLIC_BUCKET):
            _shared.create_bucket(bucket)
            _shared.put_tree(bucket, VECTORS)
        _shared.check_front()
    return _shared


_cache_folder = None


def use_s3_environment():
    """Points this process's environment (inherited by every tensorfs the tests run) at the shared store, with
    ACCOUNT's keys, no proxy for 127.0.0.1 and a disk cache of this test process (removed when the tests end)."""
    global _cache_folder
    server = shared()
    if os.environ.get("AWS_ENDPOINT_URL_S3") == server.endpoint:
        return
    if _cache_folder is None:
        _cache_folder = tempfile.mkdtemp(prefix="tensorfs-cache-")
        atexit.register(shutil.rmtree, _cache_folder, True)
    env = server.env(XDG_CACHE_HOME=_cache_folder, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    os.environ.clear()
    os.environ.update(env)


class S3Where(Where):
    """The vectors in the shared store."""

    def source(self, relative):
        use_s3_environment()
        return self.prefix() + relative


S3 = S3Where("s3", lambda: f"s3://{BUCKET}/")
