/*
 * term_fit.c - see term_fit.h.
 */
#include "term_fit.h"

#include "text.h"

#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

int term_cols(int fd)
{
    struct winsize ws;
    long c = 0;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        c = ws.ws_col;
    else if (getenv("COLUMNS"))
        c = strtol(getenv("COLUMNS"), NULL, 10);
    if (c <= 0 || c > 1000)
        c = 80;
    return c < 20 ? 20 : (int)c;
}

/* The code point of the UTF-8 sequence at s, its length into *len. */
static unsigned term_cp(const unsigned char *s, int *len)
{
    if (s[0] < 0x80) {
        *len = 1;
        return s[0];
    }
    int n = s[0] >= 0xF0 ? 4 : s[0] >= 0xE0 ? 3 : 2;
    unsigned cp = s[0] & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if (!s[i]) { /* cut short: one column, as '?' would be */
            *len = i;
            return '?';
        }
        cp = cp << 6 | (s[i] & 0x3F);
    }
    *len = n;
    return cp;
}

/* Columns of one code point: combining marks and zero-width spaces 0, the
 * East Asian wide and fullwidth blocks and the emoji 2, others 1. */
static int term_cp_width(unsigned c)
{
    if ((c >= 0x300 && c <= 0x36F) || (c >= 0x1AB0 && c <= 0x1AFF) ||
        (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x200B && c <= 0x200D) ||
        (c >= 0x20D0 && c <= 0x20FF) || (c >= 0xFE00 && c <= 0xFE0F) ||
        (c >= 0xFE20 && c <= 0xFE2F))
        return 0;
    if ((c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0x303E) ||
        (c >= 0x3041 && c <= 0x33FF) || (c >= 0x3400 && c <= 0x4DBF) ||
        (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0xA000 && c <= 0xA4CF) ||
        (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
        (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
        (c >= 0xFFE0 && c <= 0xFFE6) || (c >= 0x1F300 && c <= 0x1F64F) ||
        (c >= 0x1F900 && c <= 0x1F9FF) || (c >= 0x20000 && c <= 0x3FFFD))
        return 2;
    return 1;
}

int term_width(const char *s)
{
    int w = 0, len;
    for (const unsigned char *p = (const unsigned char *)s; *p; p += len)
        w += term_cp_width(term_cp(p, &len));
    return w;
}

void term_fit(char *s, int cols)
{
    text_strip_controls(s);
    if (cols < 4 || term_width(s) <= cols)
        return;
    int w = 0, len;
    unsigned char *p = (unsigned char *)s;
    for (; *p; p += len) { /* keep what fits in cols - 3, then "..." */
        int cw = term_cp_width(term_cp(p, &len));
        if (w + cw > cols - 3)
            break;
        w += cw;
    }
    strcpy((char *)p, "...");
}
