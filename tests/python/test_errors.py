"""Each kind of failure raises its subclass of tensorfs.Error, which is also the builtin OSError subclass that Python
code already catches, with errno, strerror and filename set and a one-line message (docs/semantics.md, "Errors").
The failures are real: nginx answering 404, a Hub that wants a token, the S3 store refusing unsigned requests, a
listener that never answers, a port nobody listens on, a GGUF of a version tensorfs does not read, and a server
stopped after the source was opened."""
import errno
import os
import shutil
import socket

import pytest

import tensorfs
from remote_servers import HUB_REPO, Nginx, TokenHub, free_port
from s3_servers import S3Server
from tensorfs_mount import VECTORS

GGUF = os.path.join(VECTORS, "gguf", "mixed.gguf")
BUCKET = "private"


@pytest.fixture(scope="module")
def nginx(tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    shutil.copy(GGUF, folder)
    server = Nginx(str(folder))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def environment(monkeypatch, tmp_path, nginx):
    """A disk cache of the test's own (so that every read goes to the server), no proxy, the test Hub."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{nginx.hub}")
    monkeypatch.delenv("HF_TOKEN", raising=False)


def assert_error(raised, kind, builtin, number, filename):
    error = raised.value
    assert type(error) is kind
    assert isinstance(error, tensorfs.Error) and isinstance(error, builtin)
    assert error.errno == number
    assert error.filename == filename
    message = str(error)
    assert "\n" not in message and message.startswith(f"{filename}: ")
    assert error.strerror and error.strerror in message


def test_a_missing_file_over_http_is_not_found(nginx):
    url = f"http://127.0.0.1:{nginx.http}/absent.gguf"
    with pytest.raises(tensorfs.Error) as raised:
        tensorfs.safe_open(url)
    assert_error(raised, tensorfs.SourceNotFoundError, FileNotFoundError, errno.ENOENT, url)


def test_a_hub_that_wants_a_token_is_access_denied(nginx, monkeypatch):
    hub = TokenHub(nginx, tokens={"hf_right"})
    try:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
        source = f"hf://{HUB_REPO}/mixed.gguf"
        with pytest.raises(tensorfs.Error) as raised:
            tensorfs.safe_open(source)
        assert isinstance(raised.value, tensorfs.AccessDeniedError)
        assert isinstance(raised.value, PermissionError) and raised.value.errno == errno.EACCES
        assert "\n" not in str(raised.value) and raised.value.filename in str(raised.value)
    finally:
        hub.stop()


def test_an_unsigned_request_to_a_private_bucket_is_access_denied(monkeypatch, tmp_path):
    store = S3Server()
    try:
        store.create_bucket(BUCKET)
        with open(GGUF, "rb") as f:
            store.put(BUCKET, "mixed.gguf", f.read())
        for name, value in store.env(keys=None).items():
            if name.startswith("AWS_"):
                monkeypatch.setenv(name, value)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
            monkeypatch.delenv(name, raising=False)
        source = f"s3://{BUCKET}/mixed.gguf"
        with pytest.raises(tensorfs.Error) as raised:
            tensorfs.safe_open(source)
        assert_error(raised, tensorfs.AccessDeniedError, PermissionError, errno.EACCES, source)
        assert "went unsigned" in str(raised.value)
    finally:
        store.stop()


def test_a_server_that_never_answers_times_out():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)   # the kernel completes the connections; nobody reads them
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/model.gguf"
        with pytest.raises(tensorfs.Error) as raised:
            tensorfs.safe_open(url, timeout="2")
        assert_error(raised, tensorfs.TimedOutError, TimeoutError, errno.ETIMEDOUT, url)


def test_a_port_nobody_listens_on_is_unavailable():
    url = f"http://127.0.0.1:{free_port()}/model.gguf"
    with pytest.raises(tensorfs.Error) as raised:
        tensorfs.safe_open(url, timeout="2")
    assert_error(raised, tensorfs.UnavailableError, ConnectionError, errno.EHOSTUNREACH, url)


def test_a_gguf_of_an_unknown_version_is_unsupported(tmp_path):
    path = str(tmp_path / "future.gguf")
    with open(GGUF, "rb") as f:
        data = bytearray(f.read())
    data[4:8] = (99).to_bytes(4, "little")
    with open(path, "wb") as f:
        f.write(data)
    with pytest.raises(tensorfs.Error) as raised:
        tensorfs.safe_open(path)
    assert_error(raised, tensorfs.UnsupportedError, tensorfs.Error, errno.EOPNOTSUPP, path)


def test_a_read_after_the_server_is_gone_fails_without_breaking_the_handle(tmp_path):
    folder = tmp_path / "served"
    folder.mkdir()
    shutil.copy(GGUF, folder)
    server = Nginx(str(folder))
    url = f"http://127.0.0.1:{server.http}/mixed.gguf"
    try:
        handle = tensorfs.safe_open(url, framework="np", timeout="2")
        names = handle.keys()
    finally:
        server.stop()
    with pytest.raises(tensorfs.Error) as raised:
        handle.get_tensor(names[0])
    assert raised.value.errno in (errno.EHOSTUNREACH, errno.EIO)
    assert raised.value.filename == url and "\n" not in str(raised.value)
    assert handle.keys() == names
