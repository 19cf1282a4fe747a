#!/bin/sh
# check-rooms.sh ROOM... - fails when a room reaches into one it must not.
#
# The Makefile passes the room table as USES_<room>="room ..." (the rooms a
# room may include besides itself); docs/ARCHITECTURE.md explains it. Checks:
#   1. every #include "x.h" of a room names its own header or one of a room
#      it uses;
#   2. Redis belongs to queue/: no hiredis type, no "vr:" key literal and no
#      Lua script anywhere else in the product;
#   3. a file is made durable in one place: no rename() outside the
#      atomic-file helper (common/storage.c);
#   4. tests are named for the room they test: tests/t-<room>-<what>.c
#      (room dist: the whole system with real processes) with Criterion
#      suites named <room>_<what>, tests/gpu/g-<room>-<what>.c with suites
#      g_<room>_<what>, and their helpers util-<what>.[ch] (tests/chaos/ is
#      the chaos suite's own binary and its own names).
# Each finding is printed as file:line and what rule it breaks.
set -u
cd "$(dirname "$0")/.."
. tests/room-dir.sh
rooms="$*"
found=$(mktemp)
trap 'rm -f "$found"' EXIT

for r in $rooms; do eval "dir_$r=\$(room_dir \"\$r\")"; done

# the room holding header $1 in $owner, or "" (a variable, not a $(...):
# a subshell per include line was most of this script's time on a loaded box)
room_of_header() {
    owner=
    for o in $rooms; do
        eval "od=\$dir_$o"
        [ -f "$od/$1" ] && { owner=$o; return; }
    done
}

# code lines only: comment lines (" * ...", "/* ...", "// ...") are skipped
code_grep() { # code_grep ERE FILE... -> file:line:text
    grep -nE "$@" 2>/dev/null | grep -vE '^[^:]+:[0-9]+:[[:space:]]*(\*|/\*|//)'
}

# 1. includes follow the room table
for r in $rooms; do
    eval "uses=\${USES_$r-}"
    eval "d=\$dir_$r"
    files=
    for f in "$d"/*.c "$d"/*.h "$d"/*.cu "$d"/*.cuh; do
        [ -f "$f" ] && files="$files $f"
    done
    [ -n "$files" ] || continue
    # one grep a room (file:line:text), not one a file
    grep -Hn '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' $files |
        while IFS= read -r line; do
            f=${line%%:*}
            line=${line#*:}
            n=${line%%:*}
            h=${line#*include} # the name between the quotes
            h=${h#*\"}
            h=${h%%\"*}
            [ -f "$d/$h" ] && continue
            room_of_header "$h"
            if [ -z "$owner" ]; then
                echo "$f:$n includes \"$h\", which no room has"
                continue
            fi
            case " $uses " in
            *" $owner "*) ;;
            *) echo "$f:$n includes $owner/$h: $r may use only: ${uses:-itself}" ;;
            esac
        done
done >>"$found"

for r in $rooms; do
    d=$(room_dir "$r")
    # 2. Redis stays in queue/
    [ "$r" = queue ] ||
        code_grep 'redisReply|redisContext|hiredis|rq_cmd|"vr:|redis\.call|EVALSHA|"EVAL' \
            "$d"/*.c "$d"/*.h "$d"/*.cu | sed 's/$/   <- Redis outside queue\//' >>"$found"
    # 3. temp + rename only in the atomic-file helper
    code_grep '(^|[^_a-zA-Z])rename(at)?[[:space:]]*\(' "$d"/*.c "$d"/*.cu |
        grep -v '^common/storage\.c:' |
        sed 's/$/   <- rename outside common\/storage.c (use its atomic-file helper)/' >>"$found"
done

# 4. tests named for their room, suites for their file
for f in tests/t-*.c tests/gpu/g-*.c; do
    [ -f "$f" ] || continue
    b=${f##*/}
    b=${b%.c}
    case $b in
    t-*) name=${b#t-}; suite=$(echo "$name" | tr - _) ;;
    g-*) name=${b#g-}; suite=g_$(echo "$name" | tr - _) ;;
    esac
    room=${name%%-*}
    case " $rooms dist " in
    *" $room "*) ;;
    *) echo "$f: named for \"$room\", which is no room (nor dist)" ;;
    esac
    grep -no '^[[:space:]]*\(Test\|TestSuite\|ParameterizedTest\)([a-z_0-9]*' "$f" |
    while IFS= read -r line; do
        s=${line##*(}
        [ "$s" = "$suite" ] || echo "$f:${line%%:*}: suite $s, the file's is $suite"
    done
done >>"$found"
for f in tests/*.c tests/*.h tests/gpu/*.c tests/gpu/*.h; do
    [ -f "$f" ] || continue
    case ${f##*/} in
    t-*.c | g-*.c | util-*.c | util-*.h) ;;
    *) echo "$f: a test is t-<room>-<what>.c (g- on the GPU), a helper util-<what>.[ch]" ;;
    esac
done >>"$found"

if [ -s "$found" ]; then
    sed 's/^/check-rooms: /' "$found" >&2
    echo "check-rooms: FAILED ($(wc -l <"$found") findings)" >&2
    exit 1
fi
echo "check-rooms: clean ($(echo $rooms | wc -w) rooms)"
