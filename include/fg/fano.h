/* fano.h - the seven Fano lines in the fleet's fixed order, points per line,
 * lines through a point, the signed octonion product table and sign
 * composition (spec: fano.md). Pure tables; any thread. */
#ifndef FG_FANO_H
#define FG_FANO_H

#include <stdbool.h>
#include <stdint.h>

#define FG_LINES 7u
#define FG_POINTS 7u
#define FG_LINE_NONE 0xFFu

/* Oriented triple of line i (points numbered 1..7): fg_fano_line(1) = {1,4,5};
 * NULL when line >= 7. */
const uint8_t *fg_fano_line(unsigned line);
/* True when point p (1..7) lies on line. */
bool fg_fano_on_line(unsigned line, unsigned point);
/* The three lines through point p (1..7), ascending; returns a 7-bit mask. */
uint8_t fg_fano_lines_through(unsigned point);
/* The one line holding points a != b (1..7); FG_LINE_NONE when a == b or out of range. */
unsigned fg_fano_line_of(unsigned a, unsigned b);

/* Signed product e_a * e_b for a, b in 1..7: writes the unit index (0 for e0)
 * and the sign (0 +, 1 -). e_a * e_a = -e0. Derived from the oriented
 * triples, not a typed-in table. Out-of-range points give e0, +. */
void fg_fano_mul(unsigned a, unsigned b, unsigned *unit, unsigned *neg);
/* Signs compose multiplicatively: with 1 meaning negative, composition is XOR. */
static inline unsigned fg_sign_compose(unsigned s1, unsigned s2) { return (s1 ^ s2) & 1u; }

/* Parse a line given as an index "0".."6" or a triple "1,4,5" / "(1,4,5)"
 * (spaces allowed around digits). A triple is accepted in any rotation of
 * the line's oriented triple ("4,5,1", "5,1,4"); the reversed orientation
 * ("1,5,4") and non-lines are refused. Returns the index or -1. */
int fg_fano_line_parse(const char *s);
/* Human name "(1,4,5)"; "(none)" when line >= 7. Static storage. */
const char *fg_fano_line_name(unsigned line);

#endif
