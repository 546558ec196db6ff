"""Runs before the tests of the Python module are collected. A sanitized build's module needs the sanitizers'
runtime preloaded into this interpreter (tests/CMakeLists.txt); the servers and commands the tests start must not
inherit it; a test that starts Python again finds it in TENSORFS_PRELOAD."""
import os

os.environ["TENSORFS_PRELOAD"] = os.environ.pop("LD_PRELOAD", "")
