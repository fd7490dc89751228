/*
 * secrets/secrets.h - secret values and their placeholders: where a value
 * comes from, the memory that holds it, and the stand-in the sandbox sees.
 *
 * Contract for every value: it lives only in a struct secret_buf (its own
 * pages, kept out of core dumps, wiped before they are unmapped), it never
 * appears in an error string, and nothing here logs.  Injection, scrubbing
 * and exfiltration checks (issue 3) build on this module.
 */
#ifndef SLUICE_SECRETS_SECRETS_H
#define SLUICE_SECRETS_SECRETS_H

#include <stddef.h>
#include <stdint.h>

#define SECRET_MAX_BYTES 8192            /* the longest value a source may yield */
#define SECRET_EXEC_TIMEOUT_MS 10000     /* how long an exec: source may run */
#define SECRET_KEY_BYTES 32              /* the placeholder key */
#define SECRET_PLACEHOLDER_MAX 128       /* the longest placeholder, with its NUL */

/* A value in memory of its own: not in core dumps, wiped when freed. */
struct secret_buf {
	uint8_t *p;
	size_t len;
	size_t cap;  /* bytes mapped */
};

/*
 * Allocates a buffer for up to <cap> bytes (at most SECRET_MAX_BYTES + 3: a
 * value, its CRLF and one byte more; whole pages, MADV_DONTDUMP, and
 * mlock where the limit allows).  Returns NULL when the mapping fails.
 */
struct secret_buf *secret_buf_new(size_t cap);
/* Wipes and unmaps <b> (NULL is fine). */
void secret_buf_free(struct secret_buf *b);

enum secret_source_kind {
	SECRET_SRC_ENV = 1,   /* env:VAR */
	SECRET_SRC_FILE = 2,  /* file:/absolute/path, or file:$CREDENTIALS_DIRECTORY/NAME (systemd LoadCredential=) */
	SECRET_SRC_EXEC = 3,  /* exec:program arg... (split on spaces, no shell; PATH is searched) */
};

struct secret_source {
	enum secret_source_kind kind;
	char *arg;  /* the variable name, path or command line; heap */
};

/*
 * Parses a source specification into <out> (its arg is heap; free with
 * secret_source_dispose()).  0, or SLUICE_EINVAL with *err saying why.
 */
int secret_source_parse(const char *spec, struct secret_source *out, const char **err);
void secret_source_dispose(struct secret_source *src);

/*
 * Reads the current value of <src> into a new buffer (*out, taken by the
 * caller).  One trailing newline (LF or CRLF) is dropped; an empty value, a
 * value over SECRET_MAX_BYTES, a NUL, CR or LF inside it, a missing variable
 * or file, and an exec: program that fails, times out or exits non-zero are
 * errors.  Returns 0 or a negative SLUICE_E* code with *err (static text,
 * never the value).  An exec: program runs without a shell, with stdin and
 * stderr on /dev/null, for at most <timeout_ms> (SECRET_EXEC_TIMEOUT_MS if 0).
 */
int secret_fetch(const struct secret_source *src, unsigned timeout_ms, struct secret_buf **out, const char **err);

#define SECRET_MIN_BYTES 8               /* the shortest value the gateway injects (SCRUB_FORM_MIN) */
/*
 * Whether a fetched value can be used as a secret's value: one shorter than
 * SECRET_MIN_BYTES is refused, because its echo in a response could not be
 * scrubbed reliably (too likely to occur by chance: the scrubber skips such
 * forms).  secret_fetch() already refused NUL, CR and LF.  0, or
 * SLUICE_EINVAL with *err (static text, never the value).
 */
int secret_value_check(const struct secret_buf *b, const char **err);

/*
 * The placeholder of secret <name>: derived with HMAC-SHA256 from <key>, so
 * it is the same across restarts and value rotations.  <format> shapes it
 * like the provider's tokens: "github", "openai", "anthropic", "slack",
 * "stripe", or NULL for Sluice's own shape ("sluice_ph_..."); an unknown
 * format is SLUICE_EINVAL.  Writes a NUL-terminated string into <out>
 * (<cap> >= SECRET_PLACEHOLDER_MAX).
 */
int secret_placeholder(const uint8_t key[SECRET_KEY_BYTES], const char *name, const char *format, char *out,
                       size_t cap, const char **err);

/*
 * Reads the placeholder key from <dir>/placeholder.key (64 hex digits, mode
 * 0600), creating it with fresh random bytes when it is missing and
 * <create_missing>.  0, or a negative SLUICE_E* code with *err.
 */
int secret_key_load(const char *dir, int create_missing, uint8_t key[SECRET_KEY_BYTES], const char **err);

/* 1 if <format> is a placeholder format secret_placeholder() knows (NULL is Sluice's own). */
int secret_format_known(const char *format);

#endif
