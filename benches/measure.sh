# Sourced by the benchmarks: `measure`, one run of a command with its time and the peaks of
# its memory, sampled from /proc every few milliseconds (anonymous: heap, not mapped file
# pages; resident: mapped pages included); and `best`, the best of several runs.

# measure CMD...: runs CMD once, printing "SECONDS ANON_MIB RSS_MIB" (peaks over the run). An
# exit status other than 0, or than those MEASURE_OK lists ("0 1" for `check`, whose 1 is a
# verdict), fails.
measure() {
  python3 - "$@" <<'PY'
import os, subprocess, sys, time
start = time.monotonic()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
anon = rss = 0
def sample():
    global anon, rss
    try:
        with open(f"/proc/{child.pid}/status") as status:
            for line in status:
                if line.startswith("RssAnon:"):
                    anon = max(anon, int(line.split()[1]))
                elif line.startswith("VmHWM:"):
                    rss = max(rss, int(line.split()[1]))
    except (FileNotFoundError, ProcessLookupError):
        pass
while child.poll() is None:
    sample()
    time.sleep(0.003)
elapsed = time.monotonic() - start
err = child.stderr.read().decode(errors="replace")
if str(child.returncode) not in os.environ.get("MEASURE_OK", "0").split():
    sys.exit(f"failed ({child.returncode}): {' '.join(sys.argv[1:])}\n{err}")
print(f"{elapsed:.3f} {anon / 1024:.0f} {rss / 1024:.0f}")
PY
}

# best PREPARE CMD...: the best of $runs (3 if unset) runs of CMD, each after the shell
# command PREPARE (which empties what the last run wrote); prints "SECONDS ANON_MIB RSS_MIB"
# of that run.
best() {
  local prepare=$1; shift
  local out best=""
  for _ in $(seq "${runs:-3}"); do
    sh -c "$prepare"
    out=$(measure "$@")
    if [ -z "$best" ] || awk -v a="${out%% *}" -v b="${best%% *}" 'BEGIN { exit !(a < b) }'; then
      best=$out
    fi
  done
  echo "$best"
}
