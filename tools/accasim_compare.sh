#!/usr/bin/env bash
# Side-by-side simulator speed: AccaSim 1.1.3 (FIFO + FirstFit, output files off) and
# `mysched simulate` (mysched and fifo policies) on the same trace and farm, 60 s cycles.
# Usage: tools/accasim_compare.sh [TRACE.swf.gz] [NODES] [SLOTS] [ROUNDS]
#   defaults: LPC-EGEE-2004 from ../shared/traces, 70 x 2 cores, 3 rounds.
#        tools/accasim_compare.sh easy [TRACE.swf.gz] [NODES] [SLOTS] [FACTOR]
#   EASY mode: AccaSim's EASY backfilling against `--policy easy --event-driven` and the
#   mysched policy, by mean wait and bounded slowdown (tools/accasim_compare_easy.sh).
# Each round runs the three one after the other; the medians are compared with the targets
# of issue #6 (mysched no slower than AccaSim, fifo at most a third of it), so a noisy
# neighbour slows all three alike. Installs AccaSim into a scratch venv under ${TMPDIR:-/tmp}
# (needs PyPI once). Wall times include starting Python and reading the trace.
set -euo pipefail
if [ "${1:-}" = easy ]; then
  shift
  exec "$(dirname "$0")/accasim_compare_easy.sh" "$@"
fi
here=$(cd "$(dirname "$0")/.." && pwd)
trace=${1:-$here/../shared/traces/LPC-EGEE-2004-1.2-cln.swf.gz}
nodes=${2:-70}
slots=${3:-2}
rounds=${4:-3}
work=${TMPDIR:-/tmp}/mysched-accasim
mkdir -p "$work"
if [ ! -x "$work/venv/bin/python" ]; then
  python3 -m venv "$work/venv"
  "$work/venv/bin/pip" install -q accasim==1.1.3
fi
plain="$work/trace.swf"
case "$trace" in
  *.gz) gzip -dc "$trace" > "$plain" ;;
  *) cp "$trace" "$plain" ;;
esac
mysched=${MYSCHED:-$(command -v mysched || echo "$here/.venv/bin/mysched")}
times="$work/times.txt"
: > "$times"

wall() {  # label log command...: run (output to log), append "label seconds" to $times
  local label=$1 log=$2; shift 2
  local start end
  start=$(date +%s.%N)
  "$@" > "$log" 2>&1
  end=$(date +%s.%N)
  python3 -c "print('$label', round($end - $start, 2))" | tee -a "$times"
}

for round in $(seq 1 "$rounds"); do
  echo "== round $round of $rounds: $nodes x $slots cores, $(basename "$trace")"
  wall accasim "$work/accasim.log" "$work/venv/bin/python" "$here/tools/accasim_run.py" "$plain" "$nodes" \
    "$slots" "$work"
  for policy in mysched fifo; do
    wall "$policy" "$work/mysched-$policy.log" "$mysched" simulate --trace "$trace" --nodes "$nodes" \
      --slots-per-node "$slots" --policy "$policy" --progress never --json "$work/mysched-$policy.json"
  done
done
python3 - "$times" "$work" <<'PY'
import json, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, secs = line.split()
    runs.setdefault(label, []).append(float(secs))
med = {k: statistics.median(v) for k, v in runs.items()}
acc = med["accasim"]
print(f"median wall: AccaSim {acc:.1f} s, mysched {med['mysched']:.1f} s, fifo {med['fifo']:.1f} s")
for policy, target in (("mysched", 1.0), ("fifo", 1 / 3)):
    d = json.load(open(f"{sys.argv[2]}/mysched-{policy}.json"))
    ratio = med[policy] / acc
    print(f"  {policy}: {ratio:.2f} x AccaSim (target <= {target:.2f}: {'met' if ratio <= target else 'NOT met'}); "
          f"started {d['started']}, occupancy {d['occupancy']:.4f}, cycles {d['cycles']}")
PY
