/*
 * test_fake_peer.c: the component tests' fake helper holds what the
 * real clients send, answers in any order, and its close reaches the
 * clients' callbacks (the fake itself must be right before any manager
 * test can lean on it).
 */
#include <stdint.h>

#include <check.h>

#include "fake_peer.h"
#include "harness.h"
#include "registry_client.h"

static int answered[3];
static Berth__ErrorCode codes[3];

static void
got(const struct regclient_result *res, Berth__PluginInstance *const *items,
    size_t n, void *arg)
{
	int i = (int)(intptr_t)arg;

	(void)items;
	(void)n;
	answered[i]++;
	codes[i] = res->code;
}

static bool
all_answered(void *arg)
{
	(void)arg;
	return answered[0] && answered[1] && answered[2];
}

static bool
three_held(void *arg)
{
	return fake_pending(arg) == 3;
}

static void
list_reply(struct fake_peer *fp, struct fake_req *req)
{
	Berth__Envelope env = BERTH__ENVELOPE__INIT;
	Berth__PluginList list = BERTH__PLUGIN_LIST__INIT;

	env.body_case = BERTH__ENVELOPE__BODY_PLUGIN_LIST;
	env.plugin_list = &list;
	fake_reply(fp, req, &env, -1);
}

START_TEST(test_out_of_order_then_close)
{
	struct event_base *base = event_base_new();
	static const struct chan_ops ops = { NULL, NULL, NULL, NULL };
	struct regclient *rc;
	struct fake_peer *fp;
	struct chan *c;

	fp = fake_peer_new(base, "berth-registry", NULL, &c, &ops, NULL);
	rc = regclient_new(base, c, 5000);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(regclient_list_plugins(rc,
		    BERTH__PLUGIN_TYPE__PLUGIN_TYPE_CSI_NODE, NULL, got,
		    (void *)(intptr_t)i), 0);
	ck_assert(fake_run_until(base, three_held, fp, 2000));
	ck_assert_uint_eq(fake_count(fp, BERTH__ENVELOPE__BODY_LIST_PLUGINS),
	    3);
	/* The last first, then the first; the middle one never. */
	list_reply(fp, fake_nth(fp, 2));
	list_reply(fp, fake_nth(fp, 0));
	while (answered[0] + answered[2] < 2)
		event_base_loop(base, EVLOOP_ONCE);
	ck_assert_int_eq(answered[1], 0);
	ck_assert_int_eq(codes[0], BERTH__ERROR_CODE__ERROR_NONE);
	/* A wrong body is refused by the channel, not read. */
	fake_reply_ack(fp, fake_nth(fp, 0));
	ck_assert(fake_run_until(base, all_answered, NULL, 2000));
	ck_assert_int_ne(codes[1], BERTH__ERROR_CODE__ERROR_NONE);
	regclient_free(rc);
	chan_free(c);
	fake_peer_free(fp);
	event_base_free(base);
}
END_TEST

int
main(void)
{
	TCase *tc = tcase_create("fake_peer");

	tcase_add_test(tc, test_out_of_order_then_close);
	return harness_run("fake_peer", tc);
}
