/*
 * text.h - text read from outside (Redis records, file names) made safe to
 * show: no byte of it may drive a terminal; and counts said in words.
 */
#ifndef VR_TEXT_H
#define VR_TEXT_H

/* Replaces, in place, every control character of `s` with '?': the C0
 * bytes (ESC, BEL, CR, ... below 0x20), DEL, and the C1 controls as UTF-8
 * encodes them (0xC2 0x80-0x9F, one '?' for the two bytes), and each byte
 * that is not part of valid UTF-8 (JSON and terminals need it valid), and
 * the bidirectional controls (text_bidi_len), one '?' for each. Other
 * UTF-8 passes untouched. Accepts NULL. */
void text_strip_controls(char *s);

/* The length in bytes of the bidirectional control s starts with (its
 * UTF-8), 0 when it starts none: U+202A-U+202E (embeddings, overrides:
 * U+202E shows "fdp.exe" as "exe.pdf"), U+2066-U+2069 (isolates),
 * U+200E/U+200F (marks) and U+061C. Accepts NULL. */
int text_bidi_len(const char *s);

/* "s" after a count that is not 1, "" after 1: "1 chunk", "2 chunks". */
static inline const char *text_plural(long long n)
{
    return n == 1 ? "" : "s";
}

#endif
