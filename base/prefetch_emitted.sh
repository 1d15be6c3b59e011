#!/bin/sh
# ctest prefetch_emitted: every function of base/prefetch_probe.cc's object ($2, disassembled
# with $1) must hold a prefetch instruction.
set -eu
objdump=$1
object=$2
for f in PrefetchProbeRange PrefetchProbeRows; do
  if ! "$objdump" -d -C "$object" |
    awk -v f="$f" '/^[0-9a-f]+ <.*>:$/ { in_f = index($0, f) > 0 } in_f && /prefetch/ { n++ }
                   END { exit n == 0 }'; then
    echo "no prefetch instruction in $f ($object): the compiler dropped base::PrefetchLines"
    exit 1
  fi
done
echo "prefetch instructions kept in PrefetchProbeRange and PrefetchProbeRows"
