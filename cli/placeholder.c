/*
 * cli/placeholder.c - a secret's placeholder as sandboxes see it (cli.h).
 */
#include <stdio.h>
#include <string.h>
#include "common/sluice.h"
#include "cli/cli.h"

int
cli_placeholder(const struct policy_secret *s, const uint8_t *key, char *out, size_t cap, int *derived)
{
	const char *err = NULL;

	*derived = 0;
	if (cap > 0)
		out[0] = '\0';
	if (s->placeholder != NULL) {
		if (strlen(s->placeholder) >= cap)
			return SLUICE_ETOOBIG;
		snprintf(out, cap, "%s", s->placeholder);
		return 0;
	}
	if (key == NULL)
		return SLUICE_ENOENT;
	*derived = 1;
	return secret_placeholder(key, s->name, s->format, out, cap, &err);
}
