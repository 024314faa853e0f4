#!/usr/bin/env bash
# Side-by-side simulator speed: AccaSim 1.1.3 (FIFO + FirstFit, output files off) and
# `mysched simulate` (mysched and fifo policies) on the same trace and farm.
# Usage: tools/accasim_compare.sh [TRACE.swf.gz] [NODES] [SLOTS]   (defaults: LPC-EGEE-2004, 70 x 2)
# Installs AccaSim into a scratch venv under ${TMPDIR:-/tmp}; needs network access to PyPI once.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
trace=${1:-$here/../shared/traces/LPC-EGEE-2004-1.2-cln.swf.gz}
nodes=${2:-70}
slots=${3:-2}
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

echo "== AccaSim 1.1.3, FIFO + FirstFit, $nodes x $slots cores"
"$work/venv/bin/python" "$here/tools/accasim_run.py" "$plain" "$nodes" "$slots" "$work"
for policy in mysched fifo; do
  echo "== mysched simulate --policy $policy, $nodes x $slots cores, 60 s cycles"
  start=$(date +%s.%N)
  "$mysched" simulate --trace "$trace" --nodes "$nodes" --slots-per-node "$slots" --policy "$policy" \
    --progress never --json "$work/mysched-$policy.json" > /dev/null
  end=$(date +%s.%N)
  python3 - "$work/mysched-$policy.json" "$start" "$end" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"wall {float(sys.argv[3]) - float(sys.argv[2]):.1f} s (simulation loop {d['wall_s']:.1f} s), "
      f"started {d['started']}, occupancy {d['occupancy']:.4f}, cycles {d['cycles']}")
PY
done
