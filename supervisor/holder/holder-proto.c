/* SPDX-License-Identifier: MIT */
/* supervisor/holder/holder-proto: encoding, decoding and transport (see holder-proto.h). */
#include "supervisor/holder/holder-proto.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Appends that remember the first failure, so that an encoder reads as a list of fields. */
struct writer {
	struct eos_buf *b;
	int r;
};

static void
put32(struct writer *w, uint32_t v)
{
	if (w->r == 0)
		w->r = eos_buf_append_le32(w->b, v);
}

static void
put64(struct writer *w, uint64_t v)
{
	if (w->r == 0)
		w->r = eos_buf_append_le64(w->b, v);
}

static void
put_blob(struct writer *w, const void *p, size_t n)
{
	if (w->r == 0)
		w->r = eos_buf_append_lp(w->b, p, n);
}

/* A string with its NUL, the NUL counted in the length. */
static void
put_str(struct writer *w, const char *s)
{
	put_blob(w, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* Reads that remember the first failure. */
struct reader {
	struct eos_reader r;
	int rc;
};

static uint32_t
get32(struct reader *rd)
{
	uint32_t v = 0;

	if (rd->rc == 0)
		rd->rc = eos_reader_le32(&rd->r, &v);
	return v;
}

static uint64_t
get64(struct reader *rd)
{
	uint64_t v = 0;

	if (rd->rc == 0)
		rd->rc = eos_reader_le64(&rd->r, &v);
	return v;
}

static const uint8_t *
get_blob(struct reader *rd, size_t max, uint32_t *ret_len)
{
	const uint8_t *p = NULL;
	size_t n = 0;

	if (rd->rc == 0)
		rd->rc = eos_reader_lp(&rd->r, max, &p, &n);
	*ret_len = (uint32_t)n;
	return rd->rc == 0 ? p : NULL;
}

/* A string of at most max bytes (NUL excluded): its NUL last and nowhere else. */
static const char *
get_str(struct reader *rd, size_t max)
{
	uint32_t n;
	const uint8_t *p = get_blob(rd, max + 1, &n);

	if (!p)
		return NULL;
	if (n == 0 || p[n - 1] != '\0' || memchr(p, '\0', n - 1)) {
		rd->rc = -EBADMSG;
		return NULL;
	}
	return (const char *)p;
}

bool
eos_hproto_tree_path_ok(const char *s)
{
	size_t len = strlen(s);

	if (len == 0)
		return true;
	if (len > EOS_HPROTO_PATH_MAX || s[0] == '/' || s[len - 1] == '/')
		return false;
	for (const char *c = s; *c;) {
		const char *end = strchrnul(c, '/');
		size_t n = (size_t)(end - c);

		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		c = *end ? end + 1 : end;
	}
	return true;
}

bool
eos_hproto_abs_path_ok(const char *s)
{
	if (s[0] != '/' || strlen(s) > EOS_HPROTO_PATH_MAX)
		return false;
	return s[1] == '\0' || eos_hproto_tree_path_ok(s + 1);
}

static bool
hostname_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > EOS_HPROTO_HOSTNAME_MAX)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") == n;
}

static int
check_plan(const struct eos_hproto_plan *p, const char **why)
{
	if (p->version != EOS_HPROTO_VERSION)
		return *why = "version", -EPROTO;
	if (p->isolation > EOS_HPROTO_ISOLATION_NAMESPACES)
		return *why = "isolation", -EINVAL;
	if (p->network > EOS_HPROTO_NETWORK_ISOLATED)
		return *why = "network", -EINVAL;
	if (!p->view || !eos_hproto_abs_path_ok(p->view) || strcmp(p->view, "/") == 0)
		return *why = "view", -EINVAL;
	if (!p->hostname || !hostname_ok(p->hostname))
		return *why = "hostname", -EINVAL;
	if (p->n_masks > EOS_HPROTO_MASKS_MAX)
		return *why = "masks", -EINVAL;
	for (uint32_t i = 0; i < p->n_masks; i++)
		if (!p->masks[i] || !eos_hproto_abs_path_ok(p->masks[i]) ||
		    strcmp(p->masks[i], "/") == 0)
			return *why = "masks", -EINVAL;
	if (!p->bpf || p->bpf_len == 0 || p->bpf_len % 8 || p->bpf_len > EOS_HPROTO_BPF_MAX)
		return *why = "seccomp filter", -EINVAL;
	return 0;
}

static bool
env_ok(const char *s)
{
	const char *eq = strchr(s, '=');

	return eq && eq != s;
}

static int
check_exec(const struct eos_hproto_exec *e, const char **why)
{
	if (e->flags & ~(uint32_t)EOS_HPROTO_EXEC_FLAGS)
		return *why = "flags", -EINVAL;
	if (e->rows > 0xffff || e->cols > 0xffff)
		return *why = "window size", -EINVAL;
	if (!e->cwd || !eos_hproto_tree_path_ok(e->cwd))
		return *why = "cwd", -EINVAL;
	if (!e->cmd || e->cmd[0] == '\0' || strlen(e->cmd) > EOS_HPROTO_CMD_MAX)
		return *why = "cmd", -EINVAL;
	if (e->n_env > EOS_HPROTO_ENV_MAX)
		return *why = "env", -EINVAL;
	for (uint32_t i = 0; i < e->n_env; i++)
		if (!e->env[i] || !env_ok(e->env[i]) || strlen(e->env[i]) > EOS_HPROTO_CMD_MAX)
			return *why = "env", -EINVAL;
	return 0;
}

static int
check_failure(const struct eos_hproto_failure *f, const char **why)
{
	if (f->error <= 0 || f->error >= 4096)
		return *why = "error", -EINVAL;
	if (f->step > EOS_HPROTO_STEP_MAX)
		return *why = "step", -EINVAL;
	if (!f->text || strlen(f->text) > EOS_HPROTO_TEXT_MAX)
		return *why = "text", -EINVAL;
	return 0;
}

static int
check_proc(const struct eos_hproto_proc *p, const char **why)
{
	if (p->state < 'A' || p->state > 'z')
		return *why = "state", -EINVAL;
	if (!p->comm || strlen(p->comm) > EOS_HPROTO_TEXT_MAX)
		return *why = "comm", -EINVAL;
	if (!p->cmdline || strlen(p->cmdline) > EOS_HPROTO_TEXT_MAX)
		return *why = "cmdline", -EINVAL;
	return 0;
}

static int
check_started(const struct eos_hproto_started *s, const char **why)
{
	if (s->n_fds < 1 || s->n_fds > EOS_HPROTO_FDS_MAX)
		return *why = "fds", -EINVAL;
	if (s->subreaper_pid == 0 || s->subreaper_pid > INT32_MAX || s->shell_pid == 0 ||
	    s->shell_pid > INT32_MAX)
		return *why = "pid", -EINVAL;
	return 0;
}

int
eos_hproto_check(const struct eos_hproto_msg *m, const char **ret_why)
{
	const char *why = "type";

	*ret_why = why;
	switch ((enum eos_hproto_type)m->type) {
	case EOS_HPROTO_PLAN:
		return check_plan(&m->u.plan, ret_why);
	case EOS_HPROTO_EXEC:
		return m->cmd == 0 ? (*ret_why = "cmd id", -EINVAL)
				   : check_exec(&m->u.exec, ret_why);
	case EOS_HPROTO_SIGNAL:
		if (m->u.signal.signo < 1 || m->u.signal.signo > 64)
			return *ret_why = "signal", -EINVAL;
		if (m->u.signal.scope > EOS_HPROTO_SCOPE_TREE)
			return *ret_why = "scope", -EINVAL;
		return 0;
	case EOS_HPROTO_READY:
		return m->u.ready.isolation > EOS_HPROTO_ISOLATION_NAMESPACES
			       ? (*ret_why = "isolation", -EINVAL)
			       : 0;
	case EOS_HPROTO_SETUP_FAILED:
	case EOS_HPROTO_EXEC_FAILED:
	case EOS_HPROTO_REFUSED:
	case EOS_HPROTO_ABORTED:
		return check_failure(&m->u.failure, ret_why);
	case EOS_HPROTO_STARTED:
		return check_started(&m->u.started, ret_why);
	case EOS_HPROTO_EXITED:
		if (m->u.exited.how > EOS_HPROTO_EXIT_LOST || m->u.exited.core > 1)
			return *ret_why = "exit", -EINVAL;
		return 0;
	case EOS_HPROTO_GONE:
		return m->u.gone.lost > 1 ? (*ret_why = "lost", -EINVAL) : 0;
	case EOS_HPROTO_PROC:
		return check_proc(&m->u.proc, ret_why);
	case EOS_HPROTO_TERMINATE:
	case EOS_HPROTO_LIST:
	case EOS_HPROTO_SHUTDOWN:
	case EOS_HPROTO_PROC_END:
	case EOS_HPROTO_BYE:
	case EOS_HPROTO_SHELL:
		return 0;
	}
	return -EPROTO;
}

static void
encode_plan(struct writer *w, const struct eos_hproto_plan *p)
{
	put32(w, p->version);
	put32(w, p->isolation);
	put32(w, p->network);
	put32(w, p->uid);
	put32(w, p->gid);
	put64(w, p->rlimit_nofile);
	put64(w, p->rlimit_nproc);
	put_str(w, p->view);
	put_str(w, p->hostname);
	put32(w, p->n_masks);
	for (uint32_t i = 0; i < p->n_masks && i < EOS_HPROTO_MASKS_MAX; i++)
		put_str(w, p->masks[i]);
	put_blob(w, p->bpf, p->bpf_len);
}

static void
encode_exec(struct writer *w, const struct eos_hproto_exec *e)
{
	put32(w, e->flags);
	put32(w, e->rows);
	put32(w, e->cols);
	put_str(w, e->cwd);
	put_str(w, e->cmd);
	put32(w, e->n_env);
	for (uint32_t i = 0; i < e->n_env && i < EOS_HPROTO_ENV_MAX; i++)
		put_str(w, e->env[i]);
}

static void
encode_payload(struct writer *w, const struct eos_hproto_msg *m)
{
	switch ((enum eos_hproto_type)m->type) {
	case EOS_HPROTO_PLAN:
		encode_plan(w, &m->u.plan);
		return;
	case EOS_HPROTO_EXEC:
		encode_exec(w, &m->u.exec);
		return;
	case EOS_HPROTO_SIGNAL:
		put32(w, m->u.signal.signo);
		put32(w, m->u.signal.scope);
		return;
	case EOS_HPROTO_TERMINATE:
	case EOS_HPROTO_SHUTDOWN:
		put32(w, m->u.terminate.grace_ms);
		return;
	case EOS_HPROTO_READY:
		put32(w, m->u.ready.version);
		put32(w, m->u.ready.isolation);
		put64(w, m->u.ready.init_pid);
		return;
	case EOS_HPROTO_SETUP_FAILED:
	case EOS_HPROTO_EXEC_FAILED:
	case EOS_HPROTO_REFUSED:
	case EOS_HPROTO_ABORTED:
		put32(w, (uint32_t)m->u.failure.error);
		put32(w, m->u.failure.step);
		put_str(w, m->u.failure.text);
		return;
	case EOS_HPROTO_STARTED:
		put64(w, m->u.started.subreaper_pid);
		put64(w, m->u.started.shell_pid);
		put32(w, m->u.started.subreaper_nspid);
		put32(w, m->u.started.shell_nspid);
		put32(w, m->u.started.n_fds);
		return;
	case EOS_HPROTO_EXITED:
		put32(w, m->u.exited.how);
		put32(w, m->u.exited.code);
		put32(w, m->u.exited.core);
		return;
	case EOS_HPROTO_GONE:
		put32(w, m->u.gone.lost);
		return;
	case EOS_HPROTO_PROC:
		put64(w, m->u.proc.pid);
		put32(w, m->u.proc.nspid);
		put32(w, m->u.proc.ppid);
		put32(w, m->u.proc.pgid);
		put32(w, m->u.proc.sid);
		put32(w, m->u.proc.state);
		put_str(w, m->u.proc.comm);
		put_str(w, m->u.proc.cmdline);
		return;
	case EOS_HPROTO_SHELL:
		put32(w, m->u.shell.nspid);
		put32(w, m->u.shell.parent_nspid);
		return;
	case EOS_HPROTO_LIST:
	case EOS_HPROTO_PROC_END:
	case EOS_HPROTO_BYE:
		return;
	}
	w->r = -EPROTO;
}

int
eos_hproto_encode(const struct eos_hproto_msg *m, struct eos_buf *b)
{
	struct writer w = { b, 0 };

	eos_buf_truncate(b, 0);
	if (w.r == 0)
		w.r = eos_buf_append(b, (uint8_t[2]){ (uint8_t)m->type, (uint8_t)(m->type >> 8) },
				     2);
	if (w.r == 0)
		w.r = eos_buf_append(b, (uint8_t[2]){ 0, 0 }, 2);
	put32(&w, m->seq);
	put32(&w, m->cmd);
	encode_payload(&w, m);
	if (w.r == 0 && b->len > EOS_HPROTO_MSG_MAX)
		w.r = -EMSGSIZE;
	return w.r;
}

static void
decode_plan(struct reader *rd, struct eos_hproto_plan *p)
{
	p->version = get32(rd);
	p->isolation = get32(rd);
	p->network = get32(rd);
	p->uid = get32(rd);
	p->gid = get32(rd);
	p->rlimit_nofile = get64(rd);
	p->rlimit_nproc = get64(rd);
	p->view = get_str(rd, EOS_HPROTO_PATH_MAX);
	p->hostname = get_str(rd, EOS_HPROTO_HOSTNAME_MAX);
	p->n_masks = get32(rd);
	if (p->n_masks > EOS_HPROTO_MASKS_MAX && rd->rc == 0)
		rd->rc = -EBADMSG;
	for (uint32_t i = 0; rd->rc == 0 && i < p->n_masks; i++)
		p->masks[i] = get_str(rd, EOS_HPROTO_PATH_MAX);
	p->bpf = get_blob(rd, EOS_HPROTO_BPF_MAX, &p->bpf_len);
}

static void
decode_exec(struct reader *rd, struct eos_hproto_exec *e)
{
	e->flags = get32(rd);
	e->rows = get32(rd);
	e->cols = get32(rd);
	e->cwd = get_str(rd, EOS_HPROTO_PATH_MAX);
	e->cmd = get_str(rd, EOS_HPROTO_CMD_MAX);
	e->n_env = get32(rd);
	if (e->n_env > EOS_HPROTO_ENV_MAX && rd->rc == 0)
		rd->rc = -EBADMSG;
	for (uint32_t i = 0; rd->rc == 0 && i < e->n_env; i++)
		e->env[i] = get_str(rd, EOS_HPROTO_CMD_MAX);
	e->env[rd->rc == 0 ? e->n_env : 0] = NULL;
}

static void
decode_failure(struct reader *rd, struct eos_hproto_failure *f)
{
	f->error = (int32_t)get32(rd);
	f->step = get32(rd);
	f->text = get_str(rd, EOS_HPROTO_TEXT_MAX);
}

static void
decode_proc(struct reader *rd, struct eos_hproto_proc *p)
{
	p->pid = get64(rd);
	p->nspid = get32(rd);
	p->ppid = get32(rd);
	p->pgid = get32(rd);
	p->sid = get32(rd);
	p->state = get32(rd);
	p->comm = get_str(rd, EOS_HPROTO_TEXT_MAX);
	p->cmdline = get_str(rd, EOS_HPROTO_TEXT_MAX);
}

static void
decode_started(struct reader *rd, struct eos_hproto_started *s)
{
	s->subreaper_pid = get64(rd);
	s->shell_pid = get64(rd);
	s->subreaper_nspid = get32(rd);
	s->shell_nspid = get32(rd);
	s->n_fds = get32(rd);
}

/* 0, or -EPROTO for a type nobody sends. */
static int
decode_payload(struct reader *rd, struct eos_hproto_msg *m)
{
	switch ((enum eos_hproto_type)m->type) {
	case EOS_HPROTO_PLAN:
		decode_plan(rd, &m->u.plan);
		return 0;
	case EOS_HPROTO_EXEC:
		decode_exec(rd, &m->u.exec);
		return 0;
	case EOS_HPROTO_SIGNAL:
		m->u.signal.signo = get32(rd);
		m->u.signal.scope = get32(rd);
		return 0;
	case EOS_HPROTO_TERMINATE:
	case EOS_HPROTO_SHUTDOWN:
		m->u.terminate.grace_ms = get32(rd);
		return 0;
	case EOS_HPROTO_READY:
		m->u.ready.version = get32(rd);
		m->u.ready.isolation = get32(rd);
		m->u.ready.init_pid = get64(rd);
		return 0;
	case EOS_HPROTO_SETUP_FAILED:
	case EOS_HPROTO_EXEC_FAILED:
	case EOS_HPROTO_REFUSED:
	case EOS_HPROTO_ABORTED:
		decode_failure(rd, &m->u.failure);
		return 0;
	case EOS_HPROTO_STARTED:
		decode_started(rd, &m->u.started);
		return 0;
	case EOS_HPROTO_EXITED:
		m->u.exited.how = get32(rd);
		m->u.exited.code = get32(rd);
		m->u.exited.core = get32(rd);
		return 0;
	case EOS_HPROTO_GONE:
		m->u.gone.lost = get32(rd);
		return 0;
	case EOS_HPROTO_PROC:
		decode_proc(rd, &m->u.proc);
		return 0;
	case EOS_HPROTO_SHELL:
		m->u.shell.nspid = get32(rd);
		m->u.shell.parent_nspid = get32(rd);
		return 0;
	case EOS_HPROTO_LIST:
	case EOS_HPROTO_PROC_END:
	case EOS_HPROTO_BYE:
		return 0;
	}
	return -EPROTO;
}

int
eos_hproto_decode(const void *p, size_t n, struct eos_hproto_msg *m)
{
	struct reader rd = { .rc = 0 };
	const uint8_t *h = p;
	const char *why;
	int r;

	memset(m, 0, sizeof(*m));
	if (n < EOS_HPROTO_HEADER || n > EOS_HPROTO_MSG_MAX)
		return -EBADMSG;
	m->type = (uint16_t)(h[0] | h[1] << 8);
	if (h[2] != 0 || h[3] != 0)
		return -EBADMSG;
	eos_reader_init(&rd.r, h + 4, n - 4);
	m->seq = get32(&rd);
	m->cmd = get32(&rd);
	r = decode_payload(&rd, m);
	if (r < 0)
		return r;
	if (rd.rc < 0 || !eos_reader_done(&rd.r))
		return -EBADMSG;
	r = eos_hproto_check(m, &why);
	return r == -EPROTO ? r : r < 0 ? -EBADMSG : 0;
}

int
eos_hproto_send(int sock, const struct eos_buf *b, const int *fds, size_t n_fds, pid_t cred_pid)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * EOS_HPROTO_FDS_MAX) +
			 CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { b->data, b->len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;
	size_t space = 0;

	if (n_fds > EOS_HPROTO_FDS_MAX)
		return -EINVAL;
	memset(&u, 0, sizeof(u));
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	c = CMSG_FIRSTHDR(&mh);
	if (n_fds > 0) {
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n_fds);
		space += CMSG_SPACE(sizeof(int) * n_fds);
		c = CMSG_NXTHDR(&mh, c);
	}
	if (cred_pid > 0) {
		struct ucred cr = { .pid = cred_pid, .uid = getuid(), .gid = getgid() };

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_CREDENTIALS;
		c->cmsg_len = CMSG_LEN(sizeof(cr));
		memcpy(CMSG_DATA(c), &cr, sizeof(cr));
		space += CMSG_SPACE(sizeof(cr));
	}
	mh.msg_controllen = space;
	if (space == 0)
		mh.msg_control = NULL;
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		return errno > 0 ? -errno : -EIO;
	return 0;
}

void
eos_hproto_anc_close(struct eos_hproto_anc *anc)
{
	if (!anc)
		return;
	for (size_t i = 0; i < anc->n_fds; i++)
		if (anc->fds[i] >= 0) {
			close(anc->fds[i]);
			anc->fds[i] = -1;
		}
	anc->n_fds = 0;
}

/* Take the fds and credentials out of the control messages; too many fds is -EMSGSIZE. */
static int
take_ancillary(struct msghdr *mh, struct eos_hproto_anc *anc)
{
	int r = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			struct ucred cr;

			memcpy(&cr, CMSG_DATA(c), sizeof(cr));
			anc->cred_pid = cr.pid;
		} else if (c->cmsg_type == SCM_RIGHTS) {
			size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (size_t i = 0; i < n; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
				if (anc->n_fds < EOS_HPROTO_FDS_MAX)
					anc->fds[anc->n_fds++] = fd;
				else {
					close(fd);
					r = -EMSGSIZE;
				}
			}
		}
	}
	return r;
}

int
eos_hproto_recv(int sock, void *buf, size_t cap, size_t *ret_len, struct eos_hproto_anc *anc)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * (EOS_HPROTO_FDS_MAX + 1)) +
			 CMSG_SPACE(sizeof(struct ucred))];
		struct cmsghdr align;
	} u;
	struct eos_hproto_anc local = { { -1, -1, -1 }, 0, 0 };
	struct iovec iov = { buf, cap };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;
	int r;

	if (!anc)
		anc = &local;
	*anc = local;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno > 0 ? -errno : -EIO;
	r = take_ancillary(&mh, anc);
	if (r == 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		r = -EMSGSIZE;
	if (r < 0 || anc == &local)
		eos_hproto_anc_close(anc);
	if (r < 0)
		return r;
	*ret_len = (size_t)n;
	return 0;
}
