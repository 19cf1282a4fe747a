#!/bin/sh
# architecture.sh ROOM... - the room table of docs/ARCHITECTURE.md, from the
# tree: prints each room's folder, its lines of .c/.cu/.cuh/.h (the files git
# tracks in the room's own folder) and their share of all the rooms' lines,
# then checks the doc's table against it: every room has one row (its
# folder, as tests/room-dir.sh finds it), the row's "lines" column is the
# share printed here, its "may use" column is the Makefile's USES_<room>
# (passed in the environment, as for check-rooms); the total is printed,
# not written in the doc (it moves with every commit). Fails naming each
# difference; `make architecture` runs it, and so does `make test`.
# With ARCH_FIX=1 it first rewrites the doc's lines column from
# the tree (after a merge moved the shares), then checks.
set -u
cd "$(dirname "$0")/.."
. tests/room-dir.sh
doc=docs/ARCHITECTURE.md

total=0
for r in "$@"; do
    d=$(room_dir "$r")
    n=$(git ls-files -- "$d/*.c" "$d/*.cu" "$d/*.cuh" "$d/*.h" | grep -v "^$d/.*/" |
        xargs -r cat | wc -l)
    eval "lines_$r=$n"
    total=$((total + n))
done

share() { # share LINES -> "9%", "<1%" under half a percent
    awk -v n="$1" -v t="$total" 'BEGIN { p = 100 * n / t; if (p < 0.5) print "<1%";
                                        else printf "%d%%\n", p + 0.5 }'
}

k=$(awk -v t="$total" 'BEGIN { printf "%.1fk", t / 1000 }')
if [ "${ARCH_FIX:-0}" = 1 ]; then
    tmp=$(mktemp)
    cp "$doc" "$tmp"
    for r in "$@"; do
        eval "n=\$lines_$r"
        awk -v d="$(room_dir "$r")/" -v s="$(share "$n")" \
            'index($0, "| " d " |") == 1 { sub(/\| [^|]*\|$/, "| " s " |") } { print }' \
            "$tmp" > "$tmp.new" && mv "$tmp.new" "$tmp"
    done
    cat "$tmp" > "$doc"
    rm -f "$tmp"
fi
table=$(sed -n '/^| room | what | may use | lines |$/,/^$/p' "$doc" | grep '^| [a-z]' | tail -n +2)
printf '%-14s %7s %6s\n' room lines share
bad=0
for r in "$@"; do
    d=$(room_dir "$r")
    eval "n=\$lines_$r"
    s=$(share "$n")
    printf '%-14s %7d %6s\n' "$d/" "$n" "$s"
    row=$(printf '%s\n' "$table" | grep -F "| $d/ |" | head -1)
    if [ -z "$row" ]; then
        echo "architecture: $doc has no row for room $d/" >&2
        bad=1
        continue
    fi
    # cells: | room | what | may use | lines |  (the last two from the end)
    got=$(printf '%s\n' "$row" | awk -F'|' '{ gsub(/^ +| +$/, "", $(NF-1)); print $(NF-1) }')
    uses=$(printf '%s\n' "$row" | awk -F'|' '{ gsub(/^ +| +$/, "", $(NF-2)); print $(NF-2) }')
    [ "$got" = "$s" ] ||
        { echo "architecture: $doc: $d/ says $got of the lines, the tree $s" >&2; bad=1; }
    eval "want_uses=\${USES_$r-}"
    [ -n "$want_uses" ] || want_uses="—"
    [ "$(echo $uses)" = "$(echo $want_uses)" ] ||
        { echo "architecture: $doc: $d/ may use '$uses', the Makefile says '$want_uses'" >&2
          bad=1; }
done
printf '%-14s %7d (%s)\n' total "$total" "$k"
rows=$(printf '%s\n' "$table" | grep -c .)
[ "$rows" -eq "$#" ] ||
    { echo "architecture: $doc: the room table has $rows rows for $# rooms" >&2; bad=1; }
if [ "$bad" -ne 0 ]; then
    echo "architecture: $doc's room table differs from the tree (above)" >&2
    exit 1
fi
echo "architecture: $doc's room table matches the tree"
