/*
 * secrets/scrub_int.h - the scrub set's insides, shared by scrub.c (the
 * index and the scan) and scrub_forms.c (the echo forms of a value, which
 * push pairs and reindex once).  Nothing outside secrets/ includes this.
 */
#ifndef SLUICE_SECRETS_SCRUB_INT_H
#define SLUICE_SECRETS_SCRUB_INT_H

#include <stddef.h>
#include <stdint.h>

struct pair {
	uint8_t *from;
	uint8_t *to;
	size_t from_len;
	size_t to_len;
	unsigned tag;
};

/* The needles (of two bytes or more) sharing one first-two-byte key. */
struct bucket {
	uint16_t key;
	uint32_t start;  /* into order[] */
	uint32_t count;
};

#define WINDOW_MAX 32  /* the longest window; shifts fit a byte */
#define WINDOW_MIN 4   /* shorter needles: no window, a bitmap test at every position */
#define SHIFT_BITS 12  /* the shift table's index: a hash of two bytes */

/* Two bytes to a shift-table slot (the first byte's high nibble is folded in). */
#define SHIFT_SLOT(b0, b1) ((((unsigned)(b0) << 4) ^ (unsigned)(b1)) & ((1u << SHIFT_BITS) - 1))

struct scrub_set {
	struct pair *pairs;
	size_t n;
	size_t cap;
	size_t max_len;
	/* The index, rebuilt after every add. */
	uint64_t pair_map[65536 / 64];  /* first two bytes of a needle; every (c, *) for a one-byte needle c */
	uint64_t first_map[4];          /* first byte of a needle of two bytes or more */
	int32_t single[256];            /* the one-byte needle c, or -1 */
	uint32_t *order;                /* pair indices: by key, then longest first, then first added */
	struct bucket *buckets;         /* sorted by key */
	size_t nbuckets;
	size_t win;                     /* the window, or 0 */
	uint8_t shift[1u << SHIFT_BITS]; /* by SHIFT_SLOT of a window's last two bytes: how far it may slide */
};

/* Wipes and frees <p>'s bytes (the pair itself is the caller's). */
void scrub_pair_wipe(struct pair *p);
/* Rebuilds <s>'s index after pairs were pushed or dropped. */
void scrub_reindex(struct scrub_set *s);
/* Appends a pair (copied) without reindexing; the caller checked it with scrub_pair_ok(). */
void scrub_pair_push(struct scrub_set *s, const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len,
                     unsigned tag);
/* 1 when a pair with these arguments may be added. */
int scrub_pair_ok(const uint8_t *from, size_t from_len, const uint8_t *to, size_t to_len, unsigned tag);

/*
 * Adds placeholder <ph>/<len> mapped to itself with <tag>, with the forms a
 * search looks for too: standard base64 at each of the three alignments
 * (the characters that depend on its bytes only) and the same characters in
 * the URL alphabet.  For detect_stream.c.  All or nothing; 0 or SLUICE_EINVAL.
 */
int scrub_set_add_search(struct scrub_set *s, const char *ph, size_t len, unsigned tag);

#endif
