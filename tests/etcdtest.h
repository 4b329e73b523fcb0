/*
 * etcdtest.h: a real etcd cluster for tests: N members of Debian's
 * etcd-server (/usr/bin/etcd) on loopback, each with its own data
 * directory in one fresh temporary directory. Ports are derived from the
 * test's pid, checked free, and picked again when a member cannot bind,
 * so tests running at once do not collide. Members are killed by pid and
 * the directory removed at exit even when an assertion fails (the
 * harness's tracking), and die with the test process (PDEATHSIG).
 */
#ifndef BERTH_ETCDTEST_H
#define BERTH_ETCDTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ETCDTEST_MAX	5
#define ETCDTEST_BIN	"/usr/bin/etcd"

struct etcd_member {
	pid_t pid;			/* 0: not running */
	int client_port;
	int peer_port;
	char name[16];			/* "m0" */
	char endpoint[32];		/* "127.0.0.1:PORT", for the client */
	char data_dir[256];
	char log_path[256];
};

struct etcd_cluster {
	int n;
	char *dir;
	struct etcd_member m[ETCDTEST_MAX];
	const char *endpoints[ETCDTEST_MAX];	/* m[i].endpoint */
};

/* Is etcd-server installed? Tests skip (exit 77) without it. */
bool etcdtest_available(void);
/* Start n members and wait until each says it is healthy; aborts if not. */
void etcdtest_start(struct etcd_cluster *, int n);
/* SIGKILL one member by pid and reap it. */
void etcdtest_kill(struct etcd_cluster *, int i);
/* SIGSTOP: a member that hangs, its sockets open; SIGCONT again. */
void etcdtest_pause(struct etcd_cluster *, int i);
void etcdtest_resume(struct etcd_cluster *, int i);
/* SIGTERM, and SIGKILL after ms; reaped either way. */
void etcdtest_stop(struct etcd_cluster *, int i, int ms);
/* Start a stopped member again, on its ports and data directory. */
void etcdtest_restart(struct etcd_cluster *, int i);
/* Does member i answer /health with "true" within ms? */
bool etcdtest_healthy(struct etcd_cluster *, int i, int ms);
/* Every member stopped and the directory removed. */
void etcdtest_cleanup(struct etcd_cluster *);

#endif
