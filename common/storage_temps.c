/*
 * storage_temps.c - temporary files owned, not guessed (storage.h, "temporaries
 * owned"): the names that carry an owner tag (storage_owner.c), and the
 * sweeps that remove a temp only when its owner's lease in Redis has lapsed.
 * Redis itself is the caller's (queue/ holds it): a sweep asks through the
 * `live` callback, so no local pid and no local clock decide.
 */
#include "storage.h"

#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- names ---- */

/* One of storage_temp's names, parsed: ".<base>" STORAGE_TEMP_MARK
 * "<pid>-<8 hex>" and "@<owner>" when it has one. */
struct temp_name {
    pid_t pid;
    char owner[STORAGE_OWNER_MAX];   /* "" when none */
};

static int temp_parse(const char *name, struct temp_name *t)
{
    char head[NAME_MAX + 1];
    memset(t, 0, sizeof *t);
    if (name[0] != '.' || strlen(name) > NAME_MAX)
        return 0;
    snprintf(head, sizeof head, "%s", name);
    char *at = strrchr(head, '@'); /* a valid owner holds no '@' */
    if (at && storage_temp_owner_valid(at + 1)) {
        snprintf(t->owner, sizeof t->owner, "%s", at + 1);
        *at = 0;
    }
    const char *m = strstr(head, STORAGE_TEMP_MARK), *next;
    while (m && (next = strstr(m + 1, STORAGE_TEMP_MARK)))
        m = next; /* the last mark: the base name may hold one too */
    if (!m)
        return 0;
    char *end;
    long pid = strtol(m + strlen(STORAGE_TEMP_MARK), &end, 10);
    if (pid <= 0 || *end != '-' || strlen(end + 1) != 8 || strspn(end + 1, "0123456789abcdef") != 8)
        return 0;
    t->pid = (pid_t)pid;
    return 1;
}

/* A temp is a leftover when it has an owner and its lease has lapsed. */
static int temp_is_leftover(const struct temp_name *t, const struct stat *sb,
                            storage_owner_live_fn live, void *ctx)
{
    return t->owner[0] && S_ISREG(sb->st_mode) && live && live(ctx, t->owner) == 0;
}

/* ---- sweeps ---- */

struct sweep {
    storage_owner_live_fn live;
    void *ctx;
    long long removed;
};

/* Sweeps the directory open at dfd (consumed: closed here), named path. */
static void sweep_dir(int dfd, const char *path, int depth, struct sweep *sw)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat sb;
        struct temp_name t;
        if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char sub[STORAGE_PATH_MAX];
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        if (S_ISDIR(sb.st_mode) && depth < STORAGE_SWEEP_DEPTH) {
            int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (fd >= 0)
                sweep_dir(fd, sub, depth + 1, sw);
        } else if (temp_parse(de->d_name, &t) && temp_is_leftover(&t, &sb, sw->live, sw->ctx) &&
                   unlinkat(dirfd(d), de->d_name, 0) == 0) {
            sw->removed++;
            log_info("removed %s, a temporary file of %s, whose lease has lapsed", sub, t.owner);
        }
    }
    closedir(d);
}

int storage_sweep_temps(const char *dir, storage_owner_live_fn live, void *ctx,
                        long long *removed, vr_err *err)
{
    struct sweep sw = { .live = live, .ctx = ctx };
    if (removed)
        *removed = 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : storage_errno(errno, "cannot open directory", dir, err);
    sweep_dir(fd, dir, 0, &sw);
    if (removed)
        *removed = sw.removed;
    return 0;
}

/* Whether the temp `t` is this process's own. */
static int temp_mine(const struct temp_name *t)
{
    const char *mine = storage_temp_owner();
    return mine[0] ? !strcmp(t->owner, mine) : t->pid == getpid();
}

/* What to remove of a name's temporary files (temps_of). */
struct temps_rule {
    int all_but_mine;             /* every one but this process's (drop_temps_of) */
    storage_owner_live_fn live;   /* else: those whose owner's lease lapsed */
    void *ctx;
    const char *dir;              /* for the log */
};

/* Removes base's temporary files in the directory open at dirfd that the
 * rule picks; the count. */
static long long temps_of(int dirfd, const char *base, const struct temps_rule *r)
{
    int fd = dirfd >= 0 ? dup(dirfd) : -1;
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    size_t bl = strlen(base);
    long long n = 0;
    struct dirent *de;
    struct stat sb;
    while ((de = readdir(d))) {
        const char *name = de->d_name;
        struct temp_name t;
        if (!temp_parse(name, &t) || strncmp(name + 1, base, bl) ||
            strncmp(name + 1 + bl, STORAGE_TEMP_MARK, strlen(STORAGE_TEMP_MARK)))
            continue;
        if (r->all_but_mine ? temp_mine(&t)
                            : fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
                                  !temp_is_leftover(&t, &sb, r->live, r->ctx))
            continue;
        if (unlinkat(dirfd, name, 0) < 0)
            continue;
        n++;
        if (r->all_but_mine)
            /* not "its writer left": the writer may be alive, paused or
             * elsewhere, having lost the right to write (issue 26, finding 9) */
            log_info("removed %s, a temporary file of %s from a writer (pid %d%s%s) that no "
                     "longer holds it", name, base, (int)t.pid, t.owner[0] ? ", " : "", t.owner);
        else
            log_info("removed %s/%s, a temporary file of %s, whose lease has lapsed", r->dir,
                     name, t.owner);
    }
    closedir(d);
    return n;
}

long long storage_drop_temps_of(int dirfd, const char *base)
{
    const struct temps_rule r = { .all_but_mine = 1 };
    return temps_of(dirfd, base, &r);
}

long long storage_sweep_temps_of(int dirfd, const char *dir, const char *base,
                                 storage_owner_live_fn live, void *ctx)
{
    const struct temps_rule r = { .live = live, .ctx = ctx, .dir = dir };
    return temps_of(dirfd, base, &r);
}
