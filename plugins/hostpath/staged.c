/*
 * staged.c: where each volume is staged, remembered for strict mode.
 *
 * The CSI spec allows a volume one staging path per node, and a plugin
 * that follows it refuses a second. To refuse after its own restart as
 * well, the strict plugin keeps the path in <state-dir>/staged/<volume
 * id>: written before the mount and removed after the unmount, so that a
 * crash in between leaves a record whose path shows no mount. node.c
 * believes a record only while its path still shows the volume mounted;
 * this file only reads and writes the records, from the descriptor of
 * that directory pinned at start, and must not look at any mount.
 * Volume ids pass the identifier allow-list, so each is one plain name;
 * '~', outside that list, marks a record being written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostpath.h"

int
staged_get(struct hostpath *hp, const char *volume, char *path, size_t n)
{
	ssize_t len;
	int fd, err = 0;

	if ((fd = openat(hp->staged_fd, volume, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	if ((len = read(fd, path, n)) < 0)
		err = -errno;
	else if ((size_t)len == n || len == 0 || memchr(path, '\0', len))
		err = -EBADMSG;
	else
		path[len] = '\0';
	close(fd);
	return err < 0 ? err : 1;
}

int
staged_put(struct hostpath *hp, const char *volume, const char *path)
{
	char tmp[256];
	size_t len = strlen(path);
	int fd, err = 0;

	snprintf(tmp, sizeof(tmp), "%s~", volume);
	if ((fd = openat(hp->staged_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
		return -errno;
	errno = 0;
	if (write(fd, path, len) != (ssize_t)len || fsync(fd) < 0)
		err = errno ? -errno : -EIO;
	close(fd);
	if (err == 0 && renameat(hp->staged_fd, tmp, hp->staged_fd,
	    volume) < 0)
		err = -errno;
	if (err < 0)
		unlinkat(hp->staged_fd, tmp, 0);
	return err;
}

int
staged_drop(struct hostpath *hp, const char *volume)
{
	if (unlinkat(hp->staged_fd, volume, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}
