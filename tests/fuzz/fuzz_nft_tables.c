/*
 * fuzz_nft_tables.c - the parsers of nft's output (nft_stale_tables,
 * nft_counter_parse) and nft_render on arbitrary bytes.  Properties: every
 * stale name is sluice_<8 lower hex> and at most <max> are returned; a parsed
 * counter is only returned on success; a plan built from arbitrary bytes either
 * is refused or renders a script with the fixed number of lines and braces
 * (nothing injected) whose names are [a-z0-9_]+.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "common/sluice.h"
#include "sandbox-glue/nft.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RENDER_LINES 35 /* lines of every rendered script */

static size_t
count(const char *s, char c)
{
	size_t k = 0;

	for (; *s != '\0'; s++)
		k += *s == c;
	return k;
}

static void
check_names(char names[][NFT_TABLE_NAME_MAX], size_t n, size_t max)
{
	size_t i, k;

	if (n > max)
		abort();
	for (i = 0; i < n; i++) {
		if (strlen(names[i]) != 15 || memcmp(names[i], "sluice_", 7) != 0)
			abort();
		for (k = 7; k < 15; k++)
			if (!((names[i][k] >= '0' && names[i][k] <= '9') || (names[i][k] >= 'a' && names[i][k] <= 'f')))
				abort();
	}
}

static void
render(const uint8_t *data, size_t size)
{
	struct sandbox_net n;
	char buf[NFT_SCRIPT_MAX];
	int len;

	/* odd first byte: a valid plan with the rest of the input written over it at an offset */
	if (size >= 2 && (data[0] & 1)) {
		size_t off = data[1] % sizeof(n);

		if (sandbox_net_plan(&n, "0a1b2c3d", 1u + data[1] % SANDBOX_MAX_INDEX, 15001, 15353) != 0)
			abort();
		size -= 2;
		memcpy((char *)&n + off, data + 2, size < sizeof(n) - off ? size : sizeof(n) - off);
	} else {
		memset(&n, 0, sizeof(n));
		memcpy(&n, data, size < sizeof(n) ? size : sizeof(n));
	}
	len = nft_render(&n, buf, sizeof(buf));
	if (len < 0) {
		if (buf[0] != '\0')
			abort();
		return;
	}
	if ((size_t)len != strlen(buf) || count(buf, '\n') != RENDER_LINES || count(buf, '{') != 7 ||
	    count(buf, '}') != 7 || count(buf, '"') != 20 || count(buf, ';') != 6)
		abort();
	if (nft_render_delete(&n, buf, sizeof(buf)) < 0 || count(buf, '\n') != 2)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char names[3][NFT_TABLE_NAME_MAX];
	char *text;
	size_t n = 0;
	uint64_t p = 0, b = 0;
	int r;

	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';

	r = nft_stale_tables(text, names, 3, &n);
	if ((r != 0 && r != SLUICE_ETOOBIG) || (r == SLUICE_ETOOBIG && n != 3))
		abort();
	check_names(names, n, 3);
	r = nft_stale_tables(text, names, 0, &n);
	if (n != 0 || (r != 0 && r != SLUICE_ETOOBIG))
		abort();

	r = nft_counter_parse(text, &p, &b);
	if (r != 0 && (r != SLUICE_EPARSE || p != 0 || b != 0))
		abort();

	render(data, size);
	free(text);
	return 0;
}
