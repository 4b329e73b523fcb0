/*
 * task_probe.c: a test fixture, never installed: what test_attack_taskverb
 * runs as a task's init in place of berth-shim. It reads one path on its
 * channel (fd 4), and answers on it what it is and sees: its ids, its pid
 * and pid namespace, its cgroups, the entries of /, whether that path
 * exists for it, whether it may write in its status dir (fd 3). Then it
 * waits for the channel to close and exits 0.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/socket.h>

int
main(void)
{
	char out[8192], path[4096], buf[2048];
	size_t o = 0;
	ssize_t n;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	if ((n = recv(4, path, sizeof(path) - 1, 0)) <= 0)
		return 2;
	path[n] = '\0';
	o += snprintf(out + o, sizeof(out) - o, "uid %d gid %d pid %d\n",
	    (int)getuid(), (int)getgid(), (int)getpid());
	if ((n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1)) > 0)
		o += snprintf(out + o, sizeof(out) - o, "pidns %.*s\n", (int)n,
		    buf);
	o += snprintf(out + o, sizeof(out) - o, "path %s\n",
	    stat(path, &st) == 0 ? "seen" : "absent");
	fd = openat(3, "probe", O_WRONLY | O_CREAT | O_EXCL, 0640);
	o += snprintf(out + o, sizeof(out) - o, "status %s\n", fd >= 0 ?
	    "written" : "refused");
	if (fd >= 0)
		close(fd);
	o += snprintf(out + o, sizeof(out) - o, "root");
	if ((d = opendir("/")) != NULL) {
		while ((e = readdir(d)) != NULL && o < sizeof(out) - 300)
			o += snprintf(out + o, sizeof(out) - o, " %s",
			    e->d_name);
		closedir(d);
	}
	o += snprintf(out + o, sizeof(out) - o, "\ncgroup\n");
	if ((fd = open("/proc/self/cgroup", O_RDONLY)) >= 0) {
		if ((n = read(fd, out + o, sizeof(out) - o - 1)) > 0)
			o += n;
		close(fd);
	}
	if (send(4, out, o, 0) < 0)
		return 3;
	while (recv(4, buf, sizeof(buf), 0) > 0)
		;
	return 0;
}
