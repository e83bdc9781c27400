/* SPDX-License-Identifier: MIT */
#include "common/failpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
	FP_MAX = 64,
	FP_PATH_MAX = 1024,
	FP_WAIT_STEP_MS = 10,
};

struct fp_slot {
	char name[64];
	int code; /* negative errno, 0 = disarmed */
	bool kill;
	char wait[FP_PATH_MAX]; /* wait:PATH: hold until PATH exists; "" otherwise */
	unsigned hits;
};

static pthread_mutex_t fp_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fp_slot fp_slots[FP_MAX];
static bool fp_env_loaded;

static struct fp_slot *
fp_find(const char *name, bool create)
{
	size_t n = strlen(name);

	for (int i = 0; i < FP_MAX; i++)
		if (fp_slots[i].name[0] && strcmp(fp_slots[i].name, name) == 0)
			return &fp_slots[i];
	if (!create || n >= sizeof(fp_slots[0].name))
		return NULL;
	for (int i = 0; i < FP_MAX; i++)
		if (!fp_slots[i].name[0]) {
			memcpy(fp_slots[i].name, name, n + 1);
			return &fp_slots[i];
		}
	return NULL;
}

static void
fp_load_env_locked(void)
{
	const char *env = getenv("EOS_FAILPOINTS");
	char *copy, *save = NULL;

	fp_env_loaded = true;
	if (!env || !(copy = strdup(env)))
		return;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		struct fp_slot *s;

		if (eq)
			*eq++ = '\0';
		s = fp_find(tok, true);
		if (!s)
			continue;
		if (eq && strncmp(eq, "wait:", 5) == 0) {
			snprintf(s->wait, sizeof(s->wait), "%s", eq + 5);
			continue;
		}
		s->kill = eq && strcmp(eq, "kill") == 0;
		s->code = eq && !s->kill ? -abs((int)strtol(eq, NULL, 10)) : -EIO;
		if (s->code == 0)
			s->code = -EIO;
	}
	free(copy);
}

/* wait:PATH: say so (PATH.waiting), then wait until PATH exists. */
static void
fp_wait(const char *path)
{
	const struct timespec step = { 0, FP_WAIT_STEP_MS * 1000000L };
	char waiting[FP_PATH_MAX + 16];
	int fd;

	snprintf(waiting, sizeof(waiting), "%s.waiting", path);
	fd = open(waiting, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	while (access(path, F_OK) != 0)
		nanosleep(&step, NULL);
}

int
eos_failpoint_check(const char *name)
{
	char wait[FP_PATH_MAX] = "";
	struct fp_slot *s;
	int code = 0;
	bool kill_now = false;

	pthread_mutex_lock(&fp_lock);
	if (!fp_env_loaded)
		fp_load_env_locked();
	s = fp_find(name, true);
	if (s) {
		s->hits++;
		code = s->code;
		kill_now = s->kill;
		memcpy(wait, s->wait, sizeof(wait));
	}
	pthread_mutex_unlock(&fp_lock);
	if (kill_now)
		raise(SIGKILL);
	if (wait[0])
		fp_wait(wait);
	return code;
}

int
eos_failpoint_arm(const char *name, int code)
{
	struct fp_slot *s;

	pthread_mutex_lock(&fp_lock);
	if (!fp_env_loaded)
		fp_load_env_locked();
	s = fp_find(name, true);
	if (s) {
		s->code = code;
		s->kill = false;
		s->wait[0] = '\0';
	}
	pthread_mutex_unlock(&fp_lock);
	return s ? 0 : -ENOSPC;
}

void
eos_failpoint_reset(void)
{
	pthread_mutex_lock(&fp_lock);
	memset(fp_slots, 0, sizeof(fp_slots));
	fp_env_loaded = true;
	pthread_mutex_unlock(&fp_lock);
}

unsigned
eos_failpoint_hits(const char *name)
{
	struct fp_slot *s;
	unsigned n;

	pthread_mutex_lock(&fp_lock);
	s = fp_find(name, false);
	n = s ? s->hits : 0;
	pthread_mutex_unlock(&fp_lock);
	return n;
}

int
eos_failpoint_arm_wait(const char *name, const char *path)
{
	struct fp_slot *s;

	pthread_mutex_lock(&fp_lock);
	if (!fp_env_loaded)
		fp_load_env_locked();
	s = fp_find(name, true);
	if (s) {
		s->code = 0;
		s->kill = false;
		snprintf(s->wait, sizeof(s->wait), "%s", path);
	}
	pthread_mutex_unlock(&fp_lock);
	return s ? 0 : -ENOSPC;
}
