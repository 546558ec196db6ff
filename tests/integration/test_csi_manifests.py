"""deploy/kubernetes: the manifests parse (python3-yaml), `kubectl kustomize` renders them with the image that
kustomization.yaml names, every field of every object is one the Kubernetes API has (python3-kubernetes' models),
and they say what the driver needs; the plugin takes the DaemonSet's own arguments; the examples' volumeAttributes
and Secret keys pass the plugin's own checks (published with their options, their SOURCE swapped for a local
model, since the tests reach no Hub and no AWS)."""
import glob
import json
import os
import re
import subprocess
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


def model_of(kind, api_version):
    """python3-kubernetes' model class of an object, e.g. V1DaemonSet for apps/v1 DaemonSet."""
    import kubernetes.client  # noqa: PLC0415 (slow to import: only for the tests that check fields)
    version = api_version.split("/")[-1]
    return getattr(kubernetes.client, version[0].upper() + version[1:] + kind)


def unknown_fields(value, type_name, path):
    """Every key of `value` (parsed YAML) that the model `type_name` (an openapi type of python3-kubernetes:
    "V1PodSpec", "list[V1Container]", "dict(str, str)", "str", ...) does not have, as paths."""
    import kubernetes.client  # noqa: PLC0415
    if type_name.startswith("list["):
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        return [p for i, item in enumerate(value) for p in unknown_fields(item, type_name[5:-1], f"{path}[{i}]")]
    if type_name.startswith("dict("):
        inner = re.match(r"dict\(str, (.*)\)$", type_name).group(1)
        if not isinstance(value, dict):
            return [f"{path}: not a mapping"]
        return [p for k, v in value.items() for p in unknown_fields(v, inner, f"{path}.{k}")]
    model = getattr(kubernetes.client, type_name, None)
    if model is None:
        return []  # a scalar, or "object" (a quantity, an IntOrString)
    if not isinstance(value, dict):
        return [f"{path}: not an object ({type_name})"]
    fields = {json_name: attribute for attribute, json_name in model.attribute_map.items()}
    found = []
    for key, item in value.items():
        if key not in fields:
            found.append(f"{path}.{key} (no such field in {type_name})")
        else:
            found += unknown_fields(item, model.openapi_types[fields[key]], f"{path}.{key}")
    return found


class Manifests(unittest.TestCase):
    def test_kubectl_kustomize_renders_them_with_the_image_and_every_field_is_the_apis(self):
        rendered = subprocess.run(["kubectl", "kustomize", DEPLOY], capture_output=True, text=True, timeout=120)
        self.assertEqual(rendered.returncode, 0, rendered.stderr)
        objects = [d for d in yaml.safe_load_all(rendered.stdout) if d is not None]
        self.assertEqual(sorted((d["kind"], d["metadata"]["name"]) for d in objects),
                         [("CSIDriver", "csi.tensorfs.io"), ("DaemonSet", "tensorfs-csi-holder"),
                          ("DaemonSet", "tensorfs-csi-node"), ("ServiceAccount", "tensorfs-csi-node")])
        [images] = [d["images"] for d in documents("kustomization.yaml")]
        [tensorfs] = [i for i in images if i["name"] == "tensorfs"]
        wanted = f"{tensorfs['newName']}:{tensorfs['newTag']}"
        for daemonset in (d for d in objects if d["kind"] == "DaemonSet"):
            ours = [c["image"] for c in daemonset["spec"]["template"]["spec"]["containers"]
                    if not c["image"].startswith("registry.k8s.io/")]
            self.assertEqual(ours, [wanted], daemonset["metadata"]["name"])
        # Every object of every file, the examples' too, against the API's models.
        for path in sorted(glob.glob(os.path.join(DEPLOY, "**", "*.yaml"), recursive=True)):
            for doc in documents(os.path.relpath(path, DEPLOY)):
                if doc["kind"] == "Kustomization":
                    continue
                with self.subTest(f"{os.path.relpath(path, DEPLOY)}: {doc['kind']}"):
                    self.assertEqual(unknown_fields(doc, model_of(doc["kind"], doc["apiVersion"]).__name__, ""), [])

    def test_every_container_is_operable(self):
        for name in ("daemonset.yaml", "holder.yaml"):
            [daemonset] = documents(name)
            pod = daemonset["spec"]["template"]["spec"]
            self.assertEqual(pod["nodeSelector"], {"kubernetes.io/os": "linux"}, name)
            for container in pod["containers"]:
                with self.subTest(f"{name}: {container['name']}"):
                    self.assertIn("requests", container["resources"])
                    self.assertIn("securityContext", container)
                    if not container["securityContext"].get("privileged"):
                        self.assertFalse(container["securityContext"]["allowPrivilegeEscalation"])
        # The plugin's pods are replaced safely (the holder keeps the volumes); the holder's only when deleted.
        [plugin] = documents("daemonset.yaml")
        [holder] = documents("holder.yaml")
        self.assertEqual(plugin["spec"]["updateStrategy"]["type"], "RollingUpdate")
        self.assertEqual(holder["spec"]["updateStrategy"]["type"], "OnDelete")
        # The cache is an emptyDir of the holder, larger than the plugin's --disk-cache-size, which kubelet counts.
        [container] = holder["spec"]["template"]["spec"]["containers"]
        volumes = {v["name"]: v for v in holder["spec"]["template"]["spec"]["volumes"]}
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        [plugin_container] = [c for c in plugin["spec"]["template"]["spec"]["containers"]
                              if c["name"] == "tensorfs-csi"]
        [cache] = [a.split("=", 1)[1] for a in plugin_container["command"] if a.startswith("--cache-dir=")]
        [size] = [a.split("=", 1)[1] for a in plugin_container["command"] if a.startswith("--disk-cache-size=")]
        limit = volumes[mounts[cache]["name"]]["emptyDir"]["sizeLimit"]
        self.assertGreater(int(limit.rstrip("Gi")), int(size.rstrip("G")))
        self.assertEqual(container["resources"]["requests"]["ephemeral-storage"], limit)
        # The holder's socket is in the folder both mount, and the daemons' folders are the holder's.
        [socket] = [a.split("=", 1)[1] for a in container["command"] if a.startswith("--socket=")]
        self.assertIn(f"--holder-socket={socket}", plugin_container["command"])
        self.assertEqual(os.path.dirname(socket), "/csi")
        self.assertEqual(mounts["/var/lib/kubelet"]["mountPropagation"], "Bidirectional")
        self.assertEqual(volumes[mounts["/dev/fuse"]["name"]]["hostPath"]["path"], "/dev/fuse")
        self.assertIn("/srv/models", mounts)

    def test_every_file_parses_and_names_a_kind(self):
        files = glob.glob(os.path.join(DEPLOY, "**", "*.yaml"), recursive=True)
        self.assertGreaterEqual(len(files), 6)
        for path in files:
            for doc in documents(os.path.relpath(path, DEPLOY)):
                self.assertIn("apiVersion", doc, path)
                self.assertIn("kind", doc, path)
        self.assertEqual(sorted(documents("kustomization.yaml")[0]["resources"]),
                         ["csidriver.yaml", "daemonset.yaml", "holder.yaml", "serviceaccount.yaml"])

    def test_the_driver_the_daemonset_and_the_service_account(self):
        [driver] = documents("csidriver.yaml")
        self.assertEqual(driver["metadata"]["name"], "csi.tensorfs.io")
        self.assertEqual((driver["spec"]["attachRequired"], driver["spec"]["podInfoOnMount"]), (False, True))
        self.assertTrue(driver["spec"]["requiresRepublish"])
        # The pod's token for AWS STS with each publish (web identity: aws_role_arn).
        self.assertEqual([r["audience"] for r in driver["spec"]["tokenRequests"]], ["sts.amazonaws.com"])
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
        # The plugin mounts nothing itself (the holder does): no /dev/fuse, no cache.
        self.assertNotIn("/dev/fuse", mounts)
        self.assertEqual(mounts["/var/lib/kubelet"]["mountPropagation"], "Bidirectional")
        self.assertEqual(volumes[mounts["/var/lib/kubelet"]["name"]]["hostPath"]["path"], "/var/lib/kubelet")
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
        # The DaemonSet's paths, moved into the test's folder; without the holder, which test_csi_node runs with
        # the plugin as the manifests do (here the plugin mounts by itself).
        plugin.args = [a.replace("/csi/", plugin.folder + "/").replace("/var/cache/tensorfs", plugin.cache)
                       .replace("/srv/models", os.path.dirname(MODEL)).replace("$(NODE_NAME)", "node-1")
                       for a in container["command"][2:] if not a.startswith("--holder-socket=")]
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

        # Web identity: the pod's own service account, no Secret (test_csi_credentials reads such a volume).
        irsa = by_kind(documents("examples/pod-s3-web-identity.yaml"))
        [pod] = irsa["Pod"]
        self.assertEqual(pod["spec"]["serviceAccountName"], irsa["ServiceAccount"][0]["metadata"]["name"])
        [volume] = [v["csi"] for v in pod["spec"]["volumes"] if "csi" in v]
        self.assertTrue(volume["volumeAttributes"]["aws_role_arn"].startswith("arn:aws:iam::"))
        self.assertNotIn("nodePublishSecretRef", volume)

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
