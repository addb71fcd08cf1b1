#!/usr/bin/env bash
# The floor under a command whose output is mostly bytes copied from its inputs by the kernel
# (`strip` of a CUDA library, `kpack --merge`): its copies (`splice` through a pipe, or
# `copy_file_range`) and writes, recorded with strace, are replayed alone (the copies
# from the same files, through a pipe as offload makes them, as many zeros for the bytes it
# wrote itself; the same pieces at the same offsets of new files, one thread; nothing read,
# planned or hashed), beside `cp` of the input and the command itself, best of RUNS (default
# 5) each, in turn, warm cache.
#
#   benches/copy_floor.sh INPUT OUTPUT -- COMMAND...
#
# For example:
#   benches/copy_floor.sh libtorch_cuda.so /tmp/sm90.so -- \
#     target/release/offload strip --keep sm_90 libtorch_cuda.so -o /tmp/sm90.so
#   benches/copy_floor.sh split/librocsolver.so.0.4 /tmp/merged/librocsolver.so.0.4 -- \
#     target/release/offload kpack --merge split/librocsolver.so.0.4 -o /tmp/merged
# OUTPUT is what COMMAND writes (it is deleted before each run); INPUT is what `cp` copies.
# Where the file system cannot share blocks (ext4), each byte is copied once through the page
# cache, so this is as fast as the output can be made from those pieces. Needs strace and
# python3 (3.10 or later, for os.splice).
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
RAYON_NUM_THREADS=1 strace -f -qq -e trace=openat,fcntl,copy_file_range,splice,pipe2,write,pwrite64,lseek -o "$work/trace" "$@" >/dev/null 2>&1
rm -rf "$output"
python3 - "$work/trace" >"$work/copies" <<'PY'
import re, sys
# Each descriptor's file and position: a copy to NULL writes at the position, as write does.
names, position = {}, {}
pipe_of, in_pipe = {}, {}
for line in open(sys.argv[1]):
    line = re.sub(r"^\d+ +", "", line.strip())
    made = re.match(r"pipe2\(\[(\d+), (\d+)\], .*\) += 0", line)
    if made:
        pipe_of[made.group(2)] = made.group(1)
        in_pipe[made.group(1)] = []
        continue
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
    elif name == "fcntl" and args.startswith("F_DUPFD") and result >= 0 and fd in names:
        # A second descriptor of the same file (a clone of an output's).
        names[str(result)] = names[fd]
    elif name == "pwrite64" and result > 0:
        at = int(re.search(r", (\d+)$", args).group(1))
        if fd in names:
            print("write", "-", 0, names[fd], at, result)
    elif name == "lseek" and result >= 0:
        position[fd] = result
    elif name == "splice" and result > 0:
        # Into a pipe from a file at an offset, or out of one into a file at an offset: the
        # bytes a pipe hands on are copies of the file they came from.
        parts = re.match(r"(?:\[(\d+)\]|NULL), (\d+), (?:\[(\d+)\]|NULL), ", args)
        src_at, target, dst_at = parts.group(1), parts.group(2), parts.group(3)
        if target in pipe_of:
            in_pipe[pipe_of[target]].append([names.get(fd), int(src_at), result])
        elif fd in in_pipe:
            at, left = int(dst_at), result
            while left:
                piece = in_pipe[fd][0]
                k = min(left, piece[2])
                if piece[0] is not None and target in names:
                    print("copy", piece[0], piece[1], names[target], at, k)
                piece[1] += k; piece[2] -= k; at += k; left -= k
                if piece[2] == 0:
                    in_pipe[fd].pop(0)
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
calls = []
for call in (line.split() for line in open(sys.argv[1])):
    # The rounds of one copy, in a row, are one copy again.
    last = calls[-1] if calls else None
    if (last and call[0] == last[0] == "copy" and call[1] == last[1] and call[3] == last[3]
            and int(call[2]) == int(last[2]) + int(last[5])
            and int(call[4]) == int(last[4]) + int(last[5])):
        last[5] = str(int(last[5]) + int(call[5]))
    else:
        calls.append(call)
start = time.monotonic()
sources, targets = {}, {}
for _, _, _, target, at, n in calls:
    targets[target] = max(targets.get(target, 0), int(at) + int(n))
for k, (target, size) in enumerate(targets.items()):
    fd = os.open(f"{sys.argv[2]}.{k}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    os.ftruncate(fd, size)
    targets[target] = fd
zeros = bytes(1 << 20)
# As offload copies (src/io/splicing.rs): through a pipe of 1 MiB, the first round up to the
# target's next 64 KiB boundary, every other a multiple of 64 KiB.
import fcntl
pipe_out, pipe_in = os.pipe()
fcntl.fcntl(pipe_in, fcntl.F_SETPIPE_SZ, 1 << 20)
def piped(fd, out, src, dst, n):
    while n:
        k = min(n, (-dst) % 65536 or 960 << 10)
        filled = 0
        while filled < k:
            filled += os.splice(fd, pipe_in, k - filled, offset_src=src + filled)
        emptied = 0
        while emptied < k:
            emptied += os.splice(pipe_out, out, k - emptied, offset_dst=dst + emptied)
        src, dst, n = src + k, dst + k, n - k
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
    piped(fd, targets[target], src, dst, n)
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
