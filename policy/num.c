/*
 * policy/num.c - exact decimal numbers for min:, max:, numeric eq: and
 * budgets.  No floating point: a number is kept as its significant digits
 * and a decimal exponent, so "50.00", "50" and "5e1" are the same number and
 * "5000.0000000000000001" is larger than 5000, as a decimal parser upstream
 * would read them.
 */
#include <string.h>

#include "common/sluice.h"
#include "policy_int.h"

int
policy_dec_parse(const char *s, size_t n, int exp, struct policy_dec *out)
{
	size_t i = 0, ndig = 0;
	long e = 0;
	int seen_nonzero = 0, frac = 0;

	memset(out, 0, sizeof(*out));
	if (n > 0 && s[0] == '-') {
		out->neg = 1;
		i++;
	}
	/* digits [. digits] */
	if (i == n || s[i] < '0' || s[i] > '9')
		return -1;
	for (; i < n; i++) {
		char c = s[i];

		if (c == '.') {
			if (frac || i + 1 >= n || s[i + 1] < '0' || s[i + 1] > '9')
				return -1;
			frac = 1;
			continue;
		}
		if (c < '0' || c > '9')
			break;
		if (c == '0' && !seen_nonzero) {
			/* a leading zero: shifts the exponent only after the point */
			if (frac)
				e--;
			continue;
		}
		if (!seen_nonzero) {
			seen_nonzero = 1;
			/* the exponent counts the integer digits from the first nonzero one */
			if (!frac)
				e = 0;
		}
		if (ndig >= POLICY_DEC_DIGITS) {
			/* only trailing zeros may follow the digits we keep */
			if (c != '0')
				return -1;
		} else {
			out->d[ndig++] = c;
		}
		if (!frac)
			e++;
	}
	if (i < n) {
		long x = 0;
		int eneg = 0;

		if (!exp || (s[i] != 'e' && s[i] != 'E') || ++i == n)
			return -1;
		if (s[i] == '+' || s[i] == '-')
			eneg = s[i++] == '-';
		if (i == n)
			return -1;
		for (; i < n; i++) {
			if (s[i] < '0' || s[i] > '9' || x > POLICY_DEC_EXP_MAX)
				return -1;
			x = x * 10 + (s[i] - '0');
		}
		e += eneg ? -x : x;
	}
	while (ndig > 0 && out->d[ndig - 1] == '0')
		ndig--;
	out->nd = (unsigned)ndig;
	if (ndig == 0) {
		out->neg = 0;
		out->exp = 0;
		return 0;
	}
	if (e > POLICY_DEC_EXP_MAX || e < -POLICY_DEC_EXP_MAX)
		return -1;
	out->exp = (int)e;
	return 0;
}

/* Compares magnitudes. */
static int
mag_cmp(const struct policy_dec *a, const struct policy_dec *b)
{
	unsigned i;

	if (a->nd == 0 || b->nd == 0)
		return (a->nd != 0) - (b->nd != 0);
	if (a->exp != b->exp)
		return a->exp > b->exp ? 1 : -1;
	for (i = 0; i < a->nd || i < b->nd; i++) {
		char x = i < a->nd ? a->d[i] : '0', y = i < b->nd ? b->d[i] : '0';

		if (x != y)
			return x > y ? 1 : -1;
	}
	return 0;
}

int
policy_dec_cmp(const struct policy_dec *a, const struct policy_dec *b)
{
	int m;

	if (a->neg != b->neg)
		return a->neg ? -1 : 1;
	m = mag_cmp(a, b);
	return a->neg ? -m : m;
}

int
policy_dec_amount(const struct policy_dec *d, int64_t *out)
{
	int64_t v = 0;
	long shift;
	unsigned i;

	if (d->nd == 0) {
		*out = 0;
		return 0;
	}
	if (d->neg)
		return -1;
	/* value = 0.d x 10^exp; in millionths: digits x 10^(exp + 6 - nd) */
	shift = (long)d->exp + 6 - (long)d->nd;
	if (shift < 0 || d->exp > 18)
		return -1;
	for (i = 0; i < d->nd; i++) {
		if (v > (POLICY_AMOUNT_MAX - 9) / 10)
			return -1;
		v = v * 10 + (d->d[i] - '0');
	}
	for (; shift > 0; shift--) {
		if (v > POLICY_AMOUNT_MAX / 10)
			return -1;
		v *= 10;
	}
	*out = v;
	return 0;
}
