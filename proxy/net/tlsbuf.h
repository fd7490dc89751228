/*
 * proxy/net/tlsbuf.h - a per-thread cache of OpenSSL's record buffers.
 *
 * With SSL_MODE_RELEASE_BUFFERS (what keeps an idle connection small),
 * OpenSSL takes a ~17 KiB record buffer for every SSL_read and SSL_write and
 * gives it back when it is empty: several times per request.  Allocations
 * that large come from mmap (PROXY_MMAP_THRESHOLD), and on a multi-threaded
 * process each munmap is a TLB shoot-down on the other CPUs: measured, it
 * was most of the gateway's CPU under HTTP/2 load.  The cache keeps a few
 * freed buffers per thread and hands them out again, so a busy worker makes
 * no system call for them; it holds at most TLSBUF_CACHE_MAX buffers per
 * thread, whatever the number of connections, so an idle connection still
 * costs no buffer at all.
 */
#ifndef SLUICE_PROXY_TLSBUF_H
#define SLUICE_PROXY_TLSBUF_H

#define TLSBUF_CACHE_MAX 4             /* buffers kept per thread (~20 KiB each): reads and writes take them one at a time */
#define TLSBUF_MIN (16 * 1024)         /* the sizes cached: OpenSSL's record buffers */
#define TLSBUF_MAX (24 * 1024)

/*
 * Routes OpenSSL's allocations through the cache.  Must run before OpenSSL
 * allocates anything (first thing in main); returns 0, or -1 when it is too
 * late (OpenSSL then keeps its own allocator and nothing is cached).
 */
int tlsbuf_init(void);

/* Gives the calling thread's cached buffers back; each thread calls it as its last act. */
void tlsbuf_thread_flush(void);

/* How many buffers the calling thread holds (tests). */
unsigned tlsbuf_cached(void);

#endif
