/*
 * term_fit.h - lines that fit the terminal: `vrctl watch` redraws its lines
 * in place by moving the cursor up as many lines as it drew, so a line
 * wider than the terminal (it wraps onto two) broke every redraw after it,
 * scrolling a line a second (issue 45, item 8). Widths are display columns
 * (a CJK character takes two, a combining mark none), not bytes.
 */
#ifndef VR_TERM_FIT_H
#define VR_TERM_FIT_H

#include <stddef.h>

/* The columns of the terminal on fd (TIOCGWINSZ), else $COLUMNS, else 80;
 * at least 20. */
int term_cols(int fd);

/* The display width of valid UTF-8 `s` (as text_strip_controls leaves it). */
int term_width(const char *s);

/* Makes `s` (any bytes, n its buffer size) safe and at most `cols` columns
 * wide, in place: its control characters become '?' (text_strip_controls:
 * no byte from Redis drives the terminal), then a line too wide is cut at
 * a character's boundary and ends in "..." (within the same width). */
void term_fit(char *s, int cols);

#endif
