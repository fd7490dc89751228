/*
 * proxy/codec/tls_hello.h - a small parser for the TLS ClientHello: SNI and ALPN.
 *
 * Used in transparent mode before any TLS library sees the bytes: the gateway
 * peeks the ClientHello (it may arrive split across TCP segments, and across
 * several TLS records), decides by its SNI, then replays the same bytes into
 * the intercepting TLS session or upstream untouched (passthrough).
 */
#ifndef SLUICE_PROXY_TLS_HELLO_H
#define SLUICE_PROXY_TLS_HELLO_H

#include <stddef.h>
#include <stdint.h>

#define TLS_HELLO_MAX_BYTES (20 * 1024) /* bound on the peeked records that carry the ClientHello */
#define TLS_HELLO_MAX_ALPN 8

struct tls_hello {
	int has_sni;
	char sni[256];          /* host_name from server_name, NUL-terminated, as sent */
	size_t sni_len;
	size_t nalpn;
	struct {
		char name[256];     /* protocol id, NUL-terminated */
		size_t len;
	} alpn[TLS_HELLO_MAX_ALPN];  /* first TLS_HELLO_MAX_ALPN offered, in order */
	uint16_t legacy_version;
};

/*
 * Parses the TLS records at the start of <buf>/<len> that carry one ClientHello
 * handshake message.  Returns the number of bytes of those records (> 0) when
 * the ClientHello is complete, -2 when more bytes are needed, -1 when the bytes
 * are not a TLS ClientHello or are malformed (bad lengths, more than one
 * server_name, an empty or over-long host_name, a non-handshake record, a
 * handshake over TLS_HELLO_MAX_BYTES).
 * The SNI is returned as sent; the caller canonicalises and validates it.
 */
int tls_hello_parse(const uint8_t *buf, size_t len, struct tls_hello *out);

/* 1 if <buf>/<len> (at least 1 byte) begins like a TLS handshake record. */
int tls_hello_looks_tls(const uint8_t *buf, size_t len);

#endif
