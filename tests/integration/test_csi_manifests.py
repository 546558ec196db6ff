"""deploy/kubernetes: the manifests parse (python3-yaml) and say what the driver needs; the plugin takes the
DaemonSet's own arguments; the examples' volumeAttributes and Secret keys pass the plugin's own checks (published
with their options, their SOURCE swapped for a local model, since the tests reach no Hub and no AWS)."""
import glob
import json
import os
import unittest

import grpc
import yaml

from csi_client import Mode, Plugin, capability, pb
from tensorfs_mount import VECTORS

DEPLOY = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "deploy",
                      "kubernetes")
MODEL = os.path.join(VECTORS, "safetensors", "sharded")


def documents(name):
    with open(os.path.join(DEPLOY, name)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def by_kind(docs):
    found = {}
    for doc in docs:
        found.setdefault(doc["kind"], []).append(doc)
    return found


class Manifests(unittest.TestCase):
    def test_every_file_parses_and_names_a_kind(self):
        files = glob.glob(os.path.join(DEPLOY, "**", "*.yaml"), recursive=True)
        self.assertGreaterEqual(len(files), 6)
        for path in files:
            for doc in documents(os.path.relpath(path, DEPLOY)):
                self.assertIn("apiVersion", doc, path)
                self.assertIn("kind", doc, path)
        self.assertEqual(sorted(documents("kustomization.yaml")[0]["resources"]),
                         ["csidriver.yaml", "daemonset.yaml", "serviceaccount.yaml"])

    def test_the_driver_the_daemonset_and_the_service_account(self):
        [driver] = documents("csidriver.yaml")
        self.assertEqual(driver["metadata"]["name"], "csi.tensorfs.io")
        self.assertEqual((driver["spec"]["attachRequired"], driver["spec"]["podInfoOnMount"]), (False, True))
        self.assertEqual(sorted(driver["spec"]["volumeLifecycleModes"]), ["Ephemeral", "Persistent"])
        [account] = documents("serviceaccount.yaml")
        [daemonset] = documents("daemonset.yaml")
        pod = daemonset["spec"]["template"]["spec"]
        self.assertEqual(pod["serviceAccountName"], account["metadata"]["name"])
        self.assertEqual(daemonset["metadata"]["namespace"], account["metadata"]["namespace"])
        self.assertFalse(account["automountServiceAccountToken"])
        containers = {c["name"]: c for c in pod["containers"]}
        self.assertEqual(set(containers), {"tensorfs-csi", "node-driver-registrar", "liveness-probe"})
        plugin = containers["tensorfs-csi"]
        self.assertTrue(plugin["securityContext"]["privileged"])
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m for m in plugin["volumeMounts"]}
        self.assertEqual(volumes[mounts["/dev/fuse"]["name"]]["hostPath"]["path"], "/dev/fuse")
        self.assertEqual(mounts["/var/lib/kubelet"]["mountPropagation"], "Bidirectional")
        self.assertEqual(volumes[mounts["/var/lib/kubelet"]["name"]]["hostPath"]["path"], "/var/lib/kubelet")
        cache = [a.split("=", 1)[1] for a in plugin["command"] if a.startswith("--cache-dir=")]
        self.assertEqual(volumes[mounts[cache[0]]["name"]]["hostPath"]["path"], "/var/cache/tensorfs")
        # The sidecars and kubelet find the plugin's socket where it listens.
        socket_dir = volumes[mounts["/csi"]["name"]]["hostPath"]["path"]
        self.assertIn("--endpoint=unix:///csi/csi.sock", plugin["command"])
        registrar = containers["node-driver-registrar"]["args"]
        self.assertIn("--csi-address=/csi/csi.sock", registrar)
        self.assertIn(f"--kubelet-registration-path={socket_dir}/csi.sock", registrar)
        self.assertIn("--csi-address=/csi/csi.sock", containers["liveness-probe"]["args"])
        port = [a.split("=")[1] for a in containers["liveness-probe"]["args"] if a.startswith("--health-port=")]
        self.assertEqual([p["containerPort"] for p in plugin["ports"]], [int(port[0])])

    def test_the_plugin_takes_the_daemonsets_arguments_and_the_examples_attributes(self):
        [daemonset] = documents("daemonset.yaml")
        [container] = [c for c in daemonset["spec"]["template"]["spec"]["containers"] if c["name"] == "tensorfs-csi"]
        self.assertEqual(container["command"][:2], ["tensorfs", "csi"])
        plugin = Plugin(self)
        plugin.stop()
        # The DaemonSet's paths, moved into the test's folder.
        plugin.args = [a.replace("/csi/", plugin.folder + "/").replace("/var/cache/tensorfs", plugin.cache)
                       .replace("/srv/models", os.path.dirname(MODEL)).replace("$(NODE_NAME)", "node-1")
                       for a in container["command"][2:]]
        plugin.start()
        self.assertTrue(plugin.identity.Probe(pb.ProbeRequest()).ready.value)
        # Local sources only under --local-root, which the DaemonSet mounts from the node.
        with self.assertRaises(grpc.RpcError) as raised:
            plugin.publish(plugin.target("outside"), os.path.join(VECTORS, "gguf"))
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("--local-root", raised.exception.details())
        self.assertIn("/srv/models", {m["mountPath"] for m in container["volumeMounts"]})
        self.assertIn("--local-root=/srv/models", container["command"])

        inline = by_kind(documents("examples/pod-inline-hf.yaml"))
        [pod] = inline["Pod"]
        [volume] = [v["csi"] for v in pod["spec"]["volumes"] if "csi" in v]
        self.assertEqual(volume["volumeAttributes"]["export_dtype"], "bf16")
        self.assertTrue(volume["volumeAttributes"]["source"].startswith("hf://"))
        # kubelet publishes an inline volume as SINGLE_NODE_WRITER, read-only.
        self.publish_example(plugin, "inline", volume, inline["Secret"][0], Mode.SINGLE_NODE_WRITER)

        static = by_kind(documents("examples/s3-static-pv.yaml"))
        [volume] = [pv["spec"]["csi"] for pv in static["PersistentVolume"]]
        self.assertTrue(volume["volumeAttributes"]["source"].startswith("s3://"))
        self.assertEqual(volume["nodePublishSecretRef"]["name"], static["Secret"][0]["metadata"]["name"])
        self.assertEqual(static["PersistentVolume"][0]["spec"]["accessModes"], ["ReadOnlyMany"])
        self.publish_example(plugin, "static", volume, static["Secret"][0], Mode.MULTI_NODE_READER_ONLY)

    def publish_example(self, plugin, name, volume, secret, mode):
        attributes = dict(volume["volumeAttributes"], source=MODEL)
        target = plugin.target(name)
        plugin.publish(target, secrets=dict(secret["stringData"]), readonly=volume.get("readOnly", False),
                       cap=capability(mode), **attributes)
        with open(os.path.join(target, "model.json")) as f:
            self.assertEqual(json.load(f)["format"], "safetensors")
        plugin.unpublish(target)
        self.assertFalse(os.path.exists(target))


if __name__ == "__main__":
    unittest.main()
