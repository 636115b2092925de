#!/bin/sh
# Issue 39's set on one or two binaries: on SQLite and PostgreSQL, (a) 10,000 events to one
# endpoint from 64 connections, (b) 10,000 events round-robin over 10 endpoints (1,000 each),
# (c) open loop 200 events/s for 30 s; ROUNDS rounds of each, the binaries interleaved
# (before, after, before, after) so the machine's noise hits both alike.
#   bench/harness/issue39.sh OUT_DIR BEFORE_BINARY [AFTER_BINARY]
# Writes OUT_DIR/{before,after}-<database>-<case>.txt (the raw output) and .json, driftwatch's
# output in OUT_DIR/logs/, then prints the tables.
set -eu
out=$1 before=$2 after=${3:-}
rounds=${ROUNDS:-2}
py=${PYTHON:-$(dirname "$0")/../../target/harness-venv/bin/python}
harness="$(dirname "$0")/api.py"
mkdir -p "$out"
for db in sqlite postgres; do
  for case in burst fanout trickle; do
    case $case in
      burst) load="--events 10000" ;;
      fanout) load="--events 10000 --endpoints 10" ;;
      trickle) load="--rate 200 --seconds 30" ;;
    esac
    r=1
    while [ "$r" -le "$rounds" ]; do
      for which in before after; do
        bin=$before; [ "$which" = after ] && bin=$after
        [ -n "$bin" ] || continue
        echo "== $which $db $case round $r ($(date -u +%H:%M:%S))" >&2
        # shellcheck disable=SC2086
        "$py" "$harness" --driftwatch "$bin" --database "$db" $load --json "$out/$which-$db-$case.json" --logs "$out/logs" \
          >>"$out/$which-$db-$case.txt" 2>&1 || echo "   failed: see $out/$which-$db-$case.txt" >&2
      done
      r=$((r + 1))
    done
  done
done
for f in "$out"/*.json; do "$py" "$harness" --summarise "$f"; done
