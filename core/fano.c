/* fano.c - the seven Fano lines in the fleet's fixed order and everything
 * derived from them: points per line, lines through a point, the line of two
 * points, the signed octonion product, parsing and names (spec: fano.md).
 *
 * Who may call: anyone, any thread. Only constant tables; no state.
 *
 * The single source of truth is fano_line[] (the oriented triples). The
 * product table is not typed in: fg_fano_mul derives each product from the
 * triple holding the two factors (e_a e_b = e_c for the cyclic order
 * (a,b,c), negated for the reverse order), and tests/core/test_fano.c checks
 * the result against the table of fano.md typed into the test. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "fg/fano.h"

/* Fixed by the fleet's formal model (octonion table mulImag); never reorder. */
static const uint8_t fano_line[FG_LINES][3] = {
	{1, 2, 3}, {1, 4, 5}, {1, 7, 6}, {2, 4, 6}, {2, 5, 7}, {3, 4, 7}, {3, 6, 5},
};

static const char *const fano_name[FG_LINES] = {
	"(1,2,3)", "(1,4,5)", "(1,7,6)", "(2,4,6)", "(2,5,7)", "(3,4,7)", "(3,6,5)",
};

const uint8_t *fg_fano_line(unsigned line)
{
	return line < FG_LINES ? fano_line[line] : NULL;
}

bool fg_fano_on_line(unsigned line, unsigned point)
{
	if (line >= FG_LINES)
		return false;
	for (unsigned k = 0; k < 3; k++)
		if (fano_line[line][k] == point)
			return true;
	return false;
}

uint8_t fg_fano_lines_through(unsigned point)
{
	uint8_t mask = 0;

	for (unsigned l = 0; l < FG_LINES; l++)
		if (fg_fano_on_line(l, point))
			mask |= (uint8_t)(1u << l);
	return mask;
}

unsigned fg_fano_line_of(unsigned a, unsigned b)
{
	if (a == b || a < 1 || a > FG_POINTS || b < 1 || b > FG_POINTS)
		return FG_LINE_NONE;
	/* Two distinct points share exactly one line: the lowest common bit. */
	uint8_t common = fg_fano_lines_through(a) & fg_fano_lines_through(b);

	return common ? (unsigned)__builtin_ctz(common) : FG_LINE_NONE;
}

/* Position (0..2) of point p in line l's triple; only called for points on l. */
static unsigned fano_pos(unsigned l, unsigned p)
{
	for (unsigned k = 0; k < 3; k++)
		if (fano_line[l][k] == p)
			return k;
	return 3;
}

void fg_fano_mul(unsigned a, unsigned b, unsigned *unit, unsigned *neg)
{
	if (a == b) { /* e_a e_a = -e0 */
		*unit = 0;
		*neg = 1;
		return;
	}
	unsigned l = fg_fano_line_of(a, b);

	if (l == FG_LINE_NONE) { /* outside 1..7: no product; report e0, + */
		*unit = 0;
		*neg = 0;
		return;
	}
	unsigned pa = fano_pos(l, a), pb = fano_pos(l, b);
	/* The third point is at the remaining position 3 - pa - pb. b following a
	 * in the cyclic order (a,b,c) gives +c; the reverse order negates. */
	*unit = fano_line[l][3 - pa - pb];
	*neg = (pb == (pa + 1) % 3) ? 0 : 1;
}

/* Parse an unsigned decimal 1-digit point or index at *s; advances *s. */
static int fano_digit(const char **s)
{
	while (**s == ' ' || **s == '\t')
		(*s)++;
	if (**s < '0' || **s > '9')
		return -1;
	int v = **s - '0';

	(*s)++;
	while (**s == ' ' || **s == '\t')
		(*s)++;
	return v;
}

int fg_fano_line_parse(const char *s)
{
	if (!s)
		return -1;
	const char *p = s;
	bool paren = false;

	while (*p == ' ' || *p == '\t')
		p++;
	if (*p == '(') {
		paren = true;
		p++;
	}
	int v[3];
	unsigned n = 0;

	for (;;) {
		int d = fano_digit(&p);

		if (d < 0 || n == 3)
			return -1;
		v[n++] = d;
		if (*p != ',')
			break;
		p++;
	}
	if (paren) {
		if (*p != ')')
			return -1;
		p++;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0')
		return -1;
	if (n == 1)
		return (!paren && v[0] < (int)FG_LINES) ? v[0] : -1;
	if (n != 3)
		return -1;
	/* A triple names a line only as a rotation of its oriented triple;
	 * the reversed orientation is a different (negated) product and is
	 * refused. */
	for (unsigned l = 0; l < FG_LINES; l++)
		for (unsigned r = 0; r < 3; r++)
			if (fano_line[l][r] == v[0] && fano_line[l][(r + 1) % 3] == v[1] &&
			    fano_line[l][(r + 2) % 3] == v[2])
				return (int)l;
	return -1;
}

const char *fg_fano_line_name(unsigned line)
{
	return line < FG_LINES ? fano_name[line] : "(none)";
}
