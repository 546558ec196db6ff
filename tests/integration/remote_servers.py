"""Real servers for remote sources, on 127.0.0.1 only, started by the tests and stopped with them (never by name):

- nginx (Debian's nginx-light) with a generated config: the test vectors over plain HTTP and over TLS (with a CA
  and a certificate made here with the openssl CLI), and laid out like the Hugging Face Hub: `/ORG/REPO/resolve/
  REV/PATH` answers 302 to a second server block (the "CDN", another port) that serves the bytes and logs every
  request's headers, plus static `api/models/ORG/REPO/tree/REV[/PATH]` listings (with the LFS sha256 of weight
  files, computed here with hashlib, as the Hub lists them).
- FaultProxy: an HTTP proxy of our own between tensorfs and nginx that delays answers, answers 503 or 429 with
  Retry-After, cuts connections in the middle of a body, or sends fewer bytes than its Content-Length says.

Ports are chosen by the OS at run time. `Where` below names where a vector is served in each of these ways, so that
the acceptance tests run once per way without copies."""
import atexit
import ctypes
import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

from tensorfs_mount import VECTORS, wait_until

NGINX = "/usr/sbin/nginx"
OPENSSL = "/usr/bin/openssl"
PR_SET_PDEATHSIG = 1
HUB_REPO = "test-org/vectors"
HUB_REVISION = "main"
# The commit the branch names (the Hub's /api/models/REPO/revision/main answers it): files and listings are served
# at both, as on the Hub.
HUB_COMMIT = hashlib.sha1(b"tensorfs test repos").hexdigest()
# test-org/moving: a branch that a test moves from one commit to another, as a push does (moving_layout).
MOVING_REPO = "test-org/moving"
MOVING_COMMITS = tuple(hashlib.sha1(b"tensorfs moving %d" % i).hexdigest() for i in (1, 2, 3))
# Who may read nginx's /private/ (the vectors behind HTTP basic auth).
BASIC_USER = "alice"
BASIC_PASSWORD = "pw-s3cr3t-9f2"


def _die_with_parent():
    """Servers end with the test process even when it is killed (no server left behind to be killed by name)."""
    ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def make_certificates(folder):
    """A CA and a certificate for 127.0.0.1/localhost signed by it; returns (ca.pem, server.pem, server.key)."""
    def openssl(*args):
        subprocess.run([OPENSSL, *args], check=True, capture_output=True, cwd=folder, timeout=60)
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=tensorfs test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", *key, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
    with open(os.path.join(folder, "ext.cnf"), "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf")
    return tuple(os.path.join(folder, name) for name in ("ca.pem", "server.pem", "server.key"))


# The files the Hub keeps in Git LFS, as the .gitattributes of a new Hub repo names them (weights, archives...):
# their listing entries carry "lfs": {"oid": SHA-256 of the bytes, "size", "pointerSize"}; the others (config.json,
# tokenizer files, README.md) are plain Git blobs and carry no sha256.
LFS_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".onnx", ".npy", ".npz",
                ".pkl", ".pickle", ".zip", ".gz", ".tar", ".zst", ".model")
_sha256_of = {}


def file_entry(disk_path, repo_path):
    """A file's entry in the Hub's tree listing; an LFS file's sha256 computed from its bytes (hashlib), as the
    Hub computes it when the file is pushed."""
    size = os.path.getsize(disk_path)
    entry = {"type": "file", "oid": "0" * 40, "size": size, "path": repo_path}
    if repo_path.endswith(LFS_SUFFIXES):
        if disk_path not in _sha256_of:
            with open(disk_path, "rb") as f:
                _sha256_of[disk_path] = hashlib.file_digest(f, "sha256").hexdigest()
        entry["lfs"] = {"oid": _sha256_of[disk_path], "size": size, "pointerSize": 134}
    return entry


def recursive_listing(data, relative):
    """The Hub's listing of folder `relative` of `data` with `recursive`: every file and folder under it, with
    paths from the repository's root, in os.walk's order."""
    entries = []
    for folder, subfolders, names in os.walk(os.path.join(data, relative)):
        inner = os.path.relpath(folder, data)
        inner = "" if inner == "." else inner
        for name in sorted(subfolders):
            entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": os.path.join(inner, name)})
        for name in sorted(names):
            entries.append(file_entry(os.path.join(folder, name), os.path.join(inner, name)))
    return entries


def publish_revision(root, repo, commit):
    """Makes `main` of `repo` name `commit`, whose files and listings are already laid out under `root`: the
    revision answer, and `main` as another name of the commit's files and listings (a symlink, swapped at once)."""
    answer = os.path.join(root, "api", "models", repo, "revision", HUB_REVISION)
    os.makedirs(os.path.dirname(answer), exist_ok=True)
    with open(answer + ".new", "w") as f:
        json.dump({"id": repo, "sha": commit}, f)
    os.replace(answer + ".new", answer)
    for folder in (os.path.join(root, "files", repo), os.path.join(root, "api", "models", repo, "tree")):
        os.symlink(commit, os.path.join(folder, "main.new"))
        os.replace(os.path.join(folder, "main.new"), os.path.join(folder, HUB_REVISION))


def move_branch(repo, commit):
    """A push to `repo` (test-org/moving) while the servers run: its `main` names `commit` from now on."""
    publish_revision(os.path.join(nginx().folder, "hub"), repo, commit)


def moving_layout(root):
    """test-org/moving: three commits of one model.safetensors (a 3 MiB tensor, more than the block a mount reads
    its header with), with main at the first. The second changes the tensor's bytes (the header stays); the third
    leaves the file as the first has it (the same file: the same ETag) and adds a README.md."""
    header = json.dumps({"w": {"dtype": "U8", "shape": [3 << 20], "data_offsets": [0, 3 << 20]}}).encode()
    header += b" " * (-len(header) % 8)
    first, second, third = MOVING_COMMITS
    for commit in MOVING_COMMITS:
        os.makedirs(os.path.join(root, "files", MOVING_REPO, commit))
    for number, commit in enumerate((first, second)):
        path = os.path.join(root, "files", MOVING_REPO, commit, "model.safetensors")
        with open(path, "wb") as f:
            f.write(len(header).to_bytes(8, "little") + header + bytes([number + 1]) * (3 << 20))
        # Files of different bytes get different ETags, as on the Hub (nginx's is mtime-size).
        os.utime(path, (1_700_000_000 + number, 1_700_000_000 + number))
    os.link(os.path.join(root, "files", MOVING_REPO, first, "model.safetensors"),
            os.path.join(root, "files", MOVING_REPO, third, "model.safetensors"))
    with open(os.path.join(root, "files", MOVING_REPO, third, "README.md"), "w") as f:
        f.write("# moving\n")
    for commit in MOVING_COMMITS:
        files = os.path.join(root, "files", MOVING_REPO, commit)
        entries = [file_entry(os.path.join(files, name), name) for name in sorted(os.listdir(files))]
        listing = os.path.join(root, "api", "models", MOVING_REPO, "tree", commit)
        os.makedirs(listing)
        for name, listed in (("tree.json", entries), ("recursive1.json", entries), ("recursive2.json", [])):
            with open(os.path.join(listing, name), "w") as f:
                json.dump(listed, f)
    publish_revision(root, MOVING_REPO, first)


def hub_layout(root, data):
    """The files of `data` under `root/files/ORG/REPO/COMMIT/` (symlinks) and the Hub's tree listings of every folder
    under `root/api/models/ORG/REPO/tree/COMMIT[/PATH]/tree.json`, and the same with `recursive` in two pages
    (`recursive1.json`, `recursive2.json`), with `main` naming the commit; and test-org/paged, the files of
    safetensors/sharded with their listing in two pages (`root/paged/page1.json`, `page2.json`), test-org/odd, the
    same among odd listing entries, and test-org/moving (moving_layout)."""
    files = os.path.join(root, "files", HUB_REPO, HUB_COMMIT)
    listings = os.path.join(root, "api", "models", HUB_REPO, "tree", HUB_COMMIT)
    for folder, subfolders, names in os.walk(data):
        relative = os.path.relpath(folder, data)
        relative = "" if relative == "." else relative
        os.makedirs(os.path.join(files, relative), exist_ok=True)
        os.makedirs(os.path.join(listings, relative), exist_ok=True)
        entries = []
        for name in sorted(names):
            path = os.path.join(relative, name) if relative else name
            os.symlink(os.path.join(folder, name), os.path.join(files, path))
            entries.append(file_entry(os.path.join(folder, name), path))
        for name in sorted(subfolders):
            entries.append({"type": "directory", "oid": "0" * 40, "size": 0,
                            "path": os.path.join(relative, name) if relative else name})
        with open(os.path.join(listings, relative, "tree.json"), "w") as f:
            json.dump(entries, f)
        every = recursive_listing(data, relative)
        for page, part in (("recursive1.json", every[:len(every) // 2]), ("recursive2.json", every[len(every) // 2:])):
            with open(os.path.join(listings, relative, page), "w") as f:
                json.dump(part, f)
        if relative == os.path.join("safetensors", "sharded"):
            paged = os.path.join(root, "files", "test-org", "paged")
            os.makedirs(os.path.join(root, "paged"), exist_ok=True)
            os.makedirs(paged, exist_ok=True)
            os.symlink(folder, os.path.join(paged, HUB_COMMIT))
            os.makedirs(os.path.join(root, "api", "models", "test-org", "paged", "tree"))
            publish_revision(root, "test-org/paged", HUB_COMMIT)
            listed = [dict(e, path=os.path.basename(e["path"])) for e in entries if e["type"] == "file"]
            for page, part in (("page1.json", listed[:len(listed) // 2]), ("page2.json", listed[len(listed) // 2:])):
                with open(os.path.join(root, "paged", page), "w") as f:
                    json.dump(part, f)
            # test-org/odd: the same files, listed among entries of the wrong shapes (a listing from a server
            # that is not quite the Hub), which must be passed over.
            odd = os.path.join(root, "files", "test-org", "odd")
            os.makedirs(odd, exist_ok=True)
            os.symlink(folder, os.path.join(odd, HUB_COMMIT))
            odd_listing = os.path.join(root, "api", "models", "test-org", "odd", "tree", HUB_COMMIT)
            os.makedirs(odd_listing, exist_ok=True)
            with open(os.path.join(odd_listing, "tree.json"), "w") as f:
                json.dump(listed + ["a string", 5, {"type": 5, "path": "a.json"}, {"type": ["file"], "path": "b"},
                                    {"type": "file", "path": 7}, {"type": "file"}], f)
            publish_revision(root, "test-org/odd", HUB_COMMIT)
    publish_revision(root, HUB_REPO, HUB_COMMIT)
    moving_layout(root)


class Nginx:
    """One nginx serving `data` four ways (attributes: http, https, hub, cdn ports); logs in `self.folder`."""

    def __init__(self, data):
        self.data = data
        self.folder = tempfile.mkdtemp(prefix="tensorfs-nginx-")
        self.ca, cert, key = make_certificates(self.folder)
        hub_layout(os.path.join(self.folder, "hub"), data)
        for attempt in range(5):
            self.http, self.https, self.hub, self.cdn = (free_port() for _ in range(4))
            self.write_config(cert, key)
            self.process = subprocess.Popen([NGINX, "-p", self.folder, "-c", "nginx.conf", "-e", "error.log"],
                                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                            stderr=subprocess.PIPE, preexec_fn=_die_with_parent)
            ports = (self.http, self.https, self.hub, self.cdn)
            if wait_until(lambda: self.process.poll() is not None or all(port_answers(p) for p in ports), 30) \
                    and self.process.poll() is None:
                return
            # A port taken between free_port() and nginx's bind: try other ports.
            self.process.wait(timeout=30)
        raise RuntimeError("nginx did not start: " + self.process.stderr.read().decode(errors="replace"))

    def write_config(self, cert, key):
        hub = os.path.join(self.folder, "hub")
        user = "user root;" if os.geteuid() == 0 else ""
        config = f"""
{user}
worker_processes 1;
daemon off;
pid {self.folder}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
    default_type application/octet-stream;
    types {{ application/json json; }}
    sendfile on;
    keepalive_requests 100000;
    client_body_temp_path {self.folder}/body;
    log_format bytes '$request_method "$uri" $status $body_bytes_sent "$http_range" "$http_if_match" $connection';
    log_format headers '$request_method "$uri" $status $body_bytes_sent "$http_range" "$http_if_match" '
                       'authorization="$http_authorization"';
    access_log {self.folder}/access.log bytes;
    server {{
        listen 127.0.0.1:{self.http};
        root {self.data};
        # The same files behind a password (HTTP basic auth), for credentials given in the URL.
        location /private/ {{
            auth_basic "tensorfs tests";
            auth_basic_user_file {self.folder}/htpasswd;
            alias {self.data}/;
        }}
    }}
    server {{
        listen 127.0.0.1:{self.https} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        root {self.data};
    }}
    server {{
        listen 127.0.0.1:{self.hub};
        access_log {self.folder}/hub.log headers;
        root {hub};
        location /api/models/ {{
            default_type application/json;
            # ?recursive=true: every file under the folder, in two pages linked by the Link header, as the Hub
            # pages long listings.
            set $listing $uri;
            if ($arg_cursor) {{
                rewrite ^(.*)$ $1/recursive2.json break;
            }}
            if ($arg_recursive) {{
                add_header Link '<http://127.0.0.1:{self.hub}$listing?recursive=true&cursor=2>; rel="next"';
                rewrite ^(.*)$ $1/recursive1.json break;
            }}
            # a listing (tree/REV[/PATH]), else a revision's answer (revision/REV)
            try_files $uri/tree.json $uri =404;
        }}
        # A repository whose listing comes in two pages, as the Hub pages long listings (Link: <next>; rel="next").
        location ~ ^(?<paged_listing>/api/models/test-org/paged/tree/[^/]+)$ {{
            default_type application/json;
            if ($arg_cursor = "") {{
                add_header Link '<http://127.0.0.1:{self.hub}$paged_listing?cursor=2>; rel="next"';
                rewrite ^ /paged/page1.json break;
            }}
            rewrite ^ /paged/page2.json break;
        }}
        # A private repository (no token or a wrong one: 401) and a gated one (403), as the Hub answers them.
        location ^~ /api/models/test-org/private/ {{ return 401; }}
        location ^~ /test-org/private/ {{ return 401; }}
        location ^~ /api/models/test-org/gated/ {{ return 403; }}
        location ^~ /test-org/gated/ {{ return 403; }}
        location ~ ^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$ {{
            return 302 http://127.0.0.1:{self.cdn}/$1/$2/$3;
        }}
    }}
    server {{
        listen 127.0.0.1:{self.cdn};
        access_log {self.folder}/cdn.log headers;
        root {hub}/files;
    }}
}}
"""
        with open(os.path.join(self.folder, "nginx.conf"), "w") as f:
            f.write(config)
        with open(os.path.join(self.folder, "htpasswd"), "w") as f:
            f.write(f"{BASIC_USER}:{{PLAIN}}{BASIC_PASSWORD}\n")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)
        self.process.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def log_lines(self, name="access.log"):
        with open(os.path.join(self.folder, name)) as f:
            return f.readlines()


LOG_LINE = re.compile(r'^(\S+) "([^"]*)" (\d+) (\d+) "([^"]*)" "([^"]*)"')


def requests_in(lines):
    """(method, uri, status, body bytes, range, if-match) of each access-log line (nginx writes a quote in a
    header as \\x22)."""
    found = []
    for line in lines:
        match = LOG_LINE.match(line)
        if match:
            found.append((match[1], match[2], int(match[3]), int(match[4]), match[5], match[6].replace("\\x22", '"')))
    return found


def connections_in(lines):
    """How many TCP connections the requests of these access-log lines came on (nginx's $connection serial, the last
    field of the `bytes` format)."""
    return len({line.split()[-1] for line in lines if LOG_LINE.match(line)})


class FaultProxy:
    """A plain-HTTP proxy to one upstream port. Each request first takes the next fault queued for it, if any:
    ("status", code, extra headers[, body]) answers with that status instead; ("cut",) sends the head and half the body,
    then closes; ("short",) sends the head with the full Content-Length and only half the body, then closes; and
    `delay` seconds pass before every answer. Only requests with a Range header take faults. After `hold()`, every
    range request is kept unanswered (counted in `held`) until stop(), which closes their connections unanswered:
    a server that dies with requests in flight."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.delay = 0.0
        self.faults = []
        self.lock = threading.Lock()
        self.served = []    # (range, what happened)
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(128)
        self.port = self.server.getsockname()[1]
        self.stopping = False
        self.released = threading.Event()
        self.released.set()
        self.held = 0
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def stop(self):
        self.stopping = True
        self.released.set()
        self.server.close()

    def hold(self):
        self.released.clear()

    def queue(self, *faults):
        with self.lock:
            self.faults.extend(faults)

    def accept_loop(self):
        while not self.stopping:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.serve, args=(client,), daemon=True).start()

    @staticmethod
    def read_head(sock, buffered):
        while b"\r\n\r\n" not in buffered:
            chunk = sock.recv(65536)
            if not chunk:
                return None, b""
            buffered += chunk
        head, rest = buffered.split(b"\r\n\r\n", 1)
        return head.decode("latin-1"), rest

    def serve(self, client):
        upstream = None
        buffered = b""
        buffer = bytearray(1 << 20)
        view = memoryview(buffer)
        try:
            while True:
                head, buffered = self.read_head(client, buffered)
                if head is None:
                    return
                has_range = re.search(r"(?im)^range:", head) is not None
                fault = None
                with self.lock:
                    if has_range and self.faults:
                        fault = self.faults.pop(0)
                if self.delay:
                    time.sleep(self.delay)
                if has_range and not self.released.is_set():
                    with self.lock:
                        self.held += 1
                    self.released.wait()
                if self.stopping:
                    return
                if fault and fault[0] == "status":
                    extra = "".join(f"{k}: {v}\r\n" for k, v in fault[2].items())
                    body = fault[3] if len(fault) > 3 else b"injected fault\n"
                    client.sendall(f"HTTP/1.1 {fault[1]} Injected\r\n{extra}Content-Length: {len(body)}\r\n"
                                   f"Content-Type: text/plain\r\n\r\n".encode() + body)
                    self.served.append((has_range, fault))
                    continue
                if upstream is None:
                    upstream = socket.create_connection(("127.0.0.1", self.upstream))
                upstream.sendall(head.encode("latin-1") + b"\r\n\r\n")
                answer, rest = self.read_head(upstream, b"")
                if answer is None:
                    return
                length = re.search(r"(?im)^content-length:\s*(\d+)", answer)
                length = int(length[1]) if length else 0
                self.served.append((has_range, fault))
                # The body is streamed as it comes; a fault sends only its first half, then closes.
                broken = fault is not None and fault[0] in ("cut", "short")
                limit = length // 2 if broken else length
                client.sendall(answer.encode("latin-1") + b"\r\n\r\n" + rest[:limit])
                sent = min(len(rest), limit)
                while sent < limit:
                    got = upstream.recv_into(buffer, min(len(buffer), limit - sent))
                    if got == 0:
                        return
                    client.sendall(view[:got])
                    sent += got
                if broken:
                    if fault[0] == "cut":
                        client.shutdown(socket.SHUT_RDWR)
                    return
        except OSError:
            return
        finally:
            client.close()
            if upstream is not None:
                upstream.close()


class TokenHub:
    """The test Hub of `nginx` behind a token, as the Hub answers a private repository: a request must carry
    `Authorization: Bearer TOKEN` with TOKEN in `tokens` (the tests change them at any time: a token revoked), else
    it is answered 401 with the Hub's X-Error-Message. It serves files itself (`/ORG/REPO/resolve/REV/PATH` is
    nginx's CDN's file, with no redirect to a host that takes no token), so that every fetch of a file's bytes
    shows the token it carried. `requests`: (path, range, token) of each request, in order."""

    def __init__(self, nginx, tokens=()):
        hub = self
        self.tokens = set(tokens)
        self.requests = []
        self.lock = threading.Lock()
        resolve = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_HEAD(self):
                self.do_GET(head=True)

            def do_GET(self, head=False):
                authorization = self.headers.get("Authorization", "")
                token = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None
                with hub.lock:
                    hub.requests.append((self.path, self.headers.get("Range"), token))
                    allowed = token in hub.tokens
                if not allowed:
                    self.send_response(401)
                    self.send_header("X-Error-Message", "Invalid credentials in Authorization header")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                match = resolve.match(self.path.split("?")[0])
                port, path = (nginx.cdn, f"/{match[1]}/{match[2]}/{match[3]}") if match else (nginx.hub, self.path)
                upstream = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                try:
                    forwarded = {k: v for k, v in self.headers.items()
                                 if k.lower() in ("range", "if-match", "if-none-match", "if-range",
                                                  "if-modified-since")}
                    upstream.request("HEAD" if head else "GET", path, headers=forwarded)
                    answer = upstream.getresponse()
                    body = answer.read()
                    self.send_response(answer.status)
                    for name, value in answer.getheaders():
                        if name.lower() in ("content-type", "content-range", "etag", "last-modified", "link",
                                            "accept-ranges", "location"):
                            self.send_header(name, value)
                    self.send_header("Content-Length", answer.getheader("Content-Length", str(len(body))))
                    self.end_headers()
                    if not head:
                        self.wfile.write(body)
                finally:
                    upstream.close()

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def answers(self, token, path):
        """The status of a request of `path` with `token`, as the server answers it now."""
        connection = http.client.HTTPConnection("127.0.0.1", self.server.server_address[1], timeout=60)
        try:
            connection.request("HEAD", path, headers={"Authorization": f"Bearer {token}"})
            return connection.getresponse().status
        finally:
            connection.close()


class Where:
    """Where the test vectors are read from: `source(relative)` is the SOURCE naming a vector there. Remote ones
    start nginx at first use and point this process's environment (inherited by every tensorfs it runs) at it: the
    test CA trusted, the Hub endpoint, a disk cache of this test process."""

    def __init__(self, label, prefix, lists_folders=True):
        self.label = label
        self.prefix = prefix
        self.lists_folders = lists_folders   # a plain web server has no listing

    def source(self, relative):
        if self.label != "local":
            use_remote_environment()
        return self.prefix() + relative


LOCAL = Where("local", lambda: VECTORS + "/")
HTTP = Where("http", lambda: f"http://127.0.0.1:{nginx().http}/", lists_folders=False)
HTTPS = Where("https", lambda: f"https://127.0.0.1:{nginx().https}/", lists_folders=False)
HUB = Where("hub", lambda: f"hf://{HUB_REPO}/")


_nginx = None


def nginx():
    """The nginx serving tests/data/vectors, started at first use and stopped when the tests end."""
    global _nginx
    if _nginx is None:
        _nginx = Nginx(VECTORS)
        atexit.register(_nginx.stop)
    return _nginx


_environment_cache = None


def use_remote_environment():
    """remote_env() for this process and its children, once; the disk cache is removed when the tests end."""
    global _environment_cache
    if _environment_cache is None:
        _environment_cache = tempfile.mkdtemp(prefix="tensorfs-cache-")
        atexit.register(shutil.rmtree, _environment_cache, True)
        env = remote_env(_environment_cache)   # from the environment as it is, before it is cleared
        os.environ.clear()
        os.environ.update(env)


def remote_env(cache_dir, extra=None):
    """The environment tensorfs runs in for remote tests: the test CA trusted, the disk cache in `cache_dir`, no
    proxy between it and 127.0.0.1, and no Hub token unless the test gives one."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HOME")}
    env.update({"SSL_CERT_FILE": nginx().ca, "XDG_CACHE_HOME": cache_dir, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost", "HF_HOME": os.path.join(cache_dir, "hf"),
                "HF_ENDPOINT": f"http://127.0.0.1:{nginx().hub}"})
    env.update(extra or {})
    return env
