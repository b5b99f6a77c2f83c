/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * pmemverbs: the wakes of a domain's sleeping threads (pmv_wake.h): each
 * thread's eventfd, the domain's list of sleepers, and their wake.
 */
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "pmv.h"

/*
 * Each thread's eventfd, kept under pmv_wake_key, whose destructor closes
 * it when the thread exits.  The key is deleted at unload (no destructor
 * of ours may run once the code is gone) and made again if the provider
 * is initialised again: gen tells a thread's eventfd from before that,
 * which it puts under the new key.
 */
static __thread int pmv_thread_wake_fd1;  /* 1 + the eventfd; 0: none */
static __thread unsigned pmv_thread_wake_gen;
static pthread_key_t pmv_wake_key;
static pthread_mutex_t pmv_wake_key_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned pmv_wake_key_gen;         /* 0: no key (under the lock) */

static void pmv_wake_fd_close(void *fd1)
{
	close((int) (intptr_t) fd1 - 1);
}

/* The key's generation, made if there is none; 0 if none can be made. */
static unsigned pmv_wake_key_get(void)
{
	static unsigned made;
	unsigned gen;

	gen = __atomic_load_n(&pmv_wake_key_gen, __ATOMIC_ACQUIRE);
	if (gen)
		return gen;
	pmv_lock(&pmv_wake_key_lock, PMV_LOCK_WAKE_KEY);
	if (!pmv_wake_key_gen && !pthread_key_create(&pmv_wake_key,
						     pmv_wake_fd_close))
		__atomic_store_n(&pmv_wake_key_gen, ++made, __ATOMIC_RELEASE);
	gen = pmv_wake_key_gen;
	pmv_unlock(&pmv_wake_key_lock, PMV_LOCK_WAKE_KEY);
	return gen;
}

/* This thread's eventfd, made on its first sleep; -1 if none can be. */
static int pmv_thread_wake_fd(void)
{
	unsigned gen = pmv_wake_key_get();
	int fd1 = pmv_thread_wake_fd1;

	if (!gen)
		return -1;
	if (fd1 && pmv_thread_wake_gen == gen)
		return fd1 - 1;
	if (!fd1) {
		fd1 = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) + 1;
		if (!fd1)
			return -1;
	}
	if (pthread_setspecific(pmv_wake_key, (void *) (intptr_t) fd1)) {
		close(fd1 - 1);
		pmv_thread_wake_fd1 = 0;
		return -1;
	}
	pmv_thread_wake_fd1 = fd1;
	pmv_thread_wake_gen = gen;
	return fd1 - 1;
}

/* At unload: no destructor of ours may run after the code is gone (the
 * eventfds of threads still alive stay open, one each). */
void pmv_wake_fini(void)
{
	pmv_lock(&pmv_wake_key_lock, PMV_LOCK_WAKE_KEY);
	if (pmv_wake_key_gen)
		(void) pthread_key_delete(pmv_wake_key);
	__atomic_store_n(&pmv_wake_key_gen, 0, __ATOMIC_RELEASE);
	pmv_unlock(&pmv_wake_key_lock, PMV_LOCK_WAKE_KEY);
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
