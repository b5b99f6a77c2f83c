/* SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only */
/*
 * 03-profile-query, initiator: asks pmemverbs what it knows of the
 * target's region (FI_PMEM_DOMAIN_OPS): the profile the target reported
 * for the key (from the profile table it pushes when the connection is
 * established), the method a commit to the key takes, the atomicity
 * chunk, and after one commit the endpoint's counters.
 *
 *   ./initiator [ADDR [PORT]]  (default 127.0.0.1 9620)
 */
#include "pmem_example.h"

/* Prints what the domain operations say about the key. */
static void print_key(struct ex *x, struct fi_pmem_ops_domain *pmem,
		      const struct ex_region *r, const char *when)
{
	printf("initiator: %s: key %llu profile %s, method %s\n", when,
	       (unsigned long long) r->key,
	       fi_pmem_profile_str(pmem->peer_profile(x->ep, r->key)),
	       fi_pmem_method_str(pmem->method(x->ep, r->key)));
}

int main(int argc, char **argv)
{
	const char *addr = argc > 1 ? argv[1] : "127.0.0.1";
	const char *port = argc > 2 ? argv[2] : "9620";
	struct fi_pmem_ops_domain *pmem;
	struct fi_pmem_ep_counters c;
	struct ex x = { 0 };
	struct ex_region region;
	enum fi_pmem_profile profile;

	ex_connect(&x, addr, port);
	EX_CHECK(fi_open_ops(&x.domain->fid, FI_PMEM_DOMAIN_OPS, 0,
			     (void **) &pmem, NULL));
	ex_wait_for(&x, FI_RECV, NULL, NULL);
	memcpy(&region, EX_RECV(&x), sizeof(region));
	printf("initiator: core %s, atomicity chunk %zu bytes\n",
	       pmem->core_prov(x.domain), pmem->atomicity_chunk(x.domain));
	print_key(&x, pmem, &region, "before a commit");

	memset(x.buf, 'x', 64);
	ex_commit(&x, &region, 0, 64, 0, 0);
	ex_wait_for(&x, FI_WRITE, NULL, NULL);
	print_key(&x, pmem, &region, "after a commit");
	profile = pmem->peer_profile(x.ep, region.key);
	EX_CHECK(pmem->ep_counters(x.ep, &c));
	printf("initiator: commits %llu, requests sent %llu, flush ops %llu\n",
	       (unsigned long long) c.commits,
	       (unsigned long long) c.requests_sent,
	       (unsigned long long) c.flush_ops);

	ex_send(&x, "done", 5);
	ex_close(&x, NULL);
	if (profile == FI_PMEM_PROFILE_UNKNOWN || c.commits != 1) {
		fprintf(stderr, "FAIL: profile unknown after a commit, or "
			"commits %llu\n", (unsigned long long) c.commits);
		return 1;
	}
	printf("OK\n");
	return 0;
}
