/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * Unit tests: the method matrix (pmv_method.c) against the table in
 * fi_pmemverbs(7), every profile x transport x DDIO x ordering, and the
 * override rules.
 */
#include <criterion/criterion.h>

#include "initiator/pmv_initiator.h"

/* Facts of a key: profile, transport, DDIO off, reads ordered after writes. */
#define FACTS(p, t, ddio, raw) ((struct pmv_key_facts) { \
	.profile = (p), .transport = (t), .ddio_off = (ddio), \
	.raw_ordered = (raw) })
/* ... toward a peer that offered a gate (one-write agent commits) */
#define GATED_FACTS(p, t, ddio, raw) ((struct pmv_key_facts) { \
	.profile = (p), .transport = (t), .ddio_off = (ddio), \
	.raw_ordered = (raw), .gated = true })

static const uint8_t k_profiles[] = {
	FI_PMEM_PROFILE_VOLATILE, FI_PMEM_PROFILE_PAGE, FI_PMEM_PROFILE_DMP,
	FI_PMEM_PROFILE_MHP, FI_PMEM_PROFILE_WSP,
};
static const uint8_t k_transports[] = {
	PMV_TRANSPORT_TCP, PMV_TRANSPORT_IB, PMV_TRANSPORT_IWARP,
};

/* The table of the man page, written out independently of the code. */
static bool table_read_flush(uint8_t profile, uint8_t transport, bool ddio_off)
{
	return profile == FI_PMEM_PROFILE_VOLATILE ||
	       profile == FI_PMEM_PROFILE_MHP ||
	       profile == FI_PMEM_PROFILE_WSP ||
	       (profile == FI_PMEM_PROFILE_DMP && ddio_off &&
		transport != PMV_TRANSPORT_TCP);
}

static void restore_auto(void)
{
	pmv_params.method = FI_PMEM_METHOD_NONE;
	pmv_params.join_request = 0;
}

Test(method, matrix_matches_the_documented_table, .fini = restore_auto)
{
	for (int join = 0; join < 2; join++)
	for (int gated = 0; gated < 2; gated++)
	for (size_t p = 0; p < sizeof(k_profiles); p++)
	for (size_t t = 0; t < sizeof(k_transports); t++)
	for (int ddio_off = 0; ddio_off < 2; ddio_off++)
	for (int raw = 0; raw < 2; raw++) {
		struct pmv_key_facts k = {
			.profile = k_profiles[p], .transport = k_transports[t],
			.ddio_off = ddio_off, .raw_ordered = raw,
			.gated = gated,
		};
		bool rf = raw && table_read_flush(k.profile, k.transport,
						  ddio_off);
		bool cm = raw && k.profile == FI_PMEM_PROFILE_WSP &&
			  k.transport == PMV_TRANSPORT_IB;
		/* over tcp toward a gated peer one message beats two: the
		 * agent (read-flush needs its read: a delivery ack cannot
		 * name the registration the write landed in) */
		bool joined_tcp = join && gated &&
				  k.transport == PMV_TRANSPORT_TCP;

		pmv_params.join_request = join;
		cr_assert(pmv_method_correct(FI_PMEM_METHOD_AGENT, &k));
		cr_assert_eq(pmv_method_correct(FI_PMEM_METHOD_READ_FLUSH, &k),
			     rf, "read_flush for profile %u transport %u "
			     "ddio_off %d raw %d", k.profile, k.transport,
			     ddio_off, raw);
		cr_assert_eq(pmv_method_correct(FI_PMEM_METHOD_COMPLETION, &k),
			     cm);
		cr_assert_eq(pmv_method_fastest(&k),
			     joined_tcp ? FI_PMEM_METHOD_AGENT :
			     cm ? FI_PMEM_METHOD_COMPLETION :
			     rf ? FI_PMEM_METHOD_READ_FLUSH :
				  FI_PMEM_METHOD_AGENT,
			     "profile %u transport %u ddio_off %d raw %d "
			     "join %d gated %d", k.profile, k.transport,
			     ddio_off, raw, join, gated);
	}
}

Test(method, page_cache_and_dmp_over_tcp_always_need_the_agent)
{
	struct pmv_key_facts page =
		FACTS(FI_PMEM_PROFILE_PAGE, PMV_TRANSPORT_IB, true, true);
	struct pmv_key_facts dmp =
		FACTS(FI_PMEM_PROFILE_DMP, PMV_TRANSPORT_TCP, true, true);

	cr_assert_eq(pmv_method_fastest(&page), FI_PMEM_METHOD_AGENT);
	cr_assert_eq(pmv_method_fastest(&dmp), FI_PMEM_METHOD_AGENT);
}

/* Over tcp toward a gated peer an agent commit is one message, read-flush
 * two: the agent, though read-flush is correct; without joining, or
 * toward a peer without a gate, read-flush. */
Test(method, over_tcp_with_joined_requests_every_profile_takes_the_agent,
     .fini = restore_auto)
{
	struct pmv_key_facts mhp =
		GATED_FACTS(FI_PMEM_PROFILE_MHP, PMV_TRANSPORT_TCP, false, true);
	struct pmv_key_facts ungated =
		FACTS(FI_PMEM_PROFILE_MHP, PMV_TRANSPORT_TCP, false, true);

	cr_assert_eq(pmv_method_select(&mhp, 0), FI_PMEM_METHOD_READ_FLUSH,
		     "two writes: read-flush");
	pmv_params.join_request = 1;
	cr_assert_eq(pmv_method_select(&ungated, 0), FI_PMEM_METHOD_READ_FLUSH,
		     "toward a peer without a gate, two writes: read-flush");
	for (size_t p = 0; p < sizeof(k_profiles); p++) {
		struct pmv_key_facts k =
		GATED_FACTS(k_profiles[p], PMV_TRANSPORT_TCP, false, true);

		cr_assert_eq(pmv_method_select(&k, 0), FI_PMEM_METHOD_AGENT,
			     "profile %u", k.profile);
	}
	cr_assert_eq(pmv_method_select(&mhp, FI_FENCE), FI_PMEM_METHOD_SEND,
		     "an agent key's fence goes by send");
	pmv_params.method = FI_PMEM_METHOD_READ_FLUSH;
	cr_assert_eq(pmv_method_select(&mhp, 0), FI_PMEM_METHOD_READ_FLUSH,
		     "read-flush, forced, stays");
}

Test(method, unknown_profile_and_immed_use_the_agent, .fini = restore_auto)
{
	struct pmv_key_facts unknown =
		FACTS(FI_PMEM_PROFILE_UNKNOWN, PMV_TRANSPORT_IB, true, true);
	struct pmv_key_facts mhp =
		FACTS(FI_PMEM_PROFILE_MHP, PMV_TRANSPORT_TCP, false, true);

	pmv_params.method = FI_PMEM_METHOD_READ_FLUSH;
	cr_assert_eq(pmv_method_select(&unknown, 0), FI_PMEM_METHOD_AGENT);
	cr_assert_eq(pmv_method_select(&mhp, FI_IMMED), FI_PMEM_METHOD_AGENT);
	cr_assert_eq(pmv_method_select(&mhp, 0), FI_PMEM_METHOD_READ_FLUSH);
}

Test(method, an_incorrect_override_is_refused_not_used, .fini = restore_auto)
{
	struct pmv_key_facts page =
		FACTS(FI_PMEM_PROFILE_PAGE, PMV_TRANSPORT_TCP, false, true);
	struct pmv_key_facts mhp =
		FACTS(FI_PMEM_PROFILE_MHP, PMV_TRANSPORT_TCP, false, true);

	pmv_params.method = FI_PMEM_METHOD_READ_FLUSH;
	cr_assert_eq(pmv_method_select(&page, 0), FI_PMEM_METHOD_NONE);
	pmv_params.method = FI_PMEM_METHOD_COMPLETION;
	cr_assert_eq(pmv_method_select(&mhp, 0), FI_PMEM_METHOD_NONE);
	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(pmv_method_select(&mhp, 0), FI_PMEM_METHOD_AGENT);
}

Test(method, read_flush_needs_read_after_write_ordering)
{
	struct pmv_key_facts mhp =
		FACTS(FI_PMEM_PROFILE_MHP, PMV_TRANSPORT_IB, false, false);

	cr_assert_eq(pmv_method_fastest(&mhp), FI_PMEM_METHOD_AGENT);
}

Test(method, a_fence_on_an_agent_key_goes_by_send, .fini = restore_auto)
{
	struct pmv_key_facts page =
		FACTS(FI_PMEM_PROFILE_PAGE, PMV_TRANSPORT_TCP, false, true);
	struct pmv_key_facts unknown =
		FACTS(FI_PMEM_PROFILE_UNKNOWN, PMV_TRANSPORT_TCP, false, true);
	struct pmv_key_facts mhp =
		FACTS(FI_PMEM_PROFILE_MHP, PMV_TRANSPORT_TCP, false, true);

	cr_assert_eq(pmv_method_select(&page, FI_FENCE), FI_PMEM_METHOD_SEND);
	cr_assert_eq(pmv_method_select(&page, 0), FI_PMEM_METHOD_AGENT);
	cr_assert_eq(pmv_method_select(&unknown, FI_FENCE),
		     FI_PMEM_METHOD_SEND);
	cr_assert_eq(pmv_method_select(&mhp, FI_FENCE | FI_IMMED),
		     FI_PMEM_METHOD_SEND);
	/* read-flush keys fence with reads, not with the agent */
	cr_assert_eq(pmv_method_select(&mhp, FI_FENCE),
		     FI_PMEM_METHOD_READ_FLUSH);
}

Test(method, send_is_correct_everywhere_and_agent_forced_stays, .fini = restore_auto)
{
	struct pmv_key_facts page =
		FACTS(FI_PMEM_PROFILE_PAGE, PMV_TRANSPORT_TCP, false, true);
	struct pmv_key_facts unknown =
		FACTS(FI_PMEM_PROFILE_UNKNOWN, PMV_TRANSPORT_TCP, false, true);

	for (size_t p = 0; p < sizeof(k_profiles); p++) {
		struct pmv_key_facts k =
		FACTS(k_profiles[p], PMV_TRANSPORT_TCP, false, false);

		cr_assert(pmv_method_correct(FI_PMEM_METHOD_SEND, &k));
	}
	pmv_params.method = FI_PMEM_METHOD_AGENT;
	cr_assert_eq(pmv_method_select(&page, FI_FENCE), FI_PMEM_METHOD_AGENT);
	pmv_params.method = FI_PMEM_METHOD_SEND;
	cr_assert_eq(pmv_method_select(&page, 0), FI_PMEM_METHOD_SEND);
	cr_assert_eq(pmv_method_select(&unknown, FI_IMMED),
		     FI_PMEM_METHOD_SEND);
}
