"""The node plugin and the mount holder of deploy/kubernetes, run as a container runtime runs them (csi_node.py):
a pod reads a remote model while the plugin's container is killed (SIGKILL), stopped (SIGTERM) and replaced by a
new binary on the same state, and reads every byte right with no error; stats say the volume is healthy after
each start; unpublish works. A restart of the holder ends its node's volumes, as docs/kubernetes.md says, and a
republish repairs them for the pods' next containers. A read that fails is in the holder's log with the volume's
id and source."""
import json
import os
import signal
import tempfile
import unittest

from csi_client import Pod, is_published, pb, read_in_pod
from csi_node import Node, copy_image
from remote_servers import FaultProxy
from tensorfs_mount import daemon_pids, wait_until
from test_csi import CsiTest


class NodeTest(CsiTest):
    def node(self):
        node = Node(self, {"/srv/models": self.folder}, env=self.env())
        node.holder = node.run("holder.yaml", "holder")
        node.plugin = node.run("daemonset.yaml", "tensorfs-csi")
        node.kubelet.connect()
        return node

    def env(self):
        """The test servers' settings, as an operator would give them in the plugin container's env."""
        keep = ("SSL_CERT_FILE", "NO_PROXY", "no_proxy", "HF_ENDPOINT", "HF_HOME", "AWS_ENDPOINT_URL_S3",
                "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")
        return {k: v for k, v in super().env().items() if k in keep}

    def restart_plugin(self, node, how, image=None):
        """Ends the plugin's container with signal `how`, starts it again (from `image`: an upgrade), and waits
        until kubelet can reach it."""
        node.kubelet.disconnect()
        node.plugin.signal(how)
        if image is None:
            node.plugin.start()
        else:
            node.containers.remove(node.plugin)
            node.plugin = node.run("daemonset.yaml", "tensorfs-csi", image=image)
        node.kubelet.connect()

    def assert_healthy(self, node, target, volume_id):
        stats = node.kubelet.stats(target, volume_id=volume_id)
        self.assertFalse(stats.volume_condition.abnormal, stats.volume_condition.message)
        usage = {u.unit: u for u in stats.usage}
        self.assertGreater(usage[pb.VolumeUsage.BYTES].used, 0)
        self.assertEqual(usage[pb.VolumeUsage.BYTES].used, usage[pb.VolumeUsage.BYTES].total)
        self.assertEqual(usage[pb.VolumeUsage.BYTES].available, 0)


class PluginRestarts(NodeTest):
    def test_the_plugins_container_killed_stopped_and_upgraded_while_a_pod_reads_a_remote_model(self):
        node = self.node()
        kubelet = node.kubelet
        self.assertTrue(kubelet.identity.Probe(pb.ProbeRequest()).ready.value)
        target = kubelet.target("pod-1")
        source = self.http_source()
        kubelet.publish(target, source, volume_id="vol-remote")
        [daemon] = daemon_pids(target)
        with Pod(target, "--loop") as reader:
            reader.send(self.checks["file"])
            self.assertEqual(reader.line(), {"started": True})
            for how in (signal.SIGKILL, signal.SIGTERM):
                with self.subTest(signal.Signals(how).name):
                    self.restart_plugin(node, how)
                    self.assertEqual(daemon_pids(target), [daemon])
                    self.assert_healthy(node, target, "vol-remote")
            # An upgrade: a new binary (another image) on the same state.
            image = copy_image(tempfile.mkdtemp(prefix="tensorfs-image-", dir=node.root))
            self.restart_plugin(node, signal.SIGTERM, image=image)
            self.assert_healthy(node, target, "vol-remote")
            self.assertTrue(any("vol-remote" in line and "serving" in line for line in node.plugin.lines()))
            # A volume published by the new plugin is served by its own tensorfs, run by the same holder.
            second = kubelet.target("pod-2")
            kubelet.publish(second, self.folder, volume_id="vol-local")
            [new_daemon] = daemon_pids(second)
            self.assertEqual(os.readlink(f"/proc/{new_daemon}/exe"), os.path.join(image, "tensorfs"))
            reader.process.stdin.write("stop\n")
            reader.process.stdin.flush()
            result = reader.line()
            reader.finish()
        self.assertEqual(result["failures"], [])
        self.assertGreaterEqual(result["passes"], 2)
        self.assert_pod_reads(second, self.folder)
        for path, volume_id in ((target, "vol-remote"), (second, "vol-local")):
            kubelet.unpublish(path, volume_id=volume_id)
            self.assertFalse(os.path.exists(path))
            self.assertTrue(wait_until(lambda: not daemon_pids(path)), "a daemon outlived its volume")
        # The holder logged each volume's daemon, by volume id and source.
        log = "\n".join(node.holder.lines())
        self.assertIn(f"volume vol-remote ({source}): serving at {target}", log)


class HolderRestarts(NodeTest):
    def test_a_restarted_holder_ends_the_volumes_and_a_republish_mounts_them_anew(self):
        node = self.node()
        kubelet = node.kubelet
        target = kubelet.target("pod-h")
        kubelet.publish(target, self.folder, volume_id="vol-h")
        self.assert_pod_reads(target, self.folder)
        # The holder's pod is deleted (an update of the holder): its daemons end, and the volume with them.
        node.holder.signal(signal.SIGTERM)
        self.assertTrue(wait_until(lambda: not daemon_pids(target)))
        self.assertIn("every daemon ended; stopping", node.holder.lines()[-1])
        condition = kubelet.stats(target, volume_id="vol-h").volume_condition
        self.assertTrue(condition.abnormal)
        self.assertIn("gone", condition.message)
        # Without a holder the plugin is not ready, and says why.
        self.assertFalse(kubelet.identity.Probe(pb.ProbeRequest()).ready.value)
        node.holder.start()
        self.assertTrue(wait_until(lambda: kubelet.identity.Probe(pb.ProbeRequest()).ready.value))
        # kubelet publishes the volume again (requiresRepublish): it is mounted anew.
        kubelet.publish(target, self.folder, volume_id="vol-h")
        self.assertTrue(is_published(target))
        self.assert_healthy(node, target, "vol-h")
        self.assert_pod_reads(target, self.folder)
        kubelet.unpublish(target, volume_id="vol-h")
        self.assertFalse(os.path.exists(target))

    def test_a_failed_read_is_in_the_holders_log_with_the_volume_id_and_source(self):
        node = self.node()
        kubelet = node.kubelet
        proxy = FaultProxy(self.nginx.http)
        self.addCleanup(proxy.stop)
        source = f"http://127.0.0.1:{proxy.port}/model.safetensors.index.json"
        target = kubelet.target("pod-l")
        kubelet.publish(target, source, volume_id="vol-log", timeout="3")
        proxy.hold()  # the server stops answering: the read fails after the volume's timeout
        # This tensor's bytes run past the first 64 KiB of its shard, which the mount read when it opened it.
        with Pod(target, "--hold", "model.layers.0.mlp.up_proj.weight/raw") as reader:
            reader.line()
            self.assertEqual(reader.line()["ended"], "Input/output error")
            reader.finish()
        lines = [line for line in node.holder.lines() if "read failed" in line]
        self.assertTrue(lines, node.holder.lines())
        self.assertTrue(lines[0].startswith(f"tensorfs: volume vol-log ({source}): read failed (EIO): "), lines[0])
        self.assertRegex(lines[0], r"model-0000[1-3]-of-00003\.safetensors")
        kubelet.unpublish(target, volume_id="vol-log")


if __name__ == "__main__":
    unittest.main()
