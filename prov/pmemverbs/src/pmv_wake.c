/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the wakes of a domain's sleeping threads (pmv_wake.h): each
 * thread's eventfd, the domain's list of sleepers, and their wake.
 */
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pmv.h"

/* 1 + this thread's eventfd; 0: none made yet.  Closed at thread exit
 * (pmv_wake_key's destructor); the main thread's at process exit. */
static __thread int pmv_thread_wake_fd1;
static pthread_key_t pmv_wake_key;
static pthread_once_t pmv_wake_once = PTHREAD_ONCE_INIT;
static bool pmv_wake_key_made;

static void pmv_wake_fd_close(void *fd1)
{
	close((int) (intptr_t) fd1 - 1);
}

static void pmv_wake_key_make(void)
{
	pmv_wake_key_made = !pthread_key_create(&pmv_wake_key,
						pmv_wake_fd_close);
}

/* This thread's eventfd, made on its first sleep; -1 if none can be. */
static int pmv_thread_wake_fd(void)
{
	int fd;

	if (pmv_thread_wake_fd1)
		return pmv_thread_wake_fd1 - 1;
	(void) pthread_once(&pmv_wake_once, pmv_wake_key_make);
	if (!pmv_wake_key_made)
		return -1;
	fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (pthread_setspecific(pmv_wake_key, (void *) (intptr_t) (fd + 1))) {
		close(fd);
		return -1;
	}
	pmv_thread_wake_fd1 = fd + 1;
	return fd;
}

/* At unload: no destructor of ours may run after the code is gone (the
 * eventfds of threads still alive stay open, one each). */
void pmv_wake_fini(void)
{
	if (pmv_wake_key_made)
		(void) pthread_key_delete(pmv_wake_key);
	pmv_wake_key_made = false;
}

void pmv_wakes_init(struct pmv_wakes *wakes)
{
	*wakes = (struct pmv_wakes) { .head = NULL };
	pthread_mutex_init(&wakes->lock, NULL);
}

void pmv_wakes_fini(struct pmv_wakes *wakes)
{
	pthread_mutex_destroy(&wakes->lock);
}

/*
 * Lists this thread as asleep on on (an object of dom), before it checks
 * whether to sleep (fi_trywait, entries queued): a wake after that check
 * finds it listed.  Puts its eventfd in *slot, to poll with the object's
 * fds; returns 1, or 0 (not listed, slot unused) if it has no eventfd.
 * pmv_sleep_end undoes it.
 */
nfds_t pmv_sleep_begin(struct pmv_sleeper *s, struct pmv_domain *dom,
		       const void *on, struct pollfd *slot)
{
	int fd = pmv_thread_wake_fd();

	*s = (struct pmv_sleeper) { .on = on, .dom = dom };
	if (fd < 0)
		return 0;
	*slot = (struct pollfd) { .fd = fd, .events = POLLIN };
	s->slot = slot;
	pmv_lock(&dom->wakes.lock, PMV_LOCK_WAKES);
	s->next = dom->wakes.head;
	s->pprev = &dom->wakes.head;
	if (s->next)
		s->next->pprev = &s->next;
	dom->wakes.head = s;
	__atomic_add_fetch(&dom->wakes.count, 1, __ATOMIC_SEQ_CST);
	pmv_unlock(&dom->wakes.lock, PMV_LOCK_WAKES);
	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* listed, then the check */
	return 1;
}

/*
 * Unlists the thread (no wake writes its eventfd after this) and drains
 * its eventfd if the poll found it readable; true if a wake ended the
 * sleep.  The slot's revents are the poll's, or 0 if it did not poll.
 */
bool pmv_sleep_end(struct pmv_sleeper *s)
{
	struct pmv_domain *dom = s->dom;
	eventfd_t v;

	if (!s->slot)
		return false;
	pmv_lock(&dom->wakes.lock, PMV_LOCK_WAKES);
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	__atomic_sub_fetch(&dom->wakes.count, 1, __ATOMIC_SEQ_CST);
	pmv_unlock(&dom->wakes.lock, PMV_LOCK_WAKES);
	if (!(s->slot->revents & POLLIN))
		return false;
	(void) eventfd_read(s->slot->fd, &v);
	return true;
}

/*
 * Wakes the threads asleep on on (an object of dom): what they sleep on
 * may have work that no fd of theirs shows (a commit started, an entry
 * queued by pmemverbs).  With no sleeper, a fence and a load; an
 * eventfd write never blocks.  The caller made the work visible before;
 * the fence orders it before the load of the count, as the sleeper's
 * seq_cst count orders its listing before its check of the work.
 */
void pmv_wake_sleepers_on(struct pmv_domain *dom, const void *on)
{
	struct pmv_sleeper *s;

	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* the work, then the count */
	if (!dom || !__atomic_load_n(&dom->wakes.count, __ATOMIC_RELAXED))
		return;
	pmv_lock(&dom->wakes.lock, PMV_LOCK_WAKES);
	for (s = dom->wakes.head; s; s = s->next)
		if (s->on == on)
			(void) eventfd_write(s->slot->fd, 1);
	pmv_unlock(&dom->wakes.lock, PMV_LOCK_WAKES);
}
