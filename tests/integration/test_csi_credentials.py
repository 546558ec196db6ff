"""Credentials that change under running Kubernetes volumes, on the deployment of deploy/kubernetes (the plugin and
the mount holder run as their manifests say: csi_node.py). kubelet publishes every mounted volume again about once
a minute (requiresRepublish) with its Secret and the pod's service account token as they are then; the volume's
daemon takes them for its next requests, without a remount:

- a Hub token and S3 keys rotated: once the server refuses the old ones the volume's reads fail, and after the
  republish the next fetch carries the new ones;
- AWS web identity with the pod's token (the CSIDriver's tokenRequests): keys from the S3 front's STS that expire in
  3 s are renewed across their expiry, and a token renewed by kubelet reaches STS at the next renewal.

Refusals say what to do in Kubernetes terms, and no secret shows in any process's command line or environment."""
import json
import os
import secrets
import shutil
import tempfile
import time
import unittest

import grpc
import numpy as np

import remote_servers
import s3_servers
from csi_client import secret_holders
from csi_node import Node
from tensorfs_mount import read_at, read_file, wait_until
from test_remote import write_safetensors

MIB = 1 << 20
ROLE = "arn:aws:iam::123456789012:role/models-reader"
BUCKET = "models"
SOURCE_FILE = os.path.join("source", "model.safetensors")


class CredentialsTest(unittest.TestCase):
    """A 6 MiB model (pages a MiB apart are fetches of their own) on an nginx laid out as the Hub and in an S3
    store; a node of the deployment per test."""

    @classmethod
    def setUpClass(cls):
        cls.folder = tempfile.mkdtemp(prefix="tensorfs-csi-credentials-")
        rng = np.random.default_rng(48)
        write_safetensors(os.path.join(cls.folder, "model.safetensors"),
                          [("w", rng.standard_normal(6 * MIB // 4, dtype=np.float32))])
        cls.bytes = read_file(os.path.join(cls.folder, "model.safetensors"))
        cls.nginx = remote_servers.Nginx(cls.folder)
        cls.keys = {"access_key": "AKIAROT" + secrets.token_hex(6).upper(), "secret_key": "k1/" + secrets.token_hex(12)}
        cls.s3 = s3_servers.S3Server(accounts=[cls.keys])
        cls.s3.create_bucket(BUCKET)
        cls.s3.put(BUCKET, "model.safetensors", cls.bytes)

    @classmethod
    def tearDownClass(cls):
        cls.s3.stop()
        cls.nginx.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    def node(self, **env):
        """The holder and the plugin, with the test servers' settings in the plugin container's environment."""
        settings = {"NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
                    "HF_ENDPOINT": f"http://127.0.0.1:{self.nginx.hub}", "AWS_ENDPOINT_URL_S3": self.s3.endpoint,
                    "AWS_CONFIG_FILE": "/nonexistent", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"}
        settings.update(env)
        node = Node(self, {"/srv/models": self.folder}, env=settings)
        node.holder = node.run("holder.yaml", "holder")
        node.plugin = node.run("daemonset.yaml", "tensorfs-csi")
        node.kubelet.connect()
        return node

    def assert_reads(self, target, offset):
        self.assertEqual(read_at(os.path.join(target, SOURCE_FILE), offset), self.bytes[offset:offset + 4096])

    def assert_read_fails(self, target, offset):
        with self.assertRaises(OSError) as caught:
            read_at(os.path.join(target, SOURCE_FILE), offset)
        self.assertEqual(caught.exception.errno, 5)  # EIO

    def assert_refused(self, call, *words):
        with self.assertRaises(grpc.RpcError) as raised:
            call()
        self.assertEqual(raised.exception.code(), grpc.StatusCode.PERMISSION_DENIED, raised.exception.details())
        for word in words:
            self.assertIn(word, raised.exception.details())

    def holder_lines(self, node, *words):
        return [line for line in node.holder.lines() if all(word in line for word in words)]

    def s3_requests(self, mark, offset):
        """The fetches through the S3 front of the page at `offset`, since log line `mark`."""
        return [r for r in self.s3.log()[mark:] if r["path"] == f"/{BUCKET}/model.safetensors"
                and r["range"] and int(r["range"][len("bytes="):].split("-")[0]) <= offset
                <= int(r["range"].split("-")[1])]


class Rotation(CredentialsTest):
    def test_a_republish_with_a_new_hub_token_applies_it_to_the_running_volume(self):
        old, new = "hf_" + secrets.token_hex(16), "hf_" + secrets.token_hex(16)
        hub = remote_servers.TokenHub(self.nginx, tokens={old})
        self.addCleanup(hub.stop)
        node = self.node(HF_ENDPOINT=hub.endpoint)
        kubelet = node.kubelet
        source = f"hf://{remote_servers.HUB_REPO}"
        target = kubelet.target("pod-hub")
        # A token the Hub does not take: the refusal says where to put one that it takes.
        self.assert_refused(lambda: kubelet.publish(target, source, volume_id="vol-hub", secrets={"HF_TOKEN": new}),
                            "HTTP 401", "HF_TOKEN key", "nodePublishSecretRef")
        # A token as a header is refused, with where it goes instead.
        with self.assertRaises(grpc.RpcError) as raised:
            kubelet.publish(target, source, volume_id="vol-hub", header="Authorization: Bearer hf_not_here")
        self.assertEqual(raised.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, raised.exception.details())
        self.assertIn("credentials go in the Secret of the volume's nodePublishSecretRef", raised.exception.details())
        kubelet.publish(target, source, volume_id="vol-hub", secrets={"HF_TOKEN": old}, readahead="0")
        self.assert_reads(target, 1 * MIB)

        # The token is rotated: the Hub takes only the new one, and the volume's reads fail until kubelet gives it.
        hub.tokens = {new}
        path = f"/{remote_servers.HUB_REPO}/resolve/main/model.safetensors"
        self.assertEqual(hub.answers(old, path), 401)
        self.assert_read_fails(target, 3 * MIB)
        mark = len(hub.requests)
        kubelet.publish(target, source, volume_id="vol-hub", secrets={"HF_TOKEN": new}, readahead="0")
        self.assert_reads(target, 3 * MIB)
        fetches = [request for request in hub.requests[mark:] if request[1]]
        self.assertTrue(fetches and all(token == new for _, _, token in fetches), fetches)
        # The holder's log: the failed read says what to do, and the daemon took the new token (by name only).
        [failed] = self.holder_lines(node, "volume vol-hub", "read failed")[:1]
        self.assertIn("put a token that may read this repository in its HF_TOKEN key", failed)
        self.assertTrue(self.holder_lines(node, "volume vol-hub", "new credentials given (HF_TOKEN)"))
        self.assertTrue(any("took changed secrets (HF_TOKEN)" in line for line in node.plugin.lines()))
        # A republish with the same Secret changes nothing.
        kubelet.publish(target, source, volume_id="vol-hub", secrets={"HF_TOKEN": new}, readahead="0")
        self.assertEqual(len(self.holder_lines(node, "new credentials given")), 1)
        for token in (old, new):
            self.assertEqual(secret_holders(token), [])
            self.assertFalse(any(token in line for line in node.holder.lines() + node.plugin.lines()))
        kubelet.unpublish(target, volume_id="vol-hub")

    def test_a_republish_with_new_s3_keys_applies_them_to_the_running_volume(self):
        node = self.node()
        kubelet = node.kubelet
        source = f"s3://{BUCKET}/model.safetensors"
        target = kubelet.target("pod-s3")
        old = self.keys
        new = {"access_key": "AKIANEW" + secrets.token_hex(6).upper(), "secret_key": "k2/" + secrets.token_hex(12)}

        def given(keys):
            return {"AWS_ACCESS_KEY_ID": keys["access_key"], "AWS_SECRET_ACCESS_KEY": keys["secret_key"]}
        kubelet.publish(target, source, volume_id="vol-s3", secrets=given(old), readahead="0")
        self.assert_reads(target, 1 * MIB)

        # The keys are rotated at the store: the old ones are refused, and the volume's reads fail until kubelet
        # gives the new ones.
        self.s3.change_settings(accounts=[new])
        self.addCleanup(self.s3.change_settings, accounts=[self.keys])
        path = f"/{BUCKET}/model.safetensors"
        self.assertEqual(self.s3.send(path, self.s3.signed_headers(path, {}, keys=old)), (403, "InvalidAccessKeyId"))
        self.assert_read_fails(target, 3 * MIB)
        [failed] = self.holder_lines(node, "volume vol-s3", "read failed")[:1]
        self.assertIn("InvalidAccessKeyId", failed)
        self.assertIn("from the volume's Secret (nodePublishSecretRef): update the Secret", failed)
        mark = len(self.s3.log())
        kubelet.publish(target, source, volume_id="vol-s3", secrets=given(new), readahead="0")
        self.assert_reads(target, 3 * MIB)
        self.assertTrue(wait_until(lambda: self.s3_requests(mark, 3 * MIB)))
        self.assertEqual({r["who"] for r in self.s3_requests(mark, 3 * MIB)}, {new["access_key"]})
        self.assertTrue(self.holder_lines(node, "volume vol-s3", "new credentials given (AWS_ACCESS_KEY_ID, "
                                          "AWS_SECRET_ACCESS_KEY)"))
        for keys in (old, new):
            self.assertEqual(secret_holders(keys["secret_key"]), [])
        kubelet.unpublish(target, volume_id="vol-s3")


class WebIdentity(CredentialsTest):
    def test_a_volume_reads_with_the_pods_token_across_the_expiry_of_its_keys(self):
        first, second = "eyJ.pod-token-1." + secrets.token_hex(8), "eyJ.pod-token-2." + secrets.token_hex(8)
        sts = {"role_arn": ROLE, "tokens": [first], "duration_seconds": 3, "buckets": [BUCKET]}
        self.s3.change_settings(sts=sts)
        self.addCleanup(self.s3.change_settings, sts=None)
        node = self.node(AWS_ENDPOINT_URL_STS=self.s3.endpoint)
        kubelet = node.kubelet
        source = f"s3://{BUCKET}/model.safetensors"
        target = kubelet.target("pod-irsa")

        def publish(token, **attributes):
            # kubelet's tokenRequests: the pod's service account token for each audience of the CSIDriver.
            tokens = {"sts.amazonaws.com": {"token": token, "expirationTimestamp": "2030-01-01T00:00:00Z"}}
            context = {"csi.storage.k8s.io/serviceAccount.tokens": json.dumps(tokens),
                       "csi.storage.k8s.io/pod.namespace": "ml"}
            context.update(attributes)
            kubelet.publish(target, source, volume_id="vol-irsa", readahead="0", **context)

        # The pod's token without a role to assume: the refusal names the attribute that is missing.
        self.assert_refused(lambda: publish(first), "aws_role_arn")
        publish(first, aws_role_arn=ROLE)
        self.assert_reads(target, 1 * MIB)
        keys = self.s3.issued_keys()
        self.assertEqual([(k["session_name"], k["token"]) for k in keys], [("tensorfs.ml.pod", first)])

        # Its keys expire at the store: the daemon renews them, and the next read is signed with new ones.
        self.assertTrue(wait_until(lambda: time.time() * 1000 > keys[0]["expires_ms"] + 50))
        self.assertTrue(self.s3.expired(keys[0]))
        mark = len(self.s3.log())
        self.assert_reads(target, 3 * MIB)
        self.assertTrue(wait_until(lambda: self.s3_requests(mark, 3 * MIB)))
        signers = [r["who"] for r in self.s3_requests(mark, 3 * MIB)]
        self.assertNotIn(keys[0]["access_key"], signers)
        who = signers[-1]

        # kubelet renews the pod's token and publishes again; STS takes only the new token from now on.
        self.s3.change_settings(sts=dict(sts, tokens=[second]))
        publish(second, aws_role_arn=ROLE)
        current = next(k for k in self.s3.issued_keys() if k["access_key"] == who)
        self.assertTrue(wait_until(lambda: time.time() * 1000 > current["expires_ms"] + 50))
        mark = len(self.s3.log())
        self.assert_reads(target, 5 * MIB)
        self.assertTrue(wait_until(lambda: self.s3_requests(mark, 5 * MIB)))
        who = self.s3_requests(mark, 5 * MIB)[-1]["who"]
        [last] = [k for k in self.s3.issued_keys() if k["access_key"] == who]
        self.assertEqual(last["token"], second)
        self.assertTrue(self.holder_lines(node, "volume vol-irsa", "new credentials given (AWS_WEB_IDENTITY_TOKEN)"))
        self.assertTrue(self.holder_lines(node, "volume vol-irsa", "renewed the keys of role " + ROLE))
        for secret in [first, second] + [k["secret_key"] for k in self.s3.issued_keys()]:
            self.assertEqual(secret_holders(secret), [])
        kubelet.unpublish(target, volume_id="vol-irsa")


if __name__ == "__main__":
    unittest.main()
