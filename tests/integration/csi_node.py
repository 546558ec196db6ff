"""A Kubernetes node of our own for the CSI tests, without Kubernetes: the containers of deploy/kubernetes run as
the manifests define them (command, args, env, the hostPath and emptyDir volumes), each as process 1 of its own
PID and mount namespace (`unshare --pid --mount --mount-proc`), as a container runtime runs them.

A container sees the node's files at the node's paths, and each volume's mountPath is rewritten in its command
line to the temporary folder that stands for its hostPath (or emptyDir): `/csi` becomes NODE/kubelet/plugins/
csi.tensorfs.io, `/var/lib/kubelet` NODE/kubelet, and so on. The table is the node's, from every container of
both DaemonSets (a path means one volume in all of them, which the tests check), since the plugin names paths
the holder's daemons use (--cache-dir: the holder's emptyDir). NODE/kubelet is a shared mount, and a container's
namespace is made with the mounts' propagation unchanged, so that its copy of the folder is a peer of the node's:
mounts made in it reach the node, kubelet and the pods, and theirs reach it (`mountPropagation: Bidirectional`).
Binaries are taken from an "image": a folder holding tensorfs, tensorfs-csi and tensorfs-holder (the build
folder, or a copy of it for an upgrade)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile

import yaml

from csi_client import Kubelet
from remote_servers import _die_with_parent
from tensorfs_mount import BIN, unmount_or_detach, wait_until

DEPLOY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "deploy",
                      "kubernetes")
BUILD = os.path.dirname(BIN)
IMAGE_BINARIES = ("tensorfs", "tensorfs-csi", "tensorfs-holder")


def manifest(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def daemonset(name):
    """The pod spec of the DaemonSet of deploy/kubernetes/NAME."""
    [document] = manifest(name)
    assert document["kind"] == "DaemonSet", name
    return document["spec"]["template"]["spec"]


def copy_image(folder):
    """A new "image": copies of the build's binaries in `folder` (an upgrade is a new binary on the same state)."""
    os.makedirs(folder, exist_ok=True)
    for name in IMAGE_BINARIES:
        shutil.copy2(os.path.join(BUILD, name), os.path.join(folder, name))
    return folder


class Node:
    """The node's folders in a temporary folder: NODE/kubelet (shared, as kubelet's own folder is), a folder per
    emptyDir, and the hostPaths `paths` maps (node path -> folder here; /dev/fuse is the real one). `env`: what an
    operator adds to the plugin container's environment (the test servers' addresses)."""

    def __init__(self, test, paths, env=None):
        self.test = test
        self.root = tempfile.mkdtemp(prefix="tensorfs-node-")
        test.addCleanup(shutil.rmtree, self.root, ignore_errors=True)
        self.kubelet_dir = os.path.join(self.root, "kubelet")
        os.makedirs(os.path.join(self.kubelet_dir, "plugins", "csi.tensorfs.io"))
        os.makedirs(os.path.join(self.kubelet_dir, "plugins_registry"))
        subprocess.run(["mount", "--bind", self.kubelet_dir, self.kubelet_dir], check=True, timeout=60)
        test.addCleanup(self.unmount_all)
        subprocess.run(["mount", "--make-shared", self.kubelet_dir], check=True, timeout=60)
        self.paths = {"/var/lib/kubelet": self.kubelet_dir, "/dev/fuse": "/dev/fuse", **paths}
        self.env = env or {}
        self.containers = []
        # Every container's mountPath -> the folder here, for both DaemonSets.
        self.container_paths = {}
        for name in ("daemonset.yaml", "holder.yaml"):
            pod = daemonset(name)
            volumes = {v["name"]: v for v in pod["volumes"]}
            for container in pod["containers"]:
                for mount in container.get("volumeMounts", []):
                    folder = self.host_path(volumes[mount["name"]])
                    assert self.container_paths.setdefault(mount["mountPath"], folder) == folder, mount

        self.kubelet = Kubelet(os.path.join(self.kubelet_dir, "plugins", "csi.tensorfs.io", "csi.sock"),
                               self.kubelet_dir)
        # Cleanups run last first: the pods' volumes are unpublished while the plugin still runs.
        test.addCleanup(self.stop_all)
        test.addCleanup(self.kubelet.clean_targets)
        test.addCleanup(self.kubelet.disconnect)

    def host_path(self, volume):
        """The folder here of a pod volume (a hostPath or an emptyDir)."""
        if "hostPath" in volume:
            path = volume["hostPath"]["path"]
            for node_path in sorted(self.paths, key=len, reverse=True):
                if path == node_path or path.startswith(node_path + "/"):
                    return self.paths[node_path] + path[len(node_path):]
            raise AssertionError(f"the test maps no folder for hostPath {path}")
        if "emptyDir" in volume:
            folder = os.path.join(self.root, "emptydir-" + volume["name"])
            os.makedirs(folder, exist_ok=True)
            return folder
        raise AssertionError(f"volume {volume['name']}: neither hostPath nor emptyDir")

    def run(self, manifest_name, container_name, image=BUILD):
        """Starts the container `container_name` of the DaemonSet in deploy/kubernetes/`manifest_name`."""
        container = Container(self, daemonset(manifest_name), container_name, image)
        self.containers.append(container)
        return container

    def stop_all(self):
        for container in reversed(self.containers):
            container.stop()

    def unmount_all(self):
        """Whatever is still mounted under the node's folder (a test that failed midway), then the folder itself."""
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f]
        for point in sorted((p for p in points if p.startswith(self.kubelet_dir + "/")), key=len, reverse=True):
            unmount_or_detach(point)
        subprocess.run(["umount", "-l", self.kubelet_dir], capture_output=True, timeout=60)


class Container:
    """One container of a pod spec, started at once as process 1 of its own PID and mount namespace."""

    def __init__(self, node, pod, name, image):
        [self.spec] = [c for c in pod["containers"] if c["name"] == name]
        self.node = node
        self.name = name
        self.propagation = {m["mountPath"]: m.get("mountPropagation", "None") for m in self.spec["volumeMounts"]}
        self.image = image
        self.log_path = os.path.join(node.root, f"{name}.log")
        self.process = None
        self.start()

    def variables(self):
        """The container's environment: the manifest's (fieldRefs as a node would fill them) and the operator's."""
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root"}
        fields = {"spec.nodeName": "node-1", "status.hostIP": "127.0.0.1"}
        for variable in self.spec.get("env", []):
            if "value" in variable:
                env[variable["name"]] = variable["value"]
            else:
                env[variable["name"]] = fields[variable["valueFrom"]["fieldRef"]["fieldPath"]]
        if self.name == "tensorfs-csi":
            env.update(self.node.env)
        # A sanitized build's options, as the tests' own environment has them (tests/CMakeLists.txt).
        env.update({k: v for k, v in os.environ.items() if k.endswith("SAN_OPTIONS")})
        return env

    def command(self, env):
        """command + args with $(VAR) expanded, paths in the container moved to the node's folders here, and the
        binary taken from the image."""
        words = []
        for word in self.spec.get("command", []) + self.spec.get("args", []):
            word = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), word)
            for mount_path in sorted(self.node.container_paths, key=len, reverse=True):
                folder = self.node.container_paths[mount_path]
                word = re.sub(r"(?<![\w.-])" + re.escape(mount_path) + r"(?=/|$)", folder, word)
            words.append(word)
        if os.path.basename(words[0]) in IMAGE_BINARIES:
            words[0] = os.path.join(self.image, os.path.basename(words[0]))
        return words

    def start(self):
        env = self.variables()
        argv = self.command(env)
        self.log = open(self.log_path, "ab")
        # --kill-child: process 1 (and so the whole namespace) ends with unshare, also when the test is killed.
        self.process = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--propagation", "unchanged", "--mount-proc",
             "--", *argv], stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, env=env,
            preexec_fn=_die_with_parent)
        self.log.close()

    def pid1(self):
        """The host's pid of the container's process 1 (unshare's child)."""
        def child():
            try:
                with open(f"/proc/{self.process.pid}/task/{self.process.pid}/children") as f:
                    found = f.read().split()
            except OSError:
                return None
            return int(found[0]) if found else None
        assert wait_until(lambda: child() is not None or self.process.poll() is not None), "no process 1"
        return child()

    def signal(self, number):
        """`number` to the container's process 1; returns once the container has ended."""
        pid = self.pid1()
        if pid is not None:
            os.kill(pid, number)
        self.process.wait(timeout=120)

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.signal(signal.SIGTERM)

    def lines(self):
        with open(self.log_path, errors="replace") as f:
            return f.read().splitlines()
