/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The wait modes of a passive target (pmem_wait.h).
 */
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "pmem_wait.h"

enum pm_wait pm_wait_mode = PM_WAIT_UNSPEC;

static const char *const pm_wait_name[PM_WAIT_COUNT] = {
	"unspec", "none", "fd", "pollfd", "epoll", "cntr", "eq", "noread",
};

static struct fid_fabric *pm_wait_fabric;
static struct fid_eq *pm_wait_eq;

bool pm_parse_wait(const char *name)
{
	for (int i = 0; i < PM_WAIT_COUNT; i++) {
		if (!strcmp(name, pm_wait_name[i])) {
			pm_wait_mode = (enum pm_wait) i;
			return true;
		}
	}
	fprintf(stderr, "unknown wait mode \"%s\" (%s)\n", name,
		pm_wait_names());
	return false;
}

const char *pm_wait_names(void)
{
	return "unspec,none,fd,pollfd,epoll,cntr,eq,noread";
}

enum fi_wait_obj pm_wait_cq_obj(void)
{
	switch (pm_wait_mode) {
	case PM_WAIT_NONE: return FI_WAIT_NONE;
	case PM_WAIT_FD: case PM_WAIT_EPOLL: return FI_WAIT_FD;
	case PM_WAIT_POLLFD: return FI_WAIT_POLLFD;
	default: return FI_WAIT_UNSPEC;
	}
}

void pm_wait_set_fabric(struct fid_fabric *fabric, struct fid_eq *eq)
{
	pm_wait_fabric = fabric;
	pm_wait_eq = eq;
}

bool pm_wait_in_sread(void)
{
	return pm_wait_mode <= PM_WAIT_POLLFD || pm_wait_mode == PM_WAIT_CNTR;
}

/* epoll on cq's FI_GETWAIT fd after fi_trywait says nothing is pending. */
static void pm_wait_epoll(struct fid_cq *cq, int ms)
{
	static struct fid_cq *watched;
	static int epfd = -1;
	struct epoll_event ev = { .events = EPOLLIN };
	struct fid *fid = &cq->fid;
	int fd;

	if (watched != cq) {
		if (epfd >= 0)
			close(epfd);
		epfd = epoll_create1(EPOLL_CLOEXEC);
		if (epfd < 0 || fi_control(fid, FI_GETWAIT, &fd) ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
			fprintf(stderr, "epoll on the CQ's wait fd failed\n");
			return;
		}
		watched = cq;
	}
	if (fi_trywait(pm_wait_fabric, &fid, 1) == FI_SUCCESS)
		(void) epoll_wait(epfd, &ev, 1, ms);
}

ssize_t pm_wait_read(struct fid_cq *cq, void *entry, int ms)
{
	struct fi_eq_cm_entry cm;
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long) (ms % 1000) * 1000000 };
	uint32_t event;
	ssize_t ret = fi_cq_read(cq, entry, 1);

	if (ret != -FI_EAGAIN)
		return ret;
	if (pm_wait_mode == PM_WAIT_EPOLL)
		pm_wait_epoll(cq, ms);
	else if (pm_wait_mode == PM_WAIT_EQ && pm_wait_eq)
		(void) fi_eq_sread(pm_wait_eq, &event, &cm, sizeof(cm), ms,
				   FI_PEEK);
	else
		nanosleep(&ts, NULL);
	return fi_cq_read(cq, entry, 1);
}
