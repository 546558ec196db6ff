"""The includes of src/ and include/tensorfs/ that point up a layer, or across between sibling layers, by the layer
order in tests/layers.txt (from the top down; folders on one line are siblings). A header in include/tensorfs/
belongs to the folder under src/ that holds the source file of the same name; a header with no such file is not
checked. Run as a script it prints one line per such include and exits 1 when there is any."""
import os
import re
import sys

PROJECT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_ranks(layers_file):
    """{folder: its line, 0 = top} of a layers file."""
    ranks = {}
    with open(layers_file) as f:
        lines = [line.split("#")[0].split() for line in f]
    for rank, names in enumerate(line for line in lines if line):
        for name in names:
            ranks[name] = rank
    return ranks


def homes(src):
    """{file stem: the layer folder under src/ that holds it}."""
    home = {}
    for layer in sorted(os.listdir(src)) if os.path.isdir(src) else []:
        for folder, _, names in os.walk(os.path.join(src, layer)):
            for name in names:
                home.setdefault(os.path.splitext(name)[0], layer)
    return home


def wrong_includes(root=PROJECT, layers_file=os.path.join(PROJECT, "tests", "layers.txt")):
    rank = layer_ranks(layers_file)
    home = homes(os.path.join(root, "src"))
    found = []
    for base in ("src", os.path.join("include", "tensorfs")):
        for folder, _, names in os.walk(os.path.join(root, base)):
            for name in sorted(names):
                path = os.path.join(folder, name)
                relative = os.path.relpath(path, root)
                me = relative.split(os.sep)[1] if relative.startswith("src" + os.sep) \
                    else home.get(os.path.splitext(name)[0])
                if me not in rank:
                    continue
                with open(path, errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        match = INCLUDE.match(line)
                        if not match:
                            continue
                        target = match[1]
                        first = target.split("/")[0]
                        them = first if first in rank else home.get(os.path.splitext(os.path.basename(target))[0])
                        if them not in rank or them == me:
                            continue
                        if rank[them] < rank[me]:
                            found.append(f"{relative}:{number}: {me} includes {target} ({them}, a layer above)")
                        elif rank[them] == rank[me]:
                            found.append(f"{relative}:{number}: {me} includes {target} ({them}, a sibling layer)")
    return found


if __name__ == "__main__":
    lines = wrong_includes()
    for line in lines:
        print(line)
    sys.exit(1 if lines else 0)
