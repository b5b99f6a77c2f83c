/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Reading a connection-management EQ without waiting: one event or error
 * entry as a struct pmv_cm_event.  The including program declares die()
 * (pmv_test_check.h's, or its own) before including this.
 */
#ifndef PMV_TEST_EQ_H
#define PMV_TEST_EQ_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

/* One CM event: its type, fid, (FI_CONNREQ) info and CM data; err for
 * an error entry (the event is then 0). */
struct pmv_cm_event {
	uint32_t event;
	struct fid *fid;
	struct fi_info *info;
	uint8_t data[256];
	size_t datalen;
	int err;
};

/* Reads one event or error entry of eq into ev; false if there is none. */
static inline bool pmv_test_eq_poll(struct fid_eq *eq, struct pmv_cm_event *ev)
{
	uint64_t buf[(sizeof(struct fi_eq_cm_entry) + 256) / 8 + 1];
	struct fi_eq_cm_entry *entry = (struct fi_eq_cm_entry *)buf;
	struct fi_eq_err_entry err = { 0 };
	uint32_t event = 0;
	ssize_t n = fi_eq_read(eq, &event, buf, sizeof(buf), 0);

	if (n == -FI_EAGAIN)
		return false;
	memset(ev, 0, sizeof(*ev));
	if (n == -FI_EAVAIL) {
		if (fi_eq_readerr(eq, &err, 0) < 0)
			die("fi_eq_readerr failed after -FI_EAVAIL");
		ev->err = err.err ? err.err : -1;
		ev->fid = err.fid;
		return true;
	}
	if (n < (ssize_t)sizeof(entry->fid))
		die("fi_eq_read: %s", fi_strerror((int)-n));
	ev->event = event;
	ev->fid = entry->fid;
	ev->info = n >= (ssize_t)sizeof(*entry) ? entry->info : NULL;
	ev->datalen = n > (ssize_t)sizeof(*entry) ?
		      (size_t)n - sizeof(*entry) : 0;
	memcpy(ev->data, entry->data, ev->datalen);
	return true;
}

#endif /* PMV_TEST_EQ_H */
