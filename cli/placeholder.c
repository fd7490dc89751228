/*
 * cli/placeholder.c - a secret's placeholder as sandboxes see it, and the --help test every
 * subcommand makes (cli.h).
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

int
cli_wants_help(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	return 0;
}
