/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * How a passive target waits for its receive CQ (fi_pmem_lat -w): the
 * wait modes an application may use, so that a benchmark can show that
 * commits to a target are served at once whichever it uses.
 */
#ifndef PMEM_WAIT_H
#define PMEM_WAIT_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

enum pm_wait {
	PM_WAIT_UNSPEC,  /* fi_cq_sread, CQ opened with FI_WAIT_UNSPEC */
	PM_WAIT_NONE,    /* fi_cq_sread, CQ opened with FI_WAIT_NONE */
	PM_WAIT_FD,      /* fi_cq_sread, FI_WAIT_FD */
	PM_WAIT_POLLFD,  /* fi_cq_sread, FI_WAIT_POLLFD */
	PM_WAIT_EPOLL,   /* FI_WAIT_FD: epoll on FI_GETWAIT's fd, fi_trywait */
	PM_WAIT_CNTR,    /* fi_cntr_wait on a FI_RECV counter (-K) */
	PM_WAIT_EQ,      /* fi_eq_sread (FI_PEEK) on the EQ, then fi_cq_read */
	PM_WAIT_NOREAD,  /* sleeps; reads its CQ once per poll interval */
	PM_WAIT_COUNT
};

/* The target's wait mode (PM_WAIT_UNSPEC unless -w says otherwise). */
extern enum pm_wait pm_wait_mode;

/* Parses a wait mode's name; false (and a message) if unknown. */
bool pm_parse_wait(const char *name);
/* The names, comma-separated, for a usage message. */
const char *pm_wait_names(void);
/* The wait object to open CQs with in the current mode. */
enum fi_wait_obj pm_wait_cq_obj(void);
/* Where the EQ and fi_trywait modes wait: the fabric and its EQ. */
void pm_wait_set_fabric(struct fid_fabric *fabric, struct fid_eq *eq);
/*
 * One wait of up to ms for cq in the current mode, then one fi_cq_read
 * of an entry; returns fi_cq_read's result (-FI_EAGAIN: nothing yet).
 * Not for PM_WAIT_UNSPEC/NONE/FD/POLLFD, which wait in fi_cq_sread.
 */
ssize_t pm_wait_read(struct fid_cq *cq, void *entry, int ms);
/* True if the mode waits in fi_cq_sread. */
bool pm_wait_in_sread(void);

#endif
