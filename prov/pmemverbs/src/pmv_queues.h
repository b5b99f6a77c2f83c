/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the completion objects, as every folder uses them: the CQ
 * (pmv_cq*.c), EQ (pmv_eq.c) and counter (pmv_cntr*.c) wrappers.
 * Included by pmv.h, after pmv_hooks.h.
 */
#ifndef PMV_QUEUES_H
#define PMV_QUEUES_H

struct pollfd;

/* An entry in pmemverbs's own queue (commit, FI_IMMED, error). */
struct pmv_cq_aux {
	bool is_error;
	struct fi_cq_err_entry entry;
	fi_addr_t src_addr;
};

struct pmv_cq {
	struct fid_cq cq_fid;
	struct fid_cq *core;
	struct pmv_domain *domain;
	enum fi_cq_format format;
	pthread_mutex_t lock;       /* reads of the core CQ ("Locks") */
	pthread_mutex_t aux_lock;   /* the queue; a leaf ("Locks") */
	size_t aux_head, aux_count, aux_cap; /* aux_count read without lock */
	size_t aux_reserved;        /* room promised to entries to come */
	struct pmv_cq_aux *aux;     /* growable: nothing is ever dropped */
	struct pmv_iop_pool iops;   /* internal ops completing here */
	struct pmv_hooks hooks;     /* pmem endpoints' progress */
	int pmem_refs;              /* pmem endpoints bound (either side) */
	bool pmem_once;             /* one was bound once: its acks' errors
				       may come after it closed (atomic) */
	int wait_fd;                /* the core CQ's fd (agent sleeps), or -1 */
	bool wait_pollfd;           /* the core CQ waits on a list of fds */
	struct fid_wait *core_wait; /* its wait set, ours (tcp), or NULL */
	struct pmv_wait *app_set;   /* the application's wait set, or NULL */
	bool app_wait_none;         /* the application asked FI_WAIT_NONE */
	bool app_pollfd_of_fd;      /* it asked FI_WAIT_POLLFD, the core CQ
				     * waits on one fd: its list (2.x) */
	int core_waiters;           /* application threads in the core's sread */
	bool app_armed;             /* fi_trywait said yes, and no read since:
				     * the application may sleep on its fd
				     * (atomic) */
	int gated_refs;             /* gated endpoints receiving here (atomic) */
	uint64_t gate_entries;      /* gated writes' completions taken (atomic) */
	uint64_t cntr_pass;         /* the last counter pass that read it
				     * (pmv_cntr_run; atomic) */
	int taken_held;             /* threads running internal completions
				       they took from the core (atomic) */
	int wakeup;                 /* fi_cq_signal since the last sread (atomic) */
	uint64_t bytes_us;          /* when bytes last woke its sread (atomic) */
	bool drain_pending;         /* its sread's wake left fds to look at */
	bool core_used;             /* a call into the core CQ since the
				     * agent's last fi_trywait of it (atomic;
				     * pmv_cq_core_used) */
	char errbuf[160];
};

static inline struct pmv_cq *pmv_cq(struct fid_cq *cq)
{
	return pmv_container_of(cq, struct pmv_cq, cq_fid);
}

/*
 * Notes a call into cq's core CQ (a read, a wait, fi_trywait or fi_poll,
 * made after it): it may have taken what the core CQ's wait object
 * signalled, so the agent asks it again (fi_trywait) before it sleeps on
 * its fds.  A CQ nobody called since the agent's last fi_trywait of it
 * needs no new one: the core signals its wait object for every completion
 * it writes there (fi_cq(3), wait objects), whoever's progress wrote it.
 */
static inline void pmv_cq_core_used(struct pmv_cq *cq)
{
	if (!__atomic_load_n(&cq->core_used, __ATOMIC_RELAXED))
		__atomic_store_n(&cq->core_used, true, __ATOMIC_SEQ_CST);
}

/* Whether a call into cq's core CQ was noted since the last time this
 * asked (the agent's, before its fi_trywait of it); clears the note. */
static inline bool pmv_cq_core_take_used(struct pmv_cq *cq)
{
	return __atomic_exchange_n(&cq->core_used, false, __ATOMIC_SEQ_CST);
}

struct pmv_eq {
	struct fid_eq eq_fid;
	struct fid_eq *core;
	struct pmv_hooks hooks;     /* serving of pmem endpoints bound to it */
	int binds;                  /* open objects bound to it (atomic):
				     * it refuses to close (pmv_eq_close) */
};

struct pmv_cntr {
	struct fid_cntr cntr_fid;
	struct fid_cntr *core;
	struct pmv_hooks hooks;     /* serving of pmem endpoints bound to it */
	struct pmv_domain *domain;
	int refs;                   /* pmem endpoints and operations counting
				     * into it (pmv_ep_cntr.c; atomic) */
	struct pmv_wait *app_set;   /* the application's wait set, or NULL */
	uint64_t set_seen;          /* count and errors when fi_wait on its */
	uint64_t set_seen_errs;     /* set last returned (pmv_wait.c) */
};

/* pmv_cq.c: entries pmemverbs raises itself. */
int pmv_cq_reserve(struct pmv_cq *cq);
void pmv_cq_unreserve(struct pmv_cq *cq);
void pmv_cq_push(struct pmv_cq *cq, const struct fi_cq_err_entry *entry,
		 bool is_error);
size_t pmv_cq_backlog(struct pmv_cq *cq);
void pmv_cq_take_core(struct pmv_cq *cq);
/* The CQ whose core_waiters count this thread's counter wait (pmv_cntr_wait.c) */
extern __thread const struct pmv_cq *pmv_cq_waited_here;
/* pmv_sleep.c: the one sleep of an application thread on a core CQ. */
enum pmv_sleep_end {
	PMV_SLEEP_TIMEOUT,          /* it polled the whole time */
	PMV_SLEEP_WOKEN,            /* an fd ended the poll (its revents) */
	PMV_SLEEP_CORE_BUSY,        /* not slept: fi_trywait refused */
	PMV_SLEEP_WORK,             /* not slept: the caller's look found work */
	PMV_SLEEP_NO_FDS,           /* nothing to poll: the caller sleeps */
};
/* The caller's last look before the poll: true if there is work; it may
 * shorten *ms. */
typedef bool pmv_sleep_look_fn(void *arg, int *ms);
bool pmv_cq_core_busy(struct pmv_cq *cq, struct fid_fabric *fabric);
bool pmv_cq_sleeper_trywait(struct pmv_cq *cq, struct fid_fabric *fabric);
bool pmv_cq_wait_in_set(struct pmv_cq *cq, int ms);
int pmv_cq_core_wait(struct pmv_cq *cq, int ms); /* wait sets (1.x) */
int pmv_cq_wait_fds(struct pmv_cq *cq, struct pollfd *fds, unsigned max);
enum pmv_sleep_end pmv_cq_sleep(struct pmv_cq *cq, struct pollfd *fds, int n,
				int *ms, pmv_sleep_look_fn *look, void *arg);
/* pmv_cq_wait.c */
int pmv_cq_sleepers(const struct pmv_cq *cq);
void pmv_cq_wake_sleepers(struct pmv_cq *cq);
void pmv_cq_wake(struct pmv_cq *cq);
void pmv_cq_progress_core(struct pmv_cq *cq);
void pmv_cq_wake_waiters(struct pmv_cq *cq, bool found);
bool pmv_cq_agent_trywait(struct pmv_cq *cq, struct fid_fabric *fabric);

#endif /* PMV_QUEUES_H */
