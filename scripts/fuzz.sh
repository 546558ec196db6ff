#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang, ASan and UBSan, and runs each for a bounded time, one per
# core at a time.
# Exits non-zero when any target finds a crash, a sanitizer report, a leak, a timeout or an out-of-memory.
#
# usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]     (default: 60 s, every target)
# env:   TENSORFS_FUZZ_BUILD  build folder (default build-fuzz)
#
# Each target starts from the seeds of tests/data (vectors and malformed corpus) and its committed regression
# inputs (tests/data/fuzz-regressions/TARGET/), and keeps what it learns in BUILD/corpus/TARGET between runs.
# A failing input is saved as BUILD/artifacts/TARGET/crash-* (or leak-, timeout-, oom-): once fixed, commit it
# to tests/data/fuzz-regressions/TARGET/ so that the unit tests replay it (suite fuzz_regressions).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${1:-60}
shift || true
all_targets=(fuzz_safetensors fuzz_index fuzz_gguf fuzz_content fuzz_kernels fuzz_s3_answer fuzz_pickle fuzz_zip
             fuzz_quantized)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
build=${TENSORFS_FUZZ_BUILD:-build-fuzz}
vectors=tests/data/vectors
pytorch=tests/data/pytorch/malformed

CC=clang CXX=clang++ cmake -S . -B "$build" -DTENSORFS_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
if [ $# -eq 0 ]; then
  cmake --build "$build" -j"$(nproc)" --target fuzz_targets  # every target, built in parallel
else
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
fi

# The seed files of a target, listed one per line.
seeds_of() {
  case $1 in
    fuzz_safetensors) find "$vectors/safetensors" "$vectors/malformed" -name '*.safetensors' ;;
    fuzz_index) find "$vectors/safetensors" -name '*.index.json' ;;
    fuzz_gguf) find "$vectors/gguf" "$vectors/malformed" -name '*.gguf' ;;
    fuzz_content) find "$vectors" -name '*.safetensors' -o -name '*.gguf' ;;
    fuzz_kernels) find "$vectors/malformed" -name '*.gguf' ;;  # any bytes do: a type id, then blocks
    fuzz_s3_answer) find tests/data/s3 -name '*.xml' ;;
    fuzz_pickle)  # the pickles (data.pkl) of the PyTorch corpus' archives
      mkdir -p "$build/pickles"
      /usr/bin/python3 - "$build/pickles" "$pytorch"/*.pt <<'EOF'
import os, sys, zipfile
for path in sys.argv[2:]:
    try:
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                if name.endswith("/data.pkl"):
                    with open(os.path.join(sys.argv[1], os.path.basename(path) + ".pkl"), "wb") as out:
                        out.write(archive.read(name))
    except (zipfile.BadZipFile, OSError, ValueError):
        pass  # a broken archive of the corpus: its pickle is out of reach
EOF
      find "$build/pickles" -name '*.pkl' ;;
    fuzz_zip) find "$pytorch" -name '*.pt' -o -name '*.bin' ;;
    fuzz_quantized)  # each quantized reference model's config.json and first shard, in one input
      mkdir -p "$build/quantized"
      for folder in "$vectors"/hfquant/*/; do
        [ -f "$folder/config.json" ] || continue
        /usr/bin/python3 -c 'import sys, struct
config, shard = (open(p, "rb").read() for p in sys.argv[1:3])
open(sys.argv[3], "wb").write(struct.pack("<I", len(config)) + config + shard)' \
          "$folder/config.json" "$folder/model-00001-of-00002.safetensors" "$build/quantized/$(basename "$folder")"
      done
      find "$build/quantized" -type f ;;
    *) echo "unknown target $1" >&2; return 1 ;;
  esac
}

# The longest input a target tries. The GGUF parser gets whole vector files (tiny-llama is 964 KiB, its split
# parts 300 KiB); Content gets up to mixed.gguf (326 KiB, every ggml type), so that each input stays fast.
max_len_of() {
  case $1 in
    fuzz_gguf) echo 1100000 ;;
    fuzz_content) echo 400000 ;;
    fuzz_quantized) echo 700000 ;;   # a config and a reference model's first shard (up to 651 KiB)
    *) echo 200000 ;;
  esac
}

# Runs one target for `seconds`; its statistics or, on a finding, its log's end go to the output in one piece.
run_target() {
  local target=$1
  local seeds="$build/seeds/$target" corpus="$build/corpus/$target" artifacts="$build/artifacts/$target/"
  local regressions="tests/data/fuzz-regressions/$target"
  rm -rf "$seeds"
  mkdir -p "$seeds" "$corpus" "$artifacts"
  seeds_of "$target" | while read -r file; do cp "$file" "$seeds/"; done
  local inputs=("$corpus" "$seeds")
  [ -d "$regressions" ] && inputs+=("$regressions")

  # -timeout: seconds one input may take; -rss_limit_mb: the whole process; -malloc_limit_mb: one allocation,
  # which no input of at most a few MiB can justify at this size (a header number sizing an allocation).
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
     UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
     "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=512 \
       -max_len="$(max_len_of "$target")" -print_final_stats=1 -artifact_prefix="$artifacts" "${inputs[@]}" \
       >"$build/$target.log" 2>&1; then
    echo "== $target: ${seconds}s
$(grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb|#[0-9]+.*DONE)' "$build/$target.log")"
  else
    echo "== $target FAILED: see $build/$target.log; inputs in $artifacts
$(tail -n 40 "$build/$target.log")" >&2
    return 1
  fi
}

# One target per core at a time: each libFuzzer process is single-threaded.
declare -A target_of=()
failed=()
finish_one() {
  local finished
  wait -n -p finished || failed+=("${target_of[$finished]}")
  unset "target_of[$finished]"
}
for target in "${targets[@]}"; do
  [ ${#target_of[@]} -lt "$(nproc)" ] || finish_one
  run_target "$target" &
  target_of[$!]=$target
done
while [ ${#target_of[@]} -gt 0 ]; do finish_one; done

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing failed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzzing: ${#targets[@]} target(s), ${seconds}s each, nothing found"
