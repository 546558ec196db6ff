"""Helpers of the tests that map mounted files: the C page-toucher fault_storm.c built with the system's cc, and
the header of a safetensors file read alone (without its data) by the independent reader."""
import os
import shutil
import subprocess

from safetensors_reader import SafetensorsFile

HERE = os.path.dirname(os.path.abspath(__file__))


def build_fault_storm(folder):
    """Compiles fault_storm.c into `folder`; returns the program's path."""
    program = os.path.join(folder, "fault_storm")
    subprocess.run([shutil.which("cc") or "/usr/bin/cc", "-O2", "-Wall", "-pthread", "-o", program,
                    os.path.join(HERE, "fault_storm.c")], check=True, timeout=120)
    return program


def safetensors_header(path):
    """(the file's first 8 + header length bytes, the header parsed and checked by the independent reader as if
    the data were there): tensors' offsets are absolute in the file."""
    with open(path, "rb") as f:
        length_bytes = f.read(8)
        head = length_bytes + f.read(int.from_bytes(length_bytes, "little"))
    return head, SafetensorsFile(head + bytes(os.path.getsize(path) - len(head)))
