/*
 * volmgr_stats.c: each volume's usage and condition, asked of its node
 * plugin (NodeGetVolumeStats) every stats interval when the plugin
 * advertises GET_VOLUME_STATS: at the target of the volume's first
 * publication here, or at its staging path while it is only staged.
 *
 * One call per volume at a time, at most STATS_PARALLEL in all, each
 * with the plugin call deadline and no retry (the next round is the
 * retry). A volume whose call is still out when its next round comes is
 * skipped, and counted, so a slow plugin never has calls piled up on
 * it; one a unit is working on waits for the next round. A volume
 * turning abnormal, and normal again, is an event. The volume's id at
 * the provider comes with its pubs, or once from the registry for a
 * volume known from the records only.
 *
 * Must not: change a pub's state, a mount or a record.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <time.h>

#include <event2/event.h>

#include "events.h"
#include "metrics.h"
#include "volmgr_int.h"
#include "xalloc.h"

#define STATS_PARALLEL 8
#define STATS_DEADLINE_MS 10000

struct vstat {
	TAILQ_ENTRY(vstat) entry;
	char ns[BERTH_IDENT_MAX + 1], vol[BERTH_IDENT_MAX + 1];
	char plugin[BERTH_IDENT_MAX + 1];
	char *external_id;		/* NULL until known */
	struct volmgr_stats st;		/* its strings: below */
	char message[512], error[600];
	struct timespec at;		/* the last answer */
	bool due, busy;			/* a round asks; a call is out */
	bool seen, gone;		/* in use at the last round; not */
};

/* One call out: a registry lookup or a plugin's answer to come. */
struct scall {
	struct volmgr *vm;
	struct vstat *s;
	struct timespec sent;
};

static void pump(struct volmgr *vm);

static struct vstat *
stat_find(struct volmgr *vm, const char *ns, const char *vol)
{
	struct vstat *s;

	TAILQ_FOREACH(s, &vm->stats, entry)
		if (strcmp(s->ns, ns) == 0 && strcmp(s->vol, vol) == 0)
			return s;
	return NULL;
}

static struct vstat *
stat_of(struct volmgr *vm, const struct vpub *p)
{
	struct vstat *s;

	if ((s = stat_find(vm, p->ns, p->vol)) != NULL)
		return s;
	s = xcalloc(1, sizeof(*s));
	snprintf(s->ns, sizeof(s->ns), "%s", p->ns);
	snprintf(s->vol, sizeof(s->vol), "%s", p->vol);
	snprintf(s->plugin, sizeof(s->plugin), "%s", p->plugin);
	s->st.ns = s->ns;
	s->st.vol = s->vol;
	s->st.plugin = s->plugin;
	s->st.message = s->message;
	s->st.error = s->error;
	TAILQ_INSERT_TAIL(&vm->stats, s, entry);
	return s;
}

static void
stat_free(struct volmgr *vm, struct vstat *s)
{
	TAILQ_REMOVE(&vm->stats, s, entry);
	free(s->external_id);
	free(s);
}

/* The pub to ask at: the first published, else the first staged. */
static struct vpub *
pub_to_ask(struct volmgr *vm, const struct vstat *s)
{
	struct vpub *p, *staged = NULL;

	TAILQ_FOREACH(p, &vm->pubs, entry) {
		if (strcmp(p->ns, s->ns) != 0 || strcmp(p->vol, s->vol) != 0)
			continue;
		if (p->published)
			return p;
		if (p->staged && staged == NULL)
			staged = p;
	}
	return staged;
}

/* Is a unit at work on the volume? Its paths may be changing. */
static bool
volume_busy(struct volmgr *vm, const struct vstat *s)
{
	struct unit *u;

	TAILQ_FOREACH(u, &vm->units, entry)
		if (u->running && strcmp(u->ns, s->ns) == 0 &&
		    strcmp(u->vol, s->vol) == 0)
			return true;
	return false;
}

static struct scall *
scall_new(struct volmgr *vm, struct vstat *s)
{
	struct scall *c = xcalloc(1, sizeof(*c));

	c->vm = vm;
	c->s = s;
	clock_gettime(CLOCK_MONOTONIC, &c->sent);
	s->busy = true;
	vm->stats_out++;
	call_out(vm);
	return c;
}

/* The stat the answer is for, or NULL when it (or the manager) is gone. */
static struct vstat *
scall_end(struct scall *c, double *ms)
{
	struct volmgr *vm = c->vm;
	struct vstat *s = c->s;

	*ms = ms_since(&c->sent);
	free(c);
	if (!call_back(vm))
		return NULL;
	vm->stats_out--;
	s->busy = false;
	if (s->gone) {
		stat_free(vm, s);
		return NULL;
	}
	return s;
}

/* ---- the answer ---- */

static void
take_usage(struct vstat *s, const Csi__V1__NodeGetVolumeStatsResponse *r)
{
	struct volmgr_stats *st = &s->st;

	st->bytes_known = st->inodes_known = false;
	for (size_t i = 0; i < r->n_usage; i++) {
		const Csi__V1__VolumeUsage *u = r->usage[i];

		if (u->unit == CSI__V1__VOLUME_USAGE__UNIT__BYTES) {
			st->bytes_known = true;
			st->bytes_used = u->used;
			st->bytes_available = u->available;
			st->bytes_total = u->total;
		} else if (u->unit == CSI__V1__VOLUME_USAGE__UNIT__INODES) {
			st->inodes_known = true;
			st->inodes_used = u->used;
			st->inodes_free = u->available;
			st->inodes_total = u->total;
		}
	}
}

/* The condition, and an event when the volume turns abnormal or back. */
static void
take_condition(struct volmgr *vm, struct vstat *s,
    const Csi__V1__VolumeCondition *c)
{
	struct volmgr_stats *st = &s->st;
	bool was = st->condition_known && st->abnormal;

	st->condition_known = c != NULL;
	st->abnormal = c != NULL && c->abnormal;
	snprintf(s->message, sizeof(s->message), "%s", c != NULL &&
	    c->message != NULL ? c->message : "");
	if (c == NULL || st->abnormal == was)
		return;
	if (st->abnormal) {
		log_warnx("volmgr: volume %s/%s is abnormal: %s", s->ns,
		    s->vol, s->message);
		events_record(vm->d.events, "volume", "VolumeAbnormal", NULL,
		    NULL, s->plugin, "volume %s/%s abnormal: %s", s->ns,
		    s->vol, s->message);
	} else {
		log_info("volmgr: volume %s/%s is normal again", s->ns,
		    s->vol);
		events_record(vm->d.events, "volume", "VolumeNormal", NULL,
		    NULL, s->plugin, "volume %s/%s normal again", s->ns,
		    s->vol);
	}
}

/* A failed call keeps what the last answer said, and says why. */
static void
take_failure(struct vstat *s, const struct csi_result *res)
{
	if (s->error[0] == '\0')
		log_info("volmgr: volume %s/%s: NodeGetVolumeStats: %s: %s",
		    s->ns, s->vol, csi_code_name(res->code), res->message);
	snprintf(s->error, sizeof(s->error), "NodeGetVolumeStats: %s: %s",
	    csi_code_name(res->code), res->message);
}

static void
on_stats(const struct csi_result *res, ProtobufCMessage *reply, void *arg)
{
	const Csi__V1__NodeGetVolumeStatsResponse *r = (const void *)reply;
	struct volmgr *vm = ((struct scall *)arg)->vm;
	struct vstat *s;
	double ms;

	if ((s = scall_end(arg, &ms)) != NULL) {
		metrics_volume_stats_latency(s->plugin, ms);
		s->st.calls++;
		if (res->code != CSI_OK)
			take_failure(s, res);
		else {
			s->error[0] = '\0';
			s->st.answered = true;
			clock_gettime(CLOCK_MONOTONIC, &s->at);
			take_usage(s, r);
			take_condition(vm, s, r->volume_condition);
		}
		pump(vm);
	}
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
}

/* ---- the call ---- */

static void
say(struct vstat *s, const char *why)
{
	snprintf(s->error, sizeof(s->error), "%s", why);
}

static void
ask(struct volmgr *vm, struct vstat *s)
{
	Csi__V1__NodeGetVolumeStatsRequest req =
	    CSI__V1__NODE_GET_VOLUME_STATS_REQUEST__INIT;
	struct volmgr_plugin node;
	struct vpub *p, at;
	char path[1200];

	if ((p = pub_to_ask(vm, s)) == NULL || volume_busy(vm, s))
		return;
	if (!node_of(vm, s->plugin, &node)) {
		say(s, "no healthy node instance of the plugin");
		return;
	}
	if (!node.fp->volume_stats) {
		say(s, "the node plugin does not advertise GET_VOLUME_STATS");
		return;
	}
	/* A pub known from its record only has no <type> yet: found on a
	 * copy, as the pub's own is the units' to fill in. */
	at = *p;
	if (at.type[0] == '\0')
		pub_mount_type(vm, &at, &node);
	pub_csi_path(vm, &at, !at.published, path, sizeof(path));
	req.volume_id = s->external_id;
	req.volume_path = path;
	csi_call(node.conn, CSI_NODE_GET_VOLUME_STATS, &req.base,
	    vm->d.csi_deadline_ms > 0 ? vm->d.csi_deadline_ms :
	    STATS_DEADLINE_MS, NULL, on_stats, scall_new(vm, s));
}

static void
on_volume(const struct regclient_result *res, void *arg)
{
	struct volmgr *vm = ((struct scall *)arg)->vm;
	const Berth__Volume *v;
	struct vstat *s;
	double ms;

	if ((s = scall_end(arg, &ms)) == NULL)
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE ||
	    (v = res->reply->volume_reply->volume) == NULL)
		say(s, "the volume is not in the registry");
	else {
		s->external_id = xstrdup(v->external_id != NULL &&
		    v->external_id[0] != '\0' ? v->external_id : v->id);
		ask(vm, s);
	}
	pump(vm);
}

/* Its id at the provider first: from a pub, else from the registry. */
static void
send_one(struct volmgr *vm, struct vstat *s)
{
	struct vpub *p;

	s->due = false;
	if (s->external_id == NULL)
		TAILQ_FOREACH(p, &vm->pubs, entry)
			if (p->external_id != NULL && strcmp(p->ns, s->ns) ==
			    0 && strcmp(p->vol, s->vol) == 0) {
				s->external_id = xstrdup(p->external_id);
				break;
			}
	if (s->external_id != NULL) {
		ask(vm, s);
		return;
	}
	if (regclient_get_volume(vm->d.registry, s->ns, s->vol, on_volume,
	    scall_new(vm, s)) < 0) {
		/* Never sent: no answer will come. */
		s->busy = false;
		vm->stats_out--;
		call_back(vm);
		say(s, "cannot reach berth-registry");
	}
}

static void
pump(struct volmgr *vm)
{
	struct vstat *s;

	TAILQ_FOREACH(s, &vm->stats, entry) {
		if (vm->stats_out >= STATS_PARALLEL)
			return;
		if (s->due && !s->busy)
			send_one(vm, s);
	}
}

/* ---- the rounds ---- */

/* Follow the pubs: a stat for each volume in use, none for the rest. */
static void
follow_pubs(struct volmgr *vm)
{
	struct vstat *s, *next;
	struct vpub *p;

	TAILQ_FOREACH(s, &vm->stats, entry)
		s->seen = false;
	TAILQ_FOREACH(p, &vm->pubs, entry)
		if (p->published || p->staged)
			stat_of(vm, p)->seen = true;
	for (s = TAILQ_FIRST(&vm->stats); s != NULL; s = next) {
		next = TAILQ_NEXT(s, entry);
		s->gone = !s->seen;
		if (s->gone && !s->busy)
			stat_free(vm, s);
	}
}

static void
on_round(evutil_socket_t fd, short what, void *arg)
{
	struct volmgr *vm = arg;
	struct vstat *s;

	(void)fd;
	(void)what;
	follow_pubs(vm);
	TAILQ_FOREACH(s, &vm->stats, entry) {
		if (s->gone)
			continue;
		if (s->busy || s->due) {
			s->st.skipped++;
			metrics_volume_stats_skipped(s->plugin);
		}
		s->due = true;
	}
	pump(vm);
}

void
stats_start(struct volmgr *vm)
{
	struct timeval tv;

	if (vm->d.stats_interval_ms <= 0 || vm->d.base == NULL ||
	    vm->stats_timer != NULL)
		return;
	tv.tv_sec = vm->d.stats_interval_ms / 1000;
	tv.tv_usec = (vm->d.stats_interval_ms % 1000) * 1000;
	vm->stats_timer = event_new(vm->d.base, -1, EV_PERSIST, on_round, vm);
	if (vm->stats_timer == NULL || event_add(vm->stats_timer, &tv) < 0)
		log_warnx("volmgr: cannot start the volume stats timer; no "
		    "volume's usage will be asked");
}

void
stats_free(struct volmgr *vm)
{
	struct vstat *s;

	if (vm->stats_timer != NULL)
		event_free(vm->stats_timer);
	vm->stats_timer = NULL;
	/* Calls still out find the manager dying (call_back()). */
	while ((s = TAILQ_FIRST(&vm->stats)) != NULL)
		stat_free(vm, s);
}

/* ---- readers ---- */

static void
fill(const struct vstat *s, struct volmgr_stats *out)
{
	*out = s->st;
	out->age_ms = s->st.answered ? (int64_t)ms_since(&s->at) : -1;
}

bool
volmgr_stats_get(struct volmgr *vm, const char *ns, const char *vol,
    struct volmgr_stats *out)
{
	struct vstat *s = stat_find(vm, ns, vol);

	if (s == NULL || s->gone)
		return false;
	fill(s, out);
	return true;
}

void
volmgr_stats_each(struct volmgr *vm, void (*fn)(const struct volmgr_stats *s,
    void *arg), void *arg)
{
	struct vstat *s;
	struct volmgr_stats st;

	TAILQ_FOREACH(s, &vm->stats, entry)
		if (!s->gone) {
			fill(s, &st);
			fn(&st, arg);
		}
}
