/* SPDX-License-Identifier: MIT */
/* supervisor/holder-client internals: shared by holder-client.c and holder-events.c. */
#pragma once

#include <sys/types.h>

#include "common/buf.h"

#include "supervisor/holder-client.h"
#include "supervisor/holder/holder-proto.h"

struct eosd_holder {
	pid_t pid;
	int sock;	/* non-blocking */
	bool reaped;	/* DIED was reported */
	bool ready;	/* READY was read */
	int status;	/* the wait status once reaped */
	pid_t init_pid; /* from READY */
	uint32_t seq;	/* of the last request */
	struct eos_buf out;
	uint8_t *rbuf; /* EOS_HPROTO_MSG_MAX + 1 */
};

/* Send an encoded message; waits up to a second for room. 0 or -errno with err. */
int eosd_holder_send_buf(struct eosd_holder *h, const struct eos_buf *b, struct eos_error *err);
/* Reap the holder (blocking: call once its socket has closed). */
void eosd_holder_reap(struct eosd_holder *h);
