/*
 * volmgr_records.c: the mount records in the registry, one per pub. A
 * record is written before anything is touched and again as a volume is
 * staged and published, and forgotten last; after a restart they are
 * read back into pubs, so that a volume staged before is not staged
 * again, is unstaged where it was staged (an older berth's per-usage
 * path included), and every user is still counted. Jobs wait until they
 * are read.
 * Must not: act on a volume.
 */
#include <stdlib.h>

#include "volmgr_int.h"
#include "xalloc.h"

static void
mount_handle(const struct vpub *p, Berth__Handle *h, Berth__MountHandle *mh)
{
	mh->plugin = p->plugin;
	mh->namespace_ = p->ns;
	mh->volume = p->vol;
	mh->alloc = p->alloc;
	mh->task = p->name;
	mh->usage = p->usage;
	mh->stage_usage = p->stage_usage;
	mh->staged = p->staged;
	mh->published = p->published;
	h->handle_case = BERTH__HANDLE__HANDLE_MOUNT;
	h->mount = mh;
}

void
put_record(struct unit *u)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

	mount_handle(u->pub, &h, &mh);
	call_registry(u, regclient_put_handle(u->job->vm->d.registry, &h,
	    on_registry, reg_ticket(u)));
}

void
forget_record(struct unit *u)
{
	Berth__Handle h = BERTH__HANDLE__INIT;
	Berth__MountHandle mh = BERTH__MOUNT_HANDLE__INIT;

	mount_handle(u->pub, &h, &mh);
	/* Only the key fields count. */
	mh.staged = mh.published = false;
	call_registry(u, regclient_delete_handle(u->job->vm->d.registry, &h,
	    on_registry, reg_ticket(u)));
}

static void
pub_of_record(struct volmgr *vm, const Berth__MountHandle *mh)
{
	struct vpub *p;

	p = pub_new(vm, mh->alloc, mh->namespace_, mh->volume, mh->task,
	    mh->plugin, mh->usage);
	p->staged = mh->staged;
	p->published = mh->published;
	/* Where it is staged: a record from before per-volume staging
	 * comes with its own usage (the registry's migration 2 -> 3). */
	free(p->stage_usage);
	p->stage_usage = xstrdup(mh->stage_usage != NULL ? mh->stage_usage :
	    "");
	/* The usage names the request it was made for. */
	p->attachment = BERTH__ATTACHMENT_MODE__ATTACHMENT_MODE_FILE_SYSTEM;
	if (!usage_parse(p->usage, &p->read_only, &p->attachment, &p->access))
		log_warnx("volmgr: alloc %s: volume %s/%s: usage \"%s\" "
		    "names no usage; taken as read-write", p->alloc, p->ns,
		    p->vol, p->usage);
}

static void
ready(struct volmgr *vm)
{
	struct job *j;

	vm->ready = true;
	while ((j = TAILQ_FIRST(&vm->waiting)) != NULL) {
		TAILQ_REMOVE(&vm->waiting, j, entry);
		volmgr_job_go(j);
	}
}

static void
on_records(const struct regclient_result *res, Berth__Handle *const *items,
    size_t n, void *arg)
{
	struct volmgr *vm = arg;

	if (!call_back(vm))
		return;
	if (res->code != BERTH__ERROR_CODE__ERROR_NONE) {
		log_warnx("volmgr: cannot read the mount records: %s: %s; "
		    "going on without them", ipc_error_name(res->code),
		    res->message);
		n = 0;
	}
	for (size_t i = 0; i < n; i++)
		if (items[i]->handle_case == BERTH__HANDLE__HANDLE_MOUNT)
			pub_of_record(vm, items[i]->mount);
	if (n > 0)
		log_info("volmgr: %zu mount record%s read back", n, n == 1 ?
		    "" : "s");
	ready(vm);
}

void
records_read(struct volmgr *vm)
{
	if (regclient_list_handles(vm->d.registry,
	    BERTH__HANDLE_KIND__HANDLE_KIND_MOUNT, on_records, vm) < 0) {
		log_warnx("volmgr: cannot reach berth-registry for the mount "
		    "records");
		ready(vm);
		return;
	}
	call_out(vm);
}
