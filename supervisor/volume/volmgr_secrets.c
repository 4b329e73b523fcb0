/*
 * volmgr_secrets.c: the CSI secrets a call gets, read from root's files
 * just before the call and wiped just after it.
 *
 * A volume names its secrets by reference, one name per call (struct
 * kvs, key the call, value the name). A secret's values are key=value
 * lines in one file named as the secret: first in systemd's
 * $CREDENTIALS_DIRECTORY (LoadCredential=, service mode), then in the
 * config's secrets_dir, where the file must be ours and readable by us
 * alone. Must not: keep a value past its call, or put one in a log line,
 * an error, the registry, or anything shown.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "layout.h"
#include "volmgr_int.h"
#include "xalloc.h"

#define SECRET_FILE_MAX 65536

static const char *
ref_of(const struct kvs *refs, const char *call)
{
	for (size_t i = 0; refs != NULL && i < refs->n; i++)
		if (strcmp(refs->key[i], call) == 0)
			return refs->value[i];
	return NULL;
}

/* An open secret file, or -1 with why set; mine: the caller's dir. */
static int
secret_open(const char *dir, const char *name, bool mine, const char **why)
{
	char path[BERTH_PATH_BUF];
	struct stat st;
	int fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		*why = "its path is too long";
		return -1;
	}
	/* Never a symlink; a FIFO planted there must not block the loop. */
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) < 0) {
		*why = errno == ENOENT ? "no such secret" : strerror(errno);
		return -1;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if (mine && st.st_uid != geteuid())
		*why = "its file is not owned by the supervisor's user";
	else if (mine && (st.st_mode & 077) != 0)
		*why = "its file is readable by others than the supervisor's "
		    "user (mode must be 0400 or 0600)";
	else
		return fd;
	close(fd);
	return -1;
}

/* The file's key=value lines into out; false with why. Never quotes a
 * line: it may hold a value. */
static bool
secret_parse(char *buf, struct kvs *out, const char **why)
{
	char *line, *next, *eq;

	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		if ((eq = strchr(line, '=')) == NULL || eq == line) {
			*why = "a line is not key=value";
			return false;
		}
		if (out->n == CTX_MAX) {
			*why = "too many keys";
			return false;
		}
		*eq = '\0';
		kvs_add(out, line, eq + 1);
	}
	return true;
}

static bool
secret_read(const char *dir, const char *name, struct kvs *out,
    const char **why)
{
	const char *creds = getenv("CREDENTIALS_DIRECTORY");
	char *buf;
	ssize_t n;
	size_t len = 0;
	bool ok = true;
	int fd = -1;

	if (creds != NULL && creds[0] == '/')
		fd = secret_open(creds, name, false, why);
	if (fd < 0 && (fd = secret_open(dir, name, true, why)) < 0)
		return false;
	buf = xmalloc(SECRET_FILE_MAX + 1);
	while (ok && len < SECRET_FILE_MAX && (n = read(fd, buf + len,
	    SECRET_FILE_MAX - len)) != 0) {
		if (n < 0 && errno != EINTR) {
			*why = "cannot read its file";
			ok = false;
		} else if (n > 0)
			len += n;
	}
	close(fd);
	buf[len] = '\0';
	if (ok && len == SECRET_FILE_MAX) {
		*why = "its file is over 64 KiB";
		ok = false;
	}
	if (ok)
		ok = secret_parse(buf, out, why);
	xfree_wiped(buf, SECRET_FILE_MAX + 1);
	if (!ok)
		secrets_wipe(out);
	return ok;
}

bool
secrets_load(struct unit *u, const char *name, const struct kvs *refs,
    const char *call, struct kvs *out)
{
	const char *why = NULL;

	if (name == NULL)
		name = ref_of(refs, call);

	out->n = 0;
	if (name == NULL)
		return true;
	if (ident_problem(name, strlen(name)) != NULL)
		why = "not a valid secret name";
	else if (secret_read(u->job->vm->d.secrets_dir, name, out, &why))
		return true;
	unit_fail(u, VOLMGR_FAILED, "%s: secret \"%s\": %s", call, name, why);
	unit_end(u);
	return false;
}

void
secrets_wipe(struct kvs *k)
{
	for (size_t i = 0; i < k->n; i++) {
		explicit_bzero(k->key[i], strlen(k->key[i]));
		explicit_bzero(k->value[i], strlen(k->value[i]));
	}
	kvs_clear(k);
}
