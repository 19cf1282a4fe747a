#!/bin/sh
# check-circles.sh BUILD ROOM... - no circle of files inside a room.
#
# Within a room, file a.c "uses" file b.c when a.o calls or reads a symbol
# that b.o defines (nm). The uses of a room's files must form no circle
# (a.c uses b.c uses a.c): a circle means two files that are one piece, or a
# piece that sits in the wrong one. tsort finds the circles; each is printed
# with its files. Needs the room's objects built (make all).
set -u
build=$1
shift
cd "$(dirname "$0")/.."
. tests/room-dir.sh
bad=0
for r in "$@"; do
    edges=$(mktemp)
    d=$(room_dir "$r")
    objs=
    for o in "$build/$d"/*.o; do
        [ -f "$o" ] || continue
        src=${o##*/}
        src=${src%.o}
        case $src in *.cu) ;; *) src=$src.c ;; esac
        [ -f "$d/$src" ] || continue # an object left from a file since removed
        objs="$objs $o"
    done
    [ -n "$objs" ] || continue
    # one nm a room, each line "OBJECT: SYMBOL TYPE [VALUE SIZE]" (-A -P),
    # not one nm and awk an object (most of the time on a loaded box)
    nm -A -P $objs | awk -v d="$d" '{ o = $1; sub(/:$/, "", o); sub(/.*\//, "", o)
                                      sub(/\.o$/, "", o); if (o !~ /\.cu$/) o = o ".c"
                                      f = d "/" o }
                                    $3 == "U" { print "U", $2, f; next }
                                    NF >= 4 && $3 ~ /^[TDBRV]$/ { print "D", $2, f }' |
        awk '$1 == "D" { def[$2] = $3; next } { use[NR] = $2 " " $3 }
                END { for (i in use) { split(use[i], u, " ");
                        if ((u[1] in def) && def[u[1]] != u[2]) print u[2], def[u[1]] } }' |
        sort -u >"$edges"
    if ! tsort "$edges" >/dev/null 2>"$edges.err"; then
        echo "check-circles: $d/ has a circle of files:" >&2
        grep -v 'input contains a loop' "$edges.err" | sed 's/^tsort: /  /' >&2
        bad=1
    fi
    rm -f "$edges" "$edges.err"
done
[ "$bad" -eq 0 ] || { echo "check-circles: FAILED" >&2; exit 1; }
echo "check-circles: clean ($# rooms)"
