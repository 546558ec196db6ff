"""`tensorfs csi`, the Kubernetes node plugin, played by a kubelet of our own (csi_client.py): volumes of a model
folder on the local disk, on nginx (a URL and the Hub's layout) and in S3 are published, read by "pods" (a mount
namespace without /dev/fuse, as root and as uid 65534) against the reference values, and unpublished; secrets
never show in any process's command line or environment; every error has its code; publishing is idempotent; two
volumes of a model share the node's cache; a killed plugin, a killed daemon and a server that stops answering
leave nothing stuck."""
import json
import os
import secrets
import shutil
import signal
import tempfile
import threading
import time
import unittest

import grpc

import remote_servers
import s3_servers
from csi_client import INLINE, Mode, Plugin, Pod, capability, is_published, pb, read_in_pod, secret_holders
from remote_servers import FaultProxy, Nginx, requests_in
from tensorfs_mount import VECTORS, daemon_pids, read_file, run, unmount_or_detach, wait_until

SHARDED = os.path.join(VECTORS, "safetensors", "sharded")
EXPECTED = os.path.join(SHARDED, "expected")
SIDE_FILES = {"config.json": b'{"model_type": "llama", "hidden_size": 64}\n',
              "tokenizer_config.json": b'{"model_max_length": 128}\n'}
# The documented bound of NodeUnpublishVolume (README, "Kubernetes"; src/csi/volume_mounts.hpp).
UNPUBLISH_BOUND = 10
HEAD = 64 * 1024  # what a mount reads of each file when it opens it


def model_folder():
    """The sharded vectors with side files: a model folder as a Hub repo holds one."""
    folder = tempfile.mkdtemp(prefix="tensorfs-csi-model-")
    for name in os.listdir(SHARDED):
        if name != "expected":
            shutil.copyfile(os.path.join(SHARDED, name), os.path.join(folder, name))
    for name, data in SIDE_FILES.items():
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return folder


def checks_of(folder, names_a_file):
    """What a pod reads: every tensor's dequant.f32 against the reference values, the side files and the files of
    source/ against the folder's bytes. A SOURCE that names one file (a URL) has in source/ that file and its
    shards; a folder, every file."""
    checks = [{"file": f"{name[:-4]}/dequant.f32", "expected": os.path.join(EXPECTED, name), "how": "f32"}
              for name in sorted(os.listdir(EXPECTED))]
    checks += [{"file": name, "expected": os.path.join(folder, name), "how": "cmp"} for name in SIDE_FILES]
    checks += [{"file": f"source/{name}", "expected": os.path.join(folder, name), "how": "cmp"}
               for name in sorted(os.listdir(folder)) if not (names_a_file and name in SIDE_FILES)]
    return checks


def queued_for_disk(target):
    """Bytes the daemon at `target` has fetched and not yet written to the disk cache."""
    with open(os.path.join(target, ".tensorfs", "stats.json")) as f:
        return json.load(f)["remote"]["memory"]["queued_for_disk_bytes"]


class CsiTest(unittest.TestCase):
    """A model folder served by an nginx and an S3 store of this test class, and a plugin per test."""

    @classmethod
    def setUpClass(cls):
        cls.folder = model_folder()
        cls.checks = {kind: checks_of(cls.folder, kind == "file") for kind in ("file", "folder")}
        cls.nginx = Nginx(cls.folder)
        # A password of this run only, so that a scan of every process finds nothing of another test's.
        cls.password = "pw-" + secrets.token_hex(8)
        with open(os.path.join(cls.nginx.folder, "htpasswd"), "w") as f:
            f.write(f"{remote_servers.BASIC_USER}:{{PLAIN}}{cls.password}\n")
        cls.keys = {"access_key": "AKIACSI" + secrets.token_hex(6).upper(),
                    "secret_key": "csi/" + secrets.token_hex(12)}
        cls.s3 = s3_servers.S3Server(accounts=[cls.keys])
        cls.s3.create_bucket("models")
        cls.s3.put_tree("models", cls.folder, prefix="tiny/")

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()
        cls.nginx.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def env(self):
        """The plugin's environment: the test CA, the test Hub, the test S3 endpoint, no credentials of its own."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("AWS_") and k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
        env.update({"SSL_CERT_FILE": self.nginx.ca, "NO_PROXY": "127.0.0.1,localhost",
                    "no_proxy": "127.0.0.1,localhost", "HF_ENDPOINT": f"http://127.0.0.1:{self.nginx.hub}",
                    "HF_HOME": os.path.join(self.nginx.folder, "hf"),
                    "AWS_ENDPOINT_URL_S3": self.s3.endpoint, "AWS_CONFIG_FILE": "/nonexistent",
                    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
        return env

    def aws_secrets(self):
        return {"AWS_ACCESS_KEY_ID": self.keys["access_key"], "AWS_SECRET_ACCESS_KEY": self.keys["secret_key"]}

    def plugin(self, **kwargs):
        return Plugin(self, env=self.env(), **kwargs)

    def http_source(self, private=False):
        return f"http://127.0.0.1:{self.nginx.http}/{'private/' if private else ''}model.safetensors.index.json"

    def assert_pod_reads(self, target, source):
        checks = self.checks["file" if source.startswith("http") else "folder"]
        for result in read_in_pod(target, checks):
            self.assertEqual((result["checked"], result["failures"]), (len(checks), []), result)

    def assert_gone(self, plugin, target):
        """Unpublished: no mount, no folder, no daemon, no record."""
        self.assertFalse(os.path.exists(target))
        self.assertTrue(wait_until(lambda: not daemon_pids(target)), "a daemon outlived its volume")
        self.assertFalse(any(target in record for record in plugin.records()))

    def assert_code(self, code, call, *words):
        with self.assertRaises(grpc.RpcError) as raised:
            call()
        self.assertEqual(raised.exception.code(), code, raised.exception.details())
        for word in words:
            self.assertIn(word, raised.exception.details())
        return raised.exception.details()


class Publishing(CsiTest):
    def test_kubelet_order_with_a_local_folder_read_by_a_pod_as_root_and_as_another_uid(self):
        plugin = self.plugin()
        info = plugin.identity.GetPluginInfo(pb.GetPluginInfoRequest())
        self.assertEqual(info.name, "csi.tensorfs.io")
        self.assertEqual(info.vendor_version, run("--version").stdout.split()[1])
        self.assertTrue(plugin.identity.Probe(pb.ProbeRequest()).ready.value)
        self.assertEqual(plugin.node.NodeGetInfo(pb.NodeGetInfoRequest()).node_id, "node-1")
        kinds = {c.rpc.type for c in plugin.node.NodeGetCapabilities(pb.NodeGetCapabilitiesRequest()).capabilities}
        self.assertEqual(kinds, {2, 4})  # GET_VOLUME_STATS, VOLUME_CONDITION

        target = plugin.target("pod-a")
        plugin.publish(target, self.folder, export_dtype="f32")
        self.assertTrue(is_published(target))
        # The volume's option reached the mount: model.safetensors holds the BF16 tensors as F32.
        with open(os.path.join(target, "model.safetensors"), "rb") as f:
            header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
        self.assertEqual({entry["dtype"] for name, entry in header.items() if name != "__metadata__"}, {"F32"})
        stats = plugin.stats(target)
        self.assertFalse(stats.volume_condition.abnormal, stats.volume_condition.message)
        usage = {u.unit: u for u in stats.usage}
        with open(os.path.join(self.folder, "model.safetensors.index.json")) as f:
            index = json.load(f)
        files = sorted(os.listdir(self.folder))
        # Tensors' bytes and the source's files, in 4 KiB blocks; every tensor has six files.
        model_bytes = index["metadata"]["total_size"] + sum(os.path.getsize(os.path.join(self.folder, name))
                                                            for name in files)
        self.assertEqual(usage[1].total, (model_bytes + 4095) // 4096 * 4096)
        self.assertGreaterEqual(usage[2].total, 6 * len(index["weight_map"]) + len(files))
        self.assert_pod_reads(target, self.folder)
        plugin.unpublish(target)
        self.assert_gone(plugin, target)

    def test_a_url_behind_a_password_the_hub_and_s3_with_secrets_that_no_process_shows(self):
        plugin = self.plugin()
        token = "hf_" + secrets.token_hex(16)
        cases = [("http", self.http_source(private=True),
                  {"username": remote_servers.BASIC_USER, "password": self.password + "\n"}, self.password),
                 ("hub", f"hf://{remote_servers.HUB_REPO}", {"HF_TOKEN": token}, token),
                 ("s3", "s3://models/tiny/", self.aws_secrets(), self.keys["secret_key"])]
        for label, source, given, secret in cases:
            with self.subTest(label):
                target = plugin.target(label)
                if label != "hub":  # the test Hub serves without a token (it only logs it)
                    self.assert_code(grpc.StatusCode.PERMISSION_DENIED, lambda: plugin.publish(target, source))
                    self.assertFalse(os.path.exists(target))
                plugin.publish(target, source, secrets=given)
                self.assertEqual(secret_holders(secret), [])
                self.assert_pod_reads(target, source)
                self.assertEqual(secret_holders(secret), [])
                for text in plugin.records():
                    self.assertNotIn(secret, text)
                plugin.unpublish(target)
                self.assert_gone(plugin, target)
        # The token went to the Hub's own host, and never to the CDN it redirects file requests to.
        hub_log = "".join(self.nginx.log_lines("hub.log"))
        self.assertIn(f'authorization="Bearer {token}"', hub_log)
        self.assertNotIn(token, "".join(self.nginx.log_lines("cdn.log")))
        with open(os.path.join(plugin.folder, "plugin.log")) as f:
            log = f.read()
        for _, _, _, secret in cases:
            self.assertNotIn(secret, log)

    def test_publishing_again_leaves_one_mount_and_unpublishing_what_is_not_there_is_ok(self):
        plugin = self.plugin()
        target = plugin.target("pod-b")
        plugin.publish(target, self.folder, readahead="8M")
        plugin.publish(target, self.folder, readahead="8M")
        with open("/proc/self/mountinfo") as f:
            self.assertEqual(sum(line.split()[4] == target for line in f), 1)
        self.assertEqual(len(daemon_pids(target)), 1)
        self.assert_code(grpc.StatusCode.ALREADY_EXISTS, lambda: plugin.publish(target, self.http_source()),
                         self.folder)
        self.assert_code(grpc.StatusCode.ALREADY_EXISTS, lambda: plugin.publish(target, self.folder, readahead="16M"))
        self.assertTrue(is_published(target))
        plugin.unpublish(target)
        plugin.unpublish(target)
        self.assert_gone(plugin, target)
        plugin.unpublish(plugin.target("never-published"))

    def test_two_volumes_of_one_model_on_a_node_where_the_second_fetches_nothing(self):
        plugin = self.plugin()
        first, second = plugin.target("pod-1"), plugin.target("pod-2")
        source = self.http_source()
        plugin.publish(first, source, volume_id="first")
        self.assert_pod_reads(first, source)
        # The first daemon has written what it fetched to the node's cache.
        self.assertTrue(wait_until(lambda: queued_for_disk(first) == 0))
        mark = len(self.nginx.log_lines())
        plugin.publish(second, source, volume_id="second")
        self.assert_pod_reads(second, source)
        requests = requests_in(self.nginx.log_lines()[mark:])
        self.assertTrue(requests)
        # The second mount opened its files (one request for the first bytes of each, which gives its size and ETag)
        # and fetched no byte past them: every tensor and file came from the node's disk cache.
        self.assertEqual([r for r in requests if not r[4].startswith("bytes=0-")], [])
        self.assertTrue(all(int(r[4].split("-")[1]) < HEAD for r in requests), requests)
        plugin.unpublish(first, volume_id="first")
        plugin.unpublish(second, volume_id="second")


class Errors(CsiTest):
    def test_every_refusal_has_its_code_and_leaves_nothing_mounted(self):
        plugin = self.plugin()
        target = plugin.target("pod-e")
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        node = plugin.node
        cases = [
            (lambda: node.NodePublishVolume(pb.NodePublishVolumeRequest(
                target_path=target, volume_capability=INLINE, readonly=True, volume_context={"source": self.folder})),
             "volume_id"),
            (lambda: plugin.publish("", self.folder), "target_path"),
            (lambda: node.NodePublishVolume(pb.NodePublishVolumeRequest(
                volume_id="v", target_path=target, readonly=True, volume_context={"source": self.folder})),
             "volume_capability"),
            (lambda: plugin.publish(target, None), "source"),
            (lambda: plugin.publish(target, self.folder, cap=capability(block=True)), "block"),
            (lambda: plugin.publish(target, self.folder, readonly=False), "readonly"),
            (lambda: plugin.publish(target, self.folder, cap=capability(Mode.MULTI_NODE_MULTI_WRITER),
                                    readonly=False), "readonly"),
            (lambda: plugin.publish(target, self.folder, cap=capability(fs_type="ext4")), "ext4"),
            (lambda: plugin.publish(target, self.folder, colour="blue"), "colour"),
            (lambda: plugin.publish(target, self.folder, cache_dir="/etc"), "cache_dir"),
            (lambda: plugin.publish(target, self.folder, secrets={"GITHUB_TOKEN": "x"}), "GITHUB_TOKEN"),
            (lambda: plugin.publish(target, self.folder, secrets={"username": "u", "password": "p"}), "username"),
            (lambda: plugin.publish(target, self.folder, export_dtype="bf17"), "bad export_dtype 'bf17'"),
            (lambda: plugin.publish(target, "relative/model"), "relative/model"),
        ]
        for call, word in cases:
            with self.subTest(word):
                self.assert_code(invalid, call, word)
                self.assertFalse(os.path.exists(target))
        # A checkpoint that fails validation: INVALID_ARGUMENT with `tensorfs validate`'s message.
        broken = os.path.join(VECTORS, "malformed", "duplicate_keys.safetensors")
        said = run("validate", broken).stderr.strip()
        self.assertEqual(self.assert_code(invalid, lambda: plugin.publish(target, broken)), said)
        # A SOURCE that does not exist, wherever it is.
        for source in (os.path.join(self.folder, "missing.safetensors"),
                       f"http://127.0.0.1:{self.nginx.http}/missing.safetensors",
                       f"hf://{remote_servers.HUB_REPO}/missing.safetensors", "s3://models/tiny/missing.safetensors"):
            with self.subTest(source):
                given = self.aws_secrets() if source.startswith("s3") else None
                self.assert_code(grpc.StatusCode.NOT_FOUND, lambda: plugin.publish(target, source, secrets=given),
                                 "missing.safetensors")
                self.assertFalse(os.path.exists(target))
        self.assertEqual(daemon_pids(target), [])
        # Unpublish and stats want their arguments; the stats of a folder without a volume are NOT_FOUND.
        self.assert_code(invalid, lambda: node.NodeUnpublishVolume(pb.NodeUnpublishVolumeRequest(target_path=target)),
                         "volume_id")
        self.assert_code(invalid, lambda: plugin.unpublish(""), "target_path")
        self.assert_code(invalid, lambda: plugin.stats("", volume_id="v"), "volume_path")
        self.assert_code(invalid, lambda: plugin.stats(target, volume_id=""), "volume_id")
        self.assert_code(grpc.StatusCode.NOT_FOUND, lambda: plugin.stats(target), target)

    def test_the_command_line_is_checked_before_anything_starts(self):
        for args, words in ((["--node-id", "n"], "--endpoint"), (["--endpoint", "tcp://x", "--node-id", "n"], "tcp://x"),
                            (["--endpoint", "unix:///tmp/x.sock", "--node-id", "n", "--colour", "blue"], "--colour")):
            result = run("csi", *args)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn(words, result.stderr)


class Restarts(CsiTest):
    def test_a_killed_plugin_leaves_volumes_serving_and_a_restarted_one_unpublishes_them(self):
        plugin = self.plugin()
        first, second = plugin.target("pod-1"), plugin.target("pod-2")
        plugin.publish(first, self.folder, volume_id="first")
        plugin.publish(second, self.http_source(), volume_id="second")
        with Pod(first, "--loop") as reader:
            reader.send(self.checks["folder"])
            self.assertEqual(reader.line(), {"started": True})
            # The gRPC plugin dies: `tensorfs csi` starts it again.
            plugin_pid = plugin.plugin_pid()
            os.kill(plugin_pid, signal.SIGKILL)
            self.assertTrue(wait_until(lambda: plugin.plugin_pid() != plugin_pid))
            plugin.connect()
            self.assertFalse(plugin.stats(first, volume_id="first").volume_condition.abnormal)
            # `tensorfs csi` itself dies, and a new one starts with the same --state-dir.
            plugin.kill()
            self.assertTrue(is_published(first) and is_published(second))
            plugin.start()
            reader.process.stdin.write("stop\n")
            reader.process.stdin.flush()
            result = reader.line()
            reader.finish()
        self.assertEqual(result["failures"], [])
        self.assertGreaterEqual(result["passes"], 2)  # the first, and the one under way while the plugin died
        self.assertFalse(plugin.stats(second, volume_id="second").volume_condition.abnormal)
        plugin.unpublish(first, volume_id="first")
        plugin.unpublish(second, volume_id="second")
        self.assert_gone(plugin, first)
        self.assert_gone(plugin, second)

    def test_a_killed_daemon_is_reported_abnormal_and_publishing_again_repairs_the_volume(self):
        plugin = self.plugin()
        target = plugin.target("pod-d")
        plugin.publish(target, self.folder)
        [daemon] = daemon_pids(target)
        os.kill(daemon, signal.SIGKILL)
        self.assertTrue(wait_until(lambda: not daemon_pids(target)))
        condition = plugin.stats(target).volume_condition
        self.assertTrue(condition.abnormal)
        self.assertIn("gone", condition.message)
        plugin.publish(target, self.folder)
        self.assertFalse(plugin.stats(target).volume_condition.abnormal)
        self.assert_pod_reads(target, self.folder)
        plugin.unpublish(target)
        self.assert_gone(plugin, target)

    def test_unpublishing_never_aborts_a_mount_that_took_its_connection_number(self):
        # A pod holds the volume past its unmount, so the plugin waits for the FUSE connection to end before it
        # would abort it. The pod lets go, the connection ends, and a new mount takes its number (the kernel hands
        # out the lowest free one): the plugin must leave that mount alone. Tried until the new mount gets the
        # number, which another test mounting at that moment can take first.
        plugin = self.plugin()
        for attempt in range(5):
            target = plugin.target(f"pod-k{attempt}")
            plugin.publish(target, self.folder)
            number = os.minor(os.stat(target).st_dev)
            with Pod(target, "--keep", "model.json") as pod, tempfile.TemporaryDirectory() as other:
                self.assertEqual(pod.line(), {"open": "model.json"})
                unpublishing = threading.Thread(target=plugin.unpublish, args=(target,))
                unpublishing.start()
                try:
                    self.assertTrue(wait_until(lambda: not os.path.ismount(target)), "never unmounted")
                    pod.finish()   # the pod lets go: the connection ends while the plugin waits for it to
                    self.assertTrue(wait_until(lambda: not os.path.exists(f"/sys/fs/fuse/connections/{number}")))
                    result = run("mount", os.path.join(SHARDED, "model-00001-of-00003.safetensors"), other)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    try:
                        took_it = os.minor(os.stat(other).st_dev) == number
                        unpublishing.join(timeout=120)
                        self.assertFalse(unpublishing.is_alive())
                        self.assertIn("tensor_count", read_file(os.path.join(other, "model.json")).decode())
                    finally:
                        unmount_or_detach(other)
                finally:
                    unpublishing.join(timeout=120)
            self.assert_gone(plugin, target)
            if took_it:
                return
        self.fail("in 5 attempts, no new mount got the number of the connection that ended")

    def test_a_server_that_stops_answering_while_a_pod_reads_is_unpublished_within_the_bound(self):
        plugin = self.plugin()
        proxy = FaultProxy(self.nginx.http)
        self.addCleanup(proxy.stop)
        target = plugin.target("pod-s")
        plugin.publish(target, f"http://127.0.0.1:{proxy.port}/model.safetensors.index.json")
        proxy.hold()
        # This tensor's bytes run past the first 64 KiB of its shard, which the mount read when it opened it.
        with Pod(target, "--hold", "model.layers.0.mlp.up_proj.weight/raw") as reader:
            self.assertEqual(reader.line()["reading"], "model.layers.0.mlp.up_proj.weight/raw")
            self.assertTrue(wait_until(lambda: proxy.held > 0), "the read never reached the server")
            started = time.monotonic()
            plugin.unpublish(target)
            took = time.monotonic() - started
            self.assertLessEqual(took, UNPUBLISH_BOUND)
            # The daemon was ended with the volume: the stuck read fails, and the pod can end.
            self.assertNotEqual(reader.line()["ended"], "read")
            reader.finish()
        self.assert_gone(plugin, target)


if __name__ == "__main__":
    unittest.main()
