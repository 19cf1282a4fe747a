# room-dir.sh - sourced by the check-*.sh scripts: where a room's files are.
# The rooms with GPU code live under kernels/ (kernels/net, kernels/seg, ...),
# every other room in the top-level folder of its name (Makefile's rdir).
room_dir() { # room_dir ROOM -> its folder
    if [ -d "kernels/$1" ]; then echo "kernels/$1"; else echo "$1"; fi
}
