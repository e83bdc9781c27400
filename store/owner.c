/* SPDX-License-Identifier: MIT */
/*
 * The owner lock: one process owns a store directory at a time, by flock()ing STORE/owner.lock.
 * The file tells a refused opener about the owner (doc/store-format.md, "Owner lock"):
 *	<pid>\n
 *	owner <name>\n             the owning program, when it names itself (eosd)
 *	serving <maj>:<min> …\n    the devices of the mounts the owner serves (eosfs)
 *	closing\n                  the owner has begun to close the store
 * An owner is shutting down when it says closing, or when it serves mounts and none of them is
 * mounted any more (fusermount3 -u has returned, the process has not finished yet). An opener
 * waits a bounded time for such an owner, and fails at once with the owner's pid otherwise.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "common/cleanup.h"

#include "store/store-internal.h"

enum {
	DEFAULT_WAIT_MS = 5000,
	WAIT_STEP_MS = 10,
	WAIT_MAX_S = 86400,
	OWNER_TEXT_MAX = 4096,
	OWNER_DEVS_MAX = 128, /* " 4095:1048575" each: the text stays below OWNER_TEXT_MAX */
	OWNER_NAME_MAX = 32,
};

/* What owner.lock says about its holder. */
struct owner_state {
	long pid;		   /* 0: unknown */
	char name[OWNER_NAME_MAX]; /* "": not named */
	bool closing;
	size_t ndevs;
	dev_t devs[OWNER_DEVS_MAX];
};

/*
 * The pid holding a flock on fd's file, from /proc/locks ("1: FLOCK ADVISORY WRITE <pid>
 * <maj>:<min>:<ino> 0 EOF", device numbers in hex), 0 when not found.
 */
static long
flock_holder(int fd)
{
	cleanup_fclose FILE *f = fopen("/proc/locks", "re");
	char line[256];
	struct stat sb;

	if (!f || fstat(fd, &sb) < 0)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;
		unsigned long long ino;
		long pid;

		if (sscanf(line, "%*d: FLOCK %*s %*s %ld %x:%x:%llu", &pid, &maj, &min, &ino) ==
			    4 &&
		    maj == major(sb.st_dev) && min == minor(sb.st_dev) && ino == sb.st_ino)
			return pid;
	}
	return 0;
}

/* The "serving" line's device numbers (after the word). */
static void
parse_devs(char *list, struct owner_state *s)
{
	char *save = NULL;

	for (char *w = strtok_r(list, " ", &save); w && s->ndevs < OWNER_DEVS_MAX;
	     w = strtok_r(NULL, " ", &save)) {
		unsigned maj, min;

		if (sscanf(w, "%u:%u", &maj, &min) == 2)
			s->devs[s->ndevs++] = makedev(maj, min);
	}
}

/* Parse owner.lock; what is not written yet, or not by eos, is left unknown. */
static void
read_state(int fd, struct owner_state *s)
{
	char buf[OWNER_TEXT_MAX], *save = NULL, *end = NULL;
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *line;

	*s = (struct owner_state){ 0 };
	if (n <= 0)
		return;
	buf[n] = '\0';
	line = strtok_r(buf, "\n", &save);
	errno = 0;
	s->pid = line ? strtol(line, &end, 10) : 0;
	if (errno || !end || end == line || *end != '\0' || s->pid <= 0)
		s->pid = 0;
	while ((line = strtok_r(NULL, "\n", &save))) {
		if (strcmp(line, "closing") == 0)
			s->closing = true;
		else if (strncmp(line, "serving ", 8) == 0)
			parse_devs(line + 8, s);
		else if (strncmp(line, "owner ", 6) == 0)
			snprintf(s->name, sizeof(s->name), "%s", line + 6);
	}
}

/* Whether some mount in our mount namespace has device dev (/proc/self/mountinfo, field 3). */
static bool
is_mounted(dev_t dev)
{
	cleanup_fclose FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];

	if (!f)
		return true; /* cannot tell: do not wait */
	while (fgets(line, sizeof(line), f)) {
		unsigned maj, min;

		if (sscanf(line, "%*d %*d %u:%u", &maj, &min) == 2 && makedev(maj, min) == dev)
			return true;
	}
	return false;
}

static bool
shutting_down(const struct owner_state *s)
{
	if (s->closing)
		return true;
	for (size_t i = 0; i < s->ndevs; i++)
		if (is_mounted(s->devs[i]))
			return false;
	return s->ndevs > 0;
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
busy(const char *dir, int fd, const struct owner_state *s, int64_t waited_ms, struct eos_error *err)
{
	long pid = flock_holder(fd);

	if (pid <= 0)
		pid = s->pid;
	if (pid <= 0)
		return eos_error_set(err, -EBUSY, "store '%s' is in use by another process", dir);
	if (strcmp(s->name, "eosd") == 0 && !shutting_down(s))
		return eos_error_set(err, -EBUSY,
				     "store '%s' is owned by eosd (pid %ld): use eosctl instead "
				     "(eosctl --help lists its commands)",
				     dir, pid);
	if (waited_ms > 0 && shutting_down(s))
		return eos_error_set(
			err, -EBUSY,
			"store '%s' is in use by pid %ld, which did not finish closing it "
			"within %.1f s (see EOS_STORE_WAIT)",
			dir, pid, (double)waited_ms / 1000);
	return eos_error_set(err, -EBUSY, "store '%s' is in use by pid %ld", dir, pid);
}

static void
say_waiting(const char *dir, const struct owner_state *s, int64_t wait_ms,
	    const struct eos_store_options *opts)
{
	char msg[EOS_ERROR_MSG_MAX];

	snprintf(msg, sizeof(msg), "store '%s' is being closed by pid %ld: waiting up to %.1f s",
		 dir, s->pid, (double)wait_ms / 1000);
	opts->on_wait(opts->on_wait_ctx, msg);
}

/* Take the flock, waiting up to the options' bound while its holder is shutting down. */
static int
lock_waiting(const char *dir, int fd, const struct eos_store_options *opts, struct eos_error *err)
{
	int64_t wait = opts->wait_ms ? opts->wait_ms : DEFAULT_WAIT_MS;
	int64_t start = now_ms(), waited = 0;
	struct owner_state s;

	while (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return eos_error_set(err, eos_neg_errno(), "lock '%s/owner.lock': %m", dir);
		read_state(fd, &s);
		if (!shutting_down(&s) || waited >= wait)
			return busy(dir, fd, &s, waited, err);
		if (waited == 0 && opts->on_wait)
			say_waiting(dir, &s, wait, opts);
		nanosleep(&(struct timespec){ .tv_nsec = WAIT_STEP_MS * 1000000L }, NULL);
		waited = EOS_MAX(now_ms() - start, 1);
	}
	return 0;
}

/* "<pid>\n" and, when the owner names itself, "owner <name>\n". */
static void
owner_head(const char *name, char *out, size_t n)
{
	if (name && name[0] && strlen(name) < OWNER_NAME_MAX && !strchr(name, '\n'))
		snprintf(out, n, "%ld\nowner %s\n", (long)getpid(), name);
	else
		snprintf(out, n, "%ld\n", (long)getpid());
}

/* The head of the text owner.lock holds now (our own: keeps the name we wrote). */
static void
current_head(int fd, char *out, size_t n)
{
	struct owner_state s;

	read_state(fd, &s);
	owner_head(s.name, out, n);
}

/* Replace the text of owner.lock: write the new text, then cut what is left of the old one. */
static int
write_text(int fd, const char *text)
{
	size_t n = strlen(text);

	if (pwrite(fd, text, n, 0) != (ssize_t)n || ftruncate(fd, (off_t)n) < 0)
		return eos_neg_errno();
	return 0;
}

int
eos_owner_lock_take(const char *dir, const struct eos_store_options *opts, int *ret_fd,
		    struct eos_error *err)
{
	cleanup_free char *path = NULL;
	cleanup_close int fd = -1;
	char text[64];
	int r;

	if (asprintf(&path, "%s/owner.lock", dir) < 0)
		return -ENOMEM;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return eos_error_set(err, eos_neg_errno(), "open '%s': %s", path, strerror(errno));
	r = lock_waiting(dir, fd, opts, err);
	if (r < 0)
		return r;
	owner_head(opts->owner_name, text, sizeof(text));
	r = write_text(fd, text);
	if (r < 0)
		return eos_error_set(err, r, "write '%s': %s", path, strerror(-r));
	*ret_fd = TAKE_FD(fd);
	return 0;
}

void
eos_owner_lock_closing(int fd)
{
	char head[64], text[96];

	current_head(fd, head, sizeof(head));
	snprintf(text, sizeof(text), "%sclosing\n", head);
	(void)write_text(fd, text); /* only a hint for openers */
}

int
eos_store_set_serving(struct eos_store *st, const dev_t *devs, size_t n, struct eos_error *err)
{
	char text[OWNER_TEXT_MAX], head[64];
	size_t len;
	int r;

	if (n > OWNER_DEVS_MAX)
		return eos_error_set(err, -EINVAL, "store '%s': more than %d mounts", st->dir,
				     OWNER_DEVS_MAX);
	current_head(st->lock_fd, head, sizeof(head));
	len = (size_t)snprintf(text, sizeof(text), "%s%s", head, n ? "serving" : "");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, " %u:%u", major(devs[i]),
					minor(devs[i]));
	snprintf(text + len, sizeof(text) - len, "%s", n ? "\n" : "");
	r = write_text(st->lock_fd, text);
	if (r < 0)
		return eos_error_set(err, r, "write '%s/owner.lock': %s", st->dir, strerror(-r));
	return 0;
}

int
eos_store_wait_from_env(int64_t *ret_ms, struct eos_error *err)
{
	const char *v = getenv("EOS_STORE_WAIT");
	char *end = NULL;
	double s;

	*ret_ms = 0;
	if (!v || !v[0])
		return 0;
	errno = 0;
	s = strtod(v, &end);
	if (errno || *end || !isfinite(s) || s < 0 || s > WAIT_MAX_S)
		return eos_error_set(err, -EINVAL,
				     "EOS_STORE_WAIT '%s' is not a number of seconds (0 to %d)", v,
				     WAIT_MAX_S);
	*ret_ms = s == 0 ? -1 : (int64_t)ceil(s * 1000);
	return 0;
}
