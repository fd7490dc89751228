/*
 * secrets/placeholder.c - the stand-in a sandbox holds for a secret.
 *
 * Derived, not random: HMAC-SHA256 under the gateway's placeholder key over
 * the secret's name, so a placeholder survives restarts and rotations of the
 * value and sandboxes that hold it keep working.  Knowing a placeholder
 * reveals nothing about the value (there is no relation), and without the
 * key nobody can predict the placeholder of another name.  A format hint
 * gives it a provider's shape, so client libraries that check a token's
 * prefix or length accept it.
 */
#include <string.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include "common/sluice.h"
#include "secrets/secrets.h"

#define B62 "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
#define B64URL B62 "-_"
#define DIGITS "0123456789"

struct part {
	const char *lit;    /* copied as is, or NULL */
	const char *alpha;  /* else <n> characters drawn from this alphabet */
	unsigned n;
};

static const struct format {
	const char *name;
	struct part parts[6];
} formats[] = {
	{NULL, {{"sluice_ph_", NULL, 0}, {NULL, B62, 40}}},
	{"github", {{"ghp_", NULL, 0}, {NULL, B62, 36}}},
	{"openai", {{"sk-proj-", NULL, 0}, {NULL, B64URL, 64}}},
	{"anthropic", {{"sk-ant-api03-", NULL, 0}, {NULL, B64URL, 86}, {"AA", NULL, 0}}},
	{"slack", {{"xoxb-", NULL, 0}, {NULL, DIGITS, 13}, {"-", NULL, 0}, {NULL, DIGITS, 13}, {"-", NULL, 0},
	           {NULL, B62, 24}}},
	{"stripe", {{"sk_live_", NULL, 0}, {NULL, B62, 99}}},
};

/* A deterministic byte stream: HMAC(key, label || name || counter), block by block. */
struct stream {
	const uint8_t *key;
	const char *name;
	uint8_t block[32];
	unsigned used, counter;
};

static int
next_byte(struct stream *s, uint8_t *out)
{
	static const char label[] = "sluice-placeholder-v1";
	uint8_t msg[sizeof(label) + 256 + 4];
	size_t nlen = strlen(s->name), m = 0;
	unsigned int mdlen = sizeof(s->block);

	if (s->used == sizeof(s->block)) {
		if (nlen > 256)
			return -1;
		memcpy(msg, label, sizeof(label));  /* with its NUL: label and name cannot run together */
		m = sizeof(label);
		memcpy(msg + m, s->name, nlen);
		m += nlen;
		msg[m++] = (uint8_t)(s->counter >> 24);
		msg[m++] = (uint8_t)(s->counter >> 16);
		msg[m++] = (uint8_t)(s->counter >> 8);
		msg[m++] = (uint8_t)s->counter;
		s->counter++;
		if (HMAC(EVP_sha256(), s->key, SECRET_KEY_BYTES, msg, m, s->block, &mdlen) == NULL)
			return -1;
		s->used = 0;
	}
	*out = s->block[s->used++];
	return 0;
}

/* One character of <alpha>, unbiased (bytes past the last whole multiple are drawn again). */
static int
draw(struct stream *s, const char *alpha, char *out)
{
	unsigned n = (unsigned)strlen(alpha), lim = 256 - 256 % n;
	uint8_t b;

	do {
		if (next_byte(s, &b) != 0)
			return -1;
	} while (b >= lim);
	*out = alpha[b % n];
	return 0;
}

static const struct format *
find_format(const char *format)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if ((format == NULL && formats[i].name == NULL) ||
		    (format != NULL && formats[i].name != NULL && strcmp(format, formats[i].name) == 0))
			return &formats[i];
	return NULL;
}

int
secret_format_known(const char *format)
{
	return find_format(format) != NULL;
}

int
secret_placeholder(const uint8_t key[SECRET_KEY_BYTES], const char *name, const char *format, char *out,
                   size_t cap, const char **err)
{
	struct stream s = {key, name, {0}, 32, 0};
	const struct format *f = find_format(format);
	size_t i, k, len = 0, ll;

	if (f == NULL) {
		*err = "unknown placeholder format (github, openai, anthropic, slack, stripe)";
		return SLUICE_EINVAL;
	}
	if (name[0] == '\0' || strlen(name) > 256) {
		*err = "a secret's name is 1 to 256 bytes";
		return SLUICE_EINVAL;
	}
	for (i = 0; i < 6 && (f->parts[i].lit != NULL || f->parts[i].alpha != NULL); i++) {
		const struct part *p = &f->parts[i];
		ll = p->lit != NULL ? strlen(p->lit) : p->n;
		if (len + ll + 1 > cap) {
			*err = "placeholder buffer too small";
			return SLUICE_ETOOBIG;
		}
		if (p->lit != NULL) {
			memcpy(out + len, p->lit, ll);
		} else {
			for (k = 0; k < ll; k++)
				if (draw(&s, p->alpha, out + len + k) != 0) {
					*err = "cannot derive the placeholder";
					return SLUICE_EIO;
				}
		}
		len += ll;
	}
	out[len] = '\0';
	return 0;
}
