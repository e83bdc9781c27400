/* SPDX-License-Identifier: MIT */
/*
 * supervisor/obs-follow: the followers of events (events follow; supervisor/obs.h). While any
 * follower exists, each event recorded is also kept, as the JSON text clients get, in a ring of
 * the last EOSD_OBS_RING events, and the notify function is called at once: the gateway's loop
 * wakes and pulls each follower's new events (by waking, not by polling: nothing runs between
 * events). A follower that falls more than the ring behind is told how many it missed.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#include "supervisor/obs-internal.h"

static void
entry_clear(struct eosd_obs_ring_entry *e)
{
	free(e->name);
	free(e->sandbox);
	free(e->json);
	*e = (struct eosd_obs_ring_entry){ 0 };
}

void
eosd_obs_ring_push(struct eosd_obs *obs, const char *name, const char *sandbox, char *json)
{
	uint64_t seq = obs->ring_seq + 1;
	struct eosd_obs_ring_entry *e = &obs->ring[seq % EOSD_OBS_RING];

	entry_clear(e);
	e->name = strdup(name ? name : "");
	e->sandbox = sandbox && *sandbox ? strdup(sandbox) : NULL;
	e->json = json;
	if (!e->name || (sandbox && *sandbox && !e->sandbox)) {
		entry_clear(e); /* json freed with it: followers miss this one */
		return;
	}
	e->seq = seq;
	obs->ring_seq = seq;
}

void
eosd_obs_set_notify(struct eosd_obs *obs, void (*fn)(void *ctx), void *ctx)
{
	if (!obs)
		return;
	pthread_mutex_lock(&obs->lock);
	obs->notify = fn;
	obs->notify_ctx = ctx;
	pthread_mutex_unlock(&obs->lock);
}

static void
follower_free(struct eosd_obs_follower *f)
{
	if (!f)
		return;
	free(f->name);
	free(f->sandbox);
	free(f);
}

static char *
dup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

int
eosd_obs_follow(struct eosd_obs *obs, const struct eosd_obs_filter *flt,
		struct eosd_obs_follower **ret, struct eos_obs_pos *ret_from)
{
	struct eosd_obs_follower *f;

	if (!obs)
		return -ENOTSUP;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->obs = obs;
	f->name = dup_or_null(flt ? flt->name : NULL);
	f->sandbox = dup_or_null(flt ? flt->sandbox : NULL);
	if ((flt && flt->name && *flt->name && !f->name) ||
	    (flt && flt->sandbox && *flt->sandbox && !f->sandbox)) {
		follower_free(f);
		return -ENOMEM;
	}
	pthread_mutex_lock(&obs->lock);
	f->cursor = obs->ring_seq;
	*ret_from = obs->last;
	f->next = obs->followers;
	obs->followers = f;
	atomic_fetch_add(&obs->nfollowers, 1);
	pthread_mutex_unlock(&obs->lock);
	*ret = f;
	return 0;
}

/* Whether event name matches the filter's: equal, or below a prefix that ends in '.'. */
static bool
name_matches(const char *filter, const char *name)
{
	size_t n;

	if (!filter)
		return true;
	n = strlen(filter);
	if (n > 0 && filter[n - 1] == '.')
		return strncmp(filter, name, n) == 0;
	return strcmp(filter, name) == 0;
}

static bool
entry_matches(const struct eosd_obs_follower *f, const struct eosd_obs_ring_entry *e)
{
	if (!name_matches(f->name, e->name))
		return false;
	return !f->sandbox || (e->sandbox && strcmp(f->sandbox, e->sandbox) == 0);
}

bool
eosd_obs_follower_pull(struct eosd_obs_follower *f,
		       void (*emit)(void *ctx, const char *name, const char *json), void *ctx)
{
	struct eosd_obs *obs = f->obs;
	uint64_t oldest, missed;
	char note[64];

	if (!obs)
		return false;
	pthread_mutex_lock(&obs->lock);
	oldest = obs->ring_seq >= EOSD_OBS_RING ? obs->ring_seq - EOSD_OBS_RING + 1 : 1;
	if (f->cursor + 1 < oldest) {
		missed = oldest - f->cursor - 1;
		snprintf(note, sizeof(note), "{\"events\":%llu}", (unsigned long long)missed);
		emit(ctx, "dropped", note);
		f->cursor = oldest - 1;
	}
	for (uint64_t s = f->cursor + 1; s <= obs->ring_seq; s++) {
		const struct eosd_obs_ring_entry *e = &obs->ring[s % EOSD_OBS_RING];

		if (e->seq == s && entry_matches(f, e))
			emit(ctx, "event", e->json);
	}
	f->cursor = obs->ring_seq;
	pthread_mutex_unlock(&obs->lock);
	return true;
}

void
eosd_obs_unfollow(struct eosd_obs_follower *f)
{
	struct eosd_obs *obs;

	if (!f)
		return;
	obs = f->obs;
	if (obs) {
		pthread_mutex_lock(&obs->lock);
		for (struct eosd_obs_follower **p = &obs->followers; *p; p = &(*p)->next)
			if (*p == f) {
				*p = f->next;
				atomic_fetch_sub(&obs->nfollowers, 1);
				break;
			}
		if (atomic_load(&obs->nfollowers) == 0) /* nobody reads the ring: let it go */
			for (size_t i = 0; i < EOSD_OBS_RING; i++)
				entry_clear(&obs->ring[i]);
		pthread_mutex_unlock(&obs->lock);
	}
	follower_free(f);
}

void
eosd_obs_followers_release(struct eosd_obs *obs)
{
	void (*notify)(void *ctx);
	void *notify_ctx;

	pthread_mutex_lock(&obs->lock);
	for (struct eosd_obs_follower *f = obs->followers; f; f = f->next)
		f->obs = NULL;
	obs->followers = NULL;
	atomic_store(&obs->nfollowers, 0);
	for (size_t i = 0; i < EOSD_OBS_RING; i++)
		entry_clear(&obs->ring[i]);
	notify = obs->notify;
	notify_ctx = obs->notify_ctx;
	pthread_mutex_unlock(&obs->lock);
	if (notify)
		notify(notify_ctx);
}
