/*
 * text.c - see text.h.
 */
#include "text.h"

void text_strip_controls(char *s)
{
    if (!s)
        return;
    unsigned char *r = (unsigned char *)s, *w = r;
    while (*r) {
        if (r[0] == 0xC2 && r[1] >= 0x80 && r[1] <= 0x9F) { /* C1, e.g. CSI 0x9B */
            *w++ = '?';
            r += 2;
        } else if (*r < 0x20 || *r == 0x7F) {
            *w++ = '?';
            r++;
        } else {
            *w++ = *r++;
        }
    }
    *w = '\0';
}
