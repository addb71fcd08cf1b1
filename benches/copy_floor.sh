#!/usr/bin/env bash
# The floor under a command whose output is mostly bytes copied from its inputs by the kernel
# (`strip` of a CUDA library, `kpack --merge`): its `copy_file_range` and `write` calls,
# recorded with strace, are replayed alone (the copies from the same files, as many zeros
# for the bytes it wrote itself; the same pieces at the same offsets of new files, one
# thread; nothing read, planned or hashed), beside `cp` of the input and the command itself,
# best of RUNS (default 5) each, in turn, warm cache.
#
#   benches/copy_floor.sh INPUT OUTPUT -- COMMAND...
#
# For example:
#   benches/copy_floor.sh libtorch_cuda.so /tmp/sm90.so -- \
#     target/release/offload strip --keep sm_90 libtorch_cuda.so -o /tmp/sm90.so
#   benches/copy_floor.sh split/librocsolver.so.0.4 /tmp/merged/librocsolver.so.0.4 -- \
#     target/release/offload kpack --merge split/librocsolver.so.0.4 -o /tmp/merged
# OUTPUT is what COMMAND writes (it is deleted before each run); INPUT is what `cp` copies.
# The kernel copies by `copy_file_range` on this file system; where it cannot reflink (ext4),
# each byte is copied once through the page cache, so this is as fast as the output can be
# made from those pieces. Needs strace and python3.
set -euo pipefail
input=$1 output=$2
shift 2
[ "$1" = -- ] && shift
runs=${RUNS:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat "$input" >/dev/null

# The copies, with the file each descriptor named.
rm -rf "$output"
RAYON_NUM_THREADS=1 strace -f -qq -e trace=openat,copy_file_range,write,lseek -o "$work/trace" "$@" >/dev/null 2>&1
rm -rf "$output"
python3 - "$work/trace" >"$work/copies" <<'PY'
import re, sys
# Each descriptor's file and position: a copy to NULL writes at the position, as write does.
names, position = {}, {}
for line in open(sys.argv[1]):
    line = re.sub(r"^\d+ +", "", line.strip())
    call = re.match(r"(\w+)\((\d+|AT_FDCWD), (.*)\) += (-?\d+)", line)
    if not call:
        continue
    name, fd, args, result = call.group(1), call.group(2), call.group(3), int(call.group(4))
    if name == "openat" and result >= 0:
        # An unnamed temporary file is named here by the line that made it.
        path = re.match(r'"([^"]+)"', args).group(1)
        names[str(result)] = f"@{len(names)}" if "O_TMPFILE" in args else path
        position[str(result)] = 0
    elif name == "write" and result > 0:
        if fd in names:
            print("write", "-", 0, names[fd], position.get(fd, 0), result)
        position[fd] = position.get(fd, 0) + result
    elif name == "lseek" and result >= 0:
        position[fd] = result
    elif name == "copy_file_range" and result > 0:
        copied = re.match(r"\[(\d+)\], (\d+), (\[(\d+)\]|NULL), ", args)
        target = copied.group(2)
        at = int(copied.group(4)) if copied.group(4) else position.get(target, 0)
        if copied.group(4) is None:
            position[target] = at + result
        if fd in names and target in names:
            print("copy", names[fd], copied.group(1), names[target], at, result)
PY
copies=$(grep -c '^copy' "$work/copies" || true)
writes=$(grep -c '^write' "$work/copies" || true)

# Each file copied into (the output, a temporary file) is made anew, as long as the copies
# into it reach, then the copies are made in their order.
cat >"$work/replay.py" <<'PY'
import os, sys, time
calls = [line.split() for line in open(sys.argv[1])]
start = time.monotonic()
sources, targets = {}, {}
for _, _, _, target, at, n in calls:
    targets[target] = max(targets.get(target, 0), int(at) + int(n))
for k, (target, size) in enumerate(targets.items()):
    fd = os.open(f"{sys.argv[2]}.{k}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    targets[target] = fd
zeros = bytes(1 << 20)
for kind, source, src, target, dst, n in calls:
    src, dst, n = int(src), int(dst), int(n)
    if kind == "write":
        # Bytes the command made itself: as many written.
        while n:
            done = os.pwrite(targets[target], zeros[: min(n, len(zeros))], dst)
            dst, n = dst + done, n - done
        continue
    # A copy out of a file written here (a temporary file) reads what was written there.
    fd = targets.get(source) or sources.get(source)
    fd = fd or sources.setdefault(source, os.open(source, os.O_RDONLY))
    while n:
        done = os.copy_file_range(fd, targets[target], n, src, dst)
        src, dst, n = src + done, dst + done, n - done
for fd in targets.values():
    os.close(fd)
print(f"{time.monotonic() - start:.3f}")
PY

seconds() { local start; start=$(date +%s.%N); "$@" >/dev/null 2>&1; echo "$(date +%s.%N) - $start" | bc; }
best_cp= best_replay= best_ours=
for _ in $(seq "$runs"); do
  rm -f "$work/copy"; t=$(seconds cp "$input" "$work/copy")
  best_cp=$(printf '%s\n%s\n' "${best_cp:-$t}" "$t" | sort -g | head -n 1)
  rm -f "$work"/replayed.*; t=$(python3 "$work/replay.py" "$work/copies" "$work/replayed")
  best_replay=$(printf '%s\n%s\n' "${best_replay:-$t}" "$t" | sort -g | head -n 1)
  rm -rf "$output"; t=$(seconds "$@")
  best_ours=$(printf '%s\n%s\n' "${best_ours:-$t}" "$t" | sort -g | head -n 1)
done
rm -rf "$output"
bytes=$(awk '{ n += $6 } END { print n + 0 }' "$work/copies")
printf '| cp of the input | %.3f s | 1.00x |\n' "$best_cp"
printf '| its %s copies and %s writes alone (%s MB) | %.3f s | %.2fx |\n' "$copies" "$writes" "$((bytes / 1000000))" \
  "$best_replay" "$(echo "$best_replay / $best_cp" | bc -l)"
printf '| the command | %.3f s | %.2fx |\n' "$best_ours" "$(echo "$best_ours / $best_cp" | bc -l)"
