/*
 * proxy/sbxreg.c - sandboxes registered at run time (see sbxreg.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "common/sluice.h"
#include "proxy/sbxreg.h"

struct sbxreg {
	pthread_mutex_t mu;
	struct sbx_entry *e[SBXREG_MAX];  /* slots, allocated on first use, kept until sbxreg_free */
	size_t n;
	uint64_t next_id;                 /* the last registration id given */
};

struct sbxreg *
sbxreg_new(void)
{
	struct sbxreg *r = xcalloc(1, sizeof(*r));

	pthread_mutex_init(&r->mu, NULL);
	return r;
}

static void
clear_secrets(struct sbx_entry *e)
{
	while (e->nsecrets > 0)
		free(e->secrets[--e->nsecrets]);
}

void
sbxreg_free(struct sbxreg *r)
{
	size_t i;

	if (r == NULL)
		return;
	for (i = 0; i < r->n; i++) {
		clear_secrets(r->e[i]);
		free(r->e[i]);
	}
	pthread_mutex_destroy(&r->mu);
	free(r);
}

static int
name_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > SBXREG_NAME_MAX || s[0] == '.' || s[0] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
		      s[i] == '_' || s[i] == '.' || s[i] == '-'))
			return 0;
	return 1;
}

/* 1 if the two blocks share an address. */
static int
overlap(const struct netaddr_cidr *a, const struct netaddr_cidr *b)
{
	unsigned p = a->prefix < b->prefix ? a->prefix : b->prefix, i;

	if (a->family != b->family)
		return 0;
	for (i = 0; i < p / 8; i++)
		if (a->addr[i] != b->addr[i])
			return 0;
	if (p % 8 != 0) {
		uint8_t m = (uint8_t)(0xff << (8 - p % 8));

		if ((a->addr[i] & m) != (b->addr[i] & m))
			return 0;
	}
	return 1;
}

/* Fills <e> from the parsed body; 0 or SLUICE_EINVAL with the reason in <err>. */
static int
parse(json_t *j, struct sbx_entry *e, char *err, size_t errcap)
{
	json_t *name = json_object_get(j, "name"), *backend = json_object_get(j, "backend");
	json_t *addrs = json_object_get(j, "addresses"), *secrets = json_object_get(j, "secrets"), *v;
	size_t i;

	if (!json_is_object(j) || !json_is_string(name) || !name_ok(json_string_value(name))) {
		snprintf(err, errcap, "\"name\" must be 1-%d of [A-Za-z0-9_.-]", SBXREG_NAME_MAX);
		return SLUICE_EINVAL;
	}
	memcpy(e->name, json_string_value(name), strlen(json_string_value(name)) + 1);
	if (backend != NULL && (!json_is_string(backend) || !name_ok(json_string_value(backend)) ||
	                        strlen(json_string_value(backend)) >= sizeof(e->backend))) {
		snprintf(err, errcap, "\"backend\" must be a short name");
		return SLUICE_EINVAL;
	}
	snprintf(e->backend, sizeof(e->backend), "%s", backend != NULL ? json_string_value(backend) : "external");
	if (!json_is_array(addrs) || json_array_size(addrs) == 0 || json_array_size(addrs) > SBXREG_ADDRS_MAX) {
		snprintf(err, errcap, "\"addresses\" must list 1-%d CIDR blocks", SBXREG_ADDRS_MAX);
		return SLUICE_EINVAL;
	}
	json_array_foreach(addrs, i, v) {
		if (!json_is_string(v) || netaddr_cidr_parse(json_string_value(v), &e->addrs[i]) != 0) {
			snprintf(err, errcap, "\"addresses\"[%zu] is not a CIDR block", i);
			return SLUICE_EINVAL;
		}
		/* a sandbox is a few addresses, never a network that could hold others */
		if ((e->addrs[i].family == AF_INET && e->addrs[i].prefix < 24) ||
		    (e->addrs[i].family == AF_INET6 && e->addrs[i].prefix < 112)) {
			snprintf(err, errcap, "\"addresses\"[%zu] is wider than a /24 (IPv4) or /112 (IPv6)", i);
			return SLUICE_EINVAL;
		}
	}
	e->naddrs = json_array_size(addrs);
	if (secrets != NULL && (!json_is_array(secrets) || json_array_size(secrets) > SBXREG_SECRETS_MAX)) {
		snprintf(err, errcap, "\"secrets\" must list at most %d names", SBXREG_SECRETS_MAX);
		return SLUICE_EINVAL;
	}
	json_array_foreach(secrets, i, v) {
		if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 128) {
			snprintf(err, errcap, "\"secrets\"[%zu] is not a secret's name", i);
			return SLUICE_EINVAL;
		}
		e->secrets[e->nsecrets++] = xstrdup(json_string_value(v));
	}
	return 0;
}

int
sbxreg_add(struct sbxreg *r, const char *body, size_t len, char name[SBXREG_NAME_MAX + 1], char *err,
           size_t errcap)
{
	struct sbx_entry tmp, *slot = NULL;
	json_error_t jerr;
	json_t *j;
	size_t i, a, b;
	int rc;

	if (len > SBXREG_BODY_MAX) {
		snprintf(err, errcap, "registration over %d bytes", SBXREG_BODY_MAX);
		return SLUICE_EINVAL;
	}
	j = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (j == NULL) {
		snprintf(err, errcap, "not JSON: %s", jerr.text);
		return SLUICE_EINVAL;
	}
	memset(&tmp, 0, sizeof(tmp));
	rc = parse(j, &tmp, err, errcap);
	json_decref(j);
	if (rc != 0) {
		clear_secrets(&tmp);
		return rc;
	}
	pthread_mutex_lock(&r->mu);
	for (i = 0; i < r->n && rc == 0; i++) {
		struct sbx_entry *e = r->e[i];

		if (!e->active) {
			if (slot == NULL && atomic_load(&e->refs) == 0)
				slot = e;  /* a gone slot no connection refers to any more */
			continue;
		}
		if (strcmp(e->name, tmp.name) == 0) {
			snprintf(err, errcap, "sandbox \"%s\" is already registered", tmp.name);
			rc = SLUICE_EEXIST;
		}
		for (a = 0; a < e->naddrs && rc == 0; a++)
			for (b = 0; b < tmp.naddrs && rc == 0; b++)
				if (overlap(&e->addrs[a], &tmp.addrs[b])) {
					snprintf(err, errcap, "an address overlaps sandbox \"%s\"", e->name);
					rc = SLUICE_EEXIST;
				}
	}
	if (rc == 0 && slot == NULL) {
		if (r->n == SBXREG_MAX) {
			snprintf(err, errcap, "%d sandboxes are registered", SBXREG_MAX);
			rc = SLUICE_ETOOBIG;
		} else {
			slot = r->e[r->n++] = xcalloc(1, sizeof(*slot));
		}
	}
	if (rc == 0) {
		clear_secrets(slot);
		memcpy(slot->name, tmp.name, sizeof(slot->name));
		memcpy(slot->backend, tmp.backend, sizeof(slot->backend));
		memcpy(slot->addrs, tmp.addrs, sizeof(slot->addrs));
		slot->naddrs = tmp.naddrs;
		memcpy(slot->secrets, tmp.secrets, sizeof(slot->secrets));
		slot->nsecrets = tmp.nsecrets;
		tmp.nsecrets = 0;
		slot->started = time(NULL);
		atomic_store(&slot->requests, 0);
		atomic_store(&slot->denied, 0);
		slot->id = ++r->next_id;
		atomic_store(&slot->active, 1);
	}
	pthread_mutex_unlock(&r->mu);
	clear_secrets(&tmp);
	if (rc == 0)
		memcpy(name, tmp.name, SBXREG_NAME_MAX + 1);
	return rc;
}

int
sbxreg_remove(struct sbxreg *r, const char *name)
{
	size_t i;
	int rc = SLUICE_ENOENT;

	pthread_mutex_lock(&r->mu);
	for (i = 0; i < r->n; i++)
		if (r->e[i]->active && strcmp(r->e[i]->name, name) == 0) {
			atomic_store(&r->e[i]->active, 0);
			rc = 0;
			break;
		}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

struct sbx_entry *
sbxreg_by_addr(struct sbxreg *r, const struct sockaddr *sa)
{
	struct sbx_entry *found = NULL;
	size_t i;

	pthread_mutex_lock(&r->mu);
	for (i = 0; i < r->n && found == NULL; i++)
		if (r->e[i]->active && netaddr_cidr_match(r->e[i]->addrs, r->e[i]->naddrs, sa))
			found = r->e[i];
	if (found != NULL)
		atomic_fetch_add(&found->refs, 1);
	pthread_mutex_unlock(&r->mu);
	return found;
}

int
sbxreg_entry_current(const struct sbx_entry *e, uint64_t id)
{
	/* the connection holds a reference: the slot (and its id) cannot be reused under it */
	return atomic_load(&e->active) && e->id == id;
}

void
sbxreg_release(struct sbx_entry *e)
{
	if (e != NULL)
		atomic_fetch_sub(&e->refs, 1);
}

int
sbxreg_secret_allowed(const struct sbx_entry *e, const char *secret)
{
	size_t i;

	if (e->nsecrets == 0)
		return 1;
	for (i = 0; i < e->nsecrets; i++)
		if (strcmp(e->secrets[i], secret) == 0)
			return 1;
	return 0;
}

void
sbxreg_list_json(struct sbxreg *r, struct evbuffer *out)
{
	json_t *list = json_array(), *o, *a;
	char buf[64], *s;
	size_t i, k;

	pthread_mutex_lock(&r->mu);
	for (i = 0; i < r->n; i++) {
		struct sbx_entry *e = r->e[i];

		if (!e->active)
			continue;
		o = json_object();
		json_object_set_new(o, "name", json_string(e->name));
		json_object_set_new(o, "backend", json_string(e->backend));
		a = json_array();
		for (k = 0; k < e->naddrs; k++)
			json_array_append_new(a, json_string(netaddr_cidr_format(&e->addrs[k], buf, sizeof(buf))));
		json_object_set_new(o, "addresses", a);
		a = json_array();
		for (k = 0; k < e->nsecrets; k++)
			json_array_append_new(a, json_string(e->secrets[k]));
		json_object_set_new(o, "secrets", a);
		json_object_set_new(o, "started", json_integer((json_int_t)e->started));
		json_object_set_new(o, "requests", json_integer((json_int_t)atomic_load(&e->requests)));
		json_object_set_new(o, "denied", json_integer((json_int_t)atomic_load(&e->denied)));
		json_array_append_new(list, o);
	}
	pthread_mutex_unlock(&r->mu);
	s = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	if (s != NULL) {
		evbuffer_add_printf(out, "%s\n", s);
		free(s);
	}
}
