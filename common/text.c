/*
 * text.c - see text.h.
 */
#include "text.h"

#include <string.h>

/* The length of the valid UTF-8 sequence at r (1 for ASCII), or 0 when r
 * starts no valid sequence (a stray continuation byte, an overlong form, a
 * surrogate, past U+10FFFF, or cut short): the rules jansson checks. */
static int utf8_len(const unsigned char *r)
{
    if (r[0] < 0x80)
        return 1;
    int n = r[0] >= 0xC2 && r[0] <= 0xDF ? 2 : r[0] >= 0xE0 && r[0] <= 0xEF ? 3
            : r[0] >= 0xF0 && r[0] <= 0xF4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if (r[i] < 0x80 || r[i] > 0xBF)
            return 0;
    if ((r[0] == 0xE0 && r[1] < 0xA0) || (r[0] == 0xED && r[1] > 0x9F) ||
        (r[0] == 0xF0 && r[1] < 0x90) || (r[0] == 0xF4 && r[1] > 0x8F))
        return 0;
    return n;
}

int text_bidi_len(const char *s)
{
    const unsigned char *r = (const unsigned char *)s;
    if (!r || !r[0])
        return 0;
    if (r[0] == 0xD8 && r[1] == 0x9C) /* U+061C ARABIC LETTER MARK */
        return 2;
    if (r[0] != 0xE2 || !r[1] || !r[2])
        return 0;
    unsigned cp = ((r[1] & 0x3Fu) << 6 | (r[2] & 0x3Fu)) + 0x2000; /* E2 80..81 xx */
    if (r[1] < 0x80 || r[1] > 0x81 || r[2] < 0x80 || r[2] > 0xBF)
        return 0;
    return cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069) ? 3 : 0;
}

void text_strip_controls(char *s)
{
    if (!s)
        return;
    unsigned char *r = (unsigned char *)s, *w = r;
    while (*r) {
        int n = utf8_len(r);
        if (n == 0 || (r[0] == 0xC2 && r[1] <= 0x9F) || r[0] < 0x20 || r[0] == 0x7F ||
            text_bidi_len((const char *)r)) {
            /* a control (C0, DEL, C1 such as CSI 0x9B, a bidi override that
             * shows a name reversed) or a byte of no valid UTF-8: one '?'
             * for the whole sequence */
            *w++ = '?';
            r += n ? n : 1;
        } else {
            memmove(w, r, (size_t)n);
            w += n;
            r += n;
        }
    }
    *w = '\0';
}
