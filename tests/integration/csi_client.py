"""The CSI tests play kubelet: `Plugin` runs `tensorfs csi` on a socket in a temporary folder and calls it in
kubelet's order with a gRPC client whose stubs are generated from the same csi.proto as the plugin's
(tests/CMakeLists.txt puts them in $TENSORFS_CSI_STUBS); `Pod` runs csi_pod.py, a reader in a mount namespace of
its own. Everything a test publishes is unpublished, and every process it starts ended, also when it fails."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.environ["TENSORFS_CSI_STUBS"])
import grpc  # noqa: E402
import csi_pb2 as pb  # noqa: E402
import csi_pb2_grpc as rpc  # noqa: E402

from remote_servers import _die_with_parent  # noqa: E402
from tensorfs_mount import BIN, daemon_pids, is_mounted, unmount_or_detach, wait_until  # noqa: E402

POD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csi_pod.py")
PYTHON = "/usr/bin/python3"
Mode = pb.VolumeCapability.AccessMode
# What kubelet sends for an inline (ephemeral) volume: SINGLE_NODE_WRITER with readonly.
INLINE = pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(), access_mode=Mode(mode=Mode.SINGLE_NODE_WRITER))


def capability(mode=Mode.MULTI_NODE_READER_ONLY, block=False, fs_type="", flags=()):
    if block:
        return pb.VolumeCapability(block=pb.VolumeCapability.BlockVolume(), access_mode=Mode(mode=mode))
    return pb.VolumeCapability(mount=pb.VolumeCapability.MountVolume(fs_type=fs_type, mount_flags=list(flags)),
                               access_mode=Mode(mode=mode))


def secret_holders(secret):
    """The pids whose /proc/PID/cmdline or /proc/PID/environ holds `secret` (str)."""
    needle = secret.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        for name in ("cmdline", "environ"):
            try:
                with open(f"/proc/{entry}/{name}", "rb") as f:
                    if needle in f.read():
                        found.append((int(entry), name))
            except OSError:
                continue
    return found


class Kubelet:
    """kubelet's side of a plugin's socket: a channel to it, the pods' volume folders under `kubelet`, and the calls
    kubelet makes. `alive()` says whether the plugin runs (clean_targets unpublishes through it then)."""

    def __init__(self, socket_path, kubelet):
        self.socket = socket_path
        self.kubelet = kubelet
        self.targets = set()
        self.channel = None

    def alive(self):
        return True

    def connect(self, timeout=60):
        """A new channel to the plugin, once it answers (a plugin started again makes its socket anew)."""
        if self.channel is not None:
            self.channel.close()
        # gRPC waits a second before it tries again to connect to a socket that was not there yet.
        assert wait_until(lambda: os.path.exists(self.socket) or not self.alive())
        self.channel = grpc.insecure_channel("unix://" + self.socket)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self.identity = rpc.IdentityStub(self.channel)
        self.node = rpc.NodeStub(self.channel)

    def disconnect(self):
        if self.channel is not None:
            self.channel.close()
            self.channel = None

    def answers(self):
        try:
            grpc.channel_ready_future(grpc.insecure_channel("unix://" + self.socket)).result(timeout=1)
            return True
        except grpc.FutureTimeoutError:
            return False

    def target(self, name):
        """A pod's volume folder, as kubelet lays it out: the parent exists, the folder itself not yet."""
        parent = os.path.join(self.kubelet, "pods", name, "volumes", "kubernetes.io~csi", "model")
        os.makedirs(parent, exist_ok=True)
        return os.path.join(parent, "mount")

    def publish(self, target, source, volume_id="vol-1", secrets=None, readonly=True, cap=INLINE, **options):
        """NodePublishVolume of SOURCE (volume_context["source"]; None: none) with mount options `options`."""
        context = {"csi.storage.k8s.io/ephemeral": "true", "csi.storage.k8s.io/pod.name": "pod"}
        if source is not None:
            context["source"] = source
        context.update(options)
        if target:  # "" is a refused request (the tests check it), not a folder to clean up
            self.targets.add(target)
        return self.node.NodePublishVolume(pb.NodePublishVolumeRequest(
            volume_id=volume_id, target_path=target, volume_capability=cap, readonly=readonly,
            secrets=secrets or {}, volume_context=context), timeout=120)

    def unpublish(self, target, volume_id="vol-1"):
        return self.node.NodeUnpublishVolume(
            pb.NodeUnpublishVolumeRequest(volume_id=volume_id, target_path=target), timeout=120)

    def stats(self, target, volume_id="vol-1"):
        return self.node.NodeGetVolumeStats(
            pb.NodeGetVolumeStatsRequest(volume_id=volume_id, volume_path=target), timeout=120)

    def clean_targets(self):
        """Unpublishes every target (through the plugin if it runs), then leaves no mount and no daemon behind."""
        for target in self.targets:
            if self.alive() and self.channel is not None:
                try:
                    self.unpublish(target)
                except grpc.RpcError:
                    pass
            unmount_or_detach(target)
            for pid in daemon_pids(target):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


class Plugin(Kubelet):
    """`tensorfs csi` in a folder of its own: the socket, --state-dir and --cache-dir (or `cache`), started at
    once. `env`: its environment (the daemons inherit it). `kubelet` is a folder for pods' volume targets."""

    def __init__(self, test, env=None, cache=None):
        self.folder = tempfile.mkdtemp(prefix="tensorfs-csi-")
        test.addCleanup(shutil.rmtree, self.folder, ignore_errors=True)
        super().__init__(os.path.join(self.folder, "csi.sock"), os.path.join(self.folder, "kubelet"))
        self.state = os.path.join(self.folder, "state")
        self.cache = cache or os.path.join(self.folder, "cache")
        os.mkdir(self.kubelet)
        self.env = env
        # The arguments after `tensorfs csi`.
        self.args = ["--endpoint", "unix://" + self.socket, "--node-id", "node-1", "--state-dir", self.state,
                     "--cache-dir", self.cache, "--local-root", "/"]
        self.process = None
        self.log = open(os.path.join(self.folder, "plugin.log"), "ab")
        test.addCleanup(self.log.close)
        # Cleanups run last first: the targets are unpublished before the plugin stops.
        test.addCleanup(self.stop)
        test.addCleanup(self.clean_targets)
        self.start()

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def start(self):
        self.process = subprocess.Popen([BIN, "csi", *self.args], stdin=subprocess.DEVNULL, stdout=self.log,
                                        stderr=self.log, env=self.env, preexec_fn=_die_with_parent)
        self.connect()

    def stop(self):
        self.disconnect()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)

    def plugin_pid(self):
        """The pid of the gRPC plugin, tensorfs-csi, child of `tensorfs csi`."""
        def find():
            with open(f"/proc/{self.process.pid}/task/{self.process.pid}/children") as f:
                for pid in f.read().split():
                    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                        if os.path.basename(cmdline.read().split(b"\0")[0]) == b"tensorfs-csi":
                            return int(pid)
            return None
        assert wait_until(lambda: find() is not None), "no tensorfs-csi under tensorfs csi"
        return find()

    def kill(self):
        """SIGKILL of `tensorfs csi` (its plugin ends with it); the daemons go on."""
        self.process.kill()
        self.process.wait(timeout=60)
        self.disconnect()
        assert wait_until(lambda: not os.path.exists(self.socket) or not self.answers()), "the plugin did not end"

    def records(self):
        """The files of --state-dir, as text."""
        texts = []
        for name in sorted(os.listdir(self.state)):
            with open(os.path.join(self.state, name)) as f:
                texts.append(f.read())
        return texts


class Pod:
    """csi_pod.py over the volume at `target` (see there), as a context manager that always ends it."""

    def __init__(self, target, *mode):
        self.process = subprocess.Popen(["unshare", "--mount", "--propagation", "private", PYTHON, POD, target, *mode],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, preexec_fn=_die_with_parent)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=60)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if not stream.closed:
                stream.close()
        return False

    def send(self, value):
        self.process.stdin.write(json.dumps(value) + "\n")
        self.process.stdin.flush()

    def line(self):
        """The pod's next JSON line (a line that is not JSON, or none, fails with what it wrote to stderr)."""
        text = self.process.stdout.readline()
        try:
            return json.loads(text)
        except ValueError:
            self.process.wait(timeout=60)
            raise AssertionError(f"the pod said {text!r}: {self.process.stderr.read()}")

    def finish(self):
        """Waits for the pod's end; returns its stderr."""
        self.process.stdin.close()
        self.process.wait(timeout=120)
        return self.process.stderr.read()


def read_in_pod(target, checks):
    """The two passes of a pod over `checks` (root, then uid 65534)."""
    with Pod(target) as pod:
        pod.send(checks)
        passes = [pod.line(), pod.line()]
        pod.finish()
    return passes


def is_published(target):
    return os.path.isdir(target) and is_mounted(target)
