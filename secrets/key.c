/*
 * secrets/key.c - the placeholder key: 32 random bytes in <dir>/placeholder.key
 * (hex, mode 0600), made once and kept, so placeholders never change.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/rand.h>
#include "common/hex.h"
#include "common/sluice.h"
#include "secrets/secrets.h"

#define KEY_FILE "placeholder.key"
#define KEY_HEX (2 * SECRET_KEY_BYTES)

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static int
create(const char *path, uint8_t key[SECRET_KEY_BYTES], const char **err)
{
	char hex[KEY_HEX + 1];
	int fd;
	ssize_t n;

	if (RAND_bytes(key, SECRET_KEY_BYTES) != 1) {
		*err = "no randomness for the placeholder key";
		return SLUICE_EIO;
	}
	hex_encode(hex, key, SECRET_KEY_BYTES);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1) {
		sluice_wipe(hex, sizeof(hex));
		*err = errno == EEXIST ? "the placeholder key appeared meanwhile" : "cannot create the placeholder key";
		return errno == EEXIST ? SLUICE_EEXIST : SLUICE_EIO;
	}
	hex[KEY_HEX] = '\n';
	n = write(fd, hex, KEY_HEX + 1);
	sluice_wipe(hex, sizeof(hex));
	if (n != KEY_HEX + 1 || fsync(fd) == -1) {
		close(fd);
		unlink(path);
		*err = "cannot write the placeholder key";
		return SLUICE_EIO;
	}
	close(fd);
	return 0;
}

int
secret_key_load(const char *dir, int create_missing, uint8_t key[SECRET_KEY_BYTES], const char **err)
{
	char path[4096], hex[KEY_HEX + 2];
	struct stat st;
	ssize_t n;
	int fd, i, hi, lo, ret = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, KEY_FILE) >= sizeof(path)) {
		*err = "the CA directory's path is too long";
		return SLUICE_EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd == -1 && errno == ENOENT && create_missing) {
		ret = create(path, key, err);
		if (ret != SLUICE_EEXIST)
			return ret;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (fd == -1) {
		*err = errno == ENOENT ? "no placeholder key (run `sluice ca init`)" : "cannot open the placeholder key";
		return errno == ENOENT ? SLUICE_ENOENT : SLUICE_EIO;
	}
	if (fstat(fd, &st) == -1 || (st.st_mode & 077) != 0) {
		close(fd);
		*err = "the placeholder key must not be readable by group or others (chmod 600)";
		return SLUICE_EINVAL;
	}
	n = read(fd, hex, sizeof(hex));
	close(fd);
	if (n < KEY_HEX || (n > KEY_HEX && hex[KEY_HEX] != '\n') || n > KEY_HEX + 1)
		ret = SLUICE_EINVAL;
	for (i = 0; ret == 0 && i < SECRET_KEY_BYTES; i++) {
		hi = hexval(hex[2 * i]);
		lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			ret = SLUICE_EINVAL;
		else
			key[i] = (uint8_t)(hi << 4 | lo);
	}
	sluice_wipe(hex, sizeof(hex));
	if (ret != 0) {
		sluice_wipe(key, SECRET_KEY_BYTES);
		*err = "the placeholder key is malformed (64 lower-case hex digits expected)";
	}
	return ret;
}
