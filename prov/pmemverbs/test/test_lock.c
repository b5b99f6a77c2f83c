/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * The lock check of test builds (pmv_lock.h): a lock taken out of order,
 * or a wait, fi_trywait, control call or persist under a lock its rule
 * does not allow, is reported (the process aborts; here the message is
 * taken instead); what the rules allow passes unreported.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "pmv.h"

#ifdef PMV_FAULT_INJECTION
static pthread_mutex_t g_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t g_b = PTHREAD_MUTEX_INITIALIZER;
static char g_breach[512];
static int g_breaches;

static void take_breach(const char *msg)
{
	snprintf(g_breach, sizeof(g_breach), "%s", msg);
	g_breaches++;
}

static void setup(void)
{
	g_breach[0] = '\0';
	g_breaches = 0;
	pmv_lock_breach_hook = take_breach;
}

static void teardown(void)
{
	pmv_lock_breach_hook = NULL;
}

TestSuite(lock, .init = setup, .fini = teardown);

/* Asserts one breach was reported and its message names each of words. */
static void assert_breach(const char *call, const char *lock)
{
	cr_assert_eq(g_breaches, 1, "%d breaches reported", g_breaches);
	cr_assert(strstr(g_breach, call) && strstr(g_breach, lock),
		  "the message names %s and %s: %s", call, lock, g_breach);
}

/* A poll with a timeout is a wait: never under the domain lock. */
Test(lock, a_wait_under_the_domain_lock_is_reported)
{
	pmv_lock(&g_a, PMV_LOCK_DOMAIN);
	(void) poll(NULL, 0, 1);
	pmv_unlock(&g_a, PMV_LOCK_DOMAIN);
	assert_breach("poll at", "the domain lock held (taken at");
}

Test(lock, fi_trywait_under_a_cq_lock_is_reported)
{
	pmv_lock(&g_a, PMV_LOCK_CQ);
	PMV_CALL_CHECK(PMV_CALL_TRYWAIT, "fi_trywait");
	pmv_unlock(&g_a, PMV_LOCK_CQ);
	assert_breach("fi_trywait at", "a CQ's lock held");
}

Test(lock, a_post_under_a_hook_list_lock_is_reported)
{
	pmv_lock(&g_a, PMV_LOCK_HOOKS);
	PMV_CALL_CHECK(PMV_CALL_POST, "fi_writemsg");
	pmv_unlock(&g_a, PMV_LOCK_HOOKS);
	assert_breach("fi_writemsg at", "a hook list's lock held");
}

Test(lock, a_persist_under_the_domain_lock_is_reported)
{
	pmv_lock(&g_a, PMV_LOCK_DOMAIN);
	PMV_CALL_CHECK(PMV_CALL_PERSIST, "a persist");
	pmv_unlock(&g_a, PMV_LOCK_DOMAIN);
	assert_breach("a persist at", "the domain lock held");
}

/* The domain lock ranks before a CQ's: taken under it, out of order. */
Test(lock, the_domain_lock_under_a_cq_lock_is_reported)
{
	pmv_lock(&g_a, PMV_LOCK_CQ);
	pmv_lock(&g_b, PMV_LOCK_DOMAIN);
	pmv_unlock(&g_b, PMV_LOCK_DOMAIN);
	pmv_unlock(&g_a, PMV_LOCK_CQ);
	assert_breach("the domain lock at", "taken out of the lock order");
}

/* What the rules allow: posts under the initiator's lock and serve_lock,
 * a core read and a persist under serve_lock, a CQ lock tried under it,
 * anything once every lock is let go. */
Test(lock, the_allowed_calls_and_nestings_are_not_reported)
{
	pmv_lock(&g_a, PMV_LOCK_SERVE);
	cr_assert(pmv_trylock(&g_b, PMV_LOCK_CQ));
	PMV_CALL_CHECK(PMV_CALL_READ, "fi_cq_read");
	pmv_unlock(&g_b, PMV_LOCK_CQ);
	PMV_CALL_CHECK(PMV_CALL_PERSIST, "a persist");
	PMV_CALL_CHECK(PMV_CALL_POST, "fi_inject_write");
	pmv_lock(&g_b, PMV_LOCK_INI);
	PMV_CALL_CHECK(PMV_CALL_POST, "fi_writemsg");
	cr_assert_eq(pmv_locks_held(), 2);
	pmv_unlock(&g_b, PMV_LOCK_INI);
	pmv_unlock(&g_a, PMV_LOCK_SERVE);
	cr_assert_eq(pmv_locks_held(), 0);
	PMV_CALL_CHECK(PMV_CALL_WAIT, "poll");
	PMV_CALL_CHECK(PMV_CALL_TRYWAIT, "fi_trywait");
	cr_assert_eq(g_breaches, 0, "reported: %s", g_breach);
}
#endif
