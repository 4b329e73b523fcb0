/*
 * test_garbage.c: bad input sent to each real helper on its own socket.
 * The test stands in for the supervisor (it is the helper's parent, as
 * SO_PEERCRED demands). After every kind of garbage the helper must still
 * be alive and answer a ping; the mounter, under its seccomp filter, also
 * proves that refusing bad input needs no system call it forbids.
 */
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>

#include "channel.h"
#include "harness.h"

struct helper_proc {
	struct proc p;
	int sock;
	char *dir;
	uint64_t next_id;
};

static void
start_helper(struct helper_proc *h, const char *name)
{
	char data[512], run[512];
	int sp[2];

	harness_private_mounts();
	h->dir = harness_tmpdir("garbage");
	snprintf(data, sizeof(data), "%s/data", h->dir);
	snprintf(run, sizeof(run), "%s/run", h->dir);
	ck_assert_int_eq(mkdir(data, 0755), 0);
	ck_assert_int_eq(mkdir(run, 0755), 0);
	{
		/* The registry's own directory, as the supervisor makes it. */
		struct passwd *pw = getpwnam("berth-registry");
		char reg[600];

		ck_assert_ptr_nonnull(pw);
		snprintf(reg, sizeof(reg), "%s/registry", data);
		ck_assert_int_eq(mkdir(reg, 0700), 0);
		ck_assert_int_eq(chown(reg, pw->pw_uid, pw->pw_gid), 0);
	}
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0,
	    sp), 0);
	if (strcmp(name, "berth-mounter") == 0) {
		char *argv[] = { (char *)harness_bin(name), "--spawned",
			"--data-dir", data, "--run-dir", run, NULL };

		proc_start(&h->p, argv, sp[1]);
	} else {
		char *argv[] = { (char *)harness_bin(name), "--spawned",
			"--data-dir", data, "--user", "berth-registry", NULL };

		proc_start(&h->p, argv, sp[1]);
	}
	close(sp[1]);
	h->sock = sp[0];
	h->next_id = 1;
}

static void
stop_helper(struct helper_proc *h)
{
	close(h->sock);
	/* Our end closed: the helper must exit by itself, and cleanly. */
	ck_assert_msg(proc_wait_exit(&h->p, 2000),
	    "helper did not exit when its socket closed");
	ck_assert_msg(WIFEXITED(h->p.status) && WEXITSTATUS(h->p.status) == 0,
	    "helper ended with status 0x%x", h->p.status);
	proc_kill(&h->p);
	harness_rmtree(h->dir);
	free(h->dir);
}

static Berth__Envelope *
request(struct helper_proc *h, Berth__Envelope *env, int fd)
{
	env->version = BERTH_PROTOCOL_VERSION;
	env->kind = BERTH__KIND__KIND_REQUEST;
	env->request_id = h->next_id++;
	harness_send_env(h->sock, env, fd >= 0 ? &fd : NULL, fd >= 0);
	return harness_recv_env(h->sock, 3000);
}

static void
hello(struct helper_proc *h, Berth__Role want)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *r;
	Berth__Hello hi = BERTH__HELLO__INIT;

	hi.protocol_version = BERTH_PROTOCOL_VERSION;
	hi.role = BERTH__ROLE__ROLE_SUPERVISOR;
	hi.pid = getpid();
	env.body_case = BERTH__ENVELOPE__BODY_HELLO;
	env.hello = &hi;
	r = request(h, &env, -1);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_null(r->error);
	ck_assert_int_eq(r->body_case, BERTH__ENVELOPE__BODY_HELLO_REPLY);
	ck_assert_int_eq(r->hello_reply->role, want);
	ck_assert_int_eq((pid_t)r->hello_reply->pid, h->p.pid);
	berth__envelope__free_unpacked(r, NULL);
}

/* Ping; return the error code of the answer (0 for a good pong). */
static int
ping(struct helper_proc *h)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *r;
	Berth__Ping p = BERTH__PING__INIT;
	int code;

	p.nonce = 0xbe27 + h->next_id;
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &p;
	r = request(h, &env, -1);
	ck_assert_msg(r != NULL, "no answer to a ping");
	code = r->error ? (int)r->error->code : 0;
	if (code == 0) {
		ck_assert_int_eq(r->body_case, BERTH__ENVELOPE__BODY_PONG);
		ck_assert_uint_eq(r->pong->nonce, p.nonce);
	}
	berth__envelope__free_unpacked(r, NULL);
	return code;
}

/* Expect an answer with this error code, then a working ping. */
static void
expect_refused(struct helper_proc *h, Berth__ErrorCode code)
{
	Berth__Envelope *r = harness_recv_env(h->sock, 3000);

	ck_assert_msg(r != NULL, "no error answer");
	ck_assert_ptr_nonnull(r->error);
	ck_assert_msg(r->error->code == code, "got %s, want %s",
	    ipc_error_name(r->error->code), ipc_error_name(code));
	berth__envelope__free_unpacked(r, NULL);
	ck_assert_int_eq(ping(h), 0);
}

static void
garbage_suite(const char *name, Berth__Role role)
{
	static uint8_t big[BERTH_IPC_MAX + 1];
	struct helper_proc h;
	Berth__Envelope env = BERTH__ENVELOPE__INIT, *r;
	Berth__Ping p = BERTH__PING__INIT;
	uint8_t junk[200];
	size_t i;
	int pipefd[2], sz = 4 * BERTH_IPC_MAX;

	start_helper(&h, name);
	setsockopt(h.sock, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));

	/* Before the hello, nothing but the hello is served. */
	ck_assert_int_eq(ping(&h), BERTH__ERROR_CODE__ERROR_HANDSHAKE);
	hello(&h, role);
	ck_assert_int_eq(ping(&h), 0);
	/* A second hello is refused. */
	{
		Berth__Hello hi = BERTH__HELLO__INIT;

		hi.protocol_version = BERTH_PROTOCOL_VERSION;
		hi.role = BERTH__ROLE__ROLE_SUPERVISOR;
		env.body_case = BERTH__ENVELOPE__BODY_HELLO;
		env.hello = &hi;
		r = request(&h, &env, -1);
		ck_assert_ptr_nonnull(r);
		ck_assert_ptr_nonnull(r->error);
		ck_assert_int_eq(r->error->code,
		    BERTH__ERROR_CODE__ERROR_CONFLICT);
		berth__envelope__free_unpacked(r, NULL);
	}

	/* Oversized. */
	memset(big, 0x5a, sizeof(big));
	harness_send(h.sock, big, sizeof(big), NULL, 0);
	expect_refused(&h, BERTH__ERROR_CODE__ERROR_TOO_LARGE);
	/* Undecodable. */
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 0x80);
	harness_send(h.sock, junk, sizeof(junk), NULL, 0);
	expect_refused(&h, BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	/* Truncated: a real request cut short. */
	{
		uint8_t buf[128];
		size_t len;

		env = (Berth__Envelope)BERTH__ENVELOPE__INIT;
		env.version = 1;
		env.kind = BERTH__KIND__KIND_REQUEST;
		env.request_id = 999;
		p.nonce = 0xffffffffffULL;
		env.body_case = BERTH__ENVELOPE__BODY_PING;
		env.ping = &p;
		len = berth__envelope__pack(&env, buf);
		harness_send(h.sock, buf, len - 2, NULL, 0);
		expect_refused(&h, BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	}
	/* Empty. */
	harness_send(h.sock, "", 0, NULL, 0);
	expect_refused(&h, BERTH__ERROR_CODE__ERROR_BAD_REQUEST);
	/* A descriptor where none belongs. */
	ck_assert_int_eq(pipe(pipefd), 0);
	env = (Berth__Envelope)BERTH__ENVELOPE__INIT;
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &p;
	r = request(&h, &env, pipefd[1]);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_nonnull(r->error);
	ck_assert_int_eq(r->error->code, BERTH__ERROR_CODE__ERROR_BAD_FD);
	berth__envelope__free_unpacked(r, NULL);
	close(pipefd[1]);
	{
		char c;

		/* The helper closed its copy: the pipe reads EOF. */
		ck_assert_int_eq(read(pipefd[0], &c, 1), 0);
	}
	close(pipefd[0]);
	ck_assert_int_eq(ping(&h), 0);
	/* Another protocol version. */
	env = (Berth__Envelope)BERTH__ENVELOPE__INIT;
	env.version = 7;
	env.kind = BERTH__KIND__KIND_REQUEST;
	env.request_id = 1000;
	env.body_case = BERTH__ENVELOPE__BODY_PING;
	env.ping = &p;
	harness_send_env(h.sock, &env, NULL, 0);
	expect_refused(&h, BERTH__ERROR_CODE__ERROR_VERSION);
	/* A body this helper does not serve (a reply type sent as request). */
	{
		Berth__Pong pong = BERTH__PONG__INIT;

		env = (Berth__Envelope)BERTH__ENVELOPE__INIT;
		env.body_case = BERTH__ENVELOPE__BODY_PONG;
		env.pong = &pong;
		r = request(&h, &env, -1);
		ck_assert_ptr_nonnull(r);
		ck_assert_ptr_nonnull(r->error);
		ck_assert_int_eq(r->error->code,
		    BERTH__ERROR_CODE__ERROR_UNSUPPORTED);
		berth__envelope__free_unpacked(r, NULL);
	}
	/* No body, or an unknown body field number. */
	{
		/* Field 99, varint 1: a body from some future version. */
		uint8_t future[] = { 0x08, 0x01, 0x10, 0x05, 0x18, 0x01,
			0x98, 0x06, 0x01 };

		harness_send(h.sock, future, sizeof(future), NULL, 0);
		expect_refused(&h, BERTH__ERROR_CODE__ERROR_UNSUPPORTED);
	}
	/* A flood of junk, then it still answers. */
	for (i = 0; i < 500; i++)
		harness_send(h.sock, junk, 1 + i % sizeof(junk), NULL, 0);
	while ((r = harness_recv_env(h.sock, 300)) != NULL)
		berth__envelope__free_unpacked(r, NULL);
	ck_assert_int_eq(ping(&h), 0);

	ck_assert_msg(pid_alive(h.p.pid), "%s died of garbage", name);
	proc_drain(&h.p);
	/* Log wording kept: a helper with no API reports garbage only in
	 * its log; that report is the feature under test. */
	ck_assert_ptr_nonnull(strstr(h.p.log, "do not decode"));
	ck_assert_ptr_nonnull(strstr(h.p.log, "over the 65536-byte cap"));
	stop_helper(&h);
}

START_TEST(mounter_survives_garbage)
{
	garbage_suite("berth-mounter", BERTH__ROLE__ROLE_MOUNTER);
}
END_TEST

START_TEST(registry_survives_garbage)
{
	garbage_suite("berth-registry", BERTH__ROLE__ROLE_REGISTRY);
}
END_TEST

START_TEST(helpers_refuse_a_stranger_socket)
{
	struct proc p;
	int sp[2];
	char *argv[] = { (char *)harness_bin("berth-mounter"), "--spawned",
		"--data-dir", "/tmp", "--run-dir", "/tmp", NULL };

	/* A stream socket is not what a helper serves. */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sp), 0);
	proc_start(&p, argv, sp[1]);
	close(sp[1]);
	ck_assert(proc_wait_exit(&p, 3000));
	ck_assert(WIFEXITED(p.status) && WEXITSTATUS(p.status) != 0);
	/* Log wording kept: why it refused to start is the feature. */
	ck_assert_ptr_nonnull(strstr(p.log, "not a unix SOCK_SEQPACKET"));
	close(sp[0]);
	proc_kill(&p);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("garbage");

	signal(SIGPIPE, SIG_IGN);
	tcase_add_test(tc, mounter_survives_garbage);
	tcase_add_test(tc, registry_survives_garbage);
	tcase_add_test(tc, helpers_refuse_a_stranger_socket);
	return harness_run("garbage", tc);
}
