"""Bash completion (completion/tensorfs.bash), driven the way bash drives it: bash-completion and the script are
sourced in a real bash, COMP_LINE, COMP_POINT, COMP_WORDS and COMP_CWORD are set as bash sets them for the line
(COMP_WORDBREAKS characters such as `=` and `:` are words of their own), the function that `complete -p tensorfs`
names is called with (command, current word, previous word), and COMPREPLY is read back: the text that replaces
what readline completes (the current word after its last break character). Tensor names are checked against the
reference vectors' manifest and a file written here, not against our own output."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from safetensors_files import write_safetensors
from tensorfs_mount import BIN, VECTORS, Mount, manifest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "completion", "tensorfs.bash")
BASH_COMPLETION = "/usr/share/bash-completion/bash_completion"
# bash's default COMP_WORDBREAKS less the blanks, which split words anyway.
WORDBREAKS = "\"'><=;|&(:"

COMMANDS = ["mount", "umount", "ls", "info", "validate", "cat", "convert", "stats", "diff", "prefetch", "status",
            "cache", "csi", "help"]

# Sources bash-completion and the script, checks that `complete` names a function for tensorfs, calls it as bash
# does and prints, NUL-separated: whether it asked for no space after the word, then COMPREPLY. compopt only works
# inside a completion that bash itself started, so a function of that name records what the script asks for.
DRIVER = r"""
source /usr/share/bash-completion/bash_completion
source "$1"
nospace=0
compopt() { [[ $* == *"-o nospace"* ]] && nospace=1; return 0; }
spec=$(complete -p tensorfs) || exit 3
[[ $spec =~ -F\ ([^ ]+) ]] || exit 4
function=${BASH_REMATCH[1]}
COMP_LINE=$2
COMP_POINT=${#COMP_LINE}
shift 2
COMP_WORDS=("$@")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMPREPLY=()
"$function" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\0' "$nospace" "${COMPREPLY[@]}"
"""


def comp_words(line):
    """COMP_WORDS as bash makes them for `line` (no quotes): blank-separated words, each cut further into runs of
    COMP_WORDBREAKS characters and runs of others; an empty last word when the line ends in a blank."""
    pattern = "[%s]+|[^%s]+" % (re.escape(WORDBREAKS), re.escape(WORDBREAKS))
    words = [piece for word in line.split() for piece in re.findall(pattern, word)]
    if not line or line[-1].isspace():
        words.append("")
    return words


tmp = None
path_folder = None  # holds `tensorfs`, a link to the binary under test, first on the completion's PATH


def setUpModule():
    global tmp, path_folder
    if not os.path.exists(BASH_COMPLETION):
        raise AssertionError(f"{BASH_COMPLETION} is missing: scripts/install-deps.sh installs bash-completion")
    tmp = tempfile.mkdtemp(prefix="tensorfs-completion-")
    path_folder = os.path.join(tmp, "bin")
    os.mkdir(path_folder)
    os.symlink(BIN, os.path.join(path_folder, "tensorfs"))


def tearDownModule():
    shutil.rmtree(tmp)


def complete(line):
    """(COMPREPLY sorted, whether the script asked for no space) for the cursor at the end of `line`."""
    env = dict(os.environ, PATH=path_folder + os.pathsep + os.environ["PATH"])
    result = subprocess.run(["bash", "--norc", "--noprofile", "-c", DRIVER, "driver", SCRIPT, line,
                             *comp_words(line)], capture_output=True, text=True, env=env, timeout=60)
    if result.returncode != 0:
        raise AssertionError(f"completion of {line!r} failed ({result.returncode}): {result.stderr}")
    fields = result.stdout.split("\0")[:-1]
    return sorted(fields[1:]), fields[0] == "1"


class Commands(unittest.TestCase):
    def test_the_words_of_a_line_are_split_as_bash_splits_them(self):
        self.assertEqual(comp_words("tensorfs mount a b -o cache_size=1G,exp"),
                         ["tensorfs", "mount", "a", "b", "-o", "cache_size", "=", "1G,exp"])
        # After a break character the current word is that character (as an interactive bash shows).
        self.assertEqual(comp_words("tensorfs cat x a:"), ["tensorfs", "cat", "x", "a", ":"])
        self.assertEqual(comp_words("tensorfs "), ["tensorfs", ""])

    def test_every_command(self):
        self.assertEqual(complete("tensorfs ")[0], sorted(COMMANDS))
        self.assertEqual(complete("tensorfs c")[0], ["cache", "cat", "convert", "csi"])
        self.assertEqual(complete("tensorfs -")[0], ["--help", "--version"])

    def test_help_names_the_commands(self):
        self.assertEqual(complete("tensorfs help ")[0], sorted(COMMANDS))
        self.assertEqual(complete("tensorfs help st")[0], ["stats", "status"])

    def test_options_of_each_command(self):
        expected = {
            "mount x": ["-f", "-d", "-s", "-o", "--cache-size", "--threads", "--model", "--cache-dir",
                        "--disk-cache-size", "--timeout"],
            "ls": ["--json", "--files", "--model", "--cache-dir"],
            "info": ["--json", "--model", "--cache-dir", "--disk-cache-size", "--timeout"],
            "validate": ["--json", "--model"],
            "cat x": ["--raw", "--f32", "--npy", "--bf16", "--f16", "--model", "--cache-dir"],
            "convert x": ["--dtype", "--force", "--model"],
            "stats": ["--json", "--prometheus"],
            "diff a": ["--tensors", "--names", "--json", "--csv", "--quiet", "--model"],
            "prefetch": ["--tensors", "--files", "--quiet", "--verify", "--model", "--timeout"],
            "status": ["--json"],
            "cache": ["--cache-dir"],
            "cache prune": ["--older-than", "--max-size"],
            "csi": ["--endpoint", "--node-id", "--state-dir", "--cache-dir", "--disk-cache-size"],
        }
        for command, options in expected.items():
            with self.subTest(command=command):
                offered = complete(f"tensorfs {command} -")[0]
                for option in options:
                    self.assertIn(option, offered)
                self.assertIn("--help", offered)
        self.assertEqual(complete("tensorfs cat x --r")[0], ["--raw"])

    def test_option_values(self):
        self.assertEqual(complete("tensorfs convert a b --dtype ")[0], ["bf16", "f16", "f32", "keep"])
        self.assertEqual(complete("tensorfs diff a b --names g")[0], ["gguf"])
        self.assertEqual(complete("tensorfs cache ")[0], ["clear", "du", "ls", "prune"])
        # A size, a count: nothing to offer, and no file names either.
        self.assertEqual(complete("tensorfs mount a b --threads ")[0], [])
        self.assertEqual(complete("tensorfs cache prune --older-than ")[0], [])
        self.assertEqual(complete("tensorfs cat x --timeout ")[0], [])


class MountOptions(unittest.TestCase):
    OURS = ["cache_size=", "threads=", "export_dtype=", "model=", "cache_dir=", "disk_cache_size=",
            "max_connections=", "readahead=", "timeout="]
    LIBFUSE = ["allow_other", "allow_root", "auto_unmount", "default_permissions"]

    def test_every_option_after_dash_o(self):
        for line in ("tensorfs mount a b -o ", "tensorfs a b -o "):  # the mount(8) form too
            with self.subTest(line=line):
                offered = complete(line)[0]
                for option in self.OURS + self.LIBFUSE + ["ro", "noauto", "nofail", "_netdev"]:
                    self.assertIn(option, offered)

    def test_a_name_that_takes_a_value_ends_in_equals_without_a_space(self):
        self.assertEqual(complete("tensorfs mount a b -o thr"), (["threads="], True))
        self.assertEqual(complete("tensorfs mount a b -o allow_o"), (["allow_other"], False))

    def test_the_last_item_of_a_comma_list(self):
        self.assertEqual(complete("tensorfs mount a b -o ro,thr")[0], ["ro,threads="])
        # bash replaces only what follows the last `=`: the candidates start from there.
        self.assertEqual(complete("tensorfs mount a b -o cache_size=2G,exp")[0], ["2G,export_dtype="])
        self.assertEqual(complete("tensorfs mount a b -o ro,allow_other,auto_")[0], ["ro,allow_other,auto_unmount"])

    def test_values_of_export_dtype(self):
        self.assertEqual(complete("tensorfs mount a b -o export_dtype=")[0], ["bf16", "f16", "f32", "keep"])
        self.assertEqual(complete("tensorfs mount a b -o ro,export_dtype=b")[0], ["bf16"])
        self.assertEqual(complete("tensorfs mount a b -o cache_size=1G,export_dtype=f")[0], ["f16", "f32"])

    def test_cache_dir_takes_a_folder(self):
        with tempfile.TemporaryDirectory() as folder:
            os.mkdir(os.path.join(folder, "blocks"))
            open(os.path.join(folder, "blob"), "w").close()
            self.assertEqual(complete(f"tensorfs mount a b -o ro,cache_dir={folder}/b"),
                             ([f"{folder}/blocks/"], True))


class Arguments(unittest.TestCase):
    def test_sources_and_folders_are_file_names(self):
        with tempfile.TemporaryDirectory() as folder:
            for name in ("model.gguf", "model.safetensors", "models"):
                (os.mkdir if name == "models" else lambda p: open(p, "w").close())(os.path.join(folder, name))
            self.assertEqual(complete(f"tensorfs ls {folder}/mo")[0],
                             [f"{folder}/model.gguf", f"{folder}/model.safetensors", f"{folder}/models"])
            # MOUNTPOINT: folders only.
            self.assertEqual(complete(f"tensorfs mount {folder}/model.gguf {folder}/mo")[0], [f"{folder}/models"])

    def test_umount_and_stats_offer_the_tensorfs_mounts(self):
        demo = os.path.join(VECTORS, "safetensors", "all_dtypes.safetensors")
        with Mount(demo) as m:
            for command in ("umount", "stats --json"):
                with self.subTest(command=command):
                    self.assertEqual(complete(f"tensorfs {command} {m.tmp}/")[0], [m.path])


class TensorNames(unittest.TestCase):
    def test_every_tensor_of_a_gguf_file(self):
        entry = next(e for e in manifest()["gguf"] if e["file"] == "gguf/tiny-llama-Q4_K_M.gguf")
        names = sorted(t["name"] for t in entry["tensors"])
        source = os.path.join(VECTORS, entry["file"])
        self.assertEqual(complete(f"tensorfs cat {source} ")[0], names)
        self.assertEqual(complete(f"tensorfs cat --f16 {source} blk.0.")[0],
                         [n for n in names if n.startswith("blk.0.")])
        # The binary as typed, by its path; and the remote-cache flags are not taken for the SOURCE.
        self.assertEqual(complete(f"{BIN} cat --cache-dir {tmp} {source} ")[0], names)
        # Only TENSOR, the second argument, is a tensor name.
        self.assertEqual(complete(f"tensorfs cat {source} {names[0]} ")[0], [])

    def test_every_shard_of_a_sharded_folder(self):
        shards = [e for e in manifest()["safetensors"] if e["file"].startswith("safetensors/sharded/")]
        names = sorted(t["name"] for e in shards for t in e["tensors"])
        self.assertEqual(complete(f"tensorfs cat {os.path.join(VECTORS, 'safetensors', 'sharded')} ")[0], names)

    def test_the_model_that_model_picks_in_a_folder_of_several(self):
        folder = os.path.join(tmp, "several")
        os.mkdir(folder)
        for name in ("align64.gguf", "tiny-llama-Q4_K_M.gguf"):
            os.symlink(os.path.join(VECTORS, "gguf", name), os.path.join(folder, name))
        entry = next(e for e in manifest()["gguf"] if e["file"] == "gguf/align64.gguf")
        self.assertEqual(complete(f"tensorfs cat --model align64.gguf {folder} ")[0],
                         sorted(t["name"] for t in entry["tensors"]))
        self.assertEqual(complete(f"tensorfs cat {folder} ")[0], [])   # no model: no tensors

    def test_names_with_break_characters_blanks_and_quotes(self):
        path = os.path.join(tmp, "odd.safetensors")
        raw = b"\0\0\0\0"
        write_safetensors(path, [(name, "F32", [1], raw) for name in ("a:b", "a:c", "x=y", "two words", 'q"t',
                                                                        "line\nbreak")])
        # What follows the `:` or `=` is what bash replaces.
        self.assertEqual(complete(f"tensorfs cat {path} a:")[0], ["b", "c"])
        self.assertEqual(complete(f"tensorfs cat {path} x=")[0], ["y"])
        # Quoted for the command line; a name with a control byte is not offered.
        self.assertEqual(complete(f"tensorfs cat {path} ")[0], ["a:b", "a:c", 'q\\"t', "two\\ words", "x=y"])

    def test_a_source_that_is_not_a_model_offers_nothing(self):
        self.assertEqual(complete(f"tensorfs cat {tmp}/no-such.gguf ")[0], [])


if __name__ == "__main__":
    unittest.main()
