# Sourced by the build scripts: with_progress runs a long command and, while
# it runs silently (go build says nothing while it compiles), says on the
# terminal what is going on and for how long.
#
#   with_progress "building bin/sandpod" "why it takes long, how long" CMD...
#
# Quiet when CMD is done within PROGRESS_FIRST seconds (15): a warm build
# prints nothing more. Then one line with the hint, one every PROGRESS_EVERY
# seconds (30), and one when it is done. CMD's exit status is returned.

ts() { date +%T; }

human_secs() { # 75 -> 1m15s
  if [ "$1" -ge 60 ]; then echo "$(($1 / 60))m$(($1 % 60))s"; else echo "$1s"; fi
}

with_progress() {
  local what=$1 hint=$2
  shift 2
  local first=${PROGRESS_FIRST:-15} every=${PROGRESS_EVERY:-30} start=$SECONDS
  (
    # The sleeps run as children waited for, so a TERM from below ends the
    # ticker at once instead of after its current sleep.
    trap 'kill $s 2>/dev/null; exit 0' TERM
    sleep "$first" & s=$!
    wait $s
    echo "[$(ts)] still $what after $(human_secs $((SECONDS - start))): $hint" >&2
    while :; do
      sleep "$every" & s=$!
      wait $s
      echo "[$(ts)] still $what ($(human_secs $((SECONDS - start))) so far)" >&2
    done
  ) &
  local ticker=$! status=0
  "$@" || status=$?
  kill -TERM $ticker 2>/dev/null
  wait $ticker 2>/dev/null || true
  local took=$((SECONDS - start))
  if [ "$took" -ge "$first" ]; then
    if [ $status -eq 0 ]; then
      echo "[$(ts)] done $what in $(human_secs $took)" >&2
    else
      echo "[$(ts)] failed $what after $(human_secs $took)" >&2
    fi
  fi
  return $status
}
