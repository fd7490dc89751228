/*
 * common/fold.c - simple case folding of keys (fold.h).
 */
#include "common/fold.h"

struct fold_pair {
	uint32_t from, to;
};

#include "fold_table_int.h"

#define RUNE_ERROR 0xFFFDu

uint32_t
sluice_fold_rune(uint32_t r)
{
	size_t lo = 0, hi = FOLD_TABLE_N;

	if (r < 0x80)
		return r >= 'a' && r <= 'z' ? r - ('a' - 'A') : r;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fold_table[mid].from == r)
			return fold_table[mid].to;
		if (fold_table[mid].from < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return r;
}

/* Decodes one rune at <s>/<n> (n >= 1) as Go's utf8.DecodeRune does: the rune, its width in *<w>. */
static uint32_t
decode(const unsigned char *s, size_t n, size_t *w)
{
	uint32_t r;
	size_t need, i;

	*w = 1;
	if (s[0] < 0x80)
		return s[0];
	if (s[0] >= 0xC2 && s[0] <= 0xDF) {
		need = 1;
		r = s[0] & 0x1Fu;
	} else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
		need = 2;
		r = s[0] & 0x0Fu;
	} else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
		need = 3;
		r = s[0] & 0x07u;
	} else {
		return RUNE_ERROR;
	}
	if (n < need + 1)
		return RUNE_ERROR;
	for (i = 1; i <= need; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return RUNE_ERROR;
		r = r << 6 | (s[i] & 0x3Fu);
	}
	/* overlong forms, surrogates and code points past U+10FFFF are errors, one byte wide */
	if ((need == 2 && r < 0x800) || (need == 3 && (r < 0x10000 || r > 0x10FFFF)) || (r >= 0xD800 && r <= 0xDFFF))
		return RUNE_ERROR;
	*w = need + 1;
	return r;
}

int
sluice_fold_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	size_t i = 0, j = 0, wa, wb;

	while (i < alen && j < blen) {
		if (x[i] < 0x80 && y[j] < 0x80) {
			if (sluice_fold_rune(x[i]) != sluice_fold_rune(y[j]))
				return 0;
			i++;
			j++;
			continue;
		}
		if (sluice_fold_rune(decode(x + i, alen - i, &wa)) != sluice_fold_rune(decode(y + j, blen - j, &wb)))
			return 0;
		i += wa;
		j += wb;
	}
	return i == alen && j == blen;
}

size_t
sluice_fold_key(const char *in, size_t len, char *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t i = 0, o = 0, w;
	uint32_t r;

	while (i < len) {
		r = sluice_fold_rune(decode(s + i, len - i, &w));
		i += w;
		if (r < 0x80) {
			out[o++] = (char)r;
		} else if (r < 0x800) {
			out[o++] = (char)(0xC0 | r >> 6);
			out[o++] = (char)(0x80 | (r & 0x3F));
		} else if (r < 0x10000) {
			out[o++] = (char)(0xE0 | r >> 12);
			out[o++] = (char)(0x80 | ((r >> 6) & 0x3F));
			out[o++] = (char)(0x80 | (r & 0x3F));
		} else {
			out[o++] = (char)(0xF0 | r >> 18);
			out[o++] = (char)(0x80 | ((r >> 12) & 0x3F));
			out[o++] = (char)(0x80 | ((r >> 6) & 0x3F));
			out[o++] = (char)(0x80 | (r & 0x3F));
		}
	}
	return o;
}
