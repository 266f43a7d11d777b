#!/usr/bin/env bash
# `make test`: runs each stage (a make target) in turn, stopping at the
# first that fails, and prints how long each took when it ends, passed or
# not, so that CI's log says where its time goes.
set -uo pipefail
names=() seconds=() outcome=passed
report() {
  echo
  echo "stage times:"
  for i in "${!names[@]}"; do printf '  %-14s %6ss\n' "${names[$i]}" "${seconds[$i]}"; done
  printf '  %-14s %6ss (%s)\n' total "$SECONDS" "$outcome"
}
trap report EXIT
for stage in "$@"; do
  started=$SECONDS
  make --no-print-directory "$stage"
  status=$?
  names+=("$stage") seconds+=($((SECONDS - started)))
  if [ $status -ne 0 ]; then
    outcome="failed in $stage"
    exit $status
  fi
done
