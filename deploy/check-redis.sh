#!/bin/sh
# check-redis.sh - is this redis-server one vrseg's ACL set-up works on?
# Usage: deploy/check-redis.sh [ACLFILE]   (REDIS_SERVER=path to pick one)
# Exit 0: fine (a note may be printed); 1: it cannot work, what to do said.
#  - Redis < 7.0 cannot read deploy/redis-users.acl (key selectors `(...)`,
#    %R~/%W~ read/write key patterns came in 7.0).
#  - Redis <= 7.0.15 (Debian 12's) replays its AOF's MULTI/EXEC under the
#    default user's rights: a bare `user default off` loses jobs on restart;
#    the shipped line `user default off ~* &* +@all` does not (README.md,
#    Security). Given ACLFILE, a bare line there is refused.
set -eu
server=${REDIS_SERVER:-redis-server}
command -v "$server" >/dev/null 2>&1 || {
    echo "check-redis: no $server: install Redis >= 7.0 (Debian 12: apt-get install redis-server)" >&2
    exit 1
}
v=$("$server" --version | sed -n 's/.* v=\([0-9][0-9.]*\).*/\1/p')
major=${v%%.*}; rest=${v#*.}; minor=${rest%%.*}; patch=${rest#*.}
case "$major.$minor.$patch" in *[!0-9.]*|..|*..*) echo "check-redis: cannot read the version of $server" >&2; exit 1;; esac
if [ "$major" -lt 7 ]; then
    echo "check-redis: Redis $v is older than 7.0, which deploy/redis-users.acl needs: install Redis >= 7.0 (Debian 12 ships 7.0.15)" >&2
    exit 1
fi
old_aof=0
[ "$major" -eq 7 ] && [ "$minor" -eq 0 ] && [ "$patch" -le 15 ] && old_aof=1
if [ $# -gt 0 ]; then
    line=$(grep '^user default ' "$1" || true)
    if [ -z "$line" ]; then
        echo "check-redis: $1 leaves the default user on (no password): add deploy/redis-users.acl's first line, user default off ~* &* +@all" >&2
        exit 1
    fi
    if [ "$old_aof" -eq 1 ] && ! echo "$line" | grep -q '+@all'; then
        echo "check-redis: Redis $v drops its AOF's MULTI/EXEC on restart under '$line' (jobs lost): make it 'user default off ~* &* +@all' as deploy/redis-users.acl ships it (still nobody can log in as default)" >&2
        exit 1
    fi
fi
if [ "$old_aof" -eq 1 ]; then
    echo "check-redis: Redis $v: keep deploy/redis-users.acl's 'user default off ~* &* +@all' as it is; a bare 'user default off' loses jobs when Redis restarts (README.md, Security)"
else
    echo "check-redis: Redis $v: fine"
fi
