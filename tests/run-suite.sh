#!/bin/sh
# run-suite.sh SUITE [ARGS...] - run a Criterion suite; when it fails,
# print each failure's lines again at the end.
#
# Why: CI keeps only the tail of a long log, and with tests running two at
# a time a failing assertion sits among thousands of log lines from the
# processes the tests start. The repeat names the test, its assertion and
# any sanitizer report, so the tail alone says what failed.
set -u

log=$(mktemp "${TMPDIR:-/tmp}/vrsuite.XXXXXX") || exit 1
rcfile=$(mktemp "${TMPDIR:-/tmp}/vrsuite-rc.XXXXXX") || exit 1
trap 'rm -f "$log" "$rcfile"' EXIT INT TERM

# the suite's exit status survives the pipe through a file
{ "$@" 2>&1; echo $? >"$rcfile"; } | tee "$log"
rc=$(cat "$rcfile")
[ "$rc" = 0 ] && exit 0

echo "==== $1 exited $rc; the failures again (first 200 lines):"
# Criterion: "[----] file:line: Assertion Failed" and its message lines,
# "[FAIL] suite::test", crashes and timeouts; the sanitizers' reports
grep -E '^\[(----|FAIL)\]|CRASH|[Tt]imed out|Assertion|AddressSanitizer|runtime error:' "$log" |
    grep -v -E '^\[----\] Criterion v' | head -n 200
exit "$rc"
